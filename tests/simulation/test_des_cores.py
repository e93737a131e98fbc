"""The per-core discipline JSQ-PS (a token placed on the least loaded server when it
arrives, kept there, each server shared by its tokens) against known answers.

* A closed network with exponential service: each server completes at rate mu whenever
  it holds a token, so its CTMC is over (tokens on server 0, tokens on server 1), solved
  here by hand; it differs from PS (a server can idle while the other holds two).
* Equal deterministic work released together at a barrier: n threads on 2 cores take
  ceil(n / 2) times the work per round, not n / 2 as with PS.
"""
import numpy as np
import pytest

import qpn
from des_support import assert_covers, des

CLOSED = """net jsq
param n = 3
place think queue is service exp(2 ms) init n
place cpu queue {disc} servers 2 service exp(1 ms)
transition go : think -> cpu
transition back : cpu -> think
"""


def jsq_throughput(n: int, lam: float, mu: float) -> float:
    """Exact throughput of n tokens thinking exp(1/lam) and served on two servers of rate
    mu, each token joining the server with fewer tokens (ties: server 0) and staying."""
    states = [(a, b) for a in range(n + 1) for b in range(n + 1 - a)]
    ix = {s: i for i, s in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    for a, b in states:
        i, m = ix[(a, b)], n - a - b
        if m:
            Q[i, ix[(a + 1, b) if a <= b else (a, b + 1)]] += m * lam
        if a:
            Q[i, ix[(a - 1, b)]] += mu
        if b:
            Q[i, ix[(a, b - 1)]] += mu
    np.fill_diagonal(Q, -Q.sum(axis=1))
    A = np.vstack([Q.T, np.ones(len(states))])
    p = np.linalg.lstsq(A, np.r_[np.zeros(len(states)), 1.0], rcond=None)[0]
    return float(sum(p[ix[s]] * mu * ((s[0] > 0) + (s[1] > 0)) for s in states))


@pytest.mark.parametrize("n", [3, 6])
def test_closed_network_against_its_ctmc(n, disc="jsq-ps"):
    exact = jsq_throughput(n, 500.0, 1000.0)
    res = des(qpn.parse(CLOSED.format(disc=disc)), {"time": 20, "replications": 10}, n=n)
    assert_covers(res, "throughput", "back", "", exact, max_rel=0.02)
    if n < 6:
        return
    # and not PS's: two servers shared by every token never idle while one holds two
    ps = des(qpn.parse(CLOSED.format(disc="ps")), {"time": 20, "replications": 10}, n=n)
    assert ps.get("throughput", "back") > exact * 1.02


BARRIER = """net rounds
param threads = 3
software {{
    cpu host cores 2 {disc}
    barrier b parties threads
    pool w size threads {{
        cpu det(1 ms) on host as work
        await b
    }}
}}
"""


@pytest.mark.parametrize("threads, per_core", [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (8, 4)])
def test_barrier_rounds_take_the_busiest_core_s_work(threads, per_core, disc="jsq-ps"):
    res = des(qpn.parse(BARRIER.format(disc=disc)), {"time": 2, "replications": 2},
              threads=threads)
    # rounds counted in a window: within 1%
    assert res.get("throughput", "b.trip") == pytest.approx(1000.0 / per_core, rel=0.01)
    if threads % 2:                  # PS shares both cores among all: threads / 2 ms
        ps = des(qpn.parse(BARRIER.format(disc="ps")), {"time": 2, "replications": 2},
                 threads=threads)
        assert ps.get("throughput", "b.trip") == pytest.approx(2000.0 / max(threads, 2), rel=0.01)


def test_the_ctmc_refuses_jsq_ps_and_auto_simulates():
    with pytest.raises(qpn.QPNError, match="jsq-ps has no Markov model"):
        qpn.solve(qpn.parse(CLOSED.format(disc="jsq-ps")), "ctmc")
    res = qpn.solve(qpn.parse(CLOSED.format(disc="jsq-ps")), "auto", options={"quiet": True, "seed": 1})
    assert res.method == "des"


@pytest.mark.parametrize("servers", ["inf", "100000"])
def test_jsq_ps_needs_a_machine_s_number_of_servers(servers):
    text = CLOSED.format(disc="jsq-ps").replace("servers 2", f"servers {servers}")
    with pytest.raises(qpn.QPNError, match=rf"jsq-ps places each token on one of its servers: it "
                                           rf"needs servers 1 to 4096 \(a machine's cores\), not {servers}"):
        qpn.solve(qpn.parse(text), "des", options={"quiet": True})
