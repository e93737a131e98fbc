"""Helpers for tests/analyzer/test_analyze_*.py: trace and time the suite programs for real.

Runs are isolated as shared/guides/tracing-and-measuring.md says for a shared
2-core host: each process tree in its own session with autogroup nice -19.
"""
import gzip
import os
import re
import statistics
import subprocess
import sys

import pytest

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


def trace_runs(tmp_path_factory, name, *args, runs=1):
    """Trace tests/programs/<name> ``runs`` times: [(Trace, CPU ns its threads used)]."""
    from qpn.frontends.pytrace import trace_command
    from qpn.frontends.trace import read_trace
    out = []
    for i in range(runs):
        path = tmp_path_factory.mktemp("analyze") / f"{name}.{i}.jsonl"
        r = trace_command(ISOLATE + [sys.executable, os.path.join("tests", "programs", name),
                                     *map(str, args)], str(path), cwd=ROOT)
        assert r.returncode == 0, r.warnings
        tr = read_trace(path)
        out.append((tr, thread_cpu_ns(tr, list(tr.by_thread()))))
    return out


#: recorded traces of the structure tests (tests/traces/record.py writes them):
#: (program, its arguments, how many traces).  The default test run reads these, so
#: it does not depend on the machine's speed or load; the same tests on fresh traces
#: are marked ``measured`` (the ``live`` parameter of the fixtures).
RECORDINGS = [
    ("pool_queue_lock.py", (30, 3), 1),
    ("barrier_iterations.py", (8, 3), 1),
    ("split_rounds.py", (12, 2), 1),
    ("split_rounds.py", (12, 1), 1),
    ("sleep_poll.py", (150, 2), 1),
    ("file_server.py", (40, 2), 1),
    ("cache_workers.py", (40, 2), 5),
    ("cache_workers.py", (120, 2), 5),
    ("open_client.py", (300, 2, 400), 1),
    ("open_client.py", (200, 2, 400, 1), 1),
    ("mapreduce.py", (10, 2), 1),
]
TRACES = os.path.join(ROOT, "tests", "traces")
#: recorded traces of the programs written blind to the analyzer (tests/programs/unseen),
#: each with the traces of the processes it started: name -> its arguments (smaller runs
#: than its suite's, the same shapes)
UNSEEN = {                      # the traced configuration of each one's suite (suites/<stem>)
    "procpool_chunks.py": (2,),
    "mp_imap.py": (2,),
    "subprocess_workers.py": (2,),
    "async_offload.py": (2, 100, 400),
    "sched_server.py": (2, 100, 400),
    "http_schedule.py": (2, 100, 400),
    "divided_rows.py": (2,),
    "divided_python.py": (2,),
}
UNSEEN_TRACES = os.path.join(TRACES, "unseen")
UNSEEN_DIR = os.path.join(ROOT, "tests", "programs", "unseen")   # run there, as by their suites


def trace_unseen(out_dir: str, name: str) -> str:
    """Trace tests/programs/unseen/<name> with its UNSEEN arguments into ``out_dir``: the
    path of the program's own trace (its children's beside it)."""
    from qpn.frontends.pytrace import trace_command
    path = os.path.join(out_dir, name[:-3] + ".jsonl")
    r = trace_command(ISOLATE + [sys.executable, os.path.join(UNSEEN_DIR, name),
                                 *map(str, UNSEEN[name])], path, cwd=UNSEEN_DIR)
    assert r.returncode == 0, r.warnings
    return path


