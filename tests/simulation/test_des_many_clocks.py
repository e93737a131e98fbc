"""Nets with many event clocks or many queue classes: the simulator finds the next
event in a tournament tree once there are more than EV_TREE_MIN clocks, and a rate
queue (IS, PS) visits only its occupied classes (solvers/des/jit/store.py, rates.py).
A loop counted by colors (models/published/vex_cache_db.qpn: 3,000 classes, one token)
made every event scan them all."""
from __future__ import annotations

import pytest

import qpn
from qpn.solvers.des.jit.layout import EV_TREE_MIN


def _race(n: int) -> str:
    lines = ["net race", "place lock init 1"]
    lines += [f"transition t{k} : lock -> lock delay det({1.0 / k!r} s)" for k in range(1, n + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("n", [EV_TREE_MIN - 2, 3 * EV_TREE_MIN])
def test_many_deterministic_clocks_each_fire_at_their_own_rate(n):
    """n transitions always enabled (each gives the token back at once), t_k every 1/k s
    (enabling memory keeps each clock): t_k's throughput is k per second, the scan and
    the tree alike; ties (t_k and t_2k at every multiple of 1/k) fire both."""
    net = qpn.parse(_race(n), "race.qpn")
    res = qpn.solve(net, "des", options={"seed": 5, "replications": 2, "events": 20 * n * n,
                                         "warmup": 0, "quiet": True})
    for k in (1, 2, n // 2, n - 1, n):
        # over a run of T seconds t_k fires floor(k T) times: off by at most one firing
        T = 20 * n * n / (n * (n + 1) / 2)
        assert res.get("throughput", f"t{k}") == pytest.approx(k, abs=1.5 / T)


def test_an_infinite_server_queue_of_many_colors_with_few_tokens_agrees_with_the_ctmc():
    """Three tokens of three of 60 colors cycle through an IS think place and a PS CPU:
    the simulator (occupied classes only) against the CTMC's exact answer."""
    text = ("net sparse\ncolors job = 1 .. 60\n"
            "place think : job queue is service exp(2 s) init 1 7, 1 31, 1 60\n"
            "place cpu : job queue ps service exp(1 s)\n"
            "transition submit : think(x) -> cpu(x)\ntransition done : cpu(x) -> think(x)\n")
    net = qpn.parse(text, "sparse.qpn")
    exact = qpn.solve(net, "ctmc")
    des = qpn.solve(net, "des", options={"seed": 2, "quiet": True})
    x = exact.get("throughput", "done")
    assert des.get("throughput", "done") == pytest.approx(x, rel=0.02)
    assert des.get("utilization", "cpu") == pytest.approx(exact.get("utilization", "cpu"), rel=0.02)
