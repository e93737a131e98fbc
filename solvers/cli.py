"""``qpn solve``: solve a model with one method (or two, to compare), or a
parameter sweep (``--sweep``): with the simulator all points run as lanes of
one simulation; a table per measure lays the points out."""
from __future__ import annotations

import argparse
import re
import sys

from qpn.cli import command, load_model, parse_sets
from qpn.errors import ModelError, ParameterError, QPNError, SolverError, suggest
from qpn.texttable import aligned

from . import METHODS
from .result import MEASURE_SETS, UNITS, expand_measures
from .status import DEGENERATE, ExitStatus, epilog, exit_status

def _flagged() -> list[tuple[object, object]]:
    """(solver, field) of every option a solver offers as a command-line flag."""
    from . import all_solvers
    return [(s, f) for s in all_solvers() for f in s.Options.fields() if f.metadata["flag"]]


def _flag_names(f) -> tuple[str, ...]:
    return f.metadata["flag"].names or ("--" + f.name.replace("_", "-"),)


def _uses(method: str | None, solver) -> bool:
    """Whether ``method`` reads the options of ``solver`` (auto may hand them to any)."""
    return method in ("auto", solver.name) or solver.name in getattr(_solver(method), "reads", ())


def _solver(method: str | None):
    from . import get_solver
    return get_solver(method) if method else None


def _options(args) -> dict:
    o: dict = {}
    for item in args.predicate or []:
        if "=" not in item:
            raise QPNError(f"--predicate expects name=expression, got '{item}'")
        k, v = item.split("=", 1)
        o.setdefault("predicates", {})[k.strip()] = v.strip()
    for item in args.option or []:
        if "=" not in item:
            raise QPNError(f"--option expects name=value, got '{item}'")
        k, v = item.split("=", 1)
        o[k.strip()] = v.strip()          # the option's own check converts the text
    for solver, f in _flagged():
        v = getattr(args, f.name, None)
        if v is None:
            continue
        if not (_uses(args.method, solver) or _uses(args.compare, solver)):
            flag = _flag_names(f)[0]
            if isinstance(v, bool) and not v:
                flag = "--no-" + flag[2:]
            raise SolverError(f"error: {flag} is a {solver.Options.label} option; it has no effect with "
                              f"--method {args.method}" + (f" --compare {args.compare}" if args.compare else ""),
                              methods=[m for m in METHODS if m == "auto" or m == solver.name])
        o[f.name] = v
    if o.get("scheduler") is not None and args.method != "des":
        raise SolverError("error: --scheduler needs --method des")
    from qpn import progress
    if (args.quiet or not progress.enabled()) and {args.method, args.compare} & {"des", "auto"}:
        o["quiet"] = True       # no progress bar when asked, nor into a log file
    return o


def _run(net, method: str, options: dict):
    from . import solve
    if method == "des" and options.get("scheduler") is not None:
        # only simulate() hands the lanes to a scheduler
        import time
        from .des.api import simulate
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
    known = set(UNITS) | {"probability"} | set(MEASURE_SETS)
    for m in names:
        if m not in known and not re.fullmatch(r"residence_p\d+", m):
            raise ParameterError(f"--measure: unknown measure '{m}'",
                                 expected="one of: " + ", ".join(sorted(known)),
                                 did_you_mean=suggest(m, known))
    return expand_measures(names) or None


