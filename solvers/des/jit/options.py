"""How every function of the event loop is compiled.

``_nrt=False``: no reference counting of arrays.  The loop never allocates,
and with counting on, numba wraps every call of a helper that takes arrays
in atomic increments and decrements (30 ns per call measured, against 1.5 ns
without), which would dominate the cost of an event.
"""
import os

from numba import njit

#: QPN_JIT_NOCACHE=1 compiles afresh (for inspecting the generated code)
CACHE = not os.environ.get("QPN_JIT_NOCACHE")


def kernel(fn=None, **options):
    """``numba.njit`` with the loop's options (cached on disk, no reference counting
    unless ``_nrt=True`` is asked for)."""
    options.setdefault("_nrt", False)
    deco = njit(cache=CACHE, **options)
    return deco if fn is None else deco(fn)
