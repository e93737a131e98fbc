"""Reproducibility of the simulator: a seed gives bit-identical results, whatever
the number of lanes run at once.

Each lane draws from its own stream, keyed by (seed, lane key); sweep point i
of a run with R replications uses lane keys i*R .. i*R+R-1 (with common random
numbers, 0 .. R-1 for every point).  With a fixed horizon (``time``), a
point's numbers must therefore depend on its parameters, the seed and its lane
keys only: running the sweep as one engine, the point alone (with the same
lane keys), or the sweep split in parts must give the same bits, for every
measure, confidence interval and residence-time percentile.

Also here: an interrupted run (Ctrl-C) returns the statistics so far, marked
partial.
"""
import math

import numpy as np
import pytest

import qpn
from des_support import MODELS, assert_all_cover
from qpn.compile import compile_net
from qpn.solvers.des.api import simulate
from qpn.solvers.des.solver import _simulate_compiled, options_of

CASES = [
    # (id, model, swept parameter and values, kernel, horizon)
    ("lindley", "mm1.qpn", ("lambda", [0.5, 0.6, 0.7]), "auto", 3000),
    ("qn", "central_server.qpn", ("n_a", [2, 4, 8]), "qn", 30),
    ("general", "mutex.qpn", ("threads", [3, 4, 5]), "auto", 30),
    ("general-rr", "rr_cpu.qpn", ("slice", [0.005, 0.01, 0.02]), "auto", 2),
]
KERNELS = {"lindley": "LindleyKernel", "qn": "QNKernel", "general": "EventEngine", "general-rr": "EventEngine"}
R = 3


def cells(res) -> list[tuple]:
    return [(r.measure, r.element, r.color) for r in res.rows]


def assert_identical(a, b, what: str) -> None:
    assert cells(a) == cells(b), f"{what}: different measures"
    va = np.array([r.value for r in a.rows])
    vb = np.array([r.value for r in b.rows])
    ca = np.array([math.nan if r.ci is None else r.ci for r in a.rows])
    cb = np.array([math.nan if r.ci is None else r.ci for r in b.rows])
    bad = [(k, x, y) for k, x, y in zip(cells(a), va, vb) if not (x == y or (x != x and y != y))]
    assert not bad, f"{what}: {len(bad)} value(s) differ, e.g. {bad[:3]}"
    bad = [(k, x, y) for k, x, y in zip(cells(a), ca, cb) if not (x == y or (x != x and y != y))]
    assert not bad, f"{what}: {len(bad)} half-width(s) differ, e.g. {bad[:3]}"


def setup(case):
    name, model, (param, values), kernel, T = case
    net = qpn.load(f"{MODELS}/{model}")
    o = options_of({"time": T, "replications": R, "seed": 11, "quiet": True, "kernel": kernel})
    points = [{param: v} for v in values]
    return net, o, points, [compile_net(net, p) for p in points]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_same_seed_same_bits(case):
    net, o, points, _ = setup(case)
    p0 = points[-1]
    a = qpn.solve(net, method="des", options=o, **p0)
    b = qpn.solve(net, method="des", options=o, **p0)
    assert a.info["kernel"] == KERNELS[case[0]]
    assert_identical(a, b, "same seed twice")
    c = qpn.solve(net, method="des", options=o.replace(seed=12), **p0)
    assert [r.value for r in a.rows] != [r.value for r in c.rows], "another seed gave the same numbers"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sweep_point_equals_point_run_alone(case):
    net, o, points, compiled = setup(case)
    sw = simulate(net, sweep={k: [p[k] for p in points] for k in points[0]}, options=o)
    assert [p.params for p in sw.points] == points
    assert sw.points[0].result.info["kernel"] == KERNELS[case[0]]
    for i in range(len(points)):
        alone = _simulate_compiled([compiled[i]], [points[i]], o, True, point_offsets=[i]).points[0]
        assert_identical(sw.points[i].result, alone.result, f"point {i} of the sweep vs run alone")
    # the sweep split into two runs: points 0-1 together, point 2 alone
    first = _simulate_compiled(compiled[:2], points[:2], o, True, point_offsets=[0, 1]).points
    for i in range(2):
        assert_identical(sw.points[i].result, first[i].result, f"point {i}: 3-point sweep vs 2-point sweep")


