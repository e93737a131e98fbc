"""Parameter sweeps: parse ``--sweep`` specifications, solve every point, lay
the results out one table per measure.

A sweep is an ordered mapping ``{parameter: [values]}``; its points are the
cartesian product (the last parameter varies fastest).  The simulator runs all
points as lanes of one engine run (:func:`solvers.des.api.simulate`); the
analytic methods solve the points one after another.  Both give a
:class:`~solvers.sweep_result.SweepResult`: ``points[i].params`` and
``points[i].result``.

>>> parse_values("10:100:10", "rate")
[10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
>>> parse_values("0.1:0.5:0.1", "rho")
[0.1, 0.2, 0.3, 0.4, 0.5]
>>> parse_values("1,2,4,8", "threads"), parse_values("10 ms, 20 ms", "think")
([1, 2, 4, 8], ['10 ms', '20 ms'])
"""
from __future__ import annotations

import contextlib
import math
import re
import time
from decimal import ROUND_FLOOR, Decimal
from typing import Iterable

from qpn.errors import ModelError, ParameterError, QPNError, SolverError, suggest

# the result type and its layouts, here too for the callers that parse, run and print
from .sweep_result import (PointResult, SweepResult, point_label, summary, sweep_measures,  # noqa: F401
                           sweep_points, sweep_table, sweep_text, sweep_to_csv, sweep_to_dict,
                           sweep_to_json)

MAX_POINTS = 100_000
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_RANGE_HELP = "start:stop:step with plain numbers (stop included), e.g. 10:100:10 or 0.1:0.5:0.1"


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

    >>> parse_range("0.2:0.8:0.2", "lambda")
    [0.2, 0.4, 0.6, 0.8]
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
    (``10 ms``, ``2 * base``) is kept as an expression for the parameter.

    >>> parse_values("1,2,4", "n")
    [1, 2, 4]
    """
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
    """``NAME=VALUES`` from one ``--sweep`` argument.

    >>> parse_sweep("lambda=0.2:0.6:0.2")
    ('lambda', [0.2, 0.4, 0.6])
    """
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
    """Every ``--sweep`` argument; the product of all of them is the sweep.

    >>> parse_sweeps(["n=1,2", "think=1 s,2 s"])
    {'n': [1, 2], 'think': ['1 s', '2 s']}
    """
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
    if importlib.util.find_spec("qpn.solvers.des.distributed") is None:
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
        from .des.api import simulate
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



__all__ = ["SweepResult", "PointResult", "parse_values", "parse_range", "parse_sweep", "parse_sweeps",
           "sweep_points", "validate", "run_sweep", "sweep_table", "sweep_text", "sweep_measures",
           "sweep_to_dict", "sweep_to_json", "sweep_to_csv", "summary", "point_label"]
