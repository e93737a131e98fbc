"""Where the initial transient of a series ends: the MSER rule, shared by the simulator
(each replication's warm-up, solvers/des/stats.py) and the trace analyzer (a JIT's
warm-up in a thread's loop, frontends/analyze/warmup.py).

>>> import numpy as np
>>> int(mser(np.array([9.0, 9, 8, 2, 3, 2, 3, 2, 3, 2])[None, :, None])[0])
3
"""
from __future__ import annotations

import numpy as np


def mser(x: np.ndarray) -> np.ndarray:
    """MSER truncation per lane for series x (L, n, channels): the first kept
    observation d (d <= n/2) minimizing sum_{i>=d}(x_i - mean)^2 / (n-d)^2, the
    largest d over the channels."""
    L, n = x.shape[:2]
    if n < 4:
        return np.zeros(L, dtype=np.int64)
    xs = x.reshape(L, n, -1)
    rev = xs[:, ::-1]
    cnt = (n - np.arange(n))[None, :, None]
    # measures near 1e308 (a service time of 1e300 s) overflow here: inf/nan statistics,
    # not numpy warning lines (their truncation is as good as any)
    with np.errstate(over="ignore", invalid="ignore"):
        cs = np.cumsum(rev, axis=1)[:, ::-1]              # sums of x[d:]
        cs2 = np.cumsum(rev * rev, axis=1)[:, ::-1]
        var = cs2 - cs * cs / cnt                         # sum of squared deviations
        # a tail that is constant to rounding (a deterministic model's periodic series)
        # has no spread: 0, so that the earliest such d wins rather than rounding noise,
        # which put the cut of such series anywhere up to n/2
        var = np.where(var <= 1e-12 * cs2[:, :1], 0.0, var)
        stat = var / cnt ** 2
    dmax = n // 2
    d = np.argmin(stat[:, :dmax + 1], axis=1)             # (L, channels)
    return d.max(axis=1).astype(np.int64)
