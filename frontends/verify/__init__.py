"""``qpn verify suites/NAME``: measure a program over a grid, trace one configuration
(or a few), build the model, predict the whole grid and report the error.

    measure (measure.py) -> trace the build configs -> qpn build -> solve each point
    -> eps = |measured - predicted| / measured -> table, verify.json, verify.png

The manifest is ``suites/NAME/suite.toml`` (manifest.py, docs/verify.md).  The
prediction is an expression of the model's measures: ``throughput('PATTERN')``,
``residence``, ``response``, ``tokens``, ``utilization`` (the pattern, fnmatch
style, must name exactly one element), ``total('residence', 'PATTERN')`` (the sum over
every element the pattern names), and of the grid point's parameters.
"""
from __future__ import annotations

import fnmatch
import glob
import io
import json
import math
import os
import sys
from dataclasses import dataclass, field

from qpn.errors import QPNError
from qpn.fileio import check_output_dir, write_atomic
from qpn.texttable import aligned

from qpn.frontends.calibrate import loop_spread, speed_ratio
from qpn.frontends.tracers import TRACERS, tracer

from .manifest import Suite, load_suite
from .measure import ISOLATE, measure, setup, stdout_number

MEASURES = ("throughput", "residence", "response", "tokens", "utilization", "arrivals")


@dataclass
class Report:
    """What ``qpn verify`` found: one row per grid point, and the summary."""

    suite: str
    rows: list = field(default_factory=list)     # {point, measured, spread, range, predicted, ...}
    model: str = ""
    warnings: list = field(default_factory=list)
    bound: float | None = None                   # the suite's bound on the mean eps
    notes: list = field(default_factory=list)    # what the table's reader should know
    unit: str | None = None                      # of the measured (and predicted) value

    @property
    def mean_eps(self) -> float:
        """Mean relative error over the grid's points the model has a steady state at
        (NaN: none)."""
        eps = [r["eps"] for r in self.rows if r.get("eps") is not None]
        return sum(eps) / len(eps) if eps else math.nan

    @property
    def max_eps(self) -> float:
        """Largest relative error over those points."""
        return max((r["eps"] for r in self.rows if r.get("eps") is not None), default=math.nan)

    @property
    def unstable(self) -> list:
        """The points where the model has no steady state (its queues grow without bound)."""
        return [r for r in self.rows if r.get("unstable")]

    def table(self) -> str:
        """The report as a text table: each point's measured median, spread, prediction and
        error."""
        names = list(self.rows[0]["point"]) if self.rows else []
        speed = any(r.get("speed") is not None for r in self.rows)
        alt = any(r.get("if_divided") is not None for r in self.rows)
        head = names + ["measured", "spread"] + (["speed"] if speed else []) + \
            ["predicted", "eps"] + (["if divided"] if alt else [])
        lines = [head]
        for r in self.rows:
            lines.append([str(r["point"][n]) for n in names]
                         + [f"{r['measured']:.6g}", f"{100 * r['spread']:.1f}%"]
                         + ([_speed_cell(r)] if speed else [])
                         + ([f"{r['predicted']:.6g}", f"{100 * r['eps']:.1f}%"]
                            if not r.get("unstable") else ["unstable", "-"])
                         + ([f"{r['if_divided']:.6g}" if r.get("if_divided") is not None
                             else "-"] if alt else []))
        out = aligned(head, lines[1:])
        bad = self.unstable
        out.append(f"mean eps {100 * self.mean_eps:.1f}%, max {100 * self.max_eps:.1f}% "
                   f"over {len(self.rows) - len(bad)} configuration(s)"
                   + (f" ({len(bad)} unstable, left out)" if bad else ""))
        if bad:
            out.append(f"UNSTABLE (!): at {len(bad)} of {len(self.rows)} point(s) the model has "
                       f"no steady state ({bad[0]['unstable']}): the program's queues grow "
                       "there too or the model misses what holds its arrivals back; the value "
                       "measured is what a run of finite length saw")
        out += self.notes
        if speed:
            out.append("speed: a Python loop's time while tracing over its time while measuring "
                       "(below 1: the trace ran faster); in parentheses: not applied to the model "
                       "(calibration off, or within the loop's own spread)")
            other = [r for r in self.rows if other_spell(r)]
            if other:
                lo = min(r["speed"] for r in other)
                hi = max(r["speed"] for r in other)
                out.append(f"OTHER SPELL (!): at {len(other)} of {len(self.rows)} point(s) the "
                           f"machine ran Python at another speed while measuring than while "
                           f"tracing (speed {lo:.3f}-{hi:.3f}, beyond the loop's own spread): "
                           "their errors carry it; measure and trace again in one spell "
                           "(--remeasure), or scale the demands ([predict] calibrate = true)")
        return "\n".join(out)


