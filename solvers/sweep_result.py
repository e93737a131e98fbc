"""The result of a parameter sweep, whatever method solved it, and its layouts:
one table per measure, a summary of what failed or warned, JSON and CSV.

:class:`SweepResult` holds ``points[i].params`` and ``points[i].result``;
:func:`sweep_points` orders the points as the simulator orders its lanes.

>>> sweep_points({"a": [1, 2], "b": ["x", "y"]})
[{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]
"""
from __future__ import annotations

import csv
import io
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from qpn.texttable import aligned

from .result import ON_REQUEST, UNITS, Result, _g, _jsonable_default, expand_measures, strict_json

# ------------------------------------------------------------- the type
@dataclass
class PointResult:
    """One sweep point: its parameter values and result (or why it failed)."""
    params: dict
    result: Result | None
    error: str | None = None


@dataclass
class SweepResult:
    """Results of every sweep point; ``table(measure)`` lays one measure out per point.

    The same shape as the simulator's own sweep result (``points[i].params``,
    ``points[i].result``, ``info``), for every method.

    >>> import qpn
    >>> from qpn.solvers.sweep import run_sweep
    >>> sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.5, 0.8]})
    >>> [(p.params["lambda"], round(p.result.get("tokens", "server"), 6)) for p in sw.points]
    [(0.5, 1.0), (0.8, 4.0)]
    """
    points: list[PointResult] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def table(self, measure: str, digits: int = 6) -> str:
        """One measure laid out per point (:func:`sweep_table`).

        >>> import qpn
        >>> from qpn.solvers.sweep import run_sweep
        >>> sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.5, 0.8]})
        >>> print(sw.table("response"))
        response [s]:
        lambda  server
        ------  ------
           0.5       2
           0.8       5
        """
        return sweep_table(self, measure, digits)

    def measures(self) -> list[str]:
        """The measures present at any point, in order.

        >>> import qpn
        >>> from qpn.solvers.sweep import run_sweep
        >>> sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.5, 0.8]})
        >>> sw.measures()[:3]
        ['tokens', 'queue_tokens', 'arrivals']
        """
        return sweep_measures(self)

    def to_dict(self) -> dict:
        """Every point as plain data (what ``--json`` writes for a sweep).

        >>> import qpn
        >>> from qpn.solvers.sweep import run_sweep
        >>> sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.5, 0.8]})
        >>> d = sw.to_dict()
        >>> d["method"], d["sweep"], [p["params"] for p in d["points"]]
        ('mva', {'lambda': [0.5, 0.8]}, [{'lambda': 0.5}, {'lambda': 0.8}])
        """
        return sweep_to_dict(self)

    def to_json(self, path: str | None = None) -> str:
        """Strict JSON of :meth:`to_dict`; written atomically to ``path`` if given.

        >>> import json
        >>> import qpn
        >>> from qpn.solvers.sweep import run_sweep
        >>> sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.5, 0.8]})
        >>> json.loads(sw.to_json())["points"][1]["result"]["params"]
        {'lambda': 0.8, 'demand': 1.0}
        """
        return sweep_to_json(self, path)

    def to_csv(self, path: str | None = None) -> str:
        """Long-format CSV, one column per swept parameter; written to ``path`` if given.

        >>> import qpn
        >>> from qpn.solvers.sweep import run_sweep
        >>> sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.5, 0.8]})
        >>> sw.to_csv().splitlines()[:2]
        ['lambda,measure,element,color,value,ci_halfwidth,unit', '0.5,tokens,server,,1.0,,']
        """
        return sweep_to_csv(self, path)


def sweep_points(sweep: dict[str, list] | None) -> list[dict]:
    """The cartesian product, last parameter fastest (as the simulator orders lanes).

    >>> sweep_points({"n": [1, 2], "m": [3]})
    [{'n': 1, 'm': 3}, {'n': 2, 'm': 3}]
    """
    if not sweep:
        return [{}]
    names = list(sweep)
    return [dict(zip(names, vals)) for vals in itertools.product(*[sweep[n] for n in names])]


def point_label(params: dict) -> str:
    """``name=value, ...`` of one point.

    >>> point_label({"rate": 0.5, "threads": 4})
    'rate=0.5, threads=4'

    >>> point_label({"n": 2, "think": 0.5})
    'n=2, think=0.5'
    """
    return ", ".join(f"{k}={_fmt_param(v)}" for k, v in params.items())


def model_name(sw) -> str:
    """The model's name, from the first point that has a result."""
    for p in sw.points:
        if p.result is not None:
            return p.result.model
    return ""


