"""Frontend commands of the ``qpn`` CLI (loaded by ``qpn.cli._load_plugins``).

    qpn trace -o run.jsonl -- python prog.py ARGS     record a Python program
    qpn trace-check run.jsonl                         validate and summarize a trace
    qpn import-persik probes.log -o run.jsonl         convert a PERSIK probe log
    qpn import-strace run.strace -o run.jsonl         convert strace -f -ttt -T output
    qpn import-perf run.perf.txt -o run.jsonl         convert perf script output
    qpn import-jfr run.json -o run.jsonl              convert a JFR recording (jfr print --json)
    qpn build run.jsonl -o model.qpn                  build a software model from a trace
    qpn synth model.qpn -o run.jsonl [--time T]       run a software model as a program, traced
"""
from __future__ import annotations

import argparse
import collections
import os
import sys

from qpn.cli import command
from qpn.errors import QPNError
from qpn.fileio import check_output

from .tracers import TRACERS, tracer


@command("trace", "run a Python program traced (any program with --strace or --perf) and write a "
                  "neutral trace (JSON lines)")
def cmd_trace(args) -> int:
    from .pytrace.runner import trace_command
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise QPNError("qpn trace: give the command to run, e.g. "
                       "qpn trace -o run.jsonl -- python prog.py")
    check_output(args.output)          # before the program runs, not after
    chosen = [name for name in TRACERS if getattr(args, name)]
    if len(chosen) > 1:
        raise QPNError("qpn trace: one of " + ", ".join(f"--{n}" for n in TRACERS))
    if args.pthread and chosen != ["perf"]:
        raise QPNError("qpn trace: --pthread probes the C library with perf: give --perf too")
    if chosen:
        tr, code = tracer(chosen[0])(cmd, timeout=args.timeout,
                                     **({"pthread": True} if args.pthread else {}))
        _write_imported(args.output, tr, f" (program exit status {code})" if code else "")
        return code
    packages = None if args.package is None else [x for x in args.package.split(",") if x]
    run = trace_command(cmd, args.output, timeout=args.timeout, packages=packages,
                        follow=not args.no_follow)
    for w in run.warnings:
        print(f"warning: {w}", file=sys.stderr)
    threads = sum(1 for e in run.trace.events if e["kind"] == "thread_start")
    print(f"wrote {args.output}: {len(run.trace.events)} events, {threads} threads"
          + (f" (program exit status {run.returncode})" if run.returncode else ""),
          file=sys.stderr)
    for path in run.children:
        print(f"wrote {path}: a child process (qpn build {args.output} joins it)",
              file=sys.stderr)
    return run.returncode


@cmd_trace.setup
def _(p):
    p.add_argument("-o", "--output", required=True, help="trace file to write (.jsonl)")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop the program (SIGTERM) after this many seconds")
    p.add_argument("--package", default=None, metavar="PKG[,PKG]",
                   help="installed packages whose code is the program's own, so the objects they "
                        "create are traced (default: the package of a console script or of "
                        "python -m PKG; '' for none)")
    p.add_argument("--no-follow", action="store_true",
                   help="trace only the command's own process (default: also every Python "
                        "process it starts, each into OUTPUT's STEM.PID.jsonl)")
    p.add_argument("--strace", action="store_true",
                   help="trace any program (C, Java, ...) with strace -f -ttt -T: its threads, futex "
                        "waits, file and socket I/O and sleeps (no CPU times: the gaps between "
                        "calls less strace's calibrated cost); needs strace")
    p.add_argument("--perf", action="store_true",
                   help="trace any program with perf's scheduler and system-call tracepoints: "
                        "exact per-thread CPU, futex waits, file and socket I/O (no paths), "
                        "sleeps; needs perf (Debian linux-perf) and root")
    p.add_argument("--jfr", action="store_true",
                   help="trace a java command with a Java Flight Recorder recording (qpn's "
                        "settings: threads, blocked monitors and parks, file and socket I/O, "
                        "sleeps, with sites); needs a JDK's jfr tool")
    p.add_argument("--pthread", action="store_true",
                   help="with --perf: probe the C library's pthread mutex, condition and barrier "
                        "calls too (every lock operation with its site, not only the blocked "
                        "ones; costs a few microseconds a call)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, e.g. python prog.py ARGS")


