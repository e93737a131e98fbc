"""``qpn solve``: solve a model with one method (or two, to compare)."""
from __future__ import annotations

import sys

from qpn.cli import command, load_model
from qpn.errors import QPNError

from . import METHODS


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
        try:
            o[k.strip()] = int(v) if v.strip().lstrip("-").isdigit() else float(v)
        except ValueError:
            o[k.strip()] = v.strip()
    return o


def _run(net, method: str, options: dict):
    from . import solve
    return solve(net, method=method, options=options)


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


@command("solve", "solve a model: auto, mva, ctmc, symbolic or des")
def cmd_solve(args) -> int:
    net = load_model(args.file, args.set)
    options = _options(args)
    measures = args.measure.split(",") if args.measure else None
    if args.transient:
        from qpn.compile import compile_net
        from .ctmc import solve_transient
        times = [float(t) for t in args.transient.split(",")]
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
    return 0


@cmd_solve.setup
def _(p):
    p.add_argument("--method", "-m", default="auto", choices=METHODS, help="solution method (default auto)")
    p.add_argument("--compare", choices=METHODS, help="also solve with this method and print the differences")
    p.add_argument("--measure", help="only these measures, comma separated (e.g. throughput,utilization)")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON")
    p.add_argument("--csv", metavar="FILE", help="write the result as CSV")
    p.add_argument("--limit", type=int, help="CTMC: refuse beyond this many states (default 2,000,000)")
    p.add_argument("--cutoff", type=int, help="CTMC: population cut-off of open nets (default adaptive)")
    p.add_argument("--transient", metavar="T1,T2", help="CTMC: measures at these times from the initial marking")
    p.add_argument("--predicate", action="append", metavar="NAME=EXPR",
                   help="CTMC: probability of a marking predicate over place totals, e.g. idle=lock==1")
    p.add_argument("--option", action="append", metavar="NAME=VALUE", help="solver option (repeatable)")
    p.add_argument("--show-expressions", action="store_true", help="symbolic: print the closed forms")
    p.add_argument("-q", "--quiet", action="store_true", help="no explanation or progress on stderr")
