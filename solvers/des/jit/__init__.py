"""The compiled event loop of :mod:`solvers.des.events` (numba).

The jitted functions are split by concern (drawing, token stores and
marking, queues, the loop).  numba's on-disk cache notices a change of the
file a function is defined in, not of the files whose functions it inlines,
so the cache lives in a directory named by a hash of all of this package's
sources and of the codes it compiles in (solvers/des/flat.py): any change compiles afresh, an unchanged install loads in a
fraction of a second.
"""
from __future__ import annotations

import hashlib
import os
import tempfile

import numba

_HERE = os.path.dirname(os.path.abspath(__file__))
#: the loop's sources, and ../flat.py whose codes (queue kinds, orders) they compile in
_SOURCES = ("options.py", "layout.py", "draw.py", "store.py", "queues.py", "loop.py",
            os.path.join("..", "flat.py"))


def _cache_dir() -> str:
    h = hashlib.sha256(numba.__version__.encode())
    for name in _SOURCES:
        with open(os.path.join(_HERE, name), "rb") as f:
            h.update(f.read())
    tag = "numba-" + h.hexdigest()[:16]
    for base in (os.path.join(_HERE, "__pycache__"),
                 os.path.join(os.path.expanduser("~"), ".cache", "qpn"),
                 os.path.join(tempfile.gettempdir(), "qpn-cache")):
        path = os.path.join(base, tag)
        try:
            if not os.path.isdir(path):
                _forget_older(base)
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, ".write-test")
            with open(probe, "w"):
                pass
            os.remove(probe)
            return path
        except OSError:
            continue
    return ""


def _forget_older(base: str) -> None:
    """Remove the caches of earlier versions of the sources (best effort)."""
    import shutil
    try:
        for name in os.listdir(base):
            if name.startswith("numba-"):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    except OSError:
        pass


CACHE_DIR = _cache_dir()
_saved = numba.config.CACHE_DIR
numba.config.CACHE_DIR = CACHE_DIR      # read when each function enables its cache
try:
    from . import loop  # noqa: E402,F401
finally:
    numba.config.CACHE_DIR = _saved


def compiled_before() -> bool:
    """Whether the event loop is in the on-disk cache (else the next run compiles it: 1-2 minutes of CPU)."""
    if not CACHE_DIR or not loop.CACHE:
        return False
    for _root, _dirs, files in os.walk(CACHE_DIR):
        # run_lane: every run calls it (run_lanes only runs with many lanes, see
        # events.LANE_CALLS)
        if any(f.startswith("loop.run_lane-") and f.endswith(".nbi") for f in files):
            return True
    return False
