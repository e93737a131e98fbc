"""Known-answer examples of the seeds, rebuilt as qpn models and checked against their
closed forms (docs/published.md):

* seed 003 §F2 (VEX §6.1): M/M/1 with a time-scaled server, lambda = 400/s, mu = 800,
  960, 533.3 -> R = 2.5, 1.786, 7.5 ms (models/published/vex_mm1.qpn, exact by MVA);
* seed 003 §F3 (VEX §7.3.3): T CPU-bound threads of q on m cores, f(T, m) = q ceil(T/m)
  (models/published/vex_parallel_loop.qpn; deterministic, so the simulation is exact);
* seed 003 §F4 (VEX ch. 8, Figure 8.6): the open queueing network of one request, MySQL
  an M/D/1 queue (models/published/vex_demo_select.qpn, simulated, against Pollaczek-Khinchine);
* seed 004 §F4: four ranks reach a barrier after 3, 5, 2 and 7 s: all leave at 7, the
  waits are 4, 2, 5 and 0;
* seed 004 §F5: four processes enter a critical region of 2 s at the same time: they
  leave it at 2, 4, 6 and 8 s, their waits are 0, 2, 4, 6 (mean 3).
"""
import math
import os

import pytest

import qpn
from conftest import MODELS as _ALL
from des_support import assert_covers, des

MODELS = os.path.join(_ALL, "published")     # the models rebuilt from the seeds


def _load(name):
    return qpn.load(os.path.join(MODELS, name))


# ---------------------------------------------------------------- seed 003 §F2

@pytest.mark.parametrize("speedup, mu_eff, r_ms", [
    (1.0, 800.0, 2.5), (1.2, 960.0, 1.0 / 0.56), (2 / 3, 1600 / 3, 7.5)])
def test_mm1_with_a_time_scaled_server_is_exact_by_mva(speedup, mu_eff, r_ms):
    res = qpn.solve(_load("vex_mm1.qpn"), method="auto", speedup=speedup)
    assert res.method == "mva"          # open product form: exact
    assert res.get("residence", "clients.serve") == pytest.approx(1 / (mu_eff - 400), rel=1e-12)
    assert 1000 * res.get("residence", "clients.serve") == pytest.approx(r_ms, rel=1e-12)
    assert res.get("utilization", "server") == pytest.approx(400 / mu_eff, rel=1e-12)


def test_mm1_simulated_agrees_with_the_closed_form():
    res = des(_load("vex_mm1.qpn"), {"time": 100, "replications": 10})
    assert_covers(res, "residence", "clients.serve", "", 1 / (800 - 400), max_rel=0.05)


# ---------------------------------------------------------------- seed 003 §F3

def _loop(discipline):
    text = open(os.path.join(MODELS, "vex_parallel_loop.qpn")).read()
    assert "cores cores ps" in text
    return qpn.parse(text.replace("cores cores ps", f"cores cores {discipline}"))


def _run_time(net, threads, cores, runs=500):
    # a run is `threads` timed events (the completions): stop after whole runs
    res = des(net, {"events": runs * threads, "replications": 1, "warmup": "none"},
              threads=threads, cores=cores)
    return 1 / res.get("throughput", "main.run.done")


@pytest.mark.parametrize("threads, cores", [(1, 1), (2, 2), (4, 2), (8, 2), (16, 4), (12, 4)])
def test_parallel_loop_is_q_times_t_over_m_when_m_divides_t(threads, cores):
    """f(T, m) = q ceil(T / m) = q T / m: processor sharing and FCFS agree."""
    f = 0.17 * math.ceil(threads / cores)
    for discipline in ("ps", "fcfs"):
        assert _run_time(_loop(discipline), threads, cores) == pytest.approx(f, rel=1e-9)


@pytest.mark.parametrize("threads, cores", [(3, 2), (5, 2), (5, 4), (7, 3)])
def test_parallel_loop_when_m_does_not_divide_t(threads, cores):
    """f(T, m) = q ceil(T / m) is run to completion (fcfs); sharing the cores gives q T / m."""
    assert _run_time(_loop("fcfs"), threads, cores) == pytest.approx(
        0.17 * math.ceil(threads / cores), rel=1e-9)
    assert _run_time(_loop("ps"), threads, cores) == pytest.approx(0.17 * threads / cores,
                                                                  rel=1e-9)


# ---------------------------------------------------------------- seed 003 §F4

def test_the_open_network_of_one_request_is_an_md1_queue_behind_a_cache():
    lam, hit, s, c = 400.0, 0.75, 7e-3, 50e-6
    lam_db = lam * (1 - hit)
    u = lam_db * s
    r_db = s + lam_db * s * s / (2 * (1 - u))            # Pollaczek-Khinchine
    r_cache = c / (1 - lam * hit * c)                    # one core, processor sharing
    assert (u, round(1000 * r_db, 2)) == (pytest.approx(0.7), 15.17)
    res = des(_load("vex_demo_select.qpn"), {"time": 600, "replications": 10})
    assert_covers(res, "utilization", "mysql", "", u, max_rel=0.01)
    assert_covers(res, "residence", "clients.query", "", r_db, max_rel=0.02)
    assert_covers(res, "residence", "clients.cache", "", r_cache, max_rel=0.01)
    assert_covers(res, "residence", "response.running", "", hit * r_cache + (1 - hit) * r_db,
                  max_rel=0.02)


# ---------------------------------------------------------------- seed 004 §F4, §F5

BARRIER = qpn.parse("""
net f4
software {
    cpu host cores 4 ps
    barrier b parties 4
    pool r1 size 1 { cpu det(3 s) as work  await b }
    pool r2 size 1 { cpu det(5 s) as work  await b }
    pool r3 size 1 { cpu det(2 s) as work  await b }
    pool r4 size 1 { cpu det(7 s) as work  await b }
}""")


def test_barrier_releases_everybody_when_the_slowest_arrives():
    res = des(BARRIER, {"events": 200_000, "replications": 1, "warmup": "none"})
    assert 1 / res.get("throughput", "b.trip") == pytest.approx(7, rel=1e-4)   # all leave at 7
    waits = [res.get("residence", f"r{k}.await_b") for k in (1, 2, 3, 4)]
    assert waits == pytest.approx([4, 2, 5, 0], abs=1e-3)
    assert res.get("residence", "b.waiting") == pytest.approx(11 / 4, rel=1e-3)   # mean 2.75


CRITICAL = qpn.parse("""
net f5
software {
    cpu host cores 4 ps
    barrier start parties 4
    mutex m
    pool p size 4 {
        await start
        lock m
        cpu det(2 s) as critical
        unlock m
    }
}""")


def test_critical_region_serializes_four_processes():
    """The barrier makes the four reach the region together, every round."""
    res = des(CRITICAL, {"events": 200_000, "replications": 1, "warmup": "none"})
    assert 1 / res.get("throughput", "start.trip") == pytest.approx(8, rel=1e-4)  # last exit at 8
    assert res.get("residence", "p.lock_m") == pytest.approx(3, rel=1e-3)     # waits 0, 2, 4, 6
    assert res.get("tokens", "m.held") == pytest.approx(1, rel=1e-3)          # busy over [0, 8]
    assert res.get("residence", "p.critical") == pytest.approx(2, rel=1e-4)
    # each leaves the region and waits at the barrier for the last: 6, 4, 2, 0
    assert res.get("residence", "p.await_start") == pytest.approx(3, rel=1e-3)