#: a speed ratio this far from 1 (at least) is another spell of the machine
SPELL = 0.05


def other_spell(row: dict) -> bool:
    """Whether a point was measured in another spell of the machine than its trace: the
    Python loop's speed differs beyond the loop's own spread (and :data:`SPELL`)."""
    sp = row.get("speed")
    return sp is not None and not row.get("speed_applied") and \
        abs(sp - 1.0) > max(SPELL, row.get("speed_noise") or 0.0)


def _speed_cell(row: dict) -> str:
    if row.get("speed") is None:
        return "-"
    flag = "!" if other_spell(row) else ""
    return (f"{row['speed']:.3f}" if row.get("speed_applied") else f"({row['speed']:.3f})") + flag


def _predictor(result, point: dict):
    """The namespace a prediction expression is evaluated in."""
    def matching(measure: str, pattern: str, call: str, one: bool) -> list[str]:
        names = sorted({r.element for r in result.rows if r.measure == measure})
        hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if (len(hits) != 1) if one else not hits:
            raise QPNError(f"predict: {call} matches {len(hits)} elements "
                           f"({', '.join(hits[:8]) or 'none'}); the model has: "
                           f"{', '.join(names[:20])}")
        return hits

    def pick(measure: str):
        def get(pattern: str) -> float:
            (name,) = matching(measure, pattern, f"{measure}({pattern!r})", True)
            return result.get(measure, name)
        return get

    def total(measure: str, pattern: str) -> float:
        hits = matching(measure, pattern, f"total({measure!r}, {pattern!r})", False)
        return sum(result.get(measure, n) for n in hits)
    ns = {m: pick(m) for m in MEASURES}
    ns["total"] = total
    ns.update(point)
    ns.update({"min": min, "max": max, "sqrt": math.sqrt})
    return ns


def _evaluate(expr: str, ns: dict) -> float:
    try:
        return float(eval(compile(expr, "<predict.expr>", "eval"), {"__builtins__": {}}, ns))
    except QPNError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's expression: say which and why
        raise QPNError(f"predict: cannot evaluate {expr!r}: {type(exc).__name__}: {exc}") from None


