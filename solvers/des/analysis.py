"""Estimates of one point from a finished run: the measures with confidence intervals,
residence-time variance, percentiles and histograms, and where each lane's warm-up ends.

Replications give Student-t intervals over lanes; a single long replication gives
batch means over its time buckets.  The sequential stopping rule
(:func:`solvers.des.group.sequential_rule`) and the result (:mod:`solvers.des.solver`)
both read these.
"""
from __future__ import annotations

import warnings

import numpy as np

from qpn.colors import color_label

from ..measures import derive
from .options import DESOptions
from .stats import bin_edges, percentiles_from_hist, student_t

#: residence-time percentiles reported when histograms are kept
PERCENTILES = (0.5, 0.9, 0.95, 0.99)


# ----------------------------------------------------------------- points
def _ci(values: np.ndarray, level: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Student-t half-width over ``axis`` (NaN-aware)."""
    n = np.sum(np.isfinite(values), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # empty or single-value columns: NaN
        mean = np.nanmean(values, axis=axis)
        sd = np.nanstd(values, axis=axis, ddof=1) if values.shape[axis] > 1 else np.full(mean.shape, np.nan)
    half = student_t(level, n - 1) * sd / np.sqrt(np.maximum(n, 1))
    return mean, np.where(n > 1, half, np.nan)


def _stacked(values: list, n: int) -> np.ndarray:
    """The rows' values one above the other: (len(values), n).  Reduced along the last
    (contiguous) axis, each row sums as it would alone (numpy's pairwise summation), so
    identical lanes still give a half-width of exactly 0."""
    out = np.empty((len(values), n))
    for i, v in enumerate(values):
        out[i] = np.asarray(v, float).reshape(-1)[:n] if np.ndim(v) else v
    return out


def _per_bucket(st, lane: int, first: int):
    nb = int(st.nb_l[lane])
    b = slice(first, nb)
    t = np.maximum(st.bk_time[b, lane], 1e-300)
    tokens = st.bk_area[b, :, lane] / t[:, None]
    rates = st.bk_fires[b, :, lane] / t[:, None]
    busy = [bb[b, :, lane] / t[:, None] for bb in st.bk_busy]
    return tokens, rates, busy


def analyze(engine, lanes: np.ndarray, o: DESOptions, first: np.ndarray,
            distribution: bool = True, measures: frozenset | None = None) -> tuple[list, dict]:
    """Rows (measure, element, color, mean, half-width) for one point's lanes: Student-t
    intervals over its replications, or batch means over the buckets of a single one;
    only those of ``measures``, if given (a precision check reads the watched ones)."""
    c = engine.c
    st = engine.stats
    time_, area, fires, busy, res = st.totals(first)
    lt = np.maximum(time_[lanes], 1e-300)
    tokens = area[lanes] / lt[:, None]
    rates = fires[lanes] / lt[:, None]
    qbusy = [b[lanes] / lt[:, None] for b in busy]
    rows = derive(c, tokens, rates, qbusy)
    if measures is not None:
        rows = [r for r in rows if r[0] in measures]
    out = []
    if len(lanes) >= 2:
        # every row's interval at once (a row each per place, color, measure: a net of
        # thousands of colors has tens of thousands of rows)
        mean, half = _ci(_stacked([v for *_, v in rows], len(lanes)), o.level, axis=1)
        out = [(m, e, col, float(mean[i]), float(half[i]))
               for i, (m, e, col, _) in enumerate(rows)]
    else:  # one long replication: batch means over the buckets after the warm-up
        lane = int(lanes[0])
        bt, br, bb = _per_bucket(st, lane, int(first[lane]))
        brows = derive(c, bt, br, bb)
        if measures is not None:
            brows = [r for r in brows if r[0] in measures]
        _, half = _ci(_stacked([bv for *_, bv in brows], len(bt)), o.level, axis=1)
        out = [(m, e, col, float(np.asarray(v).ravel()[0]), float(half[i]))
               for i, (m, e, col, v) in enumerate(rows)]
    info = {}
    if distribution:
        out += _residence_distribution(engine, lanes, res, first, o, info)
    return out, info


def _residence_distribution(engine, lanes, res, first, o, info):
    """Variance and percentiles of residence times, from the tokens themselves."""
    c = engine.c
    out = []
    groups: dict[int, list[tuple[str, int]]] = {}
    for (p, col), u in engine.units.items():
        groups.setdefault(p, []).append((col, u))
    st = engine.stats
    point_hist = None
    if st.hist is not None and len(lanes):
        point_hist = st.point_hist(int(st.point[lanes[0]]), lanes, first)
    per_unit = res[lanes].sum(axis=0)                   # (units, 3): the lanes pooled
    edges = bin_edges()
    for p, members in groups.items():
        place = c.places[p]
        cols = [(color_label(c.slot_color[c.places[p].slots[i]]), u) for i, (_, u) in
                enumerate(sorted(members, key=lambda x: x[1]))]
        entries = [("", [u for _, u in cols])] + ([(lab, [u]) for lab, u in cols] if len(cols) > 1 or cols[0][0] else [])
        for lab, us in entries:
            n, s1, s2 = per_unit[us].sum(axis=0).tolist()
            if n < 2:
                continue
            mean = s1 / n
            var = max(s2 / n - mean * mean, 0.0) * n / (n - 1)
            out.append(("residence_var", place.name, lab, var, None))
            if point_hist is not None:
                h = point_hist[us[0]] if len(us) == 1 else point_hist[us].sum(axis=0)
                for q, v in zip(PERCENTILES, percentiles_from_hist(h, PERCENTILES)):
                    out.append((f"residence_p{int(round(q * 100))}", place.name, lab, v, None))
                nz = np.flatnonzero(h)             # the histogram itself: non-empty bins only
                info.setdefault("histograms", {})[place.name + (f"({lab})" if lab else "")] = {
                    "lower": edges[nz].tolist(), "upper": edges[nz + 1].tolist(), "count": h[nz].tolist()}
    return out


# --------------------------------------------------------------- solving


def warmup_start(engine, o: DESOptions) -> np.ndarray:
    """The first bucket of every lane after the warm-up: MSER's truncation point, a fixed
    simulated time, or none (option ``warmup``)."""
    st = engine.stats
    w = o.warmup
    if w == "mser":
        return st.truncation()
    if not w:
        return np.zeros(engine.L, dtype=np.int64)
    cum = np.cumsum(st.bk_time, axis=0)                    # zeros past each lane's buckets
    return np.minimum(np.argmax(cum >= float(w), axis=0) + 1, np.maximum(st.nb_l - 2, 0)).astype(np.int64)