def _compare_table(a, b, measures=None) -> str:
    rows = [r for r in a.compare(b) if measures is None or r[0].measure in measures]
    head = ["measure", "element", "color", a.method, b.method, "rel. diff"]
    body = [[x.measure, x.element, x.color, f"{x.value:.6g}", f"{y.value:.6g}", f"{d:.2e}"]
            for x, y, d in rows]
    out = aligned(head, body, left=3)
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
    """``qpn solve``: solve a model (or sweep its parameters) and print or write the
    results; the exit status says how the run ended (:mod:`solvers.status`)."""
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
    if args.hybrid and (args.sweep or args.transient):
        raise QPNError(f"error: --hybrid cannot be combined with {'--sweep' if args.sweep else '--transient'}")
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
    if args.hybrid:
        from .hybrid import solve_hybrid
        res = solve_hybrid(net, args.hybrid, args.method, options, population=args.hybrid_population,
                           subnet_method=args.hybrid_method)
    else:
        res = _run(net, args.method, options)
    if not args.quiet:
        hybrid = [line for line in res.explanation if line.startswith("hybrid:")]
        for line in hybrid + res.explanation[len(hybrid):len(hybrid) + 1]:
            print(line, file=sys.stderr)
        for w in res.warnings:
            print(f"warning: {w}", file=sys.stderr)
    if args.compare:
        other = _run(net, args.compare, options)
        if args.hybrid:         # the whole net's own rows for the replaced instances
            from .hybrid import instance_rows
            for name, inp in res.info["hybrid_inputs"].items():
                instance_rows(other, name, inp)
        sys.stdout.write(_compare_table(res, other, measures))
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


@cmd_solve.setup
def _(p):
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    from .options import describe_all
    p.epilog = (epilog() + "\n\nsolver options (--option NAME=VALUE; a flag below sets the same option):\n"
                + describe_all())
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
    p.add_argument("--transient", metavar="T1,T2", help="CTMC: measures at these times from the initial marking")
    p.add_argument("--predicate", action="append", metavar="NAME=EXPR",
                   help="CTMC: probability of a marking predicate over place totals, e.g. idle=lock==1")
    p.add_argument("--option", action="append", metavar="NAME=VALUE", help="a solver option (repeatable; all are listed below)")
    p.add_argument("--show-expressions", action="store_true", help="symbolic: print the closed forms")
    p.add_argument("--hybrid", action="append", metavar="INSTANCE",
                   help="replace this subnet instance by its flow-equivalent server (its throughput "
                        "alone at 1..K tokens inside) and solve the rest (repeatable; --compare "
                        "METHOD solves the whole net beside it)")
    p.add_argument("--hybrid-population", type=int, metavar="K",
                   help="--hybrid: solve the subnets for up to K tokens (default: the tokens that "
                        "can enter them; 64 in an open net)")
    p.add_argument("--hybrid-method", default="auto", choices=METHODS,
                   help="--hybrid: how the subnets alone are solved (default auto)")
    p.add_argument("-q", "--quiet", action="store_true", help="no explanation or progress on stderr")
    p.add_argument("--allow-imprecise", action="store_true",
                   help="exit 0 even when the simulation stopped before reaching its precision")
    _add_option_flags(p)


def _add_option_flags(p) -> None:
    """A group per solver of the options it offers as flags (solvers.options)."""
    groups: dict = {}
    for solver, f in _flagged():
        if solver.name not in groups:
            groups[solver.name] = p.add_argument_group(f"{solver.name} options ({solver.Options.label}; "
                                                       f"also auto when it chooses {solver.name})")
        flag, check = f.metadata["flag"], f.metadata["check"]
        kw = dict(dest=f.name, default=None)
        if f.default is not None and f.default != "auto" or f.name == "replications":
            default = f" (default {str(f.default).lower() if isinstance(f.default, bool) else f.default})"
        else:
            default = ""
        kw["help"] = flag.help or f"{f.metadata['doc']}{default}"
        if check.what == "true | false":
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = _argument_type(check)
            kw["metavar"] = flag.metavar or (check.what.replace(" | ", "|") if " | " in check.what
                                             else "VALUE")
        groups[solver.name].add_argument(*_flag_names(f), **kw)


def _argument_type(check):
    """An argparse type from an option's check: its message, then what was given."""
    from .options import OptionValueError

    def conv(text: str):
        try:
            return check(text)
        except OptionValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc}, got '{text}'") from None
    return conv


@command("plot", "draw a result file (qpn solve --json, a sweep, verify.json) as .png or .svg")
def cmd_plot(args) -> int:
    """``qpn plot``: draw a result file (a solve's or a sweep's JSON, verify.json) as a figure."""
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
    """``qpn report``: solve a model and write one self-contained HTML page about it."""
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