def build_model(suite: Suite, out_dir: str, log=sys.stderr, retrace: bool = True):
    """Trace the build configurations (isolated) and build the model from them.  With
    ``retrace=False`` the traces of an earlier run of the same program and arguments are
    used again (``trace*.jsonl`` with a ``.key`` beside), so repeated runs build the same
    model."""
    import subprocess

    from qpn.frontends.analyze import build, read_run
    from qpn.frontends.pytrace import trace_command

    from .measure import canonical_key, program_key
    traces = []
    for i, cfg in enumerate(suite.configs):
        path = os.path.join(out_dir, f"trace{i}.jsonl")
        argv = suite.command({**cfg})
        key = program_key(suite, {**cfg})
        try:
            with open(path + ".key") as fh:
                same = canonical_key(fh.read()) == key and os.path.exists(path)
        except OSError:
            same = False
        if retrace or not same:
            # the key first: a run killed while tracing leaves no key beside a partial trace
            # (it would pass for the whole one), then the children of an earlier trace
            _forget_trace(path)
            for old in glob.glob(os.path.join(glob.escape(out_dir), f"trace{i}.*jsonl")):
                os.remove(old)
        if (retrace or not same) and suite.server:
            # the server is the program traced; the load program drives it meanwhile
            from .server import traced_server
            run_load = ((lambda: _traced_load(suite, argv, path + ".load.jsonl"))
                        if suite.trace_load else lambda: subprocess.run(
                            ISOLATE + argv, capture_output=True, text=True,
                            cwd=os.path.dirname(suite.program), timeout=600))
            load = traced_server(suite, {**cfg}, path, run_load)
            if load.returncode != 0:
                raise QPNError(f"{suite.name}: the load `{' '.join(argv)}` of the traced server "
                               f"exited with {load.returncode}: {load.stderr.strip()[-500:]}")
            # what the load program measured while the server was traced (outside.py)
            write_atomic(path + ".client", json.dumps({"value": stdout_number(suite, load.stdout)}))
            write_atomic(path + ".key", key)
            print(f"verify {suite.name}: traced the server at {cfg}", file=log)
        elif (retrace or not same) and suite.tracer in TRACERS:
            from qpn.frontends.trace import write_trace
            tr, code = tracer(suite.tracer)(argv, prefix=ISOLATE, timeout=600,
                                            cwd=os.path.dirname(suite.program))
            if code != 0:
                raise QPNError(f"{suite.name}: the traced run `{' '.join(argv)}` exited with {code}")
            tr.header.program["argv"] = [os.path.basename(argv[0])] + argv[1:]
            write_trace(path, tr.header, tr.events)
            write_atomic(path + ".key", key)
            print(f"verify {suite.name}: traced {cfg} with {suite.tracer}", file=log)
        elif retrace or not same:
            run = trace_command(ISOLATE + argv, path, cwd=os.path.dirname(suite.program),
                                stdout=subprocess.DEVNULL)
            if run.returncode != 0:
                raise QPNError(f"{suite.name}: the traced run `{' '.join(argv)}` exited with "
                               f"{run.returncode}")
            write_atomic(path + ".key", key)
            print(f"verify {suite.name}: traced {cfg}", file=log)
        trace = read_run(path)                    # with its child processes' traces
        if suite.trace_load:                      # and the load's, traced beside it
            from qpn.frontends.processes import join_traces
            trace = join_traces([trace, read_run(path + ".load.jsonl")])
        traces.append(trace)
    from qpn.frontends.analyze import Options
    res = build(traces[0], Options(cpu=suite.cpu), others=tuple(traces[1:]), name=suite.name)
    if res.info.get("reproduce"):        # the model against its own trace, first (reproduce.py)
        from qpn.frontends.analyze.reproduce import check, with_lines
        c = check(res.text, res.info["reproduce"])
        res.info["check"] = c
        res.text = with_lines(res.text, c.lines())
        for line in c.lines():
            print(f"verify {suite.name}: {line[2:]}", file=log)
    if suite.outside:
        res.info["outside"] = _outside(suite, out_dir, traces, log)
    res.info["traced_loop_ns"] = [x for t in traces for x in (t.header.machine or {}).get("python_loop_ns") or []]
    return res


def _forget_trace(path: str) -> None:
    """Remove a trace's ``.key`` and ``.client``: it is not the run of the program they
    name any more (it is about to be traced again)."""
    for extra in (".key", ".client"):
        try:
            os.remove(path + extra)
        except FileNotFoundError:
            pass


def _traced_load(suite: Suite, argv: list, out: str):
    """Run the load program traced into ``out`` (``[build] trace_load``); its exit status
    and output as :func:`subprocess.run` gives them."""
    import subprocess
    import tempfile

    from qpn.frontends.pytrace import trace_command
    with tempfile.TemporaryFile("w+") as fh:
        run = trace_command(ISOLATE + argv, out, cwd=os.path.dirname(suite.program), stdout=fh,
                            timeout=600)
        fh.seek(0)
        return subprocess.CompletedProcess(argv, run.returncode, fh.read(), "")