def method_label(sw) -> str:
    """``des``, or for ``auto`` which method it chose at how many points."""
    method = sw.info.get("method", "")
    chosen: dict[str, int] = {}
    for p in sw.points:
        if p.result is not None:
            m = p.result.info.get("chosen", p.result.method)
            chosen[m] = chosen.get(m, 0) + 1
    if method == "auto" and chosen:
        if len(chosen) == 1:
            return f"auto (chose {next(iter(chosen))})"
        return "auto (chose " + ", ".join(f"{m} at {n} point(s)" for m, n in chosen.items()) + ")"
    return method or ", ".join(chosen)


def summary(sw) -> list[str]:
    """Lines for stderr: how the sweep ran, what the solvers said, warnings, failures."""
    out = []
    pts = sw.points
    ok = [p for p in pts if p.result is not None]
    names = list(sw.info.get("sweep") or (pts[0].params if pts else {}))
    wall = sw.info.get("wall")
    if sw.info.get("method") == "des" and ok:
        R = ok[0].result.info.get("replications")
        events = sum(int(p.result.info.get("events", 0)) for p in ok)
        stopped = sorted({str(p.result.info.get("stopped_by")) for p in ok})
        groups = sw.info.get("groups")
        if sw.info.get("shards"):
            where = (f"{sw.info['shards']} shard(s) on {sw.info.get('workers', '?')} Dask worker(s)")
        elif groups and groups > 1:
            where = f"{groups} engine runs (one per net structure)"
        else:
            where = "one engine run"
        line = (f"sweep over {' x '.join(names)}: {len(pts)} point(s) x {R} replication(s) = "
                f"{sw.info.get('lanes', len(pts) * (R or 1))} lanes in {where}"
                f", {events:,} events, stopped by {', '.join(stopped)}")
        if wall is not None:
            line += f", {wall:.2f} s"
        out.append(line)
    else:
        line = f"sweep over {' x '.join(names)}: {len(pts)} point(s) solved by {method_label(sw)}"
        if wall is not None:
            line += f" in {wall:.2f} s"
        out.append(line)
        firsts: dict[str, int] = {}
        for p in ok:
            if p.result.explanation:
                firsts[p.result.explanation[0]] = firsts.get(p.result.explanation[0], 0) + 1
        for text, n in list(firsts.items())[:1]:
            out.append(f"  {text}" + (f"  [{n} point(s)]" if len(firsts) > 1 else ""))
        if len(firsts) > 1:
            out.append(f"  ... and {len(firsts) - 1} other explanation(s) at the other points (see --json)")
    out += _grouped("warning", [(w, p.params) for p in ok for w in p.result.warnings], len(pts))
    for p in pts:
        if p.result is None:
            out.append(f"error at {point_label(p.params)}: {p.error}")
    if sw.info.get("partial"):
        out.append("interrupted: the points not yet solved are marked as errors")
    return out


def _grouped(kind: str, items: list[tuple[str, dict]], npoints: int) -> list[str]:
    where: dict[str, list[dict]] = {}
    for text, params in items:
        where.setdefault(text, []).append(params)
    out = []
    for text, at in where.items():
        if len(at) == npoints and npoints > 1:
            out.append(f"{kind}: {text} (at every point)")
        elif npoints == 1:
            out.append(f"{kind}: {text}")
        else:
            shown = "; ".join(point_label(p) for p in at[:3])
            more = f"; and {len(at) - 3} more" if len(at) > 3 else ""
            out.append(f"{kind}: {text} (at {shown}{more})")
    return out


