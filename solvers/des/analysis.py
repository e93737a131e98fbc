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
from .stats import bin_edges, percentile_from_hist, student_t

#: residence-time percentiles reported when histograms are kept
PERCENTILES = (0.5, 0.9, 0.95, 0.99)


# ----------------------------------------------------------------- points
def _ci(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Student-t half-width over the first axis (NaN-aware)."""
    n = np.sum(np.isfinite(values), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # empty or single-value columns: NaN
        mean = np.nanmean(values, axis=0)
        sd = np.nanstd(values, axis=0, ddof=1) if values.shape[0] > 1 else np.full(mean.shape, np.nan)
    half = student_t(level, n - 1) * sd / np.sqrt(np.maximum(n, 1))
    return mean, np.where(n > 1, half, np.nan)


def _per_bucket(st, lane: int, first: int):
    nb = int(st.nb_l[lane])
    b = slice(first, nb)
    t = np.maximum(st.bk_time[b, lane], 1e-300)
    tokens = st.bk_area[b, :, lane] / t[:, None]
    rates = st.bk_fires[b, :, lane] / t[:, None]
    busy = [bb[b, :, lane] / t[:, None] for bb in st.bk_busy]
    return tokens, rates, busy


def analyze(engine, lanes: np.ndarray, o: DESOptions, first: np.ndarray,
            distribution: bool = True) -> tuple[list, dict]:
    """Rows (measure, element, color, mean, half-width) for one point's lanes: Student-t
    intervals over its replications, or batch means over the buckets of a single one."""
    c = engine.c
    st = engine.stats
    time_, area, fires, busy, res = st.totals(first)
    lt = np.maximum(time_[lanes], 1e-300)
    tokens = area[lanes] / lt[:, None]
    rates = fires[lanes] / lt[:, None]
    qbusy = [b[lanes] / lt[:, None] for b in busy]
    rows = derive(c, tokens, rates, qbusy)
    out = []
    if len(lanes) >= 2:
        for m, e, col, v in rows:
            mean, half = _ci(np.asarray(v, float), o.level)
            out.append((m, e, col, float(mean), float(half)))
    else:  # one long replication: batch means over the buckets after the warm-up
        lane = int(lanes[0])
        bt, br, bb = _per_bucket(st, lane, int(first[lane]))
        brows = derive(c, bt, br, bb)
        for (m, e, col, v), (_, _, _, bv) in zip(rows, brows):
            _, half = _ci(np.asarray(bv, float), o.level)
            out.append((m, e, col, float(np.asarray(v).ravel()[0]), float(half)))
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
    for p, members in groups.items():
        place = c.places[p]
        cols = [(color_label(c.slot_color[c.places[p].slots[i]]), u) for i, (_, u) in
                enumerate(sorted(members, key=lambda x: x[1]))]
        entries = [("", [u for _, u in cols])] + ([(lab, [u]) for lab, u in cols] if len(cols) > 1 or cols[0][0] else [])
        for lab, us in entries:
            r = res[lanes][:, us].sum(axis=1)          # (lanes, 3)
            n, s1, s2 = r[:, 0].sum(), r[:, 1].sum(), r[:, 2].sum()
            if n < 2:
                continue
            mean = s1 / n
            var = max(s2 / n - mean * mean, 0.0) * n / (n - 1)
            out.append(("residence_var", place.name, lab, var, None))
            if point_hist is not None:
                h = point_hist[us].sum(axis=0)
                for q in PERCENTILES:
                    out.append((f"residence_p{int(round(q * 100))}", place.name, lab,
                                percentile_from_hist(h, q), None))
                nz = np.flatnonzero(h)             # the histogram itself: non-empty bins only
                edges = bin_edges()
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
