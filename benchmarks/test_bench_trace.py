"""Tracer overhead on the suite programs and reader speed on 10^6 events.

Run: python -m pytest benchmarks/test_bench_trace.py --benchmark-only -s

Overhead is measured as the guide (shared/guides/tracing-and-measuring.md) says
for a shared 2-core host: each run in its own session with autogroup nice -19,
plain and traced runs interleaved, several repeats, median ratio reported with
min-max and the foreign load (CPU used by other processes while we ran).  The
traced time is the traced process's wall time (start-up, recording and the
final flush included); converting to JSON afterwards is reported separately.
"""
import os
import resource
import statistics
import subprocess
import sys
import time

import pytest

from qpn.frontends.pytrace import trace_command
from qpn.frontends.trace import read_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ["pool_queue_lock.py", "barrier_iterations.py", "file_server.py"]
REPEATS = 21
TARGET = 1.15
ISOLATE = ["setsid", "sh", "-c", 'echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"', "sh"]

MICRO = r'''
import os, queue, socket, sys, threading, time
N = 20000
def bench(name, fn):
    t = time.perf_counter()
    for _ in range(N):
        fn()
    print(name, (time.perf_counter() - t) / N * 1e9)
lock = threading.Lock()
def lk():
    with lock:
        pass
bench("lock", lk)
q = queue.Queue()
bench("queue", lambda: (q.put(1), q.get()))
a, b = socket.socketpair()
bench("socket", lambda: (a.send(b"x"), b.recv(10)))
f = open(sys.argv[0], "rb")
bench("file", lambda: (f.seek(0), f.read(100)))
'''
EVENTS_PER_CALL = {"lock": 2, "queue": 2, "socket": 2, "file": 1}


def _busy_jiffies() -> int:
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return sum(f) - f[3] - f[4]          # all but idle and iowait


def timed(fn):
    """(result, wall s, foreign cores): CPU other processes used while fn ran."""
    tick = os.sysconf("SC_CLK_TCK")
    b0, r0, t0 = _busy_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    r1, b1 = resource.getrusage(resource.RUSAGE_CHILDREN), _busy_jiffies()
    own = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    foreign = max(0.0, (b1 - b0) / tick - own) / wall
    return result, wall, foreign


def overhead(program: str, tmp: str) -> dict:
    cmd = ISOLATE + [sys.executable, os.path.join("tests", "programs", program)]
    plain, traced, total, foreign = [], [], [], []
    for i in range(REPEATS):        # interleaved, in alternating order: drift hits both alike
        def plain_run():
            return timed(lambda: subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, check=True))

        def traced_run():
            return timed(lambda: trace_command(cmd, os.path.join(tmp, "t.jsonl"), cwd=ROOT))
        if i % 2 == 0:
            _, wall, fa = plain_run()
            run, wall_t, fb = traced_run()
        else:
            run, wall_t, fb = traced_run()
            _, wall, fa = plain_run()
        plain.append(wall)
        traced.append(run.program_seconds)
        total.append(wall_t)
        foreign.append(max(fa, fb))
    ratios = sorted(t / p for t, p in zip(traced, plain))
    return {"program": program, "plain_s": statistics.median(plain),
            "traced_s": statistics.median(traced), "with_conversion_s": statistics.median(total),
            "ratio": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1],
            # interference only ever slows a run down: the fastest runs compare cleanly
            "ratio_fastest": min(traced) / min(plain),
            "foreign_cores": statistics.median(foreign), "events": len(run.trace.events),
            "events_per_s": len(run.trace.events) / statistics.median(traced)}


