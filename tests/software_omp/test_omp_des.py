"""OpenMP ``parallel for`` simulated by the event engine against closed forms.

A pool of one thread repeats one ``parallel for`` of N iterations of ``cpu det(w)`` on
T threads, so ``throughput p.begin`` is 1 / (time of one parallel for):

* K >= T cores (no contention), static: the busiest thread runs ceil(N / T)
  iterations: ceil(N / T) * w (3 w for N = 10, T = 4; N w for T = 1);
* dynamic, chunk C: the T threads take the ceil(N / C) chunks in order as they become
  free; with deterministic bodies that is a list schedule, computed below
  (C = 1, N = 10, T = 4: 3 w; C = 3: chunks 3, 3, 3, 1 on 4 threads: 3 w; on 2
  threads: 3 + 3 on one, 3 + 1 on the other: 6 w);
* guided: the same with chunks that shrink (ceil(left / T), at least C);
* K < T cores (processor sharing): the T threads share the cores: N = 8, T = 4 on
  2 cores: 8 w / 2 = 4 w;
* exponential bodies, N = T = P on P cores: the slowest of P exponentials, w * H_P;
* and, exactly, with the CTMC: 4 iterations of exp(1 s) on 2 threads and 2 cores.
"""
import heapq
import math

import pytest

import qpn
from des_support import assert_covers, des

W = 1e-3

MODEL = """
param w = 1 ms
software {{
    cpu host cores {cores}
    pool p size 1 {{
        parallel for {n}{threads}{schedule} {{ cpu {dist}(w) on host }}
    }}
}}"""


def model(n, t, cores, schedule="", dist="det"):
    return qpn.parse(MODEL.format(n=n, threads=f" threads {t}" if t else "", cores=cores,
                                  schedule=schedule, dist=dist))


