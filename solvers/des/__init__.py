"""Vectorized discrete-event simulation of queueing Petri nets."""
from ..registry import register
from .api import DESSolver, SweepResult, simulate

register(DESSolver())

__all__ = ["simulate", "DESSolver", "SweepResult"]
