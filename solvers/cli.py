"""``qpn solve``: solve a model with one method (or two, to compare), or a
parameter sweep (``--sweep``): with the simulator all points run as lanes of
one simulation; a table per measure lays the points out."""
from __future__ import annotations

import argparse
import math
import re
import sys

from qpn.cli import command, load_model, parse_sets
from qpn.errors import ModelError, ParameterError, QPNError, SolverError, suggest

from . import METHODS
from .result import UNITS
from .status import DEGENERATE, ExitStatus, epilog, exit_status

KERNELS = ("auto", "qn", "lindley", "general")
# simulator flags: attribute of args -> option name of solvers.des
DES_FLAGS = {"seed": "seed", "replications": "replications", "time": "time", "events": "events",
             "rtol": "rtol", "atol": "atol", "level": "level", "crn": "crn", "scheduler": "scheduler",
             "warmup": "warmup", "wall": "wall", "kernel": "kernel", "histograms": "histograms",
             "workers": "workers", "threads": "threads", "floor": "floor"}


def _option_value(v: str):
    s = v.strip()
    if s.lower() in ("true", "yes", "on"):
        return True
    if s.lower() in ("false", "no", "off"):
        return False
    try:
        return int(s) if s.lstrip("-").isdigit() else float(s)
    except ValueError:
        return s


def _options(args) -> dict:
    o: dict = {}
    if args.limit is not None:
        o["limit"] = args.limit
    if args.cutoff is not None:
        o["cutoff"] = args.cutoff
    for item in args.predicate or []:
        if "=" not in item:
            raise QPNError(f"--predicate expects name=expression, got '{item}'")
        k, v = item.split("=", 1)
        o.setdefault("predicates", {})[k.strip()] = v.strip()
    for item in args.option or []:
        if "=" not in item:
            raise QPNError(f"--option expects name=value, got '{item}'")
        k, v = item.split("=", 1)
        o[k.strip()] = _option_value(v)
    given = [a for a in DES_FLAGS if getattr(args, a, None) is not None]
    if given:
        uses_des = {args.method, args.compare} & {"des", "auto"}
        if not uses_des:
            flag = "--" + given[0].replace("_", "-")
            if given[0] == "histograms" and not args.histograms:
                flag = "--no-histograms"
            raise SolverError(f"error: {flag} is a simulation option; it has no effect with --method "
                              f"{args.method}" + (f" --compare {args.compare}" if args.compare else ""),
                              methods=("des", "auto"))
        if args.scheduler is not None and args.method != "des":
            raise SolverError("error: --scheduler needs --method des")
        for a in given:
            o[DES_FLAGS[a]] = getattr(args, a)
    from qpn import progress
    if (args.quiet or not progress.enabled()) and {args.method, args.compare} & {"des", "auto"}:
        o["quiet"] = True       # no progress bar when asked, nor into a log file
    return o


def _run(net, method: str, options: dict):
    from . import solve
    if method == "des" and options.get("scheduler"):
        # only simulate() hands the lanes to a scheduler
        import time
        from .des.solver import simulate
        from .sweep import check_distributed
        check_distributed()
        t0 = time.perf_counter()
        res = simulate(net, options=options)
        if not res.params:
            res.params = (net if net.is_flat else net.flatten()).param_values()
        if res.wall_time is None:
            res.wall_time = time.perf_counter() - t0
        return res
    return solve(net, method=method, options=options)


def _measures(args) -> list[str] | None:
    if not args.measure:
        return None
    names = [m.strip() for m in args.measure.split(",") if m.strip()]
    known = set(UNITS) | {"probability"}
    for m in names:
        if m not in known and not re.fullmatch(r"residence_p\d+", m):
            raise ParameterError(f"--measure: unknown measure '{m}'",
                                 expected="one of: " + ", ".join(sorted(known)),
                                 did_you_mean=suggest(m, known))
    return names or None


def _compare_table(a, b) -> str:
    rows = a.compare(b)
    head = ["measure", "element", "color", a.method, b.method, "rel. diff"]
    body = [[x.measure, x.element, x.color, f"{x.value:.6g}", f"{y.value:.6g}", f"{d:.2e}"]
            for x, y, d in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) if i >= 3 else c.ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in body]
    worst = max((d for _, _, d in rows), default=0.0)
    out.append(f"largest relative difference: {worst:.3e} over {len(rows)} measures")
    return "\n".join(out) + "\n"


