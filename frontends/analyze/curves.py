"""Candidate curves for a demand as a function of one feature, compared by k-fold
cross-validation (Freud's model classes: constant, line, n log n, parabola, and piecewise
lines split by a condition on the feature; Rogora, Probabilistic Performance Annotations,
§4.2).

Each candidate is a ``predict(x_train, y_train, x_test)`` function; :func:`cv_mse` scores
it by its mean squared error over the folds, and :func:`choose` takes the simplest
candidate within 1% of the best error or within one standard error of it
(``CANDIDATES`` is ordered by complexity).  The piecewise candidate picks its breakpoint
inside each fold, from the training part only, so its cross-validated error pays for the
choice.

>>> a = np.tile(np.arange(21.0), 5)                     # Freud's A.16, in us
>>> y = np.where(a < 10, (10 - a) * 400, 4000 + (a - 10) * 400)
>>> bp, (a1, b1), (a2, b2) = piecewise(a, y)
>>> bp, round(a1), round(b1), round(a2), round(b2)
(9.0, 4000, -400, 0, 400)
>>> choose(a, y)[0]
'piecewise'
>>> noise = np.random.default_rng(1).normal(0, 5, len(a))
>>> choose(a, 7 + 3 * a + noise)[0]                    # a noisy line is still a line
'line'
>>> n = np.tile(np.arange(2.0, 400.0, 3), 2)
>>> choose(n, 50 + 2 * n * np.log2(n))[0], [round(c, 6) for c in nlogn(n, 50 + 2 * n * np.log2(n))]
('nlogn', [50.0, 2.0])
"""
from __future__ import annotations

import numpy as np

#: distinct feature values each side of a breakpoint needs (a line through two means
#: would fit them whatever the demand does)
MIN_SIDE = 3


def cv_errors(x: np.ndarray, y: np.ndarray, predict, k: int = 5) -> np.ndarray:
    """The squared error of each sample predicted by ``predict(x_train, y_train, x_test)``
    trained on the other folds of k (sample i is in fold i mod k: shuffle first if the
    order means something)."""
    idx = np.arange(len(x))
    err = np.empty(len(x))
    for f in range(k):
        test = idx % k == f
        err[test] = (predict(x[~test], y[~test], x[test]) - y[test]) ** 2
    return err


def cv_mse(x: np.ndarray, y: np.ndarray, predict, k: int = 5) -> float:
    """Mean squared error of ``predict(x_train, y_train, x_test)`` over k folds."""
    return float(cv_errors(x, y, predict, k).mean())


def const(xt, yt, xs):
    return np.full(len(xs), yt.mean())


def line(xt, yt, xs):
    if np.ptp(xt) == 0:
        return const(xt, yt, xs)
    b, a = np.polyfit(xt, yt, 1)
    return a + b * xs


def xlog2x(x: np.ndarray) -> np.ndarray:
    """x log2 x (0 at 0)."""
    x = np.asarray(x, float)
    return x * np.log2(np.where(x > 0, x, 1.0))


def nlogn(x, y) -> tuple[float, float]:
    """(a, b) of the least-squares y = a + b x log2 x (x >= 0)."""
    b, a = np.polyfit(xlog2x(x), y, 1)
    return float(a), float(b)


def _nlogn(xt, yt, xs):
    if len(np.unique(xt)) < 2:
        return const(xt, yt, xs)
    a, b = nlogn(xt, yt)
    return a + b * xlog2x(xs)


def quadratic(xt, yt, xs):
    if len(np.unique(xt)) < 3:
        return line(xt, yt, xs)
    c2, c1, c0 = np.polyfit(xt, yt, 2)
    return c0 + c1 * xs + c2 * xs * xs


def means(xt, yt, xs):
    m = {v: yt[xt == v].mean() for v in np.unique(xt)}
    return np.array([m.get(v, yt.mean()) for v in xs])


