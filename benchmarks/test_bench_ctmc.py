"""CTMC figures of the analytic-solvers issue (pytest-benchmark).

    python -m pytest benchmarks/test_bench_ctmc.py --benchmark-only -s

LINE runs side by side when ``line_solver`` imports or when QPN_LINE_PYTHON
names a Python that has it (e.g. a separate venv: pip install line-solver).
"""
import json
import os
import subprocess
import sys
import time

import pytest

import qpn
from qpn.solvers.ctmc.explore import Explorer
from qpn.solvers.ctmc.spec import build_spec

from peers import run_peer

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
CLOSED = os.path.join(MODELS, "bench", "closed_network.qpn")


def test_ctmc_closed_network_n25_end_to_end(benchmark):
    net = qpn.load(CLOSED)
    qpn.solve(net, method="ctmc")                       # imports and caches warmed
    res = benchmark.pedantic(qpn.solve, args=(net,), kwargs={"method": "ctmc"}, rounds=7, iterations=1)
    assert res.info["states"] == 23_751
    assert benchmark.stats.stats.median <= 0.5
    benchmark.extra_info.update(states=res.info["states"], throughput=res.get("throughput", "t0"))
    peer = run_peer("line_ctmc.py", "25")
    if peer is not None:
        benchmark.extra_info["line"] = peer
        if "seconds" in peer:
            ratio = peer["seconds"] / benchmark.stats.stats.median
            benchmark.extra_info["line_over_qpn"] = ratio
            print(f"\nLINE CTMC N=25: {peer['seconds']:.2f} s; qpn median "
                  f"{benchmark.stats.stats.median:.3f} s; ratio {ratio:.0f}x; throughput "
                  f"{peer['throughput']:.6f} vs {res.get('throughput', 't0'):.6f}")
            assert abs(peer["throughput"] - res.get("throughput", "t0")) < 1e-4


def test_ctmc_closed_network_n40(benchmark):
    net = qpn.load(CLOSED)
    res = benchmark.pedantic(qpn.solve, args=(net,), kwargs={"method": "ctmc", "N": 40}, rounds=3,
                             iterations=1)
    assert res.info["states"] == 135_751
    benchmark.extra_info.update(states=res.info["states"], generation=res.info["generation_seconds"],
                                solve=res.info["solve_seconds"])


def test_ctmc_generation_rate(benchmark):
    c = qpn.compile_net(qpn.load(CLOSED), {"N": 40})
    spec = build_spec(c)
    space = benchmark.pedantic(lambda: Explorer(spec, 10 ** 7).run(), rounds=5, iterations=1)
    rate = len(space.states) / benchmark.stats.stats.median
    benchmark.extra_info["states_per_second"] = rate
    assert rate >= 300_000


def test_mutex_k15(benchmark):
    net = qpn.load(os.path.join(MODELS, "mutex.qpn")).with_params(threads=15)
    qpn.solve(net, method="ctmc")
    res = benchmark.pedantic(qpn.solve, args=(net,), kwargs={"method": "ctmc"}, rounds=30, iterations=1)
    assert res.info["states"] == 16
    assert benchmark.stats.stats.median <= 0.010


CHILD = """
import json, resource, time, qpn
net = qpn.load({path!r})
t0 = time.perf_counter()
res = qpn.solve(net, method="ctmc", N=70)
sec = time.perf_counter() - t0
print(json.dumps(dict(states=res.info["states"], seconds=sec, rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      generation=res.info["generation_seconds"], solve=res.info["solve_seconds"],
                      residual=res.info["residual"])))
"""


def test_million_state_model(benchmark):
    """1,150,626 states (N = 70): solved in <= 60 s within 8 GiB (own process, peak RSS)."""
    def run():
        out = subprocess.run([sys.executable, "-c", CHILD.format(path=CLOSED)], capture_output=True,
                             text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    info = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(info)
    print(f"\n1M-state model: {info}")
    assert info["states"] == 1_150_626
    assert info["seconds"] <= 60
    assert info["rss_kib"] <= 8 * 1024 * 1024