def _solve_sweep(args, net, options: dict, measures) -> int:
    from .sweep import parse_sweeps, point_label, run_sweep, summary, sweep_text, validate
    sweep = parse_sweeps(args.sweep)
    for flag, bad in (("--compare", args.compare), ("--transient", args.transient),
                      ("--show-expressions", args.show_expressions)):
        if bad:
            raise QPNError(f"error: {flag} cannot be combined with --sweep")
    both = [n for n in parse_sets(args.set) if n in sweep]
    if both:
        raise ParameterError(f"parameter '{both[0]}' is given both with --set and with --sweep",
                             hint="drop one of them")
    validate(net, sweep)
    sw = run_sweep(net, args.method, sweep, options, progress=not args.quiet and sys.stderr.isatty())
    failed = [p for p in sw.points if p.result is None]
    for line in summary(sw):
        if not args.quiet or line.startswith(("error", "interrupted")):
            print(line, file=sys.stderr)
    for p in sw.points:      # a degenerate point has no numbers: say why where they would be
        if p.result is not None and p.result.degenerate:
            print(f"{p.result.degenerate} at {point_label(p.params)}: {p.result.reason}",
                  file=sys.stderr)
    sys.stdout.write(sweep_text(sw, measures))
    if args.plot:
        _plot(sw.to_dict(), args.plot, measures)
    if args.json:
        sw.to_json(args.json)
    if args.csv:
        sw.to_csv(args.csv)
    if failed:
        return 1
    return _status([p.result for p in sw.points], args)


@command("solve", "solve a model: auto, mva, ctmc, symbolic or des; --sweep for parameter sweeps")
def cmd_solve(args) -> int:
    from qpn.fileio import check_output
    for out in (args.json, args.csv, args.plot):  # before the solve, not after it
        check_output(out)
    if args.plot:
        from .plot import FORMATS
        if not args.plot.lower().endswith(FORMATS):
            raise ModelError(f"--plot writes {' or '.join(FORMATS)} files, not '{args.plot}'", None,
                             hint="for example --plot result.png")
    net = load_model(args.file, args.set)
    options = _options(args)
    measures = _measures(args)
    if args.sweep:
        return _solve_sweep(args, net, options, measures)
    if args.transient:
        from qpn.compile import compile_net
        from .ctmc import solve_transient
        try:
            times = [float(t) for t in args.transient.split(",")]
        except ValueError:
            raise QPNError(f"error: --transient expects times in seconds separated by commas, "
                           f"got '{args.transient}'") from None
        for res in solve_transient(compile_net(net), times, options):
            print(f"t = {res.info['time']:g}")
            sys.stdout.write(res.table(measures))
        return 0
    res = _run(net, args.method, options)
    if not args.quiet:
        for line in res.explanation[:1]:
            print(line, file=sys.stderr)
        for w in res.warnings:
            print(f"warning: {w}", file=sys.stderr)
    if args.compare:
        other = _run(net, args.compare, options)
        sys.stdout.write(_compare_table(res, other))
    else:
        sys.stdout.write(res.table(measures))
        if args.method == "symbolic" and args.show_expressions:
            for (m, e, c), x in res.info["expressions"].items():
                if measures is None or m in measures:
                    print(f"{m}({e}{', ' + c if c else ''}) = {x}")
    if args.json:
        res.to_json(args.json)
    if args.csv:
        res.to_csv(args.csv)
    if args.plot:
        _plot(res.to_dict(), args.plot, measures)
    return _status([res], args)


def _plot(d: dict, path: str, measures) -> None:
    from .plot import save_figure
    save_figure(d, path, list(measures) if measures else None)
    print(f"wrote {path}", file=sys.stderr)


#: exit status of a simulation that stopped before reaching its precision target
IMPRECISE_STATUS = int(ExitStatus.IMPRECISE)


def _status(results: list, args) -> int:
    """The exit status of these results (solvers.status.ExitStatus); says why on stderr.
    --allow-imprecise accepts a missed precision target, not a degenerate net."""
    kinds = [r.status for r in results]
    if getattr(args, "allow_imprecise", False):
        kinds = ["ok" if k == "imprecise" else k for k in kinds]
    status = exit_status(kinds)
    if status == ExitStatus.INTERRUPTED:
        print("error: interrupted: the results above are partial", file=sys.stderr)
    elif status == ExitStatus.IMPRECISE:
        missed = next(r for r in results if r.status == "imprecise")
        print(f"error: precision not reached ({missed.imprecise}); the estimates above are less "
              "precise than asked (--allow-imprecise accepts them)", file=sys.stderr)
    elif status != ExitStatus.OK:
        bad = next(r for r in results if DEGENERATE.get(r.degenerate) == status)
        print(f"error: {bad.degenerate}: {bad.reason}", file=sys.stderr)
    return int(status)