_.takes_file = False


@command("trace-check", "validate a neutral trace and summarize it (threads, events, objects)")
def cmd_trace_check(args) -> int:
    from .trace import read_trace
    trace = read_trace(args.trace, strict=not args.lenient)
    for w in trace.warnings:
        print(f"warning: {w}", file=sys.stderr)
    h = trace.header
    caps = ", ".join(k for k, v in sorted(h.capabilities.items()) if v) or "none"
    print(f"{args.trace}: {h.source} trace, {len(trace.events)} events"
          + ("" if trace.complete else " (valid prefix only)"))
    print(f"capabilities: {caps}")
    names = trace.thread_names()
    by_thread = trace.by_thread()
    for tid, evs in sorted(by_thread.items()):
        span = (evs[-1]["ts"] - evs[0]["ts"]) / 1e6
        cpu = [e["cpu"] for e in evs if "cpu" in e]
        cpu_ms = f", cpu {(cpu[-1] - cpu[0]) / 1e6:.3f} ms" if len(cpu) > 1 else ""
        print(f"  thread {tid} {names.get(tid, '')!r}: {len(evs)} events, "
              f"{span:.3f} ms{cpu_ms}")
    kinds = collections.Counter(e["kind"] for e in trace.events)
    print("events: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    objs = collections.Counter(e["type"] for e in trace.objects().values())
    if objs:
        print("objects: " + ", ".join(f"{k} {n}" for k, n in objs.most_common()))
    return 0


@cmd_trace_check.setup
def _(p):
    p.add_argument("trace", help="trace file (.jsonl)")
    p.add_argument("--lenient", action="store_true",
                   help="accept the valid part of a malformed trace, and leave out impossible "
                        "events (times no clock reads, events outside their thread's life): "
                        "warn, naming each line, instead of failing")


_.takes_file = False


@command("import-strace", "convert strace -f -ttt -T output to a neutral trace (threads, futex waits "
                          "and wakes, file and socket I/O, sleeps)")
def cmd_import_strace(args) -> int:
    from .strace_import import read_strace
    check_output(args.output)
    tr = read_strace(args.log, strict=not args.lenient)
    _write_imported(args.output, tr, f"; {tr.skipped} other line(s) skipped" if tr.skipped else "")
    return 0


@command("import-perf", "convert perf script output (scheduler and system-call tracepoints) to a "
                        "neutral trace")
def cmd_import_perf(args) -> int:
    from .perf_import import read_perf_script
    check_output(args.output)
    _write_imported(args.output, read_perf_script(args.log, root=args.pid,
                                                  strict=not args.lenient))
    return 0


@cmd_import_perf.setup
def _(p):
    p.add_argument("log", help="perf script --ns -F pid,tid,cpu,time,event,trace output of a "
                              "recording of the tracepoints qpn trace --perf uses "
                              "(frontends/perf_import.py: EVENTS)")
    p.add_argument("-o", "--output", required=True, help="trace file to write (.jsonl)")
    p.add_argument("--pid", type=int, default=None,
                   help="the traced command's process id (its threads and descendants are "
                        "kept; default: the process of the first system call)")
    p.add_argument("--lenient", action="store_true", help="leave out lines that do not parse")


_.takes_file = False


@command("import-jfr", "convert a Java Flight Recorder recording (jfr print --json) to a neutral "
                       "trace")
def cmd_import_jfr(args) -> int:
    from .jfr_import import read_jfr_json
    check_output(args.output)
    _write_imported(args.output, read_jfr_json(args.json, strict=not args.lenient))
    return 0


@cmd_import_jfr.setup
def _(p):
    p.add_argument("json", help="jfr print --json --stack-depth 8 run.jfr output, of a recording "
                               "made with frontends/jfr/qpn.jfc")
    p.add_argument("-o", "--output", required=True, help="trace file to write (.jsonl)")
    p.add_argument("--lenient", action="store_true", help="leave out events that do not parse")


_.takes_file = False


def _write_imported(path, tr, more: str = "") -> None:
    """An importer's warnings, then its trace ``tr`` written to ``path``, then what was
    written."""
    from .trace import write_trace
    for w in tr.warnings:
        print(f"warning: {w}", file=sys.stderr)
    n = write_trace(path, tr.header, tr.events)
    threads = sum(1 for e in tr.events if e["kind"] == "thread_start")
    print(f"wrote {path}: {n} events from {threads} thread(s){more}", file=sys.stderr)


@cmd_import_strace.setup
def _(p):
    p.add_argument("log", help="strace output, recorded with strace -f -ttt -T -o FILE CMD ...")
    p.add_argument("-o", "--output", required=True, help="trace file to write (.jsonl)")
    p.add_argument("--lenient", action="store_true", help="leave out lines that do not parse")


_.takes_file = False


@command("import-persik", "convert a PERSIK probe log (THREAD ... DONE sections) to a neutral trace")
def cmd_import_persik(args) -> int:
    from .persik import persik_to_trace, read_persik
    check_output(args.output)
    log = read_persik(args.log, strict=not args.lenient)
    from .trace import Trace
    header, events = persik_to_trace(log)
    _write_imported(args.output, Trace(header, events, args.log, list(log.warnings)))
    if args.pcg:
        from .pcg import build_pcg, code_fragments, format_pcg, parse_library, prune
        library = parse_library(args.library)
        context = {int(x) for x in args.context_probes.split(",") if x.strip()}
        seqs = [code_fragments(t.probes, context_probes=context, library=library)
                for t in log.threads]
        seqs = [prune(s, args.threshold) for s in seqs]
        print(format_pcg(build_pcg(seqs)), end="")
    return 0


@cmd_import_persik.setup
def _(p):
    p.add_argument("log", help="PERSIK probe log")
    p.add_argument("-o", "--output", required=True, help="trace file to write (.jsonl)")
    p.add_argument("--lenient", action="store_true", help="keep the valid part of a bad log")
    p.add_argument("--no-check", action="store_true",
                   help="do not solve the model at the traced configuration to compare it with "
                        "the trace (the check costs a short simulation, up to 5 s)")
    p.add_argument("--pcg", action="store_true",
                   help="also print the code fragments' probabilistic call graph")
    p.add_argument("--context-probes", default="",
                   help="probe ids inside shared library code (e.g. file natives 1013,1014): "
                        "their fragments get the calling probe as context")
    p.add_argument("--library", default="",
                   help="library entry:exit probe pairs, e.g. 500:501,502:503")
    p.add_argument("--threshold", type=float, default=0.03,
                   help="drop computation fragments below this share of the thread's CPU "
                        "(default 0.03)")


_.takes_file = False


def _time_ns(text: str) -> int:
    """'50us', '50 us', '0.05 ms', '2e-5 s' or a bare number of microseconds -> ns."""
    from qpn.expr import UNITS
    t = text.strip().replace(" ", "")
    for unit in sorted(UNITS, key=len, reverse=True):
        if t.endswith(unit) and unit not in ("min", "h"):
            try:
                return int(round(float(t[:-len(unit)]) * UNITS[unit] * 1e9))
            except ValueError:
                break
    try:
        return int(round(float(t) * 1000))
    except ValueError:
        raise QPNError(f"qpn build: --io-threshold wants a time like 50us or 0.05ms, got {text!r}")


@command("build", "build a readable software model from a trace (thread pools, call graphs, "
                  "locks, queues, demands)")
def cmd_build(args) -> int:
    import gc
    gc.disable()        # millions of acyclic objects; the process ends right after
    from .analyze import Options, build_file
    if not 0 <= args.prune < 1:
        raise QPNError(f"qpn build: --prune must be a share between 0 and 1, got {args.prune}")
    if not args.check_wall > 0:
        raise QPNError(f"qpn build: --check-wall must be a time in seconds above 0, "
                       f"got {args.check_wall}")
    check_output(args.output)
    opt = Options(prune=args.prune, demands=args.demands,
                  io_threshold=_time_ns(args.io_threshold),
                  gil=False if args.no_gil else None, source_dir=args.source_dir, cpu=args.cpu)
    from qpn.progress import ticking
    with ticking(f"building the model from {len(args.trace)} trace(s)"):
        res = build_file(args.trace[0], args.output, opt, strict=not args.lenient, name=args.name,
                         others=tuple(args.trace[1:]), check=not args.no_check,
                         check_wall=args.check_wall)
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    info = res.info
    for name, r in info["runners"].items():
        what = ("steady-state loop" if r["mode"] == "forever" else "whole run, repeated")
        size = f" size {r['size_param']} = {r['size']}" if r["size_param"] else ""
        print(f"  {name}{size}: {what}", file=sys.stderr)
    for name, why in info.get("omitted", {}).items():
        print(f"  {name}: not modelled ({why})", file=sys.stderr)
    for name, v in info.get("second_trace", {}).items():
        print(f"  {name}: whether it divides its work is an assumption ({v['split']} = 0) one "
              "trace cannot decide" + (f"; trace another pool size and build from both: "
                                       f"{v['command']}" if v["command"] else ""),
              file=sys.stderr)
    chk = info.get("check")
    if chk is not None:
        for line in chk.lines():
            print(line[2:] if line.startswith("# ") else line[1:], file=sys.stderr)
    extra = f" and {len(res.side_files)} sample file(s)" if res.side_files else ""
    print(f"wrote {args.output}{extra}", file=sys.stderr)
    if args.pcg:
        from .analyze.callgraph import call_graph, format_call_graph
        names = info.get("object_names", {})
        for r in res.analysis.runners:
            if r.mode != "omitted":
                print(f"# call graph of '{r.name}'")
                print(format_call_graph(call_graph(r.walks),
                                        lambda k: names.get(k, str(k))), end="")
    args.exit_now = res           # kept alive: main() ends the process without freeing it
    return 0


@cmd_build.setup
def _(p):
    p.add_argument("trace", nargs="+",
                   help="trace file (.jsonl, the neutral format); more traces of the same "
                        "program (other pool sizes, or repeats) after the first, which the "
                        "model is built from, tell how work divides among threads and how "
                        "much the traces spread")
    p.add_argument("-o", "--output", required=True, help="model file to write (.qpn)")
    p.add_argument("--prune", type=float, default=0.03,
                   help="leave out code fragments below this share of their runner's CPU and "
                        "I/O time (default 0.03)")
    p.add_argument("--demands", choices=("fitted", "empirical"), default="fitted",
                   help="CPU demands as distributions fitted by SCV (default) or as the measured "
                        "samples in side files (empirical(\"file\", unit = us))")
    p.add_argument("--io-threshold", default="50us",
                   help="file I/O that waited less than this is a page-cache hit, longer a "
                        "device access (default 50us)")
    p.add_argument("--lenient", action="store_true",
                   help="model the valid part of a malformed trace, without its impossible "
                        "events (warn, naming each line, instead of failing)")
    p.add_argument("--name", default=None, help="net name (default: the program's name)")
    p.add_argument("--cpu", default="ps",
                   help="how the machine's cores are shared: ps (default: any thread on any core) "
                        "or jsq-ps (each core shared by the threads placed on it when they woke; "
                        "a barrier among more threads than cores waits for the busiest core)")
    p.add_argument("--no-gil", action="store_true",
                   help="ignore the runtime's GIL (model one cpu for all code)")
    p.add_argument("--source-dir", default=None, metavar="DIR",
                   help="where the traced program's files are, to name model elements after "
                        "its code (default: the working directory the trace recorded)")
    p.add_argument("--no-check", action="store_true",
                   help="do not solve the model at the traced configuration to compare it with "
                        "the trace (the check costs a short simulation, up to 5 s)")
    p.add_argument("--check-wall", type=float, default=5.0, metavar="SECONDS",
                   help="wall-clock cap of the check's simulation (default 5 s; a check it "
                        "stops says it missed its precision)")
    p.add_argument("--pcg", action="store_true",
                   help="also print each runner's probabilistic call graph (code fragments, "
                        "counts, mean CPU, successor probabilities)")


_.takes_file = False


@command("synth", "run a software model as a program and write its trace (neutral format): "
                  "the first half of a round trip through qpn build")
def cmd_synth(args) -> int:
    from .synth import parse_time, synth_file
    check_output(args.output)
    res = synth_file(args.file, args.output, time=parse_time(args.time), seed=args.seed,
                     sets=args.set, sources=args.sources, max_events=args.max_events)
    info = res.info
    threads = sum(info["threads"].values())
    done = ", ".join(f"{n} {k}" for k, n in {**info["sinks"], **info["timers"]}.items())
    print(f"wrote {args.output}: {info['events']} events, {threads} threads, "
          f"{info['time']:g} s simulated" + (f"; {done}" if done else "")
          + (" (stopped at --max-events)" if info["truncated"] else ""), file=sys.stderr)
    return 0


@cmd_synth.setup
def _(p):
    p.add_argument("-o", "--output", required=True, help="trace file to write (.jsonl)")
    p.add_argument("--time", default="60s",
                   help="simulated time: 60, 60s, 500ms, 2min (default 60s)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--sources", choices=("auto", "threads", "acceptor"), default="auto",
                   help="a source as one thread per request, or one acceptor thread "
                        "(io accept) that runs each request's body; auto: the acceptor when "
                        "the body never waits (default)")
    p.add_argument("--max-events", type=int, default=None,
                   help="stop after this many events (default: no limit)")


@command("verify", "measure a program over a grid, build its model from traces of a few "
                   "configurations, predict the grid and report the error (suites/NAME/suite.toml); "
                   "a directory of suites runs them all and sums up")
def cmd_verify(args) -> int:
    from .verify import verify
    from .verify.summary import suite_dirs
    dirs = suite_dirs(args.suite)
    if len(dirs) > 1 or args.summary:
        return _verify_several(args, dirs)
    rep = verify(dirs[0], remeasure=args.remeasure, out_dir=args.output, retrace=args.retrace)
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{rep.suite}: predicted against measured (eps = |measured - predicted| / measured)")
    print(rep.table())
    print(f"model and record: {os.path.dirname(rep.model)}/ (model.qpn, verify.json, verify.png)")
    bound = args.bound if args.bound is not None else rep.bound
    if bound is not None and not rep.mean_eps <= bound:
        print(f"verify: mean eps {100 * rep.mean_eps:.1f}% is above the bound "
              f"{100 * bound:.1f}%", file=sys.stderr)
        return 1
    return 0


def _verify_several(args, dirs: list[str]) -> int:
    """``qpn verify suites``: every suite, then one summary (and verify-summary.json)."""
    from qpn.fileio import write_atomic
    from qpn.solvers.result import strict_json
    from .verify.summary import summary_record, summary_table, verify_all
    if args.output:
        raise QPNError("verify: -o is for one suite; several suites write into each SUITE/verify "
                       "(--summary FILE names the summary's file)")
    path = args.summary or os.path.join(args.suite[0] if len(args.suite) == 1 else ".",
                                        "verify-summary.json")
    check_output(path)
    rows = verify_all(dirs, log=sys.stdout, remeasure=args.remeasure, retrace=args.retrace)
    if args.bound is not None:
        for r in rows:
            r.bound = args.bound
    print(summary_table(rows))
    write_atomic(path, strict_json(summary_record(rows)))
    print(f"summary: {path}")
    return 1 if any(r.over_bound for r in rows) else 0


@cmd_verify.setup
def _(p):
    p.add_argument("suite", nargs="+",
                   help="suite directory holding suite.toml (e.g. suites/split_rounds), or a "
                        "directory of suites (suites: every suites/*/suite.toml)")
    p.add_argument("--remeasure", action="store_true",
                   help="measure (and trace) again instead of using the cached samples")
    p.add_argument("--retrace", action="store_true",
                   help="trace the build configurations again (default: reuse the traces of "
                        "the last run of the same program and arguments)")
    p.add_argument("-o", "--output", default=None,
                   help="directory for the traces, model, verify.json and verify.png "
                        "(default SUITE/verify; one suite only)")
    p.add_argument("--bound", type=float, default=None,
                   help="exit 1 when the mean eps is above this (default: the suite's "
                        "predict.bound)")
    p.add_argument("--summary", default=None, metavar="FILE",
                   help="several suites: write the summary here (default "
                        "SUITES/verify-summary.json)")


_.takes_file = False