def recorded_unseen(name: str, tmp_dir) -> object:
    """The recorded trace of an unseen program (joined with its children), read from
    tests/traces/unseen/<stem>/ into ``tmp_dir``, its working directory this checkout's."""
    from qpn.frontends.analyze import read_run
    src = os.path.join(UNSEEN_TRACES, name[:-3])
    if not os.path.isdir(src):
        pytest.fail(f"no recording of {name}: run python tests/traces/record.py unseen")
    for f in sorted(os.listdir(src)):
        with gzip.open(os.path.join(src, f), "rb") as fh, \
                open(os.path.join(str(tmp_dir), f[:-3]), "wb") as out:
            out.write(fh.read())
    # the program's own trace: the one file whose name has no process id (its children's do)
    (root,) = [f[:-3] for f in os.listdir(src) if re.fullmatch(r"[^.]+\.jsonl\.gz", f)]
    tr = read_run(os.path.join(str(tmp_dir), root))
    tr.header.program["cwd"] = UNSEEN_DIR
    return tr
#: the fixtures' parameter: recorded traces in the default run, fresh ones when measured
SOURCES = ["recorded", pytest.param("live", marks=pytest.mark.measured)]


def recorded_path(name, args, i):
    """Where the i-th recorded trace of ``name`` with ``args`` lives."""
    return os.path.join(TRACES, f"{name[:-3]}-{'_'.join(map(str, args))}-{i}.jsonl.gz")


def recorded_runs(name, *args, runs=1):
    """The recorded traces of tests/programs/<name>: [(Trace, CPU ns its threads used)].

    The trace's working directory is this checkout's (the programs' sources are
    read from there for names), wherever it was recorded."""
    if (name, tuple(args), runs) not in RECORDINGS:
        pytest.fail(f"no recording of {name} {args} x{runs}: add it to RECORDINGS and run "
                    "python tests/traces/record.py")
    out = []
    for i in range(runs):
        tr = read_recorded(recorded_path(name, args, i), ROOT)
        out.append((tr, thread_cpu_ns(tr, list(tr.by_thread()))))
    return out


def read_recorded(path, cwd):
    """A recorded (gzipped) trace, its working directory this checkout's ``cwd``."""
    from qpn.frontends.trace import read_trace
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        tr = read_trace(fh)
    tr.header.program["cwd"] = cwd
    tr.path = path
    return tr


WAITRESS_REQUESTS = 60
WAITRESS_TRACE = os.path.join(TRACES, "waitress-2-0.jsonl.gz")


def trace_waitress(out: str, port: int = 18797):
    """Trace waitress-serve (suites/waitress, 2 threads) while WAITRESS_REQUESTS requests
    come in, at most 4 at a time, each on its own connection: the Trace."""
    import threading
    import time
    import urllib.request
    from qpn.frontends.trace import read_trace
    from qpn.frontends.verify.manifest import load_suite
    from qpn.frontends.verify.server import traced_server
    ok = []
    gate = threading.Semaphore(4)

    def one():
        with gate:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/?n=20000", timeout=30) as r:
                ok.append(len(r.read()) == 64)

    def load():
        ths = [threading.Thread(target=one) for _ in range(WAITRESS_REQUESTS)]
        for th in ths:
            th.start()
            time.sleep(0.004)
        for th in ths:
            th.join()
        return sum(ok)

    suite = load_suite(os.path.join(ROOT, "suites", "waitress"))
    served = traced_server(suite, {"threads": 2, "port": port}, out, load)
    assert served == WAITRESS_REQUESTS
    return read_trace(out)


def recorded_waitress():
    """The recorded trace of :func:`trace_waitress` (tests/traces/record.py writes it)."""
    return read_recorded(WAITRESS_TRACE, os.path.join(ROOT, "suites", "waitress"))


def traces_from(source, tmp_path_factory, name, *args, runs=1):
    """``runs`` traces of a program, recorded or fresh (``source`` in SOURCES)."""
    if source == "recorded":
        return recorded_runs(name, *args, runs=runs)
    return trace_runs(tmp_path_factory, name, *args, runs=runs)


def one_trace(source, tmp_path_factory, name, *args):
    """One trace of a program, recorded or fresh (the least CPU of one)."""
    return traces_from(source, tmp_path_factory, name, *args)[0][0]


def trace_program(tmp_path_factory, name, *args, runs=1):
    """Trace tests/programs/<name> ``runs`` times; returns the Trace whose threads
    used the least CPU (the structure tests want one clean trace; other load only
    ever adds CPU time)."""
    return min(trace_runs(tmp_path_factory, name, *args, runs=runs), key=lambda t: t[1])[0]


