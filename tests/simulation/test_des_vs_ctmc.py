"""The simulator against the exact CTMC solution of non-product-form nets.

Synchronization (locks, connection pools, barriers, blocking, FIFO
departure, priorities, inhibitor arcs, shared queues) puts these nets outside
MVA; their state spaces are small, so the CTMC solver gives exact means.  The
simulator runs them on the general event engine.  Every throughput (per
transition and per mode/color) and every mean token count (per place and per
color) of the CTMC result must lie within ``K_CI = 1.8`` confidence
half-widths of the simulated estimate (see ``des_support`` for the reasoning),
and the main measures must be estimated to a few percent.
"""
import os

import pytest

import qpn
from qpn.errors import SolverError
from des_support import DES_MODELS, MODELS, assert_all_cover, des

# 100 replications: the general engine advances all lanes of a run together,
# so many short lanes cost far less than few long ones.  Default warm-up (MSER).
REPS = 100

NETS = [
    # (id, model file, parameter overrides, horizon per replication)
    # (a) a mutex shared by a pool of 5 threads: think exp(1 s), hold exp(200 ms)
    ("mutex", f"{MODELS}/mutex.qpn", {}, 150),
    # (b) 6 threads hold one of 3 connections while they queue at a 2-core PS CPU
    #     and a FCFS disk (simultaneous resource possession)
    ("connection_pool", f"{DES_MODELS}/connpool.qpn", {}, 30),
    # (c) a cyclic barrier of 4 parties, Erlang-2 work
    ("barrier", f"{MODELS}/barrier.qpn", {"parties": 4}, 200),
    # (d) 2 producers, 2 consumers around a 4-slot blocking buffer
    ("bounded_queue", f"{MODELS}/bounded_queue.qpn", {"consumers": 2, "consume": "150 ms"}, 50),
    # (e) FIFO departure from a PS channel, 2 message classes
    ("fifo_departure", f"{MODELS}/fifo_departure.qpn", {}, 10),
    # preemptive and non-preemptive priority queues, immediate priorities, inhibitor arc
    ("priorities", f"{MODELS}/priorities.qpn", {}, 40),
    # a PS queue shared by two places, RANDOM and LCFS-PR (hyperexponential) queues
    ("shared_queue", f"{MODELS}/shared_queue.qpn", {}, 50),
    # timed transitions with infinite-server and single-server semantics
    ("repairman", f"{MODELS}/repairman.qpn", {}, 1e6),
]


@pytest.mark.parametrize("name,path,params,T", NETS, ids=[n[0] for n in NETS])
def test_des_covers_ctmc(name, path, params, T):
    net = qpn.load(path)
    exact = qpn.solve(net, method="ctmc", **params)
    assert "cutoff" not in exact.info          # a bounded net: the CTMC is exact
    res = des(net, {"time": T, "replications": REPS}, **params)
    assert res.info["kernel"] == "EventEngine"
    n = assert_all_cover(res, exact, ("throughput", "tokens", "utilization"), what=name)
    assert n >= 5


def test_connection_pool_model_is_what_it_claims():
    # sanity of the new model: not product form (MVA refuses it: a passive
    # resource), and its CTMC answer satisfies Little's law and the invariant
    # pool + cpu + disk = 3 connections
    net = qpn.load(os.path.join(DES_MODELS, "connpool.qpn"))
    with pytest.raises(SolverError, match="passive resource"):
        qpn.solve(net, method="mva")
    exact = qpn.solve(net, method="ctmc")
    X = exact.get("throughput", "acquire")
    # Little on the whole cycle: 6 threads = X * (think + wait + cpu + disk)
    cycle = 0.5 + sum(exact.get("residence", p) for p in ("waiting", "cpu", "disk"))
    assert 6 == pytest.approx(X * cycle, rel=1e-9)
    assert exact.get("tokens", "pool") + exact.get("tokens", "cpu") + exact.get("tokens", "disk") \
        == pytest.approx(3, rel=1e-9)