def _outside(suite: Suite, out_dir: str, traces: list, log) -> dict:
    """The latency outside the traced server (outside.py), from the load program's
    response times in the traced runs and the traces' connection spans."""
    from .outside import outside_latency
    runs = []
    for i, trace in enumerate(traces):
        try:
            with open(os.path.join(out_dir, f"trace{i}.jsonl.client")) as fh:
                client = json.load(fh)["value"]
        except (OSError, ValueError, KeyError):
            client = None
        if client is None:
            raise QPNError(f"{suite.name}: [predict] outside needs the load program's response "
                           f"time in the traced run of trace{i}.jsonl, which was not kept: "
                           "qpn verify --retrace")
        runs.append((client, trace.events, trace.processes))
    value, detail = outside_latency(runs, suite.outside)
    print(f"verify {suite.name}: outside the traced server: {value:g} {suite.outside} (the load "
          "program's response time less the server's connection spans: "
          + ", ".join(f"{d['client']:g} - {d['server']:g}" for d in detail) + ")", file=log)
    return {"value": value, "unit": suite.outside, "runs": detail}


def watched(expr: str) -> tuple:
    """The element names and patterns a prediction reads (its quoted arguments that name
    elements), for the simulator to stop when they are precise.

    >>> watched("1000 * residence('response.running') / throughput('*.begin')")
    ('response.running', '*.begin')
    """
    import re
    return tuple(dict.fromkeys(m for m in re.findall(r"""['"]([^'"]+)['"]""", expr)
                               if "." in m or "*" in m))


def _model_params(suite: Suite, point: dict, params: dict) -> dict:
    """Model parameter values for a grid point: ``predict.set`` expressions, else the
    point's (and fixed params') values for the model params of the same name."""
    values = {**suite.params, **point}
    out = {k: v for k, v in values.items() if k in params}
    for name, expr in suite.set.items():
        if name not in params:
            raise QPNError(f"{suite.dir}/suite.toml: [predict] set names {name!r}, which the model "
                           f"does not have (its params: {', '.join(sorted(params))})")
        out[name] = _evaluate(str(expr), dict(values))
    return out


