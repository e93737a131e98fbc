"""Load-dependent queues: ``queue ps speed [...]`` (a table by tokens present) and
``speed <expression in n>``, solved exactly by the CTMC and by the simulator, against the
product form of a closed network with a load-dependent station (BCMP: PS with a capacity
c(n) keeps product form, for any service distribution).
"""
import math

import numpy as np
import pytest

import qpn
from qpn import solvers
from qpn.errors import ModelError, SolverError
from tests.located import assert_located

SPEED = [1.0, 1.5, 1.8]


def closed(speed: str, n: int = 3, service: str = "exp(0.5)", think: str = "exp(1)") -> str:
    return (f"place think init {n} queue is service {think}\n"
            f"place db queue ps {speed} service {service}\n"
            "transition a : think -> db\n"
            "transition b : db -> think\n")


def product_form(capacity, n: int, demand: float, think: float) -> tuple[float, float]:
    """Throughput and mean tokens at the load-dependent station of the closed network
    think (IS) -> station, from p(k) ~ demand^k / prod_{j<=k} c(j) * think^(n-k) / (n-k)!."""
    w = []
    for k in range(n + 1):
        prod = math.prod(capacity(j) for j in range(1, k + 1))
        w.append(demand ** k / prod * think ** (n - k) / math.factorial(n - k))
    p = np.array(w) / sum(w)
    x = sum(p[k] * capacity(k) / demand for k in range(1, n + 1))
    return x, float(sum(k * p[k] for k in range(n + 1)))


def table(k: int) -> float:
    return SPEED[min(k, len(SPEED)) - 1]


@pytest.mark.parametrize("n", [1, 3, 6])
def test_ctmc_is_the_product_form_of_a_table(n):
    res = solvers.solve(qpn.parse(closed("speed [1, 1.5, 1.8]", n)), "ctmc")
    x, q = product_form(table, n, 0.5, 1.0)
    assert res.get("throughput", "b") == pytest.approx(x, rel=1e-9)
    assert res.get("tokens", "db") == pytest.approx(q, rel=1e-9)


def test_an_expression_in_n_is_evaluated_per_token_count():
    cap = lambda k: k / (1 + 0.25 * k)        # noqa: E731
    res = solvers.solve(qpn.parse(closed("speed n / (1 + 0.25 * n)", 5)), "ctmc")
    x, q = product_form(cap, 5, 0.5, 1.0)
    assert res.get("throughput", "b") == pytest.approx(x, rel=1e-9)
    assert res.get("tokens", "db") == pytest.approx(q, rel=1e-9)
    c = qpn.compile_net(qpn.parse(closed("speed n / (1 + 0.25 * n)", 5)))
    assert c.queues[1].speed[:3].tolist() == pytest.approx([0.8, 1 / 0.75, 3 / 1.75])


def test_servers_k_is_the_speed_table_one_to_k():
    a = solvers.solve(qpn.parse(closed("servers 2", 4)), "ctmc")
    b = solvers.solve(qpn.parse(closed("speed [1, 2]", 4)), "ctmc")
    for m, el in (("throughput", "b"), ("tokens", "db"), ("utilization", "db")):
        assert b.get(m, el) == pytest.approx(a.get(m, el), rel=1e-12)


def test_a_parameter_in_the_table_and_a_subnet_argument():
    src = ("param fast = 1.5\n"
           "subnet Db(top = 1.8) {\n"
           "  input req\n  output rep\n"
           "  place q queue ps speed [1, fast, top] service exp(0.5)\n"
           "  transition in : req -> q\n  transition out : q -> rep\n"
           "}\n"
           "instance db = Db(top = 2.4)\n"
           "place think init 3 queue is service exp(1)\n"
           "transition a : think -> db.req\n"
           "transition b : db.rep -> think\n")
    res = solvers.solve(qpn.parse(src), "ctmc")
    x, _ = product_form(lambda k: [1, 1.5, 2.4][min(k, 3) - 1], 3, 0.5, 1.0)
    assert res.get("throughput", "b") == pytest.approx(x, rel=1e-9)
    res2 = solvers.solve(qpn.parse(src), "ctmc", fast=1.2)
    x2, _ = product_form(lambda k: [1, 1.2, 2.4][min(k, 3) - 1], 3, 0.5, 1.0)
    assert res2.get("throughput", "b") == pytest.approx(x2, rel=1e-9)


@pytest.mark.parametrize("service", ["exp(0.5)", "det(0.5)", "erlang(3, 0.5)"])
def test_the_simulator_agrees_whatever_the_service_distribution(service):
    """PS with a load-dependent capacity is insensitive: the same numbers for any service
    of mean 0.5 (the simulator's per-token work path for det and Erlang, rates for exp)."""
    net = qpn.parse(closed("speed [1, 1.5, 1.8]", 3, service=service))
    res = solvers.solve(net, "des", options={"seed": 7, "rtol": 0.01})
    x, q = product_form(table, 3, 0.5, 1.0)
    m = res.cell("throughput", "b")
    assert m.n > 10_000
    assert abs(m.value - x) <= 3 * m.ci, (m.value, m.ci, x)
    t = res.cell("tokens", "db")
    assert abs(t.value - q) <= 3 * t.ci, (t.value, t.ci, q)


def test_mva_refuses_and_auto_chooses_an_exact_method():
    net = qpn.parse(closed("speed [1, 1.5, 1.8]"))
    with pytest.raises(SolverError, match="load-dependent speed"):
        solvers.solve(net, "mva")
    res = solvers.solve(net)
    assert res.method == "ctmc"
    assert any("load-dependent speed" in e for e in res.explanation)


def test_print_and_parse_back():
    from qpn.dsl.printer import print_net
    for spec in ("speed [1, 1.5, 1.8]", "speed n / (1 + 0.25 * n)"):
        net = qpn.parse(closed(spec))
        text = print_net(net)
        assert spec in text
        assert qpn.parse(text).places[1].queue.speed == net.places[1].queue.speed


def test_user_mistakes_are_located():
    assert_located(closed("").replace("queue ps ", "queue fcfs speed [1, 2] "), "applies to ps", 2, 21)
    assert_located(closed("servers 2 speed [1, 2]"), "'servers' or 'speed', not both", 2, 29)
    assert_located(closed("speed [1, x]"), "undefined name 'x'", 2, 29)
    with pytest.raises(ModelError, match=r"speed of queue 'db' with 2 tokens must be > 0, got 0"):
        qpn.compile_net(qpn.parse(closed("speed [1, 0]")))
    with pytest.raises(ModelError, match=r"speed of queue 'db' at n = 4 must be > 0"):
        qpn.compile_net(qpn.parse(closed("speed 4 - n")))


def test_pnml_keeps_the_table_and_qpme_refuses_it(tmp_path):
    from qpn.dsl.pnml import pnml_to_qpn, qpn_to_pnml
    net = qpn.parse(closed("speed [1, 1.5, 1.8]"))
    text, _ = pnml_to_qpn(qpn_to_pnml(qpn.compile_net(net)).encode(), "a.pnml")
    back = solvers.solve(qpn.parse(text), "ctmc")
    assert back.get("throughput", "b") == pytest.approx(product_form(table, 3, 0.5, 1.0)[0], rel=1e-12)
    from qpn.dsl.qpe_export import qpn_to_qpe
    with pytest.raises(ModelError, match="QPME has no load-dependent queues"):
        qpn_to_qpe(qpn.compile_net(net))
