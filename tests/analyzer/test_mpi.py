"""Models of MPI programs (frontends/analyze/mpi.py, issue 19): the loop of the ranks'
calls, the compute between them and the communication costs, from synthetic traces whose
answers are known, and from a real mpi4py program traced at 2 ranks."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import qpn
from qpn.errors import QPNError
from qpn.frontends.analyze import build
from qpn.frontends.analyze.mpi import analyze_mpi, cost_terms, fit_loggp, rounds
from qpn.frontends.trace import Trace, TraceHeader, read_trace

from conftest import TESTS_DIR

JACOBI = os.path.join(TESTS_DIR, "programs", "mpi_jacobi.py")
US = 1_000


def spmd_trace(p=2, iterations=50, compute=(400 * US, 20 * US), latency=3 * US,
               per_byte=0.5, halo=4096, skew=30 * US, differ_rank=None) -> Trace:
    """A trace of ``p`` ranks running: sendrecv(halo), cpu compute[0], sendrecv(halo),
    cpu compute[1], allreduce(8 bytes); rank r computes ``skew * r`` longer in its first
    fragment, so the last rank arrives last at the allreduce, and the others wait."""
    events = []
    for r in range(p):
        tid = 100 + r
        events.append({"kind": "thread_start", "tid": tid, "ts": 0, "name": "MainThread"})
        events.append({"kind": "object", "tid": tid, "ts": 1, "obj": 7000 + r, "type": "comm",
                       "parties": p, "rank": r, "name": "world"})
    for r in range(p):
        tid, obj = 100 + r, 7000 + r
        c = 1_000                   # CPU time: the compute and 500 ns per call, no waits
        sr = latency + halo * per_byte if p > 1 else 0
        ar = rounds(p) * (latency + 8 * per_byte)
        body = [("sendrecv", "prog.py:10", halo, sr), ("cpu", compute[0] + skew * r),
                ("sendrecv", "prog.py:12", halo, sr), ("cpu", compute[1]),
                ("allreduce", "prog.py:15", 8, ar)]
        if differ_rank == r:
            body = body[2:]
        for it in range(iterations):
            start = 1_000 + it * (sum(compute) + 2 * sr + ar + skew * (p - 1))
            t = start
            for step in body:
                if step[0] == "cpu":
                    t += step[1]
                    c += step[1]
                    continue
                op, site, nb, cost = step
                if op == "allreduce":       # waits for the last rank, then the cost
                    d = (start + sum(compute) + 2 * sr + skew * (p - 1)) - t + cost
                else:
                    d = cost
                events.append({"kind": "mpi", "tid": tid, "ts": t, "cpu": c, "site": site,
                               "op": op, "obj": obj, "bytes": nb, "dur": d, "cpu_dur": 500})
                t += d
                c += 500
    events.sort(key=lambda e: e["ts"])
    h = TraceHeader(source="pytrace", program={"argv": ["prog.py"]}, runtime={"cpus": 2})
    return Trace(h, events, "synthetic-mpi.jsonl")


def test_costs_by_operation_and_rank_count_follow_the_algorithms():
    assert [rounds(p) for p in (1, 2, 3, 4, 5, 8, 1024)] == [0, 1, 2, 2, 3, 3, 10]
    assert cost_terms("allreduce", 4, 100) == (2, 200)
    assert cost_terms("alltoall", 4, 100) == (3, 300)
    assert cost_terms("gather", 4, 100) == (2, 300)
    assert cost_terms("sendrecv", 1, 100) == (0, 0) and cost_terms("sendrecv", 3, 100) == (1, 100)


def test_the_loop_its_compute_and_the_costs_of_its_calls_are_recovered():
    tr = spmd_trace(p=2, iterations=50)
    a = analyze_mpi(tr)
    assert a["ranks"] == 2 and a["iterations"] == 49 and a["warmup"] == 4
    ops = [(c["op"], c["site"], c["bytes"]) for c in a["body"]]
    assert ops == [("sendrecv", "prog.py:10", 4096), ("sendrecv", "prog.py:12", 4096),
                   ("allreduce", "prog.py:15", 8)]
    # compute between the calls, less the CPU inside the calls (500 ns each): rank 1's
    # first fragment is 30 us longer, so the pooled mean is 15 us above 400 us
    cpu0 = np.mean(a["body"][1]["cpu"])
    assert cpu0 == pytest.approx(400 * US + 15 * US)
    assert np.mean(a["body"][2]["cpu"]) == pytest.approx(20 * US)
    # the last rank to arrive pays only the cost: latency + bytes x per byte
    assert a["body"][0]["cost"] == pytest.approx(3 * US + 4096 * 0.5)
    assert a["body"][2]["cost"] == pytest.approx(1 * (3 * US + 8 * 0.5))
    lat, g = fit_loggp(a["body"], 2)
    assert lat == pytest.approx(3 * US, rel=1e-6) and g == pytest.approx(0.5, rel=1e-6)


def test_the_model_is_a_pool_of_ranks_with_the_communicator_and_simulates_the_loop():
    res = build(spmd_trace(p=2, iterations=60))
    net = qpn.parse(res.text)
    params = {p.name: p for p in net.params}
    assert {"ranks", "cores", "split_rank", "work_rank"} <= set(params)
    assert res.info["runners"]["rank"]["size"] == 2
    assert res.info["mpi"]["latency_ns"] == pytest.approx(3 * US, rel=1e-3)
    # 2 ranks on 2 cores: an iteration is rank 1's compute (the slower, 450 us) plus the
    # two exchanges and the allreduce's cost (the pruned 20 us joins the 415 us fragment:
    # a deterministic 435 us for both ranks in the model, whose ranks are alike)
    sr = 3 * US + 4096 * 0.5
    ar = 3 * US + 8 * 0.5
    expect = 1 / ((415 + 20) * US * 1e-9 + (2 * sr + ar) * 1e-9)
    r = qpn.solve(net, method="des", options=dict(time=2.0, seed=1, quiet=True, workers=1))
    tput = r.get("throughput", "world.trip")
    assert tput == pytest.approx(expect, rel=0.02)


def test_ranks_that_do_not_run_one_loop_are_refused_with_the_difference():
    with pytest.raises(QPNError, match="do not all run one loop"):
        analyze_mpi(spmd_trace(p=2, iterations=20, differ_rank=1))


@pytest.fixture(scope="module")
def proc_null():
    """MPI.PROC_NULL of the installed MPI, read in a child: importing mpi4py.MPI here would
    start MPI in the test process (its threads then share the process with the signal-timed
    tests that follow)."""
    p = subprocess.run([sys.executable, "-c", "import mpi4py; mpi4py.rc.initialize = False; "
                        "from mpi4py import MPI; print(MPI.PROC_NULL)"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return int(p.stdout)


@pytest.fixture(scope="module")
def jacobi_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("jacobi")
    out = str(d / "jac.jsonl")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    p = subprocess.run([sys.executable, "-m", "qpn.cli", "trace", "-o", out, "--", mpiexec, "-n",
                        "2", sys.executable, JACOBI, "64", "40"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return out


def test_an_mpi4py_program_s_ranks_are_traced_with_their_calls(jacobi_trace, proc_null):
    root = read_trace(jacobi_trace)
    kids = root.header.program["children"]
    assert len(kids) == 1
    child = read_trace(os.path.join(os.path.dirname(jacobi_trace), kids[0]))
    ranks = set()
    for tr in (root, child):
        comm = [e for e in tr.events if e["kind"] == "object" and e.get("type") == "comm"]
        assert len(comm) == 1 and comm[0]["parties"] == 2
        ranks.add(comm[0]["rank"])
        calls = [e for e in tr.events if e["kind"] == "mpi"]
        assert [c["op"] for c in calls[:4]] == ["barrier", "sendrecv", "sendrecv", "allreduce"]
        assert len(calls) == 1 + 3 * 40
        sr = [c for c in calls if c["op"] == "sendrecv"]
        assert {c["bytes"] for c in sr} == {64 * 8}                  # one row of float64
        ar = [c for c in calls if c["op"] == "allreduce"]
        assert {c["bytes"] for c in ar} == {len(pickle.dumps(0.5, pickle.HIGHEST_PROTOCOL))}
        # each rank has one neighbour: the other rank, or nobody (PROC_NULL) at the edge
        assert {c["peer"] for c in sr} == {0 if comm[0]["rank"] else 1, proc_null}
        assert all(c["dur"] >= 0 and c["site"].endswith(("mpi_jacobi.py:30", "mpi_jacobi.py:31",
                                                          "mpi_jacobi.py:35")) for c in calls[1:])
    assert ranks == {0, 1}


def test_the_traced_ranks_build_a_model_of_their_loop(jacobi_trace, tmp_path):
    from qpn.frontends.analyze import build_file
    res = build_file(jacobi_trace, str(tmp_path / "jac.qpn"))
    net = qpn.parse(res.text)
    assert res.info["mpi"]["ranks"] == 2
    assert [c["op"] for c in res.info["mpi"]["calls"]] == ["sendrecv", "sendrecv", "allreduce"]
    assert "comm world ranks ranks" in res.text
    assert {p.name for p in net.params} >= {"ranks", "split_rank", "work_rank"}


def test_traces_at_two_rank_counts_measure_how_the_compute_divides():
    """compute per rank = 40 us + 800 us / ranks: traced at 2 ranks (440 us) and 4 (240 us),
    the model's split_rank is the divided share at 2 ranks, 400 / 440, and its demand at
    1 rank is 840 us; one trace alone assumes it all divides."""
    def at(p):
        tr = spmd_trace(p=p, iterations=40, compute=(40 * US + 800 * US // p, 0), skew=0)
        tr.path = f"synthetic-{p}.jsonl"
        return tr
    two = build(at(2), others=(at(4),))
    assert two.info["mpi"]["split"] == pytest.approx(400 / 440, rel=1e-3)
    assert "40 us + 800 us / ranks" in two.text
    one = build(at(2))
    assert one.info["mpi"]["split"] is None and "param split_rank = 1" in one.text
    # at 1 rank the two-trace model computes 840 us per iteration (no communication)
    net = qpn.parse(two.text)
    r = qpn.solve(net, method="des", options=dict(time=2.0, seed=1, quiet=True, workers=1),
                  ranks=1)
    assert r.get("throughput", "rank.begin") == pytest.approx(1 / 840e-6, rel=2e-3)
    # a trace whose loop differs is left out, with a warning
    other = spmd_trace(p=4, iterations=40, differ_rank=None)
    other.events = [e for e in other.events if not (e["kind"] == "mpi" and e["op"] == "sendrecv"
                                                    and e["site"] == "prog.py:12")]
    res = build(at(2), others=(other,))
    assert res.info["mpi"]["split"] is None
    assert any("differs from the first trace's" in w for w in res.warnings)


HEAT = os.path.join(TESTS_DIR, "programs", "mpi_heat.py")


@pytest.fixture(scope="module")
def heat_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("heat")
    out = str(d / "heat.jsonl")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    p = subprocess.run([sys.executable, "-m", "qpn.cli", "trace", "-o", out, "--", mpiexec, "-n",
                        "2", sys.executable, HEAT, "64", "40", "5"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return out


def test_non_blocking_calls_record_their_posting_and_the_wait_that_completes_them(heat_trace, proc_null):
    root = read_trace(heat_trace)
    calls = [e for e in root.events if e["kind"] == "mpi"]
    rank = next(e["rank"] for e in root.events if e.get("type") == "comm")
    ops = [c["op"] for c in calls]
    assert ops[:6] == ["barrier", "irecv", "irecv", "isend", "isend", "wait"]
    assert ops.count("wait") == 40 and ops.count("allreduce") == 40 // 5
    posts = [c for c in calls if c["op"] in ("irecv", "isend")]
    assert {c["bytes"] for c in posts} == {64 * 8}
    # rank 0 has a neighbour below only, rank 1 above only: one receive of 512 bytes each
    # wait; the other side is PROC_NULL, posted but not counted
    assert {c.get("peer") for c in posts} == {1 - rank, proc_null}
    waits = [c for c in calls if c["op"] == "wait"]
    assert {(c["count"], c["bytes"]) for c in waits} == {(1, 512)}


def test_the_calls_between_two_collectives_that_repeat_are_one_inner_loop(heat_trace, tmp_path):
    from qpn.frontends.analyze import build_file
    res = build_file(heat_trace, str(tmp_path / "heat.qpn"))
    assert [c["op"] for c in res.info["mpi"]["calls"]] == ["wait"] * 5 + ["allreduce"]
    assert "loop 5 times {" in res.text and res.text.count("sendrecv world 512") == 1
    assert "a pass holds 5 repeats of the calls between two allreduces" in res.text
    net = qpn.parse(res.text)
    names = [p.name for p in net.params if p.name.startswith("speedup_")]
    assert len(names) == len(set(names)) >= 1