def typical_trace(traces):
    """The trace of median CPU time (the lower median) of [(Trace, CPU ns)]."""
    return sorted(traces, key=lambda t: t[1])[(len(traces) - 1) // 2][0]


def measure(name, reps, *args):
    """Wall times (ms) of main(*args) of a suite program, untraced and isolated."""
    p = subprocess.run(ISOLATE + [sys.executable, "-c", TIMER, os.path.join(PROGRAMS, name),
                                  str(reps), *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    return [float(x) for x in p.stdout.split()]


def paired_rounds(tmp_path_factory, name, traced, configs, rounds=5, reps=3, traces=4):
    """[(trace, {config: wall times in ms})] of ``rounds`` rounds.

    A round is one experiment -- trace one configuration, predict another --
    whose trace and runs see the same machine: it alternates ``traces`` times
    between tracing the program at ``traced`` and timing main(*config) ``reps``
    times per config (one process each), and keeps the trace of median CPU
    time (:func:`typical_trace`).  The tests compare with the mean of the
    round's runs (:func:`typical`).

    Why typical values and not the fastest: each of this VM's two cores runs
    pure-Python code at one of two speeds ~1.9x apart, switching in spells of
    seconds to minutes, and the two cores do not always switch together (a
    thread of a trace can run at 1.3x the CPU per iteration of its siblings
    throughout).  A single-threaded run can sit on the fast core, so the
    fastest of several runs is that core's speed, while a multi-threaded trace
    runs on both and its demands are a mix: the fastest run and the cleanest
    trace disagree by the slow core's share (the barrier program's 1-thread
    prediction came out 13-15% high that way, over 24 alternations).  Typical
    runs and a typical trace of the same minutes do not.
    """
    out = []
    for _ in range(rounds):
        trs, runs = [], {c: [] for c in configs}
        for _ in range(traces):
            trs += trace_runs(tmp_path_factory, name, *traced)
            for c in configs:
                runs[c] += measure(name, reps, *c)
        out.append((typical_trace(trs), runs))
    return out


def typical(xs):
    """The mean of repeated runs: what the machine gives on average (see :func:`paired_rounds`)."""
    return statistics.fmean(xs)


def simulate(text, *, time=0.3, replications=8, **params):
    """Solve a model text with the simulator (seeded, short runs)."""
    import qpn
    net = qpn.parse(text)
    return qpn.solve(net, method="des", options={"time": time, "replications": replications,
                                                 "seed": 1, "quiet": True}, **params)


def predict_batch_ms(res, workers: int, tasks: int) -> float:
    """pool_queue_lock: predicted run time (ms) of one batch of ``tasks`` tasks.

    One batch is ``tasks`` worker iterations, so tasks / throughput(worker.begin)
    is its run time, as 1 / throughput(main.begin) is, from ``tasks`` times as
    many events.  Counting the ~12 batches of a 0.25 s replication instead read
    21.8 ms where 2 s gave 19.4 ms: the model is nearly deterministic, every
    replication counts the same whole number of batches, and the CI (0.4%)
    does not show it."""
    r = simulate(res.text, time=0.25, replications=4, workers=workers)
    return tasks * 1000.0 / r.get("throughput", "worker.begin")


def predict_rounds_ms(res, workers: int, iterations: int) -> float:
    """barrier_iterations: predicted run time (ms) of ``iterations`` barrier rounds."""
    name = next(n for n, o in res.info["objects"].items() if o["kind"] == "barrier")
    r = simulate(res.text, time=0.3, replications=8, workers=workers)
    return iterations * 1000.0 / r.get("throughput", f"{name}.trip")


def predict_requests_per_s(res, workers: int) -> float:
    """file_server: predicted requests per second."""
    return simulate(res.text, time=0.15, replications=8, workers=workers).get(
        "throughput", "client.begin")


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
