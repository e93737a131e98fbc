"""GIL hand-overs after a barrier trip (frontends/analyze/handoff.py) and the
GIL-free share they give (gil.py, ``hold``): known answers on ideal schedules."""
import numpy as np
import pytest

from qpn.frontends.analyze.gil import gil_free_shares
from qpn.frontends.analyze.handoff import first_holds
from qpn.frontends.analyze.steps import Step

P, H = 660_000, 1_200_000          # ns of Python, then of hashing, per iteration
ITER = 8


def barrier_walks(outsider=False):
    """Three threads released together each iteration; the GIL goes to them in
    turn, each holding it for its Python part: returns P apart."""
    walks = {1: [], 2: [], 3: []}
    t0 = 0
    for it in range(ITER):
        order = [(it + k) % 3 + 1 for k in range(3)]          # who returns first rotates
        ends = {}
        for rank, tid in enumerate(order):
            ret = t0 + rank * P
            arrive = t0 - 10_000 if rank else t0               # the first to return came last
            walks[tid].append(Step(tid, "await", ("b", 1), "p.py:9", {"ts": arrive},
                                   walks[tid][-1].end if walks[tid] else 0, 0, 0, 0, ret - arrive))
            end = ret + P + H
            walks[tid].append(Step(tid, "lock", ("m", 1), "p.py:5", {"ts": end}, ret, P + H,
                                   end - ret, 0, 0))
            walks[tid].append(Step(tid, "unlock", ("m", 1), "p.py:6", {"ts": end + 10_000},
                                   end, 10_000, 10_000, 0, 0))
            ends[tid] = end + 10_000
        t0 = max(ends.values()) + 10_000
    if outsider:                        # a thread that runs all along: it could hold the GIL
        walks[4] = [Step(4, "sleep", None, "p.py:1", {"ts": t0}, 0, t0, t0, 0, 0)]
    return walks


def test_first_holds_are_the_python_parts():
    walks = barrier_walks()
    holds = first_holds(walks)
    assert len(holds) == 2 * ITER                  # the last of each trip shows nothing
    assert set(holds.values()) == {P}
    assert all(s.action == "lock" for s in holds)


def test_no_hold_while_another_thread_runs():
    assert first_holds(barrier_walks(outsider=True)) == {}


def shares(walks, with_hold):
    holds = first_holds(walks) if with_hold else {}
    a, b, c, kl, hold = [], [], [], [], []
    for w in walks.values():
        for s in w:
            if s.action == "lock":
                a.append(s.start)
                b.append(s.ts)
                c.append(s.cpu)
                kl.append(0)
                hold.append(holds.get(s, np.nan))
    # ideal fragments never wait inside (the hand-overs happen in the barrier's wait),
    # which the no-wait bound would take for GIL-free work: it is switched off here
    return gil_free_shares(np.array(a, float), np.array(b, float), np.array(c, float),
                           np.array(kl), 1, cores=3, hold=np.array(hold),
                           evidence=np.inf)[0]


def test_share_from_hand_overs():
    truth = H / (P + H)
    assert shares(barrier_walks(), True) == pytest.approx(truth, abs=0.01)
    # the fragments' wall and CPU alone fit smaller shares: the estimate stays below
    assert shares(barrier_walks(), False) < truth - 0.05
