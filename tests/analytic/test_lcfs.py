"""LCFS non-preemptive (qpn/disciplines/lcfs.py), a discipline added as one module: the
simulator and the CTMC serve it from its declaration, against known answers."""
import pytest

import qpn
from qpn.errors import SolverError

DES = dict(seed=1, quiet=True)


def _open(disc: str, service: str, lam: float) -> qpn.Net:
    return qpn.parse(f"place q queue {disc} service {service}\n"
                     f"transition arrive : -> q delay exp({1 / lam})\ntransition leave : q ->\n")


def test_mean_response_is_fcfs_s_the_order_does_not_look_at_service_times():
    # work-conserving, non-preemptive, blind to sizes: the number in the system evolves as
    # under FCFS (cut-off included), so the CTMC's means agree to rounding
    for service in ("exp(1)", "erlang(3, 1)", "hyperexp(mean = 1, scv = 4)"):
        lcfs = qpn.solve(_open("lcfs", service, 0.6), method="ctmc")
        fcfs = qpn.solve(_open("fcfs", service, 0.6), method="ctmc")
        assert lcfs.get("residence", "q") == pytest.approx(fcfs.get("residence", "q"), rel=1e-9)
    # M/M/1: 1 / (mu - lambda)
    assert qpn.solve(_open("lcfs", "exp(1)", 0.6), method="ctmc").get("residence", "q") == \
        pytest.approx(2.5, rel=1e-6)


def test_the_simulator_agrees_and_the_spread_is_larger_than_fcfs():
    lcfs = qpn.solve(_open("lcfs", "exp(1)", 0.7), method="des", options=DES)
    fcfs = qpn.solve(_open("fcfs", "exp(1)", 0.7), method="des", options=DES)
    assert abs(lcfs.get("residence", "q") - 1 / 0.3) <= 3 * lcfs.ci("residence", "q")
    # the latest arrival goes first: some wait very long
    assert lcfs.get("residence_var", "q") > 1.5 * fcfs.get("residence_var", "q")
    assert lcfs.get("residence_p99", "q") > fcfs.get("residence_p99", "q")


def test_two_classes_with_general_service_simulator_and_ctmc_agree():
    net = qpn.parse("colors c = {a, b}\n"
                    "place q : c queue lcfs servers 2 service a: erlang(2, 0.5), b: hyperexp(mean = 1.5, scv = 3)\n"
                    "place think : c queue is service exp(2) init 3 a, 2 b\n"
                    "transition go : think(x) -> q(x)\ntransition back : q(x) -> think(x)\n")
    exact = qpn.solve(net, method="ctmc")
    sim = qpn.solve(net, method="des", options=dict(DES, time=4000, replications=10))
    for col in ("[x=a]", "[x=b]"):
        x, h = sim.get("throughput", "back", col), sim.ci("throughput", "back", col)
        assert abs(x - exact.get("throughput", "back", col)) <= 3 * h, col
    with pytest.raises(SolverError, match="not product form"):
        qpn.solve(net, method="mva")
