"""Exact MVA, 3 classes x 30 customers, one delay station and 4 PS stations (<= 0.3 s).

29,791 population vectors.  Run:
    python -m pytest benchmarks/test_bench_mva.py --benchmark-only
"""
import math
import time

import numpy as np

import qpn
from qpn import solvers
from qpn.solvers.mva import exact_mva

from peers import run_peer

MODEL = """
net bench_mva
param n = 30
colors job = {a, b, c}
place think : job queue is service exp(1 s) init n a, n b, n c
place s1 : job queue ps service a: exp(10 ms), b: exp(20 ms), c: exp(50 ms)
place s2 : job queue ps service a: exp(20 ms), b: exp(30 ms), c: exp(40 ms)
place s3 : job queue ps service a: exp(30 ms), b: exp(40 ms), c: exp(30 ms)
place s4 : job queue ps service a: exp(40 ms), b: exp(50 ms), c: exp(10 ms)
transition go : think(x) -> s1(x)
transition t12 : s1(x) -> s2(x)
transition t23 : s2(x) -> s3(x)
transition t34 : s3(x) -> s4(x)
transition back : s4(x) -> think(x)
"""

DEMANDS = np.array([[1.0, 0.01, 0.02, 0.03, 0.04],
                    [1.0, 0.02, 0.03, 0.04, 0.05],
                    [1.0, 0.05, 0.04, 0.03, 0.01]])
SERVERS = [math.inf, 1, 1, 1, 1]


def test_exact_mva_3x30_end_to_end(benchmark):
    net = qpn.parse(MODEL)
    res = benchmark.pedantic(solvers.solve, args=(net, "mva"), kwargs={"options": {"mva": "exact"}},
                             rounds=5, iterations=1, warmup_rounds=1)
    assert res.info["algorithm"] == "exact" and res.info["iterations"] == 31 ** 3
    direct = exact_mva(DEMANDS, [30, 30, 30], SERVERS)
    assert res.get("throughput", "go", "[x=a]") == direct.throughput[0]
    t0 = time.perf_counter()
    solvers.solve(net, "mva", options={"mva": "exact"})
    assert time.perf_counter() - t0 < 0.3
    peer = run_peer("line_mva.py")   # LINE side by side when installed (QPN_LINE_PYTHON)
    if peer is not None and "seconds" in peer:
        ratio = peer["seconds"] / benchmark.stats.stats.median
        benchmark.extra_info.update(line_seconds=peer["seconds"], line_over_qpn=ratio)
        print(f"\nLINE exact MVA 3x30: {peer['seconds']:.3f} s; qpn median "
              f"{benchmark.stats.stats.median:.4f} s; ratio {ratio:.0f}x")
        for k, col in enumerate("abc"):
            assert abs(peer["throughput"][k] - res.get("throughput", "go", f"[x={col}]")) < 1e-6 * peer["throughput"][k]


def test_exact_mva_3x30_arrays(benchmark):
    r = benchmark(exact_mva, DEMANDS, [30, 30, 30], SERVERS)
    assert r.iterations == 31 ** 3 and np.all(r.throughput > 0)