def piecewise(x, y, min_side: int = MIN_SIDE):
    """(breakpoint, (a1, b1), (a2, b2)): the two least-squares lines, y = a1 + b1 x where
    x <= breakpoint and a2 + b2 x above, whose split between two distinct sorted values of
    x (the breakpoint is the left one; each side with ``min_side`` values) leaves the
    least squared error; None if x has too few distinct values."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    # centred and scaled, so that the sums of squares keep their precision
    u = (xs - xs.mean()) / (np.ptp(xs) or 1.0)
    v = (ys - ys.mean()) / (np.std(ys) or 1.0)
    last = np.flatnonzero(np.diff(xs) > 0)          # index of the last of each value but one
    n_values = len(last) + 1
    if n_values < 2 * min_side:
        return None
    cands = last[min_side - 1:n_values - min_side]  # split after these indices
    sums = [np.concatenate(([0.0], np.cumsum(t))) for t in (np.ones_like(u), u, v, u * u, u * v, v * v)]
    total = [s[-1] for s in sums]

    def sse(n, sx, sy, sxx, sxy, syy):
        vxx = sxx - sx * sx / n
        vxy = sxy - sx * sy / n
        vyy = syy - sy * sy / n
        return vyy - vxy * vxy / vxx
    left = [s[cands + 1] for s in sums]
    right = [t - s for t, s in zip(total, left)]
    j = int(cands[np.argmin(sse(*left) + sse(*right))])
    lo, hi = slice(0, j + 1), slice(j + 1, None)
    b1, a1 = np.polyfit(xs[lo], ys[lo], 1)
    b2, a2 = np.polyfit(xs[hi], ys[hi], 1)
    return float(xs[j]), (float(a1), float(b1)), (float(a2), float(b2))


def _piecewise(xt, yt, xs):
    p = piecewise(xt, yt)
    if p is None:
        return line(xt, yt, xs)
    bp, (a1, b1), (a2, b2) = p
    cut = (bp + xt[xt > bp].min()) / 2             # an unseen value: the nearer side
    return np.where(xs <= cut, a1 + b1 * xs, a2 + b2 * xs)


#: the candidates, simplest first, and whether each applies to the distinct values
#: ``vals`` (sorted) of the feature; "classes" (a mean per value) only to few values
CANDIDATES = (
    ("const", const, lambda vals, few: True),
    ("line", line, lambda vals, few: True),
    # with 3 values a curve of 3 parameters passes through the 3 means: no evidence
    ("nlogn", _nlogn, lambda vals, few: len(vals) >= 4 and vals[0] >= 0),
    ("quadratic", quadratic, lambda vals, few: len(vals) >= 4),
    ("piecewise", _piecewise, lambda vals, few: len(vals) >= 2 * MIN_SIDE),
    ("classes", means, lambda vals, few: few),
)


def choose(x, y, few: bool = False, tolerance: float = 0.01) -> tuple[str, dict]:
    """(kind, {kind: cross-validated mean squared error}): the simplest candidate whose
    error is within ``tolerance`` of the best's, or within one standard error of the
    sample-by-sample difference from it (the one-standard-error rule: a more complex
    curve must beat a simpler one by more than the folds' noise; without it 16 of 100
    noisy lines of 150 samples came out a curve or two lines: test_piecewise.py).  ``few``: the distinct values
    are few enough for a mean each ("classes" competes).  x and y are used in their order
    for the folds: shuffle them first if it means something."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    vals = np.unique(x)
    errs = {k: cv_errors(x, y, f) for k, f, ok in CANDIDATES if ok(vals, few)}
    best = min(errs.values(), key=np.mean)
    for kind, e in errs.items():
        d = e - best
        if d.mean() <= tolerance * best.mean() + d.std(ddof=1) / np.sqrt(len(d)) + 1e-300:
            break
    return kind, {k: float(e.mean()) for k, e in errs.items()}
