"""Finished lanes dropped from the QN kernel's arrays: every number unchanged."""
import json

import numpy as np
import pytest

import qpn
from qpn.solvers.des import api, qnkernel
from qpn.solvers.des.compact import LaneWindow


class Owner:
    pass


def test_lane_window_narrow_twice_and_restore():
    o = Owner()
    o.a = np.arange(8.0)
    o.b = np.arange(16).reshape(2, 8)
    o.g = list("abcdefgh")
    w = LaneWindow([(o, "a", -1), (o, "b", -1), (o, "g", 0)])
    w.narrow(np.array([1, 3, 4, 6]))
    assert o.a.tolist() == [1, 3, 4, 6] and o.g == list("bdeg")
    assert o.b.flags.c_contiguous            # kernels write through ravel()
    o.a += 100
    o.b[:, 0] = -1
    w.narrow(np.array([1, 3]))               # positions in the working lanes: lanes 3 and 6
    assert o.a.tolist() == [103, 106] and w.lmap.tolist() == [3, 6]
    full_a = w.full_of(o, "a")
    assert full_a.tolist() == [0, 101, 2, 103, 104, 5, 106, 7]
    o.a += 1000
    w.restore()
    assert o.a.tolist() == [0, 101, 2, 1103, 104, 5, 1106, 7]
    assert o.b[:, 1].tolist() == [-1, -1] and o.b[:, 3].tolist() == [3, 11]
    assert o.g == list("abcdefgh") and w.lmap is None


def test_lane_window_array_grown_while_narrowed():
    o = Owner()
    o.rc = np.arange(12).reshape(2, 6)
    w = LaneWindow([(o, "rc", -1)])
    w.narrow(np.array([2, 5]))
    o.rc = np.vstack([o.rc, [[70, 80]], [[90, 95]]])     # the kernel doubled a ring buffer
    w.restore()
    assert o.rc.shape == (4, 6)
    assert o.rc[:, 2].tolist() == [2, 8, 70, 90] and o.rc[:, 5].tolist() == [5, 11, 80, 95]
    assert o.rc[:2, 0].tolist() == [0, 6]


def _measures(res) -> str:
    d = res.to_dict()
    info = {k: v for k, v in d["info"].items() if k not in ("wall", "events_per_second")}
    return json.dumps([d["measures"], info], default=repr, sort_keys=True)


@pytest.fixture
def narrowing(monkeypatch):
    """Count narrowings; ``off()`` disables them."""
    calls = []
    orig = qnkernel.QNKernel.drop_finished

    def spy(self):
        before = self.L
        orig(self)
        if self.L < before:
            calls.append(self.L)
    monkeypatch.setattr(qnkernel.QNKernel, "drop_finished", spy)

    class Ctl:
        log = calls

        @staticmethod
        def off():
            monkeypatch.setattr(qnkernel.QNKernel, "MIN_NARROW", 10 ** 9)
    return Ctl


def test_central_server_same_numbers_with_and_without_narrowing(narrowing):
    net = qpn.load("models/central_server.qpn")
    opts = dict(time=20.0, replications=600, seed=3, quiet=True, workers=1, histograms=True, kernel="qn")
    narrowed = qpn.solve(net, method="des", options=opts)
    assert narrowing.log and narrowing.log[0] <= 300      # it did narrow (to at most half)
    narrowing.off()
    full = qpn.solve(net, method="des", options=opts)
    assert _measures(narrowed) == _measures(full)
    assert narrowed.info["events"] == full.info["events"]


def test_sweep_ring_buffers_grow_after_narrowing(narrowing, monkeypatch):
    """Light-load lanes finish early; the heavy-load lanes' FCFS rings then grow narrowed."""
    grown_at = []
    grow = qnkernel._Q.grow
    monkeypatch.setattr(qnkernel._Q, "grow", lambda q, L: (grown_at.append(L), grow(q, L))[1])
    net = qpn.load("models/mm1.qpn")
    opts = dict(time=2000.0, replications=300, seed=5, quiet=True, kernel="qn", histograms=True, workers=1)
    a = api.simulate(net, sweep={"lambda": [0.2, 0.97]}, options=opts)
    assert min(grown_at) == 300 < max(grown_at)          # a grow while narrowed to one point
    narrowing.off()
    b = api.simulate(net, sweep={"lambda": [0.2, 0.97]}, options=opts)
    for pa, pb in zip(a.points, b.points):
        assert _measures(pa.result) == _measures(pb.result)
