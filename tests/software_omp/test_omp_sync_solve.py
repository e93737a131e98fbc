"""OpenMP ``critical``, ``atomic``, ``single`` and ``reduction`` solved: deterministic closed
forms with the simulator, exact exponential values with the CTMC, and the CTMC against the
simulator.

A pool of one thread repeats one ``parallel for``, so ``1 / throughput p.begin`` is the time
of one loop.  With deterministic times and at least as many cores as threads (no cpu
contention):

* T threads each computing w then a critical section of c: w + T c (the T sections queue);
  with N = 2T iterations and c <= w / T, the first round of sections staggers the threads so
  the second round does not queue: 2 w + (T + 1) c;
* a reduction of c after N iterations of w shared evenly: (N / T) w + T c; unevenly (10 on
  4: blocks of 3, 3, 2, 2): the two short threads combine first, 3 w + 2 c (2 c <= w); with
  fewer iterations than threads the idle threads combine at once: max(w, i c) + (T - i) c
  for i idle threads;
* a single of s then a critical section of c: with the barrier s + T c; nowait: the others
  queue at once, max(s, (T - 1) c) + c; its block runs once per round (N / T rounds);
* two atomic sites (or critical sections of two names) of c in a row: the second does not
  queue behind the first (the threads leave the first one c apart): w + (T + 1) c; the same
  two updates as critical sections of one name (or unnamed): w + 2 T c.
"""
import math

import pytest

import qpn
from des_support import assert_covers, des

W = 1e-3

MODEL = """
param w = 1 ms
param c = 0.25 ms
param s = 2 ms
software {{
    cpu host cores 8
    pool p size 1 {{
        parallel for {head} as pf {{
            {body}
        }}
    }}
}}"""


def model(head: str, *body: str):
    return qpn.parse(MODEL.format(head=head, body="\n            ".join(body)))


def cycle_ms(net, **params):
    res = des(net, {"time": 5, "replications": 2}, **params)
    return 1e3 / res.get("throughput", "p.begin"), res


@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_critical_sections_of_the_team_queue(t):
    net = model(f"{t} threads {t}", "cpu det(w)", "critical { cpu det(c) }")
    assert cycle_ms(net)[0] == pytest.approx(1 + t * 0.25, rel=2e-3)


def test_critical_sections_stagger_the_threads_for_the_next_iteration():
    net = model("8 threads 4", "cpu det(w)", "critical { cpu det(c) }")
    assert cycle_ms(net)[0] == pytest.approx(2 + 5 * 0.25, rel=2e-3)


@pytest.mark.parametrize("head,closed", [
    ("8 threads 4 reduction det(c)", 2 + 4 * 0.25),
    ("16 threads 4 reduction det(c)", 4 + 4 * 0.25),
    ("10 threads 4 reduction det(c)", 3 + 2 * 0.25),         # blocks of 3, 3, 2, 2
    ("2 threads 4 reduction det(c)", max(1, 2 * 0.25) + 2 * 0.25),    # 2 idle threads
    ("1 threads 4 reduction det(0.5 ms)", max(1, 3 * 0.5) + 0.5),     # 3 idle threads
    ("8 threads 4 schedule dynamic reduction det(c)", 2 + 4 * 0.25),
    ("8 threads 4 schedule guided reduction det(c)", 2 + 4 * 0.25),   # chunks 2, 2, 1, 1, 1, 1
    ("8 threads 4", 2),                                                 # no reduction
])
def test_reduction_combines_one_thread_at_a_time(head, closed):
    net = model(head, "cpu det(w)")
    assert cycle_ms(net)[0] == pytest.approx(closed, rel=2e-3)


def test_single_with_its_barrier_and_with_nowait():
    barrier = model("4 threads 4", "single { cpu det(s) }", "critical { cpu det(c) }")
    nowait = model("4 threads 4", "single nowait { cpu det(s) }", "critical { cpu det(c) }")
    assert cycle_ms(barrier)[0] == pytest.approx(2 + 4 * 0.25, rel=2e-3)
    assert cycle_ms(nowait)[0] == pytest.approx(max(2, 3 * 0.25) + 0.25, rel=2e-3)
    # the others skip the block: with c = 1 ms they are still queueing when it ends
    assert cycle_ms(nowait, c=1e-3)[0] == pytest.approx(max(2, 3) + 1, rel=2e-3)


@pytest.mark.parametrize("head,inner,rounds", [
    ("4 threads 4", 1, 1), ("8 threads 4", 1, 2), ("12 threads 4", 2, 3), ("3 threads 8", 3, 1),
])
def test_the_block_of_a_single_runs_once_per_round(head, inner, rounds):
    net = model(head, f"loop {inner} times {{", "    single { sleep det(s) as once }",
                "    cpu det(w)", "}")
    cyc, res = cycle_ms(net)
    per_loop = res.get("throughput", "p.begin")
    assert res.get("throughput", "p.pf.thread.once.done") == pytest.approx(
        inner * rounds * per_loop, rel=1e-3)
    # every round: the single's block, then the work of every thread
    assert cyc == pytest.approx(inner * rounds * (2 + 1), rel=2e-3)


def test_a_parallel_region_of_parameters():
    net = qpn.parse("""
param t = 4
param w = 1 ms
software {
    cpu host cores 8
    pool p size 1 {
        parallel for t threads t {
            single { cpu det(w) }
            critical { cpu det(w) }
        }
    }
}""")
    for t in (1, 2, 3, 5):
        assert cycle_ms(net, t=t)[0] == pytest.approx(1 + t, rel=3e-3), t