@pytest.mark.parametrize("case", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_common_random_numbers_point_alone(case):
    # with crn every point uses lane keys 0..R-1, so a point alone is the point in the sweep
    net, o, points, compiled = setup(case)
    o = o.replace(crn=True)
    sw = simulate(net, sweep={k: [p[k] for p in points] for k in points[0]}, options=o)
    for i in (0, 2):
        alone = _simulate_compiled([compiled[i]], [points[i]], o, False)
        assert_identical(sw.points[i].result, alone, f"crn point {i} vs alone")
    # and the first point of the sweep is the plain run with the same seed
    plain = qpn.solve(net, method="des", options=o, **points[0])
    assert_identical(sw.points[0].result, plain, "crn point 0 vs qpn.solve")


def test_number_of_worker_processes_does_not_change_the_bits():
    net = qpn.load(f"{MODELS}/mutex.qpn")
    o = {"time": 30, "replications": 4, "seed": 5, "quiet": True}
    one = qpn.solve(net, method="des", options=dict(o, workers=1))
    two = qpn.solve(net, method="des", options=dict(o, workers=2))
    assert_identical(one, two, "1 vs 2 worker processes")


@pytest.mark.parametrize("model,params,options", [
    # the stopping rule decides at checks (its step counts depend on the statistics)
    ("rr_cpu.qpn", {}, {}),
    # queues grow past their first store size in several lanes of the same round
    ("mm1.qpn", {"lambda": 0.95}, {"time": 2000, "kernel": "general"}),
])
def test_number_of_threads_does_not_change_the_bits(model, params, options):
    # lanes shared among threads: each lane writes its own rows and statistics columns,
    # each thread its own residence histogram (summed at every epoch), so every value,
    # half-width and percentile is the same bits with 1 thread or 3
    net = qpn.load(f"{MODELS}/{model}")
    o = dict({"replications": 7, "seed": 3, "quiet": True, "workers": 1}, **options)
    one = qpn.solve(net, method="des", options=dict(o, threads=1), **params)
    three = qpn.solve(net, method="des", options=dict(o, threads=3), **params)
    assert one.info["kernel"] == three.info["kernel"] == "EventEngine"
    assert one.info["events"] == three.info["events"]
    assert any(r.measure == "residence_p90" for r in one.rows)
    assert_identical(one, three, "1 vs 3 threads")


# ------------------------------------------------------------ Ctrl-C: partial
@pytest.mark.parametrize("kernel,cls,module,method,calls", [
    ("general", "EventEngine", "qpn.solvers.des.events", "advance", 40),
    ("qn", "QNKernel", "qpn.solvers.des.qnkernel", "step", 4000)])
def test_interrupt_returns_the_statistics_so_far_marked_partial(monkeypatch, kernel, cls, module, method, calls):
    # Ctrl-C during a run (simulated: the engine's step, or chunk of steps, raises
    # KeyboardInterrupt after some calls) stops cleanly and returns the statistics so far,
    # marked partial; they are estimates over the simulated part and must still
    # cover the exact answer (the closed tandem, exact MVA).
    import importlib
    mod = importlib.import_module(module)
    klass = getattr(mod, cls)
    orig = getattr(klass, method)
    seen = {"n": 0}

    def step(self, *args, **kwargs):
        seen["n"] += 1
        if seen["n"] > calls:
            raise KeyboardInterrupt
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(klass, method, step)
    net = qpn.load(f"{MODELS}/tandem.qpn")
    res = qpn.solve(net, method="des", options={"time": 1e6, "replications": 50, "seed": 1, "quiet": True,
                                                "kernel": kernel, "workers": 1})
    assert res.info["kernel"] == cls
    assert res.partial
    assert res.info["stopped_by"] == "interrupted"
    assert any("partial" in w for w in res.warnings)
    assert 0 < res.info["simulated_time"] < 1e6
    exact = qpn.solve(net, method="mva")
    assert_all_cover(res, exact, ("throughput", "tokens"), max_rel=0.1)


OPEN_QUEUE = """
net growing
place q queue fcfs service exp(1 s)
transition arrive : -> q delay exp(1.05 s)
transition leave : q ->
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_lanes_that_grow_their_stores_in_one_call_match_each_lane_alone(threads):
    # an almost saturated FCFS queue: its ring (8 tokens at first) grows several times,
    # in different lanes at different steps of the same compiled call; a lane waiting for
    # its store must resume exactly where it stopped, so every lane matches its run alone
    from qpn.solvers.des.events import EventEngine
    from qpn.solvers.des.lanes import build_lanes
    c = compile_net(qpn.parse(OPEN_QUEUE))
    keys = [3, 5, 8, 13, 21, 34]
    together = EventEngine(build_lanes([c], len(keys)), keys, seed=7, threads=threads)
    together.start()
    together.advance(40_000, math.inf)
    assert int(together.sizes.stores["r_cap"].max()) >= 64            # grew 8 -> 64 at least
    for i, k in enumerate(keys):
        alone = EventEngine(build_lanes([c], 1), [k], seed=7, threads=1)
        alone.start()
        alone.advance(40_000, math.inf)
        assert together.t[i] == alone.t[0]
        assert np.array_equal(together.stats.bk_area[:, :, i], alone.stats.bk_area[:, :, 0])
