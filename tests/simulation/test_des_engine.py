"""Simulator run control: reproducibility whatever the lanes run together,
per-point sequential stopping, per-point percentiles, interruption, Dask."""
from __future__ import annotations

import math

import numpy as np
import pytest

import qpn
from qpn.compile import compile_net
from qpn.solvers.des.api import simulate
from qpn.solvers.des.solver import _simulate_compiled, options_of, sweep_points

MODELS = "models/"


def _values(result) -> dict:
    return {(r.measure, r.element, r.color): (r.value, r.ci) for r in result.rows}


def _split_equals_whole(path: str, sweep: dict, opts: dict) -> list:
    """Run a sweep as one engine run and as two shards; return the points' infos."""
    net = qpn.load(path)
    o = options_of(dict(opts, quiet=True))
    pts = sweep_points(sweep)
    comp = [compile_net(net, p) for p in pts]
    whole = _simulate_compiled(comp, pts, o, True)
    first = _simulate_compiled(comp[:1], pts[:1], o, True, point_offsets=[0])
    rest = _simulate_compiled(comp[1:], pts[1:], o, True, point_offsets=list(range(1, len(pts))))
    for a, b in zip(whole.points, first.points + rest.points):
        assert _values(a.result) == _values(b.result), a.params
    return [p.result.info for p in whole.points]


@pytest.mark.parametrize("kernel", ["qn", "general"])
def test_sequential_stop_is_per_point_and_reproducible(kernel):
    # each point stops on its own precision, at step counts fixed by the schedule,
    # so the same seed gives bit-identical numbers alone or together with others
    infos = _split_equals_whole(MODELS + "tandem.qpn", {"N": [2, 6]},
                                dict(replications=16, seed=5, kernel=kernel, rtol=0.03,
                                     min_events=2000, wall=300, histograms=False))
    assert all(i["stopped_by"] == "precision" for i in infos)


@pytest.mark.parametrize("kernel", ["qn", "general"])
def test_fixed_time_lanes_independent_of_batch(kernel):
    # lanes that end early (fewer events in the same time) are closed at their end and
    # never merged again: the points' buckets, warm-ups and CIs are their own
    _split_equals_whole(MODELS + "tandem.qpn", {"N": [1, 8]},
                        dict(replications=6, seed=2, kernel=kernel, time=300))


def test_lindley_sequential_per_point():
    infos = _split_equals_whole(MODELS + "mm1.qpn", {"lambda": [0.3, 0.9]},
                                dict(replications=6, seed=3, rtol=0.02, min_events=2000, wall=300))
    # the lighter load needs fewer customers for the same relative precision
    assert infos[0]["events"] < infos[1]["events"]


def test_percentiles_are_per_point():
    # M/M/1 FCFS response time is exponential with rate mu - lambda: p = -ln(1-q)/(mu-lambda)
    net = qpn.load(MODELS + "mm1.qpn")
    sw = simulate(net, sweep={"lambda": [0.2, 0.8]}, options=dict(time=20000, replications=10, seed=4,
                                                                   quiet=True))
    for pr in sw.points:
        lam = pr.params["lambda"]
        mean = pr.result.get("residence", "server")
        ci = pr.result.ci("residence", "server")
        assert abs(mean - 1 / (1 - lam)) <= 1.8 * ci
        for q in (0.5, 0.9, 0.99):
            exact = -math.log(1 - q) / (1 - lam)
            got = pr.result.get(f"residence_p{int(q * 100)}", "server")
            # 100 log bins per decade (2.3% wide) plus sampling error of a quantile from
            # >= 4e4 customers: about 2% at p50, 3% at p99 relative to the mean
            assert abs(got - exact) / exact < 0.05, (lam, q, got, exact)


def test_interrupt_returns_partial_statistics(monkeypatch):
    from qpn.solvers.des import group as S

    def interrupting(engine, o):
        def check():
            raise KeyboardInterrupt
        check.done = np.zeros(1, dtype=bool)
        return check
    monkeypatch.setattr(S, "sequential_rule", interrupting)
    net = qpn.load(MODELS + "tandem.qpn")
    res = qpn.solve(net, method="des", options=dict(replications=4, seed=1, kernel="qn", quiet=True,
                                                    min_events=3000))
    assert res.partial and res.info["stopped_by"] == "interrupted"
    assert any("partial" in w for w in res.warnings)
    # the statistics so far are real: the N = 5 jobs are conserved over the stations
    total = sum(res.get("tokens", p) for p in ("s1", "s2", "s3"))
    assert abs(total - 5) < 1e-9


def test_distributed_matches_local():
    distributed = pytest.importorskip("dask.distributed")
    net = qpn.load(MODELS + "mm1.qpn")
    sw = {"lambda": [0.3, 0.6, 0.9]}
    o = dict(time=2000, replications=4, seed=7, quiet=True)
    local = simulate(net, sweep=sw, options=o)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = simulate(net, sweep=sw, options=dict(o, scheduler=cluster.scheduler_address))
    assert [p.params for p in remote.points] == [p.params for p in local.points]
    for a, b in zip(local.points, remote.points):
        assert _values(a.result) == _values(b.result)


