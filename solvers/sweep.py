"""Parameter sweeps: parse ``--sweep`` specifications, solve every point, lay
the results out one table per measure.

A sweep is an ordered mapping ``{parameter: [values]}``; its points are the
cartesian product (the last parameter varies fastest).  The simulator runs all
points as lanes of one engine run (:func:`solvers.des.solver.simulate`); the
analytic methods solve the points one after another.  Both give a
:class:`SweepResult`: ``points[i].params`` and ``points[i].result``.

>>> parse_values("10:100:10", "rate")
[10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
>>> parse_values("0.1:0.5:0.1", "rho")
[0.1, 0.2, 0.3, 0.4, 0.5]
>>> parse_values("1,2,4,8", "threads"), parse_values("10 ms, 20 ms", "think")
([1, 2, 4, 8], ['10 ms', '20 ms'])
>>> sweep_points({"a": [1, 2], "b": ["x", "y"]})
[{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]
"""
from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import math
import re
import time
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any, Iterable

from qpn.errors import ModelError, ParameterError, QPNError, SolverError, suggest

from .result import UNITS, Result, _g, _jsonable_default, strict_json

MAX_POINTS = 100_000
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_RANGE_HELP = "start:stop:step with plain numbers (stop included), e.g. 10:100:10 or 0.1:0.5:0.1"


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
    """
    points: list[PointResult] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def table(self, measure: str, digits: int = 6) -> str:
        return sweep_table(self, measure, digits)

    def measures(self) -> list[str]:
        return sweep_measures(self)

    def to_dict(self) -> dict:
        return sweep_to_dict(self)

    def to_json(self, path: str | None = None) -> str:
        return sweep_to_json(self, path)

    def to_csv(self, path: str | None = None) -> str:
        return sweep_to_csv(self, path)


# -------------------------------------------------------------- parsing
def _number(text: str) -> int | float | None:
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        v = float(text)
        return v if math.isfinite(v) else None
    return None


def parse_range(text: str, name: str = "?") -> list[int | float]:
    """``start:stop:step`` with the stop included, exact for decimal steps.

    Integers stay integers; ``0.1:0.3:0.1`` gives exactly ``[0.1, 0.2, 0.3]``.
    """
    where = f"--sweep {name}={text}"
    parts = [p.strip() for p in text.split(":")]
    if len(parts) != 3 or not all(parts):
        raise ParameterError(f"{where}: malformed range '{text}'", expected=_RANGE_HELP,
                             hint="for a list of values separate them with commas: 1,2,4,8")
    nums = []
    for what, p in zip(("start", "stop", "step"), parts):
        if _number(p) is None:
            raise ParameterError(f"{where}: the range {what} '{p}' is not a plain number",
                                 expected=_RANGE_HELP,
                                 hint="ranges take numbers in base units (seconds for times); "
                                      "list values with units instead: '10 ms,20 ms,30 ms'")
        nums.append(Decimal(p))
    a, b, s = nums
    if s == 0:
        raise ParameterError(f"{where}: the range step must not be zero", expected=_RANGE_HELP)
    q = (b - a) / s
    if q < 0:
        raise ParameterError(f"{where}: a step of {parts[2]} never reaches {parts[1]} from {parts[0]}",
                             expected=_RANGE_HELP,
                             hint=f"use a {'negative' if s > 0 else 'positive'} step to go "
                                  f"from {parts[0]} to {parts[1]}")
    k = q.to_integral_value(rounding=ROUND_FLOOR)
    if q - k > Decimal("0.999999999"):   # a step written with too few digits (e.g. 0:1:0.333333333333)
        k += 1
    n = int(k) + 1
    if n > MAX_POINTS:
        raise ParameterError(f"{where}: the range has {n:,} values (at most {MAX_POINTS:,})",
                             hint="use a larger step")
    ints = all(_INT.match(p) for p in parts)
    out: list[int | float] = []
    for i in range(n):
        v = a + i * s
        if (s > 0 and v > b) or (s < 0 and v < b):
            v = b
        out.append(int(v) if ints else float(v))
    return out


def parse_values(text: str, name: str = "?") -> list:
    """Comma-separated values and ranges: numbers stay numbers, other text
    (``10 ms``, ``2 * base``) is kept as an expression for the parameter."""
    out: list = []
    items = [t.strip() for t in text.split(",")]
    if not text.strip():
        raise ParameterError(f"--sweep {name}=: no values",
                             expected="NAME=v1,v2,... or NAME=start:stop:step",
                             hint=f"for example --sweep {name}=1,2,4,8")
    for item in items:
        if not item:
            raise ParameterError(f"--sweep {name}={text}: an empty value between commas",
                                 expected="NAME=v1,v2,... or NAME=start:stop:step")
        if ":" in item:
            out += parse_range(item, name)
        else:
            num = _number(item)
            out.append(item if num is None else num)
    return out


def parse_sweep(item: str) -> tuple[str, list]:
    """``NAME=VALUES`` from one ``--sweep`` argument."""
    if "=" not in item:
        raise ParameterError(f"--sweep expects NAME=VALUES, got '{item}'",
                             expected="NAME=v1,v2,... or NAME=start:stop:step",
                             hint="for example --sweep threads=1,2,4,8 --sweep rate=10:100:10")
    name, text = item.split("=", 1)
    name = name.strip()
    if not name:
        raise ParameterError(f"--sweep expects NAME=VALUES, got '{item}' (no name)",
                             expected="NAME=v1,v2,... or NAME=start:stop:step")
    return name, parse_values(text, name)


def parse_sweeps(items: Iterable[str] | None) -> dict[str, list]:
    """Every ``--sweep`` argument; the product of all of them is the sweep."""
    sweep: dict[str, list] = {}
    for item in items or []:
        name, values = parse_sweep(item)
        if name in sweep:
            raise ParameterError(f"--sweep {name} is given twice",
                                 hint=f"list every value once: --sweep {name}=v1,v2,...")
        sweep[name] = values
    total = math.prod(len(v) for v in sweep.values()) if sweep else 0
    if total > MAX_POINTS:
        raise ParameterError(f"the sweep has {total:,} points (at most {MAX_POINTS:,})",
                             hint="sweep fewer values or fewer parameters at once")
    return sweep


def sweep_points(sweep: dict[str, list] | None) -> list[dict]:
    """The cartesian product, last parameter fastest (as the simulator orders lanes)."""
    if not sweep:
        return [{}]
    names = list(sweep)
    return [dict(zip(names, vals)) for vals in itertools.product(*[sweep[n] for n in names])]


def point_label(params: dict) -> str:
    return ", ".join(f"{k}={_fmt_param(v)}" for k, v in params.items())


def validate(net, sweep: dict[str, list]) -> None:
    """Every name a parameter, every value acceptable, every point compilable.

    Raises :class:`ParameterError` (did-you-mean for names) before anything runs.
    """
    from qpn.compile import compile_net
    flat = net if net.is_flat else net.flatten()
    names = [p.name for p in flat.params]
    for name in sweep:
        if name not in names:
            raise ParameterError(f"--sweep: unknown parameter '{name}'",
                                 expected="one of: " + (", ".join(sorted(names)) or "(this net has none)"),
                                 did_you_mean=suggest(name, names))
    for name, values in sweep.items():
        for v in values:
            try:
                flat.with_params(**{name: v})
            except ModelError as exc:
                raise ParameterError(f"--sweep {name}={v}: {exc.message}", expected=exc.expected,
                                     hint=exc.hint, did_you_mean=exc.did_you_mean) from None
    points = sweep_points(sweep)
    if len(points) > 2000:      # checking every point would take a while: the values alone were checked
        return
    for pt in points:
        try:
            compile_net(flat, pt, check_only=True)
        except ModelError as exc:
            raise ParameterError(f"sweep point {point_label(pt)} does not make a valid net:\n{exc}") from None


# -------------------------------------------------------------- running
def check_distributed() -> None:
    """Refuse ``scheduler`` clearly when the distributed simulator is not installed."""
    import importlib.util
    if importlib.util.find_spec("solvers.des.distributed") is None:
        raise SolverError("error: distributed simulation (--scheduler) is not available in this "
                          "version of qpn; drop --scheduler to simulate on this machine")


def run_sweep(net, method: str, sweep: dict[str, list], options: dict | None = None, *,
              progress: bool = False) -> SweepResult:
    """Solve every point of ``sweep``: with ``des`` as lanes of one simulation,
    otherwise point by point (a point that fails is kept with its error)."""
    options = dict(options or {})
    t0 = time.perf_counter()
    if method == "des":
        if options.get("scheduler"):
            check_distributed()
        from .des.solver import simulate
        sw = simulate(net, sweep=sweep, options=options)
        out = SweepResult([PointResult(dict(p.params), p.result) for p in sw.points],
                          dict(getattr(sw, "info", {}) or {}))
    else:
        from qpn.progress import NullBar, progress as bar_on_stderr
        from . import solve
        out = SweepResult()
        points = sweep_points(sweep)
        bars = bar_on_stderr(f"solving {len(points)} points ({method})", total=len(points),
                             unit="points") if progress else contextlib.nullcontext(NullBar())
        try:
            with bars as bar:
                for pt in points:
                    try:
                        out.points.append(PointResult(pt, solve(net, method=method, options=options, **pt)))
                    except QPNError as exc:
                        out.points.append(PointResult(pt, None, str(exc)))
                    bar.update(1)
        except KeyboardInterrupt:
            out.info["partial"] = True
            out.points += [PointResult(pt, None, "not solved: interrupted")
                           for pt in points[len(out.points):]]
        if all(p.result is None for p in out.points) and not out.info.get("partial"):
            first = out.points[0]
            raise SolverError(f"error at {point_label(first.params)}: {first.error}"
                              + ("" if len(out.points) == 1 else " (and at every other sweep point)"))
    _fill_params(net, out)
    out.info.update(method=method, sweep={k: list(v) for k, v in sweep.items()},
                    points=len(out.points), wall=time.perf_counter() - t0)
    return out


def _fill_params(net, sw: SweepResult) -> None:
    """Every point's result carries the values of all parameters (as ``solve`` does)."""
    flat = None
    for p in sw.points:
        if p.result is not None and not p.result.params:
            if flat is None:
                flat = net if net.is_flat else net.flatten()
            try:
                p.result.params = flat.param_values(**p.params)
            except QPNError:
                p.result.params = dict(p.params)


