"""Hybrid evaluation against simulating the whole net, one clock for both.

    python -m pytest benchmarks/test_bench_hybrid.py --benchmark-only -s

Performance Prophet (seed 004) claims that replacing parts of a simulated program by
cost functions makes evaluation faster, and never measures it.  Here the same
question for qpn's flow-equivalent servers (``qpn solve --hybrid``): the CPU time
(user + system, workers included) of a warm ``solve`` of the whole net by the
simulator, against the hybrid solve of the same net (the subnet alone solved at every
population, then the rest simulated), both for the same simulated time, and whether
the answers agree (the users' throughput: the hybrid's interval against the whole
net's).

* ``models/hybrid_pool.qpn``: 8 users and a web tier of a pool of 2 threads, a PS cpu
  and a disk of fixed time (each request: 3 cpu visits, 2 disk visits); its subnet
  alone is simulated (det service: no exact method), 8 populations;
* ``models/hybrid.qpn``: the product-form version (MVA on the subnet alone).
"""
from __future__ import annotations

import os

import pytest

import qpn
from clocks import Figures, load_average, warm
from qpn.solvers.hybrid import solve_hybrid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = Figures()
OPTIONS = {"time": 20_000, "replications": 4, "seed": 1, "quiet": True}


@pytest.fixture(scope="module", autouse=True)
def summary():
    qpn.solve(qpn.load(os.path.join(ROOT, "models", "mutex.qpn")), method="des",
              options={"events": 1000, "replications": 1, "quiet": True})     # compile once
    yield
    FIGURES.print_all("hybrid evaluation against the whole net simulated (CPU time)")


@pytest.mark.parametrize("model", ["hybrid_pool.qpn", "hybrid.qpn"])
def test_hybrid_against_whole(benchmark, model):
    net = qpn.load(os.path.join(ROOT, "models", model))
    qpn.solve(net, method="des", options=OPTIONS)                       # warm both paths
    solve_hybrid(net, ["web"], method="des", options=OPTIONS)
    whole, whole_cpu, _ = warm(lambda: qpn.solve(net, method="des", options=OPTIONS))
    hybrid, hyb_cpu, _ = warm(lambda: solve_hybrid(net, ["web"], method="des", options=OPTIONS))
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    a, b = whole.cell("throughput", "reply"), hybrid.cell("throughput", "reply")
    ra, rb = whole.cell("residence", "think"), hybrid.cell("residence", "think")
    FIGURES.say(f"{model} ({load_average()}): whole {whole_cpu:.2f} CPU-s, hybrid {hyb_cpu:.2f} CPU-s "
                f"(ratio {whole_cpu / hyb_cpu:.1f}x); users' throughput {a.value:.4f} ± {a.ci:.4f} "
                f"whole, {b.value:.4f} ± {b.ci:.4f} hybrid; "
                f"{hybrid.explanation[0]}")
    assert abs(a.value - b.value) <= 3 * (a.ci + b.ci) + 0.02 * a.value
    assert abs(ra.value - rb.value) <= 3 * (ra.ci + rb.ci)
