import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
