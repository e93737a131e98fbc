import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

#: the tests' folder (data, traces, programs and the shared helpers live here; the
#: tests themselves in one folder per part of qpn) and the repository's root
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT_DIR = os.path.dirname(TESTS_DIR)
MODELS = os.path.join(ROOT_DIR, "models")

#: the programs the tests trace run in their own processes, never in pytest's: collecting
#: their doctests would import them, and importing mpi4py.MPI loads MPICH, whose UCX layer
#: takes over SIGALRM (the fuzz runner's budget alarm then never fires: a test spun forever)
collect_ignore_glob = ["programs/*"]


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


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """With workers (-n), compile the simulator's loop once before they start: each
    would otherwise compile it at the same time (1-2 minutes of CPU each, on both
    cores of a fresh CI clone).  A worker, or a run without workers, does nothing."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    from qpn.solvers.des.jit import compiled_before
    if not compiled_before():
        subprocess.run([sys.executable, os.path.join(TESTS_DIR, "warm_engine.py")], check=False)
