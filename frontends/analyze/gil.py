"""How much of a code fragment's CPU time ran without the GIL.

In CPython only the thread holding the global interpreter lock runs Python
code; C code that releases it (hashlib, zlib, numpy, I/O) runs in parallel.
The trace does not see the GIL, but it sees each thread's CPU clock, so:

    GIL-bound CPU of all threads during any interval <= the interval's length.

For one execution i of a fragment (wall w, CPU c, a share f of it GIL-free)
and the GIL-bound CPU ``o`` the other threads used meanwhile,
``(1 - f) c + o <= w``, i.e. ``f >= 1 - (w - o) / c``.  The bound says
something only when the others were busy with Python code (``o`` large): a
fragment that still got CPU at rate ~1 then ran outside the GIL.  Other
threads' CPU during an interval is interpolated from their clocks (a fragment
is assumed to use CPU at a constant rate); their GIL-bound part needs their
own shares, so the estimate is iterated from "everything holds the GIL".

The share of a fragment class is the CPU-weighted mean of the bounds over its
executions that met contention (others used at least half of the interval
for GIL-bound work); shares below ``low`` count as 0 and above ``high`` as 1,
since timing noise is of that order.

>>> import numpy as np
>>> # class 0 (hashing) runs at full speed beside class 1 (Python), which
>>> # elsewhere shares the GIL with another class-1 execution at half speed
>>> a = np.array([0, 0, 1e6, 1e6]); b = np.array([1e6, 1e6, 3e6, 3e6]); c = np.full(4, 1e6)
>>> gil_free_shares(a, b, c, np.array([0, 1, 1, 1]), 2).tolist()
[1.0, 0.0]
"""
from __future__ import annotations

import numpy as np

LOW, HIGH = 0.15, 0.85


def gil_clock(a, b, c, weight) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative GIL-bound CPU of all threads: (times, CPU ns used up to each).

    Every segment ``[a, b]`` uses ``weight * c`` ns of GIL-bound CPU at a
    constant rate.  ``np.interp(t, *clock)`` gives the amount up to time t.
    """
    w = b - a
    ok = w > 0
    slope = np.where(ok, weight * c / np.where(ok, w, 1), 0.0)
    t = np.concatenate([a[ok], b[ok]]).astype(float)
    d = np.concatenate([slope[ok], -slope[ok]])
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    if not len(t):
        return np.zeros(1), np.zeros(1)
    rate = np.cumsum(d)                                   # total rate right after t[k]
    W = np.concatenate([[0.0], np.cumsum(rate[:-1] * np.diff(t))])
    return t, W


def busy(clock, a, b) -> np.ndarray:
    """GIL-bound CPU all threads used during each interval [a, b]."""
    t, W = clock
    return np.interp(b, t, W) - np.interp(a, t, W)


def _others(a, b, c, weight):
    """GIL-bound CPU the other threads used during each [a, b]."""
    return busy(gil_clock(a, b, c, weight), a, b) - weight * c


def gil_free_shares(a, b, c, klass, nclass: int, *, extra=None, iters: int = 6,
                    min_cpu: int = 20_000, contention: float = 0.5,
                    low: float = LOW, high: float = HIGH, clock: list | None = None) -> np.ndarray:
    """GIL-free share per fragment class.

    ``a``, ``b``, ``c``: start, end and CPU (ns) of every fragment execution;
    ``klass``: its class (0..nclass-1, or -1 for CPU that is not modelled but
    competes: it is taken as GIL-bound).  ``extra`` = (a, b, c) of further
    GIL-bound CPU (operations' own CPU).  If ``clock`` is a list, the final
    GIL clock (:func:`gil_clock`) is appended to it.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    klass = np.asarray(klass, dtype=np.int64)
    if extra is not None:
        ea, eb, ec = (np.asarray(x, dtype=float) for x in extra)
        a2, b2, c2 = np.concatenate([a, ea]), np.concatenate([b, eb]), np.concatenate([c, ec])
        k2 = np.concatenate([klass, np.full(len(ea), -1)])
    else:
        a2, b2, c2, k2 = a, b, c, klass
    f = np.zeros(nclass)
    n = len(a)
    informative = (c >= min_cpu) & (klass >= 0) & (b > a)
    if nclass == 0 or not informative.any():
        if clock is not None:
            clock.append(gil_clock(a2, b2, c2, np.ones(len(a2))))
        return f
    for _ in range(iters):
        weight = np.where(k2 >= 0, 1.0 - f[np.maximum(k2, 0)], 1.0)
        o = _others(a2, b2, c2, weight)[:n]
        w = b - a
        sel = informative & (o >= contention * w)
        bound = np.clip(1.0 - (w - o) / np.maximum(c, 1), 0.0, 1.0)
        num = np.bincount(klass[sel], weights=(bound * c)[sel], minlength=nclass)
        den = np.bincount(klass[sel], weights=c[sel], minlength=nclass)
        new = np.where(den > 0, num / np.maximum(den, 1e-300), 0.0)
        f = 0.5 * (f + new)
    f = np.where(f < low, 0.0, np.where(f > high, 1.0, f))
    if clock is not None:
        weight = np.where(k2 >= 0, 1.0 - f[np.maximum(k2, 0)], 1.0)
        clock.append(gil_clock(a2, b2, c2, weight))
    return f
