"""The flow-check oracle: what every successful solve's JSON must satisfy.

Written apart from qpn's own check (solvers/flowcheck.py) on purpose: it reads only
the result file a user gets.  For an analytic answer (no confidence intervals) with
status ok, every place's arrivals equal its departures and its tokens equal arrivals
x residence (Little's law); for every answer, counts, rates and times are not
negative.  A stiff CTMC once answered five transitions of one cycle with throughputs
26% apart, exit 0 (docs/robustness.md).

>>> ok = {"status": "ok", "measures": [
...     {"measure": "arrivals", "element": "a", "color": "", "value": 0.5, "ci": None},
...     {"measure": "departures", "element": "a", "color": "", "value": 0.5, "ci": None}]}
>>> flow_wrong(ok) is None
True
>>> ok["measures"][1]["value"] = 0.6
>>> print(flow_wrong(ok))
place a: arrivals 0.5 but departures 0.6 (an analytic answer with status ok)
"""
from __future__ import annotations

import math

REL = 1e-6
NONNEGATIVE = ("tokens", "queue_tokens", "depository_tokens", "arrivals", "departures",
               "residence", "response", "utilization", "throughput")


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def flow_wrong(result: dict) -> str | None:
    """Why ``result`` (the JSON of ``qpn solve --json``) cannot be a steady state, or None."""
    rows = result.get("measures") or []
    cells: dict[tuple, dict] = {}
    analytic = True
    for r in rows:
        if not isinstance(r, dict):
            continue
        v = _num(r.get("value"))
        if r.get("ci") is not None:
            analytic = False
        if v is None or math.isnan(v):
            continue
        if r.get("measure") in NONNEGATIVE and v < -1e-9 * max(1.0, abs(v)):
            return f"{r['measure']} of {r.get('element')} is negative ({v:g})"
        cells.setdefault((r.get("element"), r.get("color") or ""), {})[r.get("measure")] = v
    if not analytic or result.get("level") is not None or result.get("status") != "ok":
        return None
    for (element, color), c in sorted(cells.items(), key=str):
        where = f"place {element}" + (f" color {color}" if color else "")
        a, d = c.get("arrivals"), c.get("departures")
        if a is not None and d is not None and math.isfinite(a) and math.isfinite(d) \
                and abs(a - d) > REL * max(abs(a), abs(d)) + 1e-12:
            return f"{where}: arrivals {a:.6g} but departures {d:.6g} (an analytic answer with status ok)"
        n, w = c.get("tokens"), c.get("residence")
        if None not in (a, n, w) and a > 1e-12 and all(map(math.isfinite, (a, n, w))) \
                and abs(n - a * w) > REL * max(abs(n), abs(a * w)) + 1e-12:
            return f"{where}: {n:.6g} tokens but arrivals x residence {a * w:.6g} (Little's law)"
    return None
