"""Round-robin CPU (queue rr quantum q, servers c) in the simulator: exact schedules.

Jobs are tokens that start in the RR queue at time 0 with deterministic work,
go through it once and land in a ``done`` place.  Without a context-switch
cost every event happens at a multiple of the quantum, so the schedule is
exact and so are these observations, made with one replication, no warm-up
cut and a fixed horizon T:

* the number of jobs finished by T is ``throughput(finish) * T``;
* a finished job sits in ``done`` from its finish time f to T, so the
  time-averaged tokens of ``done`` over [0, T] is sum(T - f) / T, which gives
  the sum (hence the mean) of the finish times of the jobs done by T.

Horizons are placed a quarter quantum away from the multiples of the quantum
so no event coincides with the end of the run.

Fair round robin: two jobs' received service never differs by more than one
quantum.  So when the first of n equal jobs (work W) finishes, each other one
has received at least W - q, the c cores have done at least n (W - q) + q of
work, and every job finishes in [nW/c - (n - 1) q / c, nW/c] (the last at
nW/c exactly when n W/q is a multiple of c: the cores never idle).
"""
import math

import pytest

import qpn
from des_support import des

EQUAL_JOBS = """
net rr_equal
param n = 5
param cores = 2
param work = 1 s
place cpu
    queue rr servers cores quantum 100 ms
    service det(work)
    init n
place done
transition finish : cpu -> done
"""

Q = 0.1


def run(net, T: float, **params):
    res = des(net, {"time": T, "replications": 1, "warmup": 0}, **params)
    assert res.info["simulated_time"] == pytest.approx(T, rel=1e-12)
    return res


def finished(net, T: float, **params) -> tuple[int, float]:
    """(jobs finished by T, sum of their finish times)."""
    res = run(net, T, **params)
    k = res.get("throughput", "finish") * T
    assert k == pytest.approx(round(k), abs=1e-6)
    k = int(round(k))
    return k, k * T - res.get("tokens", "done") * T


@pytest.mark.parametrize("n,cores", [(1, 1), (2, 2), (3, 4)])
def test_no_more_jobs_than_cores_all_finish_at_their_work(n, cores):
    net = qpn.parse(EQUAL_JOBS)
    k, _ = finished(net, 1.0 - Q / 4, n=n, cores=cores)
    assert k == 0
    k, total = finished(net, 1.0 + Q / 4, n=n, cores=cores)
    assert k == n
    assert total / n == pytest.approx(1.0, abs=1e-9)


# (n, cores, work): n * work / quantum is a multiple of the cores, so the cores
# never idle and the last job finishes at n W / c exactly
MORE_JOBS = [(3, 1, 1.0), (5, 2, 1.0), (6, 2, 1.0), (4, 3, 0.6), (7, 2, 0.4)]


@pytest.mark.parametrize("n,cores,work", MORE_JOBS, ids=[f"n{n}-c{c}-W{w}" for n, c, w in MORE_JOBS])
def test_more_jobs_than_cores_share_the_cores_fairly(n, cores, work):
    net = qpn.parse(EQUAL_JOBS)
    end = n * work / cores
    first = end - (n - 1) * Q / cores         # earliest finish under fair RR
    # nobody finishes before the last round ...
    k, _ = finished(net, first - Q / 4, n=n, cores=cores, work=work)
    assert k == 0, f"{k} job(s) finished before {first - Q / 4:.3f} s (fair RR: none before {first:.3f} s)"
    # ... the cores never idle, so the last job finishes at n W / c exactly ...
    k, _ = finished(net, end - Q / 4, n=n, cores=cores, work=work)
    assert k < n
    k, total = finished(net, end + Q / 4, n=n, cores=cores, work=work)
    assert k == n
    # ... and the utilization over [0, n W / c] is 1
    res = run(net, end, n=n, cores=cores, work=work)
    assert res.get("utilization", "cpu") == pytest.approx(1.0, rel=1e-9)
    assert first - 1e-9 <= total / n <= end + 1e-9


def test_round_robin_cycle_schedule_is_exact():
    # 5 jobs of 1 s on 2 cores, quantum 100 ms, no switch cost.  The ready queue
    # is a cycle 1 2 3 4 5 1 2 ...; each 100 ms slot serves the next two, so
    # job i's 10th quantum is the (45 + i)-th in the cycle, served in slot
    # ceil((45 + i) / 2): the jobs finish at 2.3, 2.4, 2.4, 2.5, 2.5 s.
    net = qpn.parse(EQUAL_JOBS)
    finish = sorted(math.ceil((45 + i) / 2) * Q for i in range(1, 6))
    for T in (2.25, 2.35, 2.45, 2.55):
        k, total = finished(net, T)
        done = [f for f in finish if f < T]
        assert k == len(done), (T, k, done)
        assert total == pytest.approx(sum(done), abs=1e-9)


GROUPS = """
net rr_groups
colors group = {short, medium, long}
place cpu : group
    queue rr quantum 100 ms
    service short: det(500 ms), medium: det(1 s), long: det(2 s)
    init 5 short, 5 medium, 5 long
place done : group
transition finish : cpu(g) -> done(g)
"""


def by_group(T: float) -> dict[str, tuple[int, float]]:
    """Per group: (jobs finished by T, their mean finish time)."""
    res = run(qpn.parse(GROUPS), T)
    out = {}
    for g in ("short", "medium", "long"):
        k = res.get("throughput", "finish", f"[g={g}]") * T
        assert k == pytest.approx(round(k), abs=1e-6)
        k = int(round(k))
        total = k * T - res.get("tokens", "done", g) * T
        out[g] = (k, total / k if k else math.nan)
    return out


def test_three_groups_on_one_core_finish_in_group_order():
    # 15 threads on one core, quantum 100 ms: 5 need 0.5 s (5 quanta), 5 need
    # 1 s (10 quanta), 5 need 2 s (20 quanta).  Every round gives each unfinished
    # thread one quantum: rounds 1-5 last 1.5 s (15 threads), rounds 6-10 1 s
    # (10 threads), rounds 11-20 0.5 s (5 threads).  So the short threads finish
    # in round 5 = (6.0, 7.5] s, the medium ones in round 10 = (11.5, 12.5] s and
    # the long ones in round 20 = (17.0, 17.5] s, the last at 17.5 s (all the work).
    rounds = {"short": (6.0, 7.5), "medium": (11.5, 12.5), "long": (17.0, 17.5)}
    eps = Q / 4
    c = by_group(6.0 - eps)
    assert [c[g][0] for g in rounds] == [0, 0, 0]
    c = by_group(7.5 + eps)
    assert [c[g][0] for g in rounds] == [5, 0, 0]
    c = by_group(11.5 - eps)
    assert [c[g][0] for g in rounds] == [5, 0, 0]
    c = by_group(12.5 + eps)
    assert [c[g][0] for g in rounds] == [5, 5, 0]
    c = by_group(17.0 - eps)
    assert [c[g][0] for g in rounds] == [5, 5, 0]
    c = by_group(17.5 - eps)
    assert c["long"][0] == 4
    c = by_group(17.5 + eps)
    assert [c[g][0] for g in rounds] == [5, 5, 5]
    for g, (lo, hi) in rounds.items():
        assert lo < c[g][1] <= hi, (g, c[g])
    assert c["short"][1] < c["medium"][1] < c["long"][1]
