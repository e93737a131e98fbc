"""Helpers for tests/test_analyze_*.py: trace and time the suite programs for real.

Runs are isolated as shared/guides/tracing-and-measuring.md says for a shared
2-core host: each process tree in its own session with autogroup nice -19.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
ISOLATE = ["setsid", "sh", "-c", 'echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"', "sh"]

# Times main(*args) of a program `reps` times in one process (no interpreter
# start-up, no tracer) and prints the wall times in ms.
TIMER = r"""
import contextlib, importlib.util, io, sys, time
path, reps, args = sys.argv[1], int(sys.argv[2]), [int(a) for a in sys.argv[3:]]
spec = importlib.util.spec_from_file_location("prog", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = []
for _ in range(reps):
    with contextlib.redirect_stdout(io.StringIO()):
        t = time.perf_counter()
        mod.main(*args)
        out.append((time.perf_counter() - t) * 1000)
print(" ".join(f"{x:.3f}" for x in out))
"""


def trace_program(tmp_path_factory, name, *args, runs=1):
    """Trace tests/programs/<name> ``runs`` times; returns the fastest Trace.

    This VM runs pure-Python code at one of two speeds ~1.9x apart, switching
    in spells of seconds to minutes (other tenants of the host), and other load
    only ever slows a run down: the run whose threads used the least CPU is the
    program's own speed, which :func:`fastest` takes from the measured runs too.
    """
    from frontends.pytrace import trace_command
    from frontends.trace import read_trace
    best, best_cpu = None, None
    for i in range(runs):
        out = tmp_path_factory.mktemp("analyze") / f"{name}.{i}.jsonl"
        r = trace_command(ISOLATE + [sys.executable, os.path.join("tests", "programs", name),
                                     *map(str, args)], str(out), cwd=ROOT)
        assert r.returncode == 0, r.warnings
        tr = read_trace(out)
        used = thread_cpu_ns(tr, list(tr.by_thread()))
        if best is None or used < best_cpu:
            best, best_cpu = tr, used
    return best


def measure(name, reps, *args):
    """Wall times (ms) of main(*args) of a suite program, untraced and isolated."""
    p = subprocess.run(ISOLATE + [sys.executable, "-c", TIMER, os.path.join(PROGRAMS, name),
                                  str(reps), *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    return [float(x) for x in p.stdout.split()]


def paired_rounds(tmp_path_factory, name, traced, configs, rounds=3, reps=3, traces=2):
    """[(trace, {config: wall times in ms})] of ``rounds`` rounds: each traces the
    program ``traces`` times at ``traced``, keeps the fastest trace (see
    :func:`trace_program`), and right after times main(*config) ``reps`` times
    per config (one process each), of which the tests take the fastest too.

    This VM runs pure-Python code at two speeds ~1.9x apart, in spells of
    seconds to minutes; a trace and measurements taken minutes apart can be off
    by that.  A round is one experiment -- trace one configuration, predict
    another -- whose trace and runs see the same machine.
    """
    out = []
    for _ in range(rounds):
        tr = trace_program(tmp_path_factory, name, *traced, runs=traces)
        out.append((tr, {c: measure(name, reps, *c) for c in configs}))
    return out


def fastest(xs):
    """The program's own speed from repeated runs: the fastest (see :func:`trace_program`)."""
    return min(xs)


def simulate(text, *, time=0.3, replications=8, **params):
    """Solve a model text with the simulator (seeded, short runs)."""
    import qpn
    net = qpn.parse(text)
    return qpn.solve(net, method="des", options={"time": time, "replications": replications,
                                                 "seed": 1, "quiet": True}, **params)


def thread_cpu_ns(trace, tids, lo=None, hi=None):
    """CPU ns the threads used (between lo and hi if given), from their CPU clocks."""
    import numpy as np
    by = trace.by_thread()
    total = 0.0
    for t in tids:
        pts = [(e["ts"], e["cpu"]) for e in by[t] if "cpu" in e]
        ts = np.array([p[0] for p in pts], float)
        cs = np.array([p[1] for p in pts], float)
        a = ts[0] if lo is None else lo
        b = ts[-1] if hi is None else hi
        total += np.interp(b, ts, cs) - np.interp(a, ts, cs)
    return total
