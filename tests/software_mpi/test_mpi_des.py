"""MPI collectives simulated by the event engine against closed forms.

An SPMD pool of P ranks repeats ``compute; collective``.  Every collective
synchronizes all ranks (``world.trip``) and then costs every rank the same
deterministic time, so one iteration takes the slowest rank's compute time plus
the cost, and ``throughput world.trip`` is 1 / iteration time:

* P ranks on P cores, ``cpu exp(w)``: the slowest of P exponentials has mean
  w * H_P (H_P the harmonic number), so the cycle is w * H_P + cost;
* deterministic bodies give the cycle w + cost exactly (up to the count of
  cycles in a finite run);
* ``on host`` with fewer cores than ranks: the cost is CPU time shared by the
  ranks (processor sharing), so it stretches like the computation.

Costs (rounds = ceil(log2 P)): allreduce/reduce/bcast rounds * (L + m G),
gather/scatter/allgather rounds * L + (P - 1) m G, alltoall (P - 1)(L + m G),
sendrecv min(1, P - 1)(L + m G), await rounds * L.
"""
import math

import pytest

import qpn
from des_support import assert_covers, des

W, L, G = 1e-3, 200e-6, 10e-6        # 1 ms compute, 200 us per message, 10 us per byte

EXP_BODY = qpn.parse("""
param P = 4
param w = 1 ms
param L = 200 us
param G = 10 us
software {
    cpu host cores P
    comm world ranks P latency L per_byte G
    pool r size P {
        cpu exp(w) on host
        allreduce world 8
    }
}""")


def rounds(p):
    return math.ceil(math.log(p) / math.log(2) - 1e-9)


def harmonic(p):
    return sum(1 / k for k in range(1, p + 1))


@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_allreduce_after_exponential_work_is_the_max_of_p_exponentials_plus_the_cost(p):
    cycle = W * harmonic(p) + rounds(p) * (L + 8 * G)
    res = des(EXP_BODY, {"time": 20, "replications": 10}, P=p)
    assert_covers(res, "throughput", "world.trip", "", 1 / cycle, max_rel=0.02)
    assert_covers(res, "throughput", "r.begin", "", p / cycle, max_rel=0.02)
    # every rank spends exactly the cost in the collective's cost station
    if p > 1:
        assert res.get("residence", "r.allreduce_world.cost") == pytest.approx(
            rounds(p) * (L + 8 * G), rel=1e-3)


OVERSUBSCRIBED = """
param w = 1 ms
param L = 200 us
software {{
    cpu host cores 2
    comm world ranks 4 latency L{on}
    pool r size 4 {{
        cpu det(w) on host
        allreduce world 0
    }}
}}"""


def test_copying_on_oversubscribed_cores_is_shared_like_the_computation():
    # 4 ranks on 2 cores (ps): the compute det(w) of all four takes 2 w; then each rank
    # needs rounds * L = 2 L of CPU, 4 ranks on 2 cores: 4 L.  Cycle 2 w + 4 L.
    net = qpn.parse(OVERSUBSCRIBED.format(on=" on host"))
    res = des(net, {"time": 5, "replications": 4})
    cycle = 2 * W + 4 * L
    assert res.get("throughput", "world.trip") == pytest.approx(1 / cycle, rel=2e-3)
    assert res.get("residence", "r.allreduce_world.cost") == pytest.approx(4 * L, rel=1e-3)
    assert res.get("utilization", "host") == pytest.approx(1.0, rel=1e-6)
    # the same comm without 'on': a network delay, no CPU: 2 w + 2 L
    net2 = qpn.parse(OVERSUBSCRIBED.format(on=""))
    res2 = des(net2, {"time": 5, "replications": 4})
    assert res2.get("throughput", "world.trip") == pytest.approx(1 / (2 * W + 2 * L), rel=2e-3)


DET_BODY = """
param P = 4
param w = 1 ms
software {{
    comm world ranks P latency 200 us per_byte 10 us
    pool r size P {{
        sleep det(w) as work
        {step}
    }}
}}"""

# step -> cost at P ranks (m = 8 bytes)
COSTS = {
    "allreduce world 8": lambda p: rounds(p) * (L + 8 * G),
    "reduce world 8": lambda p: rounds(p) * (L + 8 * G),
    "bcast world 8": lambda p: rounds(p) * (L + 8 * G),
    "gather world 8": lambda p: rounds(p) * L + (p - 1) * 8 * G,
    "scatter world 8": lambda p: rounds(p) * L + (p - 1) * 8 * G,
    "allgather world 8": lambda p: rounds(p) * L + (p - 1) * 8 * G,
    "alltoall world 8": lambda p: (p - 1) * (L + 8 * G),
    "sendrecv world 8": lambda p: min(1, p - 1) * (L + 8 * G),
    "await world": lambda p: rounds(p) * L,
}


@pytest.mark.parametrize("p", [1, 4])
@pytest.mark.parametrize("step", list(COSTS))
def test_deterministic_iteration_is_work_plus_the_cost(step, p):
    net = qpn.parse(DET_BODY.format(step=step))
    res = des(net, {"time": 5, "replications": 2}, P=p)
    cycle = W + COSTS[step](p)
    assert res.get("throughput", "r.begin") == pytest.approx(p / cycle, rel=2e-3)
    if not step.startswith("sendrecv"):
        assert res.get("throughput", "world.trip") == pytest.approx(1 / cycle, rel=2e-3)


def test_known_values_of_the_formulas_at_four_ranks():
    # the closed forms above, written out: rounds(4) = 2, m = 8, L + 8 G = 280 us
    assert COSTS["alltoall world 8"](4) == pytest.approx(840e-6)
    assert COSTS["gather world 8"](4) == pytest.approx(400e-6 + 240e-6)
    assert COSTS["sendrecv world 8"](4) == pytest.approx(280e-6)
    assert COSTS["await world"](4) == pytest.approx(400e-6)
    assert COSTS["allreduce world 8"](4) == pytest.approx(560e-6)
    assert all(cost(1) == 0 for cost in COSTS.values())


def test_sendrecv_does_not_synchronize():
    # one slow rank does not hold the others back at a sendrecv: the ranks of two
    # pools (fast and slow) share a comm used only by sendrecv, and each pool runs at
    # its own rate
    net = qpn.parse("""
software {
    comm world ranks 2 latency 1 ms
    pool fast size 1 { sleep det(1 ms)
                       sendrecv world }
    pool slow size 1 { sleep det(9 ms)
                       sendrecv world }
}""")
    res = des(net, {"time": 20, "replications": 2})
    assert res.get("throughput", "fast.begin") == pytest.approx(1 / 2e-3, rel=2e-3)
    assert res.get("throughput", "slow.begin") == pytest.approx(1 / 10e-3, rel=2e-3)


def test_example_model_matches_its_closed_form():
    import os
    from conftest import MODELS
    net = qpn.load(os.path.join(MODELS, "sw_mpi.qpn"))
    res = des(net, {"time": 20, "replications": 10})
    # 4 ranks on 4 cores: 2 ms * H_4 + halo exchange (2 us + 1 MiB * 0.1 ns) + allreduce of
    # 8 bytes (2 rounds of 2 us + 0.8 ns)
    cycle = 2e-3 * harmonic(4) + (2e-6 + 1048576 * 0.1e-9) + 2 * (2e-6 + 8 * 0.1e-9)
    assert_covers(res, "throughput", "world.trip", "", 1 / cycle, max_rel=0.02)