def test_atomic_sites_and_critical_names_serialize_each_on_its_own():
    sites = model("4 threads 4", "cpu det(w)", "atomic det(c) as a", "atomic det(c) as b")
    names = model("4 threads 4", "cpu det(w)", "critical a { cpu det(c) }",
                  "critical b { cpu det(c) }")
    shared = model("4 threads 4", "cpu det(w)", "critical x { cpu det(c) }",
                   "critical x { cpu det(c) }")
    unnamed = model("4 threads 4", "cpu det(w)", "critical { cpu det(c) }",
                    "critical { cpu det(c) }")
    assert cycle_ms(sites)[0] == pytest.approx(1 + 5 * 0.25, rel=2e-3)
    assert cycle_ms(names)[0] == pytest.approx(1 + 5 * 0.25, rel=2e-3)
    assert cycle_ms(shared)[0] == pytest.approx(1 + 8 * 0.25, rel=2e-3)
    # the unnamed sections share one lock: the 8 sections one after the other
    assert cycle_ms(unnamed)[0] == pytest.approx(1 + 8 * 0.25, rel=2e-3)


def test_the_example_model_matches_its_closed_form():
    import os
    from conftest import MODELS
    net = qpn.load(os.path.join(MODELS, "sw_omp_sync.qpn"))
    res = des(net, {"time": 5, "replications": 2})
    assert 1 / res.get("throughput", "main.begin") == pytest.approx(11e-3, rel=2e-3)
    per_loop = res.get("throughput", "main.begin")
    assert res.get("throughput", "main.region.thread.read.done") == pytest.approx(per_loop, rel=2e-3)
    # 4 + 5 + 2 ms becomes 4 + 5 + 1 + 4 * 0.5 with updates of 0.5 ms: 2 + 1 + 2, 4 + 2, 1 + 2
    res = des(net, {"time": 5, "replications": 2}, update=0.5e-3)
    assert 1 / res.get("throughput", "main.begin") == pytest.approx(14e-3, rel=2e-3)


# --------------------------------------------------------------- exponential: CTMC
EXP = """
software {{
    cpu host cores 2
    pool p size 1 {{ parallel for 2 threads 2{head} {{ {body} }} }}
}}"""


@pytest.mark.parametrize("head,body,exact", [
    # both work exp(1) at rate 2 (1/2), then one holds the lock while the other still works
    # or waits (1/2 more), then two exp(1) remain in series either way: 1/2 + 1/2 + 2
    ("", "cpu exp(1 s)\n critical { cpu exp(1 s) }", 3.0),
    ("", "cpu exp(1 s)\n atomic exp(1 s)", 3.0),
    (" reduction exp(1 s)", "cpu exp(1 s)", 3.0),
    # the block, then the slowest of two exp(1): 1 + 3/2
    ("", "single { cpu exp(1 s) }\n cpu exp(1 s)", 2.5),
    # the runner's Erlang-2 against the other's exp(1): 2 + 1 - E[min] = 3 - 3/4
    ("", "single nowait { cpu exp(1 s) }\n cpu exp(1 s)", 2.25),
])
def test_the_ctmc_gives_the_exact_exponential_values(head, body, exact):
    net = qpn.parse(EXP.format(head=head, body=body))
    res = qpn.solve(net, method="ctmc")
    assert 1 / res.get("throughput", "p.begin") == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("k,z,s", [(2, 1.0, 1.0), (3, 1.0, 0.5), (5, 2.0, 0.3)])
def test_contended_atomic_is_the_machine_repairman(k, z, s):
    # k threads think exp(z) on their own cores, then one atomic site of exp(s): M/M/1//k
    net = qpn.parse(f"""
software {{
    cpu host cores {k}
    pool p size {k} {{
        cpu exp({z} s)
        atomic exp({s} s)
    }}
}}""")
    res = qpn.solve(net, method="ctmc")
    p0 = 1 / sum(math.factorial(k) / math.factorial(k - n) * (s / z) ** n for n in range(k + 1))
    assert res.get("throughput", "p.begin") == pytest.approx((1 - p0) / s, rel=1e-9)
    # threads waiting for the site: the queue of the repairman minus the one in repair
    waiting = sum(max(n - 1, 0) * math.factorial(k) / math.factorial(k - n) * (s / z) ** n
                  for n in range(k + 1)) * p0
    assert res.get("tokens", "p.atomic.waiting") == pytest.approx(waiting, rel=1e-9)


def test_the_simulator_agrees_with_the_ctmc_on_all_four():
    net = qpn.parse("""
software {
    cpu host cores 2
    pool p size 1 {
        parallel for 4 threads 2 reduction exp(0.2 s) {
            single { sleep exp(0.5 s) as read }
            cpu exp(1 s)
            critical { cpu exp(0.6 s) as add }
            atomic exp(0.1 s) as count
        }
    }
}""")
    exact = qpn.solve(net, method="ctmc")
    sim = des(net, {"time": 6000, "replications": 10})
    for measure, element in [("throughput", "p.begin"), ("tokens", "critical.waiting"),
                             ("tokens", "p.parallel_for.thread.read"),
                             ("throughput", "p.parallel_for.thread.add.done")]:
        assert_covers(sim, measure, element, "", exact.get(measure, element), max_rel=0.05,
                      what="ctmc")