@pytest.mark.parametrize("program", PROGRAMS)
def test_tracer_overhead(benchmark, program, tmp_path, capsys):
    res = overhead(program, str(tmp_path))
    if res["ratio"] > TARGET and res["foreign_cores"] > 0.25:
        res = overhead(program, str(tmp_path))          # the guide: repeat under foreign load
    benchmark.extra_info.update(res)
    benchmark.pedantic(trace_command, args=([sys.executable, os.path.join(
        "tests", "programs", program)], str(tmp_path / "b.jsonl")), kwargs={"cwd": ROOT},
        rounds=1, iterations=1)
    with capsys.disabled():
        print(f"\n{program}: plain {res['plain_s']:.3f} s, traced {res['traced_s']:.3f} s "
              f"(+conversion {res['with_conversion_s']:.3f} s), overhead x{res['ratio']:.3f} "
              f"(min {res['ratio_min']:.3f}, max {res['ratio_max']:.3f}; fastest traced / fastest "
              f"plain x{res['ratio_fastest']:.3f}), "
              f"{res['events']} events ({res['events_per_s']:.0f}/s), "
              f"foreign load {res['foreign_cores']:.2f} cores")
    assert res["ratio"] <= TARGET


def test_cost_per_event(benchmark, tmp_path, capsys):
    script = tmp_path / "micro.py"
    script.write_text(MICRO)

    def costs(out):
        return {l.split()[0]: float(l.split()[1]) for l in out.splitlines()}
    plain = costs(subprocess.run([sys.executable, str(script)], capture_output=True,
                                 text=True, check=True).stdout)
    traced_out = tmp_path / "micro.out"

    def traced_run():
        with open(traced_out, "w") as fh:
            return subprocess.run([sys.executable, "-c", (
                "import sys; from qpn.frontends.pytrace import trace_command; "
                f"trace_command([sys.executable, {str(script)!r}], {str(tmp_path / 'm.jsonl')!r})")],
                stdout=fh, check=True, cwd=ROOT)
    benchmark.pedantic(traced_run, rounds=1, iterations=1)
    traced = costs(traced_out.read_text())
    per_event = {k: (traced[k] - plain[k]) / EVENTS_PER_CALL[k] / 1000 for k in plain}
    benchmark.extra_info.update({f"{k}_us_per_event": v for k, v in per_event.items()})
    with capsys.disabled():
        print("\ntracer cost per event (us): "
              + ", ".join(f"{k} {v:.2f}" for k, v in per_event.items()))
    assert all(v < 20 for v in per_event.values())


def test_read_1e6_events(benchmark, tmp_path, capsys):
    path = tmp_path / "big.jsonl"
    header = ('{"kind":"header","format":"qpn-trace","version":1,"source":"bench",'
              '"capabilities":{"thread_cpu":true}}\n')
    templates = [
        '{{"kind":"acquire","tid":{t},"ts":{ts},"cpu":{c},"site":"prog.py:12","obj":77,"dur":0,"contended":false}}\n',
        '{{"kind":"release","tid":{t},"ts":{ts},"cpu":{c},"site":"prog.py:14","obj":77,"hold":900}}\n',
        '{{"kind":"put","tid":{t},"ts":{ts},"cpu":{c},"site":"prog.py:20","obj":55,"item":{i},"dur":10,"size":3}}\n',
        '{{"kind":"get","tid":{t},"ts":{ts},"cpu":{c},"site":"prog.py:30","obj":55,"item":{i},"dur":10,"size":2}}\n',
        '{{"kind":"io","tid":{t},"ts":{ts},"cpu":{c},"site":"prog.py:40","op":"read","obj":9,"path":"/data/f.bin","fd":5,"bytes":4096,"dur":3000,"cpu_dur":1000}}\n',
    ]
    with open(path, "w") as fh:
        fh.write(header)
        fh.writelines(templates[i % 5].format(t=1000 + i % 8, ts=1000 * i, c=500 * i, i=i // 4)
                      for i in range(1_000_000))
    t0 = time.perf_counter()
    trace = benchmark.pedantic(read_trace, args=(path,), rounds=1, iterations=1)
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    by = trace.by_thread()
    group = time.perf_counter() - t1
    benchmark.extra_info.update({"read_s": seconds, "by_thread_s": group,
                                 "mb": os.path.getsize(path) / 1e6})
    with capsys.disabled():
        print(f"\nread 10^6 events ({os.path.getsize(path) / 1e6:.0f} MB): {seconds:.2f} s, "
              f"per-thread sort {group:.2f} s")
    assert len(trace.events) == 1_000_000 and len(by) == 8
    assert seconds < 5.0
