"""A mode of weight 0 never fires (a branch given no share, e.g. an input mix without one of
the traced size classes); negative weights stay errors."""
import pytest

import qpn

NET = """
param p = 0
place a init 1
place b
place c
transition t { mode x : a -> b weight p
               mode y : a -> c weight 1 - p }
transition back_b timed : b -> a delay exp(1 s)
transition back_c timed : c -> a delay exp(2 s)
"""


def test_a_mode_of_weight_0_never_fires_and_the_others_share_the_choice():
    net = qpn.parse(NET)
    r = qpn.solve(net, method="ctmc")
    assert r.get("throughput", "back_b") == 0 and r.get("throughput", "back_c") == pytest.approx(0.5)
    # p = 1/2: a cycle is 1 s or 2 s with equal chance, 1.5 s on average
    r = qpn.solve(net, method="ctmc", p=0.5)
    assert r.get("throughput", "back_b") == pytest.approx(1 / 3)
    d = qpn.solve(net, method="des", options=dict(time=400.0, seed=2, quiet=True, workers=1))
    assert d.get("throughput", "back_b") == 0


def test_a_negative_weight_is_an_error_at_its_mode():
    with pytest.raises(qpn.ModelError, match=r"the weight of 't' must be >= 0, got -0.5"):
        qpn.solve(qpn.parse(NET), method="ctmc", p=1.5)