def verify(directory: str, *, remeasure: bool = False, out_dir: str | None = None,
           log=sys.stderr, retrace: bool = False) -> Report:
    """Run a suite (see the module); writes ``verify.json`` (and ``verify.png``) there."""
    import qpn
    suite = load_suite(directory)
    out_dir = out_dir or os.path.join(directory, "verify")
    os.makedirs(out_dir, exist_ok=True)
    check_output_dir(out_dir)          # before measuring and tracing, not after
    setup(suite, log=log)
    if remeasure or retrace:
        # the traces are stale from now on: a run killed before it traced again must not
        # take them up as current (the next run traces, and measures only what is missing)
        for key in glob.glob(os.path.join(glob.escape(out_dir), "trace*.jsonl.key")):
            _forget_trace(key[:-len(".key")])
    measured = measure(suite, remeasure=remeasure, log=log)
    res = build_model(suite, out_dir, log=log, retrace=retrace or remeasure)
    write_atomic(os.path.join(out_dir, "model.qpn"), res.text)
    net = qpn.parse(res.text)
    report = Report(suite.name, model=os.path.join(out_dir, "model.qpn"), warnings=list(res.warnings),
                    bound=suite.bound, unit=suite.measured_unit)
    names = {p.name for p in net.params}
    traced = res.info.get("traced_loop_ns") or []
    if suite.calibrate and not (traced and all(measured[i]["loop_ns"] for i in measured)):
        report.warnings.append("no calibration: " + ("the traces" if not traced else "the cached measurements")
                               + " have no Python loop timing (taken before it existed): --remeasure "
                               "to calibrate; predictions use the traced CPU demands as they are")
    outside = res.info.get("outside")
    extra = {"outside": outside["value"]} if outside else {}
    # divisions one trace cannot decide and the suite does not set: both bounds predicted
    undecided = [v["split"] for v in res.info.get("second_trace", {}).values()
                 if v["split"] in names and v["split"] not in suite.set]
    for v in res.info.get("second_trace", {}).values():
        if v["split"] in undecided:
            report.notes.append(
                f"{v['split']} is an assumption one trace cannot decide (0: each thread's work "
                "does not depend on the pool size, predicted; 1: the work is divided, column "
                "'if divided'); a trace at another pool size decides it"
                + (f": {v['command']}, then [build] configs with both" if v["command"] else ""))
    for i, point in enumerate(suite.points()):
        params = _model_params(suite, point, names)
        # shown always (a spell of the machine is worth seeing), applied only when asked for:
        # on the 21 suites the loop's ratio did not track the programs' (docs/verify.md)
        speed = speed_ratio(traced, measured[i]["loop_ns"] or [])
        noise = loop_spread(traced, measured[i]["loop_ns"] or [])
        applied = suite.calibrate and speed is not None and abs(speed - 1.0) > noise
        if applied:
            # the measured runs' machine: demands / speed (speedup_* divide CPU demands only)
            for name in names:
                if name.startswith("speedup_"):
                    params[name] = float(params.get(name, 1.0)) * speed
        options = {k: v for k, v in suite.solve.items() if k != "method"}
        # precision on what the prediction reads, not on every token count of the model
        options.setdefault("watch_elements", watched(suite.expr))
        r = qpn.solve(net, suite.solve.get("method", "auto"),
                      options={"quiet": True, "seed": 1, **options}, **params)
        if getattr(r, "status", None) == "unstable":
            # no steady state: the point is reported as such, apart from the mean
            m = measured[i]
            report.rows.append({"point": point, "measured": m["value"], "spread": m["spread"],
                                "range": m["range"],
                                "samples": m["samples"], "load": m["load"], "speed": speed,
                                "speed_noise": noise, "speed_applied": applied,
                                "predicted": math.inf, "if_divided": None, "eps": None,
                                "unstable": (r.reason or "unstable").split(" (")[0],
                                "model_params": params})
            continue
        try:
            pred = _evaluate(suite.expr, _predictor(r, {**suite.params, **point, **extra}))
        except QPNError as e:
            if not getattr(r, "reason", None):
                raise
            # an expression over an empty result: the solver's verdict is the news
            raise QPNError(f"{suite.name} at {point}: the solver gave no measures: {r.reason} "
                           f"(model {report.model}; {e})") from None
        if not math.isfinite(pred) or pred == 0:
            report.warnings.append(f"the model predicts {pred} at {point}: it may deadlock or "
                                   f"never reach the measured element (qpn check {report.model})")
        report.warnings += [f"at {point}: {w}" for w in getattr(r, "warnings", [])]
        divided = None
        if undecided:                   # what one trace could not tell: the other bound
            alt = dict(params, **{sp: 1 for sp in undecided})
            ra = qpn.solve(net, suite.solve.get("method", "auto"),
                           options={"quiet": True, "seed": 1, **options}, **alt)
            try:
                divided = _evaluate(suite.expr, _predictor(ra, {**suite.params, **point,
                                                                **extra}))
            except QPNError:
                divided = None
        m = measured[i]
        report.rows.append({"point": point, "measured": m["value"], "spread": m["spread"],
                            "range": m["range"],
                            "samples": m["samples"], "load": m["load"], "speed": speed,
                            "speed_noise": noise, "speed_applied": applied, "predicted": pred,
                            "if_divided": divided,
                            "eps": abs(m["value"] - pred) / abs(m["value"]), "model_params": params})
    from qpn.solvers.result import finite_or_none
    write_atomic(os.path.join(out_dir, "verify.json"), json.dumps(finite_or_none(json.loads(json.dumps(
        {"suite": suite.name, "kind": suite.kind, "expr": suite.expr, "unit": report.unit,
         "outside": outside, "rows": report.rows,
         "mean_eps": report.mean_eps, "max_eps": report.max_eps, "warnings": report.warnings},
        default=str))), indent=1, allow_nan=False))
    _plot(report, os.path.join(out_dir, "verify.png"), log)
    return report


