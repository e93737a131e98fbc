"""When is a simulation precise enough, and how much does each estimate rest on?

* :func:`tolerances` — the sequential stopping rule's target per watched
  cell: a confidence half-width within ``rtol`` of the value, or of ``floor``
  times the largest value of the same measure, whichever is larger (a place
  holding 2e-6 tokens beside one holding 7 is estimated to 1% of 7 x 1%, not
  to 1% of 2e-6, which no run length reaches); ``atol`` replaces both;
* :func:`imprecise` — the cells that miss their target;
* :func:`observations` — per cell, how many observations it rests on
  (firings for throughputs, visits for place measures, completions for
  utilizations), counted after the warm-up over the point's replications;
* :func:`few_observations` — warnings for residence times (and the token
  counts they come with) whose visits' times are so uneven that a handful of
  long visits carry the mean: the *effective* number of observations
  (sum x)^2 / sum x^2 is small, so the spread across replications, and the
  interval built from it, may be too narrow.

>>> from qpn.solvers.des.options import DESOptions
>>> rows = [("tokens", "a", "", 7.0, 0.05), ("tokens", "b", "", 2e-6, 1e-6)]
>>> [round(t, 6) for t in tolerances(rows, DESOptions(rtol=0.01, floor=0.05, watch=("tokens",)))]
[0.07, 0.0035]
"""
from __future__ import annotations

import math

import numpy as np

from ..measures import class_labels, derive
from .options import DESOptions

#: effective observations below which a residence estimate is flagged
FEW_EFFECTIVE = 100


def tolerances(rows: list, o: DESOptions) -> list[float | None]:
    """Target half-width of every row (None: not watched, or zero / non-finite).  Only
    the elements ``watch_elements`` names are watched, when it names any.

    >>> rows = [("tokens", "a", "", 7.0, 0.05), ("tokens", "b", "", 2e-6, 1e-6)]
    >>> tolerances(rows, DESOptions(watch=("tokens",), watch_elements=("b",)))
    [None, 2e-08]
    """
    watch = set(o.watch)
    pats = tuple(getattr(o, "watch_elements", ()) or ())
    seen = _matcher(pats)
    floor = float(o.floor or 0.0)
    top: dict[str, float] = {}
    for m, e, _c, v, _h in rows:
        if m in watch and np.isfinite(v) and seen(e):
            top[m] = max(top.get(m, 0.0), abs(v))
    out: list[float | None] = []
    for m, e, _c, v, _h in rows:
        if m not in watch or not np.isfinite(v) or v == 0 or not seen(e):
            out.append(None)
        elif o.atol is not None:
            out.append(float(o.atol))
        else:
            out.append(float(o.rtol) * max(abs(v), floor * top[m]))
    return out


def _matcher(pats: tuple):
    """Whether an element is one ``pats`` name (all, when there are none)."""
    if not pats:
        return lambda e: True
    import fnmatch
    cache: dict = {}

    def seen(e: str) -> bool:
        hit = cache.get(e)
        if hit is None:
            hit = cache[e] = any(fnmatch.fnmatchcase(e, p) for p in pats)
        return hit
    return seen


def imprecise(rows: list, o: DESOptions) -> list[tuple]:
    """Rows (measure, element, color, value, half-width, target) that miss their target."""
    out = []
    for (m, e, c, v, h), tol in zip(rows, tolerances(rows, o)):
        if tol is None:
            continue
        if h is None or not np.isfinite(h) or h > tol:
            out.append((m, e, c, v, h, tol))
    return out


def observations(c, fires: np.ndarray) -> dict[tuple, int]:
    """(measure, element, color) -> observations, from firing counts per mode."""
    rows = derive(c, np.zeros(c.nslots), fires, [np.zeros(len(q.classes)) for q in c.queues])
    visits = {(e, col): float(v) for m, e, col, v in rows if m == "arrivals"}
    out: dict[tuple, int] = {}
    for m, e, col, v in rows:
        if m in ("throughput", "arrivals", "departures"):
            out[(m, e, col)] = int(round(float(v)))
        elif m in ("tokens", "queue_tokens", "residence", "response", "depository_tokens",
                   "depository_residence"):
            out[(m, e, col)] = int(round(visits.get((e, col), 0.0)))
    into = np.asarray(c.post.T @ fires).ravel()
    for qi, q in enumerate(c.queues):
        per = [into[s] for s in q.classes]
        out[("utilization", q.name, "")] = int(round(sum(per)))
        labels = class_labels(c, qi)
        if len(labels) > 1:
            for lab, n in zip(labels, per):
                out[("utilization", q.name, lab)] = int(round(n))
    return out


def few_observations(c, units: dict, res: np.ndarray) -> list[str]:
    """Warnings for residence times that rest on few effective observations.

    ``res``: residence sums (count, sum, sum of squares) per unit, after the
    warm-up, over the point's replications."""
    out = []
    by_place: dict[int, list[int]] = {}
    for (p, _key), u in units.items():
        by_place.setdefault(p, []).append(u)
    for p, us in by_place.items():
        n, s1, s2 = (float(x) for x in res[us].sum(axis=0))
        if n < 1 or s1 <= 0 or s2 <= 0:     # s2 underflows for subnormal residences (1e-320 s)
            continue
        eff = s1 * s1 / s2
        if eff < FEW_EFFECTIVE:
            name = c.places[p].name
            out.append(f"residence {name} (mean {s1 / n:.3g} s) rests on ~{eff:.0f} effective observations "
                       f"({int(n):,} visits, "
                       f"a few long ones carrying the mean): its confidence interval (and that of tokens "
                       f"{name}) may be too narrow; simulate longer")
    return out


def describe_miss(rows: list[tuple], limit: int = 3) -> str:
    """'tokens x 0.12 +/- 0.004 (target 0.0012), ...' for the worst misses."""
    def ratio(r):
        return math.inf if r[4] is None or not np.isfinite(r[4]) else r[4] / r[5]
    worst = sorted(rows, key=ratio, reverse=True)[:limit]
    parts = []
    for m, e, col, v, h, tol in worst:
        name = f"{m} {e}" + (f"({col})" if col else "")
        hw = "no interval" if h is None or not np.isfinite(h) else f"+/- {h:.3g}"
        parts.append(f"{name} = {v:.4g} {hw} (target {tol:.3g})")
    return "; ".join(parts) + (f"; and {len(rows) - limit} more" if len(rows) > limit else "")