# ------------------------------------------------------ argument checking
def _typed(kind, what: str, test, need: str):
    def conv(text: str):
        try:
            v = kind(text)
        except (ValueError, TypeError):
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'") from None
        if not test(v):
            raise argparse.ArgumentTypeError(f"must be {need}, got '{text}'")
        return v
    return conv


def _count(text: str) -> int:
    v = float(text)
    if not math.isfinite(v) or v != int(v):
        raise ValueError(text)
    return int(v)


def _seconds(text: str) -> float:
    """A duration: plain seconds or with a unit ('10 min')."""
    try:
        return float(text)
    except ValueError:
        pass
    from dsl.parser import parse_expr
    from qpn.expr import evaluate
    try:
        return float(evaluate(parse_expr(text.strip(), "duration"), {}))
    except (QPNError, TypeError, ValueError, ZeroDivisionError):
        raise ValueError(text) from None


def _warmup(text: str):
    t = text.strip().lower()
    if t == "mser":
        return "mser"
    if t in ("none", "no", "off"):
        return 0
    try:
        v = _seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'mser', 'none' or a time in seconds, got '{text}'") from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"must be 'mser' or a time >= 0, got '{text}'")
    return v


def _replications(text: str):
    if text.strip().lower() == "auto":
        return "auto"
    return _typed(int, "an integer or 'auto'", lambda v: v >= 1, ">= 1")(text)


_positive = lambda v: math.isfinite(v) and v > 0  # noqa: E731


