import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")


def pytest_runtest_protocol(item, nextitem):
    """Tests marked ``measured`` are retried when they failed on a busy machine
    (tests/measured_load.py)."""
    if item.get_closest_marker("measured") is None:
        return None
    from _pytest.runner import runtestprotocol
    from measured_load import run_with_retries
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in run_with_retries(item, nextitem, runtestprotocol):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