def _plot(report: Report, path: str, log) -> None:
    """Predicted against measured (matplotlib, if installed), written to ``path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("verify: pip install matplotlib for the plot (verify.png)", file=log)
        return
    fig = figure(report)
    if fig is None:
        return
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def _swept_parameter(rows: list) -> str | None:
    """The one grid parameter that varies over ``rows`` with numeric values (None: none,
    or several)."""
    names = list(rows[0]["point"]) if rows else []
    varying = [n for n in names if len({repr(r["point"][n]) for r in rows}) > 1]
    if len(varying) != 1 or len(rows) < 2:
        return None
    n = varying[0]
    return n if all(isinstance(r["point"][n], (int, float)) for r in rows) else None


def figure(report: Report):
    """The figure of ``verify.png`` (a matplotlib Figure; None: no row has a prediction):
    predicted against measured, each measured median with a bar from the lowest to the
    highest repeat, the axes in the measured value's unit (:attr:`Report.unit`); beside
    it, when one numeric parameter varies over the grid, both against that parameter."""
    import matplotlib.pyplot as plt
    rows = [r for r in report.rows if not r.get("unstable")]
    if not rows:
        return None
    unit = f" [{report.unit}]" if report.unit else ""
    xs = [r["measured"] for r in rows]
    ys = [r["predicted"] for r in rows]
    # rows of an older cache have no range: a bar of zero length there
    lo = [r["measured"] - (r.get("range") or (r["measured"],) * 2)[0] for r in rows]
    hi = [(r.get("range") or (r["measured"],) * 2)[1] - r["measured"] for r in rows]
    swept = _swept_parameter(rows)
    fig, axes = plt.subplots(1, 2 if swept else 1, figsize=(9.5 if swept else 4.5, 4.5),
                             squeeze=False)
    ax = axes[0, 0]
    ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", capsize=3,
                label="measured (bar: lowest to highest repeat)")
    for r, x, y in zip(rows, xs, ys):
        ax.annotate(" ".join(f"{k}={v}" for k, v in r["point"].items()), (x, y), fontsize=7)
    ends = [x - d for x, d in zip(xs, lo)] + [x + d for x, d in zip(xs, hi)] + ys
    a, b = min(ends) * 0.9, max(ends) * 1.1
    ax.plot([a, b], [a, b], "k--", linewidth=0.8, label="perfect prediction")
    ax.set_xlabel(f"measured{unit}")
    ax.set_ylabel(f"predicted{unit}")
    ax.legend(fontsize=7)
    ax.set_title(f"{report.suite}: mean eps {100 * report.mean_eps:.1f}%")
    if swept:
        ax = axes[0, 1]
        order = sorted(range(len(rows)), key=lambda k: rows[k]["point"][swept])
        px = [rows[k]["point"][swept] for k in order]
        ax.errorbar(px, [xs[k] for k in order],
                    yerr=[[lo[k] for k in order], [hi[k] for k in order]],
                    fmt="o-", capsize=3, label="measured (bar: lowest to highest repeat)")
        ax.plot(px, [ys[k] for k in order], "s--", label="predicted")
        ax.set_xlabel(swept)
        if all(isinstance(x, int) for x in px):
            from matplotlib.ticker import MaxNLocator
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(f"measured and predicted{unit}")
        ax.legend(fontsize=7)
        ax.set_title(f"over {swept}", fontsize=10)
    fig.tight_layout()
    return fig


__all__ = ["verify", "Report", "load_suite", "build_model", "figure"]