# --------------------------------------------------------------- output
def _fmt_param(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format(v, ".12g")
    return str(v)


def sweep_measures(sw, want: Iterable[str] | None = None) -> list[str]:
    """Measures present at any point, in order (restricted to and ordered as ``want``;
    without it, those shown on request left out)."""
    seen: dict[str, None] = {}
    for p in sw.points:
        if p.result is not None:
            for r in p.result.rows:
                seen.setdefault(r.measure, None)
    if want:
        return [m for m in expand_measures(want) if m in seen]
    return [m for m in seen if m not in ON_REQUEST]


def title(sw) -> str:
    """The line above the tables: model, method, swept parameters, points, CI level."""
    names = list(sw.info.get("sweep") or (sw.points[0].params if sw.points else {}))
    t = f"{model_name(sw)}: {method_label(sw)}, sweep over {' x '.join(names)} ({len(sw.points)} points)"
    levels = {p.result.level for p in sw.points if p.result is not None and p.result.level is not None}
    if levels:
        t += ", " + "/".join(f"{int(round(l * 100))}%" for l in sorted(levels)) + " confidence intervals"
    if sw.info.get("partial") or any(p.result is not None and p.result.partial for p in sw.points):
        t += " (PARTIAL: stopped early)"
    kinds: dict[str, int] = {}      # points without numbers (solvers.status): say so up front
    for p in sw.points:
        if p.result is not None and p.result.degenerate:
            kinds[p.result.degenerate] = kinds.get(p.result.degenerate, 0) + 1
    if kinds:
        t += " -- " + ", ".join(f"{k.upper()} at {n} point(s)" for k, n in kinds.items())
    return t


def sweep_table(sw, measure: str, digits: int = 6) -> str:
    """One measure at every point: a row per point, a column per parameter and
    per element(color); simulated values carry ``± half-width``."""
    pts = sw.points
    if not pts:
        return ""
    names = list(pts[0].params)
    keys: list[tuple[str, str]] = []
    for p in pts:
        if p.result is not None:
            for r in p.result.rows:
                if r.measure == measure and (r.element, r.color) not in keys:
                    keys.append((r.element, r.color))
    head = names + [f"{e}({c})" if c else e for e, c in keys]
    rows = []
    for p in pts:
        row: list = [_fmt_param(p.params.get(n, "")) for n in names]
        idx = p.result._index() if p.result is not None else None
        for e, c in keys:
            if idx is None:
                row.append(("error", None))
                continue
            cell = idx.get((measure, e, c))
            if cell is None:
                row.append(("-", None))
            else:
                row.append((_g(cell.value, digits), None if cell.ci is None else _g(cell.ci, 2)))
        rows.append(row)
    cols = []
    for j in range(len(names), len(head)):
        vw = max(len(r[j][0]) for r in rows)
        cw = max((len(r[j][1]) for r in rows if r[j][1] is not None), default=0)
        cells = []
        for r in rows:
            v, ci = r[j]
            s = v.rjust(vw)
            if cw:
                s += "" if ci is None else f" ± {ci.ljust(cw)}"
                s = s.ljust(vw + 3 + cw)
            cells.append(s)
        cols.append(cells)
    body = [row[:len(names)] + [cols[k][i] for k in range(len(cols))] for i, row in enumerate(rows)]
    unit = UNITS.get(measure, "")
    heading = f"{measure}" + (f" [{unit}]" if unit else "") + ":"
    return "\n".join([heading] + [x.rstrip() for x in aligned(head, body)]) + "\n"


def sweep_text(sw, measures: Iterable[str] | None = None) -> str:
    """The title, then one table per measure."""
    parts = [title(sw) + "\n"]
    for m in sweep_measures(sw, measures):
        parts.append(sweep_table(sw, m))
    return "\n".join(parts)


def sweep_to_dict(sw) -> dict:
    """Every point (its parameters, and its result or error) and the sweep's info, as plain data."""
    pts = []
    for p in sw.points:
        d: dict = {"params": dict(p.params)}
        if p.result is not None:
            d["result"] = p.result.to_dict()
        else:
            d["error"] = getattr(p, "error", None)
        pts.append(d)
    return {"model": model_name(sw), "method": sw.info.get("method"),
            "sweep": sw.info.get("sweep") or {}, "info": json.loads(json.dumps(
                {k: v for k, v in sw.info.items() if k not in ("sweep", "method")},
                default=_jsonable_default)),
            "points": pts}


def sweep_to_json(sw, path: str | None = None) -> str:
    """Strict JSON of :func:`sweep_to_dict`; written atomically to ``path`` if given."""
    text = strict_json(sweep_to_dict(sw))
    if path is not None:
        from qpn.fileio import write_atomic
        write_atomic(path, text + "\n")
    return text


CSV_COLUMNS = ("measure", "element", "color", "value", "ci_halfwidth", "unit")


def sweep_to_csv(sw, path: str | None = None, measures: Iterable[str] | None = None) -> str:
    """Long format: the parameter columns, then measure, element, color, value,
    ci_halfwidth, unit; one line per point and cell."""
    names = list(sw.points[0].params) if sw.points else []
    want = set(measures) if measures else None
    pcols = [f"param_{n}" if n in CSV_COLUMNS else n for n in names]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(pcols + list(CSV_COLUMNS))
    for p in sw.points:
        if p.result is None:
            continue
        pv = [_fmt_param(p.params[n]) for n in names]
        for r in p.result.rows:
            if want is None or r.measure in want:
                w.writerow(pv + [r.measure, r.element, r.color, repr(r.value),
                                 "" if r.ci is None else repr(r.ci), r.unit])
    text = buf.getvalue()
    if path is not None:
        from qpn.fileio import write_atomic
        write_atomic(path, text)
    return text


__all__ = ["SweepResult", "PointResult", "sweep_points", "point_label", "sweep_table", "sweep_text",
           "sweep_measures", "sweep_to_dict", "sweep_to_json", "sweep_to_csv", "summary"]
