"""SRPT (qpn/disciplines/srpt.py), a discipline added as one module: the simulator
serves it from its declaration, against known answers."""
import math

import pytest
from scipy.integrate import quad

import qpn
from qpn.errors import SolverError

OPTIONS = dict(seed=1, quiet=True)


def _mg1(service: str, lam: float) -> qpn.Net:
    return qpn.parse(f"place q queue srpt service {service}\n"
                     f"transition arrive : -> q delay exp({1 / lam})\ntransition leave : q ->\n")


def srpt_mm1_response(lam: float, mu: float) -> float:
    """Mean response time of M/M/1 under SRPT (Schrage and Miller 1966):
    E[T(x)] = lam (m2(x) + x^2 (1 - F(x))) / (2 (1 - rho(x))^2) + int_0^x dt / (1 - rho(t)),
    rho(x) = lam m1(x), m_k(x) the k-th moment of the service time truncated at x."""
    F = lambda x: 1 - math.exp(-mu * x)                                            # noqa: E731
    m1 = lambda x: (1 - math.exp(-mu * x) * (1 + mu * x)) / mu                     # noqa: E731
    m2 = lambda x: (2 - math.exp(-mu * x) * (mu * mu * x * x + 2 * mu * x + 2)) / mu ** 2  # noqa: E731
    rho = lambda x: lam * m1(x)                                                    # noqa: E731

    def t(x):
        wait = lam * (m2(x) + x * x * (1 - F(x))) / (2 * (1 - rho(x)) ** 2)
        return wait + quad(lambda u: 1 / (1 - rho(u)), 0, x)[0]
    return quad(lambda x: t(x) * mu * math.exp(-mu * x), 0, math.inf, limit=200)[0]


def test_mm1_response_time_is_schrages_and_below_fcfs():
    lam, mu = 0.7, 1.0
    exact = srpt_mm1_response(lam, mu)
    assert exact == pytest.approx(1.8746, abs=1e-4)            # FCFS and PS: 1 / (mu - lam) = 3.33
    res = qpn.solve(_mg1(f"exp({1 / mu})", lam), method="des", options=OPTIONS)
    got, half = res.get("residence", "q"), res.ci("residence", "q")
    assert res.status == "ok" and half < 0.02 * got
    assert abs(got - exact) <= 3 * half, (got, half, exact)


def test_equal_jobs_are_never_preempted_so_md1_is_pollaczek_khinchine():
    # every job needs 1 s: the one in service always has the least left, so SRPT is FCFS
    lam = 0.6
    exact = 1 + lam / (2 * (1 - lam))
    res = qpn.solve(_mg1("det(1)", lam), method="des", options=OPTIONS)
    assert abs(res.get("residence", "q") - exact) <= 3 * res.ci("residence", "q")


def test_short_jobs_overtake_long_ones():
    # two classes on one server, 0.1 s and 2 s: short jobs wait only for the short jobs
    # ahead of them (and a long one's remainder when it is shorter), so their response
    # is below the M/M/1-FCFS value of the whole stream and far below the long jobs'
    net = qpn.parse("colors c = {short, long}\n"
                    "place q : c queue srpt service short: det(0.1), long: det(2)\n"
                    "transition s : -> q(short) delay exp(0.5)\n"
                    "transition l : -> q(long) delay exp(5)\n"
                    "transition leave : q(x) ->\n")
    res = qpn.solve(net, method="des", options=OPTIONS)
    short, long_ = res.get("residence", "q", "short"), res.get("residence", "q", "long")
    # lower bound for the short class: its own M/D/1 (the long jobs only add)
    lam_s = 2.0
    assert short >= 0.1 + lam_s * 0.01 / (2 * (1 - 0.2)) - 3 * res.ci("residence", "q", "short")
    assert short < 0.2 and long_ > 2.5


def test_the_ctmc_refuses_it_with_the_reason_and_auto_simulates():
    net = _mg1("exp(1)", 0.5)
    with pytest.raises(SolverError, match="srpt has no Markov model with finitely many states .the order depends on each token.s remaining work"):
        qpn.solve(net, method="ctmc")
    res = qpn.solve(net, method="auto", options=OPTIONS)
    assert res.method == "des"
    assert abs(res.get("residence", "q") - srpt_mm1_response(0.5, 1.0)) <= 3 * res.ci("residence", "q")