def test_bad_scheduler_is_a_clear_error():
    pytest.importorskip("dask.distributed")
    net = qpn.load(MODELS + "mm1.qpn")
    with pytest.raises(qpn.QPNError, match="cannot reach the Dask scheduler"):
        simulate(net, options=dict(time=10, scheduler="tcp://127.0.0.1:9", quiet=True))


@pytest.mark.parametrize("path,sweep,opts", [
    ("tandem.qpn", {"N": [2, 6]}, dict(time=100, replications=32, kernel="qn")),
    ("tandem.qpn", {"N": [2, 6]}, dict(time=50, replications=8, kernel="general")),
    ("mm1.qpn", {"lambda": [0.5, 0.8]}, dict(time=2000, replications=8)),
    ("tandem.qpn", {"N": [2, 6]}, dict(replications=8, kernel="qn", rtol=0.05, min_events=2000)),
])
def test_processes_give_the_numbers_of_one_process(path, sweep, opts):
    # lanes cut into shards run in 2 processes and merged: bit-identical statistics,
    # percentiles included (histogram epochs depend on the step count alone)
    net = qpn.load(MODELS + path)
    one = simulate(net, sweep=sweep, options=dict(opts, seed=3, quiet=True, workers=1))
    two = simulate(net, sweep=sweep, options=dict(opts, seed=3, quiet=True, workers=2))
    assert two.points[0].result.info["processes"] == 2
    for a, b in zip(one.points, two.points):
        assert _values(a.result) == _values(b.result)


def test_histogram_is_reported_and_matches_the_counts():
    # the non-empty bins of the residence histogram come with the result; their total is
    # the number of departures after the warm-up, and their mass follows exp(mu - lambda)
    net = qpn.load(MODELS + "mm1.qpn")
    res = qpn.solve(net, method="des", options=dict(time=20000, replications=10, seed=2, quiet=True,
                                                   warmup=0))
    h = res.info["histograms"]["server"]
    lo, hi, n = (np.asarray(h[k]) for k in ("lower", "upper", "count"))
    total = n.sum()
    departures = res.get("departures", "server") * res.info["simulated_time"] * 10
    assert abs(total - departures) <= 1e-6 * departures + 10
    below = n[hi <= 5.0].sum() / total           # P(R <= 5) = 1 - e^-1 for M/M/1 at rho 0.8
    # binomial standard error of a fraction over >= 1.5e5 customers (but correlated): 5x it
    assert abs(below - (1 - math.exp(-1))) < 0.02


FEW = """net few
software {
    cpu host cores 1 ps
    pool w size 1 {
        loop 10 times { cpu det(3 ms) as work }
    }
}
"""


def test_few_firings_are_warned():
    """A throughput counted from a handful of firings per replication is off by
    up to one firing in every replication of a deterministic net, and its CI
    does not show it: the result says so.  w.begin fires once per 30 ms (9 times
    in 0.25 s: 36/s with a CI of 0, against 33.3/s), w.work.done ten times as often."""
    net = qpn.parse(FEW)
    short = qpn.solve(net, method="des", options=dict(time=0.25, replications=4, seed=1, quiet=True))
    few = [w for w in short.warnings if "rests on" in w]
    assert len(few) == 1 and few[0].startswith("throughput w.begin rests on ~")
    n = int(few[0].split("~")[1].split()[0])
    assert 2 <= n <= 0.25 / 0.03 + 1
    assert short.get("throughput", "w.work.done") == pytest.approx(1 / 0.003, rel=0.02)
    long = qpn.solve(net, method="des", options=dict(time=6.0, replications=4, seed=1, quiet=True))
    assert not [w for w in long.warnings if "rests on" in w]
    assert long.get("throughput", "w.begin") == pytest.approx(1 / 0.03, rel=0.02)


def test_histogram_bin_by_table_is_the_bin_by_logarithm():
    # the event loop bins a residence time by a table over the exponent and 8 mantissa
    # bits, and by log10 next to a bin edge; both must give stats.bin_of's bin, at the
    # edges themselves, a double either side of them, and anywhere in the range and beyond
    from qpn.solvers.des.jit.store import bin_of as loop_bin_of
    from qpn.solvers.des.stats import LOG_MIN, NB_PER_DECADE, NBINS
    from qpn.solvers.des.stats import bin_of as stats_bin_of
    rng = np.random.default_rng(5)
    edges = 10.0 ** (LOG_MIN + np.arange(NBINS - 1) / NB_PER_DECADE)
    xs = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf),
                         10.0 ** rng.uniform(-12, 10, 20000), [0.0, 1e-300, 1e-200, 1e30, 2.0 ** -40, 2.0 ** 30]])
    want = stats_bin_of(xs)
    got = np.array([loop_bin_of(float(x)) for x in xs])
    near = np.flatnonzero(got != want)
    # an edge's own double may differ by one bin (numpy's and libm's log10 may round apart)
    assert len(near) <= 5 and all(abs(got[i] - want[i]) == 1 for i in near), xs[near][:5]