@cmd_solve.setup
def _(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = epilog()
    p.add_argument("--method", "-m", default="auto", choices=METHODS, help="solution method (default auto)")
    p.add_argument("--compare", choices=METHODS, help="also solve with this method and print the differences")
    p.add_argument("--measure", help="only these measures, comma separated (e.g. throughput,utilization)")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON (a sweep: every point)")
    p.add_argument("--plot", metavar="FILE", help="draw the result (.png or .svg; needs matplotlib): "
                   "bars per element, or measures against the swept parameter")
    p.add_argument("--csv", metavar="FILE",
                   help="write the result as CSV (a sweep: long format, one column per swept parameter)")
    p.add_argument("--sweep", action="append", metavar="NAME=VALUES",
                   help="solve at every value of parameter NAME: a list v1,v2,... or a range "
                        "start:stop:step (stop included, e.g. rate=10:100:10); repeat for the "
                        "cartesian product; with des all points run as lanes of one simulation")
    p.add_argument("--limit", type=int, help="CTMC: refuse beyond this many states (default 2,000,000)")
    p.add_argument("--cutoff", type=int, help="CTMC: population cut-off of open nets (default adaptive)")
    p.add_argument("--transient", metavar="T1,T2", help="CTMC: measures at these times from the initial marking")
    p.add_argument("--predicate", action="append", metavar="NAME=EXPR",
                   help="CTMC: probability of a marking predicate over place totals, e.g. idle=lock==1")
    p.add_argument("--option", action="append", metavar="NAME=VALUE", help="solver option (repeatable)")
    p.add_argument("--show-expressions", action="store_true", help="symbolic: print the closed forms")
    p.add_argument("-q", "--quiet", action="store_true", help="no explanation or progress on stderr")
    g = p.add_argument_group("simulation (des; also auto when it simulates)")
    g.add_argument("--seed", type=_typed(int, "an integer", lambda v: v >= 0, ">= 0"),
                   help="random seed (default 1)")
    g.add_argument("--replications", "-R", metavar="R", type=_replications,
                   help="independent replications per point (default auto: 10, more for small "
                        "sweeps on the step kernels; 1: one long run with batch means)")
    g.add_argument("--time", metavar="T", type=_typed(_seconds, "a time", _positive, "> 0"),
                   help="simulated time per replication, in seconds or with a unit ('10 min'); "
                        "default: until --rtol/--atol is met")
    g.add_argument("--events", metavar="N", type=_typed(_count, "a whole number", lambda v: v > 0, "> 0"),
                   help="events per replication instead of --time")
    g.add_argument("--rtol", metavar="X", type=_typed(float, "a number", _positive, "> 0"),
                   help="sequential stopping: run until the CI half-widths of throughputs and token "
                        "counts are within X times their means, or X times --floor of the largest "
                        "value of the same measure, whichever is larger (default 0.01)")
    g.add_argument("--floor", metavar="F", type=_typed(float, "a number", lambda v: 0 <= v <= 1,
                                                       "between 0 and 1"),
                   help="precision floor as a fraction of the largest value of the same measure "
                        "(default 0.05; 0: every estimate to --rtol of its own value)")
    g.add_argument("--atol", metavar="X", type=_typed(float, "a number", _positive, "> 0"),
                   help="sequential stopping on absolute half-widths below X (instead of --rtol)")
    g.add_argument("--level", metavar="L", type=_typed(float, "a number", lambda v: 0 < v < 1,
                                                       "between 0 and 1, e.g. 0.95"),
                   help="confidence level of the intervals (default 0.95)")
    g.add_argument("--crn", action="store_const", const=True, default=None,
                   help="common random numbers: replication r of every sweep point uses the same streams")
    g.add_argument("--scheduler", metavar="ADDR",
                   help="run the sweep points on the Dask scheduler at ADDR (e.g. tcp://host:8786; "
                        "needs --method des and qpn[distributed])")
    g.add_argument("--warmup", metavar="mser|T", type=_warmup,
                   help="warm-up to discard: mser (default, detected), none, or a time in seconds")
    g.add_argument("--wall", metavar="SECONDS", type=_typed(_seconds, "a time", _positive, "> 0"),
                   help="wall-clock cap of a simulation, fixed --time/--events runs included (default "
                        "60 s); a run it stops has not reached its precision or horizon: the table, the "
                        "JSON and the exit status (3) say so")
    g.add_argument("--allow-imprecise", action="store_true",
                   help="exit 0 even when the simulation stopped before reaching its precision")
    g.add_argument("--kernel", choices=KERNELS,
                   help="simulation kernel (default auto: the fastest that fits the net)")
    g.add_argument("--workers", metavar="N", type=int,
                   help="local processes sharing the lanes (default: every core for long fixed-length "
                        "runs with >= 1024 lanes, else 1); the numbers do not depend on it")
    g.add_argument("--threads", metavar="N", type=_typed(int, "a whole number", lambda v: v >= 1, ">= 1"),
                   help="threads sharing the lanes of the event engine (default: every core; 1 in "
                        "each --workers process); the numbers do not depend on it")
    g.add_argument("--histograms", action=argparse.BooleanOptionalAction, default=None,
                   help="residence-time histograms for percentiles (default on)")


@command("plot", "draw a result file (qpn solve --json, a sweep, verify.json) as .png or .svg")
def cmd_plot(args) -> int:
    from .plot import read_result, save_figure
    d = read_result(args.result)
    out = args.output or args.result.rsplit(".", 1)[0] + ".png"
    save_figure(d, out, _measures(args))
    print(f"wrote {out}", file=sys.stderr)
    return 0


@cmd_plot.setup
def _(p):
    p.add_argument("result", help="a result JSON (qpn solve --json, with or without --sweep; verify.json)")
    p.add_argument("-o", "--output", help="the figure (.png or .svg; default: RESULT.png)")
    p.add_argument("--measure", help="the measures to draw, comma separated (default: utilization, "
                   "throughput, tokens; for a sweep throughput, utilization, residence)")


_.takes_file = False


@command("report", "solve a model and write one self-contained HTML page: model, method and why, "
                   "tables with units, plots, warnings")
def cmd_report(args) -> int:
    from qpn.fileio import check_output, write_atomic
    from .report import html_report
    out = args.output or args.file.rsplit(".", 1)[0] + ".html"
    check_output(out)
    net = load_model(args.file, args.set)
    res = _run(net, args.method, _report_options(args))
    write_atomic(out, html_report(net, res, source=args.file))
    print(f"wrote {out}", file=sys.stderr)
    return _status([res], args)


def _report_options(args) -> dict:
    o: dict = {}
    if args.seed is not None:
        o["seed"] = args.seed
    if args.wall is not None:
        o["wall"] = args.wall
    return o


@cmd_report.setup
def _(p):
    p.add_argument("-o", "--output", help="the HTML file (default: MODEL.html)")
    p.add_argument("--method", "-m", choices=list(METHODS), default="auto",
                   help="solution method (default auto)")
    p.add_argument("--seed", type=int, help="simulation seed")
    p.add_argument("--wall", type=float, metavar="SECONDS", help="wall-clock cap of a simulation")
    p.add_argument("--allow-imprecise", action="store_true",
                   help="exit 0 even when the simulation stopped before reaching its precision")