def model_name(sw) -> str:
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
    """Measures present at any point, in order (restricted to and ordered as ``want``)."""
    seen: dict[str, None] = {}
    for p in sw.points:
        if p.result is not None:
            for r in p.result.rows:
                seen.setdefault(r.measure, None)
    if want:
        return [m for m in want if m in seen]
    return list(seen)


def title(sw) -> str:
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
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda cs: "  ".join(c.rjust(w) for c, w in zip(cs, widths)).rstrip()  # noqa: E731
    unit = UNITS.get(measure, "")
    heading = f"{measure}" + (f" [{unit}]" if unit else "") + ":"
    return "\n".join([heading, line(head), "  ".join("-" * w for w in widths)] +
                     [line(b) for b in body]) + "\n"


def sweep_text(sw, measures: Iterable[str] | None = None) -> str:
    """The title, then one table per measure."""
    parts = [title(sw) + "\n"]
    for m in sweep_measures(sw, measures):
        parts.append(sweep_table(sw, m))
    return "\n".join(parts)


def sweep_to_dict(sw) -> dict:
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


__all__ = ["SweepResult", "PointResult", "parse_values", "parse_range", "parse_sweep", "parse_sweeps",
           "sweep_points", "validate", "run_sweep", "sweep_table", "sweep_text", "sweep_measures",
           "sweep_to_dict", "sweep_to_json", "sweep_to_csv", "summary", "point_label"]
