"""`qpn build` on a synthetic trace of 10^6 events from many threads.

Run: python -m pytest benchmarks/test_bench_analyze.py --benchmark-only -s

The trace (frontends/analyze/synth.py ``server_trace``) is an open-workload
server: an acceptor and 16 workers, 143,000 requests, 7 events each (accept,
put, get, lock, unlock, file read, socket send).  The timed command is the
whole CLI run -- reading and validating the trace, the analysis, writing the
model -- in its own session with autogroup nice -19 (a shared 2-core host).
The requirement is <= 10 s.
"""
import os
import subprocess
import sys
import time

from qpn.frontends.analyze.synth import server_trace, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISOLATE = ["setsid", "sh", "-c", 'echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"', "sh"]
LIMIT = 10.0


def _qpn() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "qpn")
    return [exe] if os.path.exists(exe) else [sys.executable, "-c",
                                               "import sys; from qpn.cli import main; "
                                               "sys.exit(main())"]


def _build(path, out):
    t0 = time.perf_counter()
    p = subprocess.run(ISOLATE + _qpn() + ["build", str(path), "-o", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return time.perf_counter() - t0


def test_build_1e6_events(benchmark, tmp_path, capsys):
    trace = server_trace(requests=143_000, workers=16, rate=3000, seed=3)
    n = len(trace.events)
    threads = len({e["tid"] for e in trace.events})
    path = tmp_path / "big.jsonl"
    write(trace, path)
    del trace
    out = tmp_path / "big.qpn"
    seconds = benchmark.pedantic(_build, args=(path, out), rounds=1, iterations=1)
    text = out.read_text()
    benchmark.extra_info.update({"events": n, "threads": threads, "seconds": seconds,
                                 "mb": os.path.getsize(path) / 1e6})
    with capsys.disabled():
        print(f"\nqpn build: {n:,} events, {threads} threads "
              f"({os.path.getsize(path) / 1e6:.0f} MB): {seconds:.2f} s, "
              f"{n / seconds / 1e3:.0f}k events/s")
    assert n >= 1_000_000 and threads >= 18
    assert "pool worker size workers" in text and "source arrivals_backlog" in text
    assert seconds <= LIMIT
