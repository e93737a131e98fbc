"""Compile the simulator's loop into numba's on-disk cache (both ways a run calls it: a
call per lane, and one call over many lanes), so that the test workers load it instead
of each compiling it at once (1-2 minutes of CPU per process).  Run by tests/conftest.py
before the workers start, only when the cache is cold.

    python tests/warm_engine.py
"""
import os

import qpn
from qpn.solvers.des import events

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    net = qpn.load(os.path.join(ROOT, "models", "mutex.qpn"))
    for calls in (events.LANE_CALLS, 0):        # per lane, then over the typed list
        events.LANE_CALLS = calls
        qpn.solve(net, "des", options={"events": 2000, "replications": 2, "quiet": True})