def list_schedule(n, t, c, sizes=None):
    """The makespan (in units of w) of ceil(n / c) chunks (or of chunks of ``sizes``)
    handed out in order to t threads, each taking the next chunk when it is free
    (deterministic iterations)."""
    if sizes is None:
        sizes = [c] * (n // c) + ([n % c] if n % c else [])
    free = [0.0] * t
    for size in sizes:
        at = heapq.heappop(free)
        heapq.heappush(free, at + size)
    return max(free)


def cycle(res, runner="p"):
    return 1 / res.get("throughput", f"{runner}.begin")


STATIC = [  # (N, T, cores, cycle in w)
    (10, 4, 4, 3), (10, 1, 4, 10), (8, 4, 4, 2), (3, 4, 4, 1), (7, 3, 4, 3), (12, 5, 8, 3),
    (8, 4, 2, 4), (6, 3, 1, 6),
]


@pytest.mark.parametrize("n,t,cores,w", STATIC)
def test_static_takes_the_busiest_threads_iterations(n, t, cores, w):
    res = des(model(n, t, cores), {"time": 5, "replications": 2})
    assert cycle(res) == pytest.approx(w * W, rel=2e-3)


DYNAMIC = [  # (N, T, chunk)
    (10, 4, 1), (10, 4, 3), (10, 2, 3), (10, 3, 4), (7, 2, 2), (5, 8, 2), (9, 3, 3), (1, 4, 5),
]


@pytest.mark.parametrize("n,t,c", DYNAMIC)
def test_dynamic_is_a_list_schedule_of_the_chunks(n, t, c):
    res = des(model(n, t, 8, f" schedule dynamic {c}"), {"time": 5, "replications": 2})
    assert cycle(res) == pytest.approx(list_schedule(n, t, c) * W, rel=2e-3)


GUIDED = [  # (N, T, chunk)
    (10, 4, 1), (10, 4, 3), (100, 4, 5), (7, 2, 1), (3, 4, 1), (40, 3, 2),
]


@pytest.mark.parametrize("n,t,c", GUIDED)
def test_guided_is_a_list_schedule_of_shrinking_chunks(n, t, c):
    from qpn.software.omp import guided_chunks
    sizes = guided_chunks(n, t, c)
    res = des(model(n, t, 8, f" schedule guided {c}"), {"time": 5, "replications": 2})
    assert cycle(res) == pytest.approx(list_schedule(n, t, c, sizes) * W, rel=2e-3)


def test_the_closed_forms_of_the_brief():
    assert [list_schedule(10, 4, 1), list_schedule(10, 4, 3), list_schedule(10, 2, 3)] == [3, 3, 6]
    # guided, 10 on 4: chunks 3, 2, 2, 1, 1, 1: the first thread's 3 is the longest
    assert list_schedule(10, 4, 1, [3, 2, 2, 1, 1, 1]) == 3
    assert list_schedule(100, 4, 5, [25, 19, 14, 11, 8, 6, 5, 5, 5, 2]) == 26
    assert [math.ceil(n / t) for n, t in ((10, 4), (10, 1))] == [3, 10]


def test_dynamic_chunks_are_counted():
    res = des(model(10, 4, 4, " schedule dynamic 3"), {"time": 5, "replications": 2})
    per_loop = res.get("throughput", "p.begin")
    # 3 full chunks and the last one per parallel for; 10 iterations of the body
    assert res.get("throughput", "p.parallel_for.thread.begin") == pytest.approx(3 * per_loop,
                                                                                rel=1e-3)
    assert res.get("throughput", "p.parallel_for.thread.last") == pytest.approx(per_loop, rel=1e-3)
    assert res.get("throughput", "p.parallel_for.thread.cpu.done") == pytest.approx(
        10 * per_loop, rel=1e-3)


def test_threads_default_to_the_cores():
    res = des(model(8, None, 4), {"time": 5, "replications": 2})
    assert cycle(res) == pytest.approx(2 * W, rel=2e-3)


def test_parameters_give_the_same_times_as_numbers():
    net = qpn.parse("""
param w = 1 ms
param n = 10
param t = 4
param c = 3
software {
    cpu host cores 8
    pool p size 1 { parallel for n threads t { cpu det(w) on host } }
    pool q size 1 { parallel for n threads t schedule dynamic c { cpu det(w) on host } }
}""")
    for n, t, c in [(10, 4, 3), (7, 3, 2), (3, 5, 4), (8, 4, 4)]:
        res = des(net, {"time": 3, "replications": 2}, n=n, t=t, c=c)
        assert 1 / res.get("throughput", "p.begin") == pytest.approx(
            math.ceil(n / min(n, t)) * W, rel=3e-3), (n, t)
        assert 1 / res.get("throughput", "q.begin") == pytest.approx(
            list_schedule(n, t, c) * W, rel=3e-3), (n, t, c)


@pytest.mark.parametrize("p", [2, 4])
def test_exponential_iterations_one_per_thread_take_the_slowest(p):
    harmonic = sum(1 / k for k in range(1, p + 1))
    res = des(model(p, p, p, dist="exp"), {"time": 20, "replications": 10})
    assert_covers(res, "throughput", "p.begin", "", 1 / (W * harmonic), max_rel=0.02)


def test_example_model_matches_its_closed_form():
    import os
    from conftest import MODELS
    net = qpn.load(os.path.join(MODELS, "sw_omp.qpn"))
    res = des(net, {"time": 5, "replications": 2})
    # 2 ms serial, then twice 10 iterations of 1 ms on 4 threads (3 on the busiest): 8 ms
    assert cycle(res, "main") == pytest.approx(8e-3, rel=2e-3)
    assert res.get("throughput", "main.tiles.thread.last") == pytest.approx(1 / 8e-3, rel=2e-3)
    # with 12 iterations the static blocks are 3, 3, 3, 3 and the chunks 3, 3, 3, 3
    res = des(net, {"time": 5, "replications": 2}, iterations=12)
    assert cycle(res, "main") == pytest.approx(8e-3, rel=2e-3)
    res = des(net, {"time": 5, "replications": 2}, iterations=13)
    assert cycle(res, "main") == pytest.approx((2 + 4 + 4) * 1e-3, rel=2e-3)


@pytest.mark.parametrize("schedule,cycle_s", [
    ("", 2.75),                       # 2 iterations per thread: E[max of two Erlang-2] = 11/4
    (" schedule dynamic", 2.5),       # memoryless: 1/2 + 1/2 + 1/2 (two busy) + 1 (the last)
    (" schedule dynamic 2", 2.75),    # the same blocks as static
    (" schedule dynamic 3", 3.125),   # chunks 3 and 1: E[max(Erlang-3, exp)] = 3 + 1 - 7/8
])
def test_the_ctmc_gives_the_exact_exponential_closed_forms(schedule, cycle_s):
    net = qpn.parse(f"""
software {{
    cpu host cores 2
    pool p size 1 {{ parallel for 4 threads 2{schedule} {{ cpu exp(1 s) }} }}
}}""")
    res = qpn.solve(net, method="ctmc")
    assert 1 / res.get("throughput", "p.begin") == pytest.approx(cycle_s, rel=1e-9)
