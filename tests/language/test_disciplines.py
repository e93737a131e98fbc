"""Queueing disciplines are declared once (qpn/disciplines.py): the grammar, the
validator, the printer, the QPME and PNML mappings and the solvers' checks read
those declarations.  These tests hold each reader to them."""
from __future__ import annotations

import pytest

import qpn
from qpn.dsl.pnml import pnml_to_qpn, qpn_to_pnml
from qpn.dsl.qpe import qpe_to_qpn
from qpn.dsl.qpe_export import qpn_to_qpe
from qpn import disciplines
from qpn.compile import compile_net
from qpn.errors import ModelError
from qpn.solvers.mva.productform import product_form

OPTIONS = {"rr": " quantum 1 ms"}


def _tandem(name: str) -> str:
    """A closed loop of 3 jobs between a queue of discipline ``name`` and a delay."""
    return (f"place cpu queue {name}{OPTIONS.get(name, '')} service exp(1) init 3\n"
            "place think queue is service exp(2)\n"
            "transition a : cpu -> think\ntransition b : think -> cpu\n")


@pytest.mark.parametrize("d", disciplines.all_disciplines(), ids=lambda d: d.name)
def test_every_declared_discipline_is_a_keyword_that_prints_back(d):
    net = qpn.parse(_tandem(d.name))
    q = net.place_map["cpu"].queue
    assert q.discipline == d.name
    assert qpn.parse(net.text()) == net
    if d.infinite_servers:
        assert q.servers == qpn.parse("place p queue is service exp(1)").place_map["p"].queue.servers


def test_an_unknown_discipline_is_a_located_error_listing_the_declared_ones():
    with pytest.raises(ModelError) as e:
        qpn.parse("place cpu queue lifo service exp(1) init 1\n")
    msg = str(e.value)
    assert "1:17" in msg
    assert all(name in msg for name in disciplines.names())


@pytest.mark.parametrize("d", disciplines.all_disciplines(), ids=lambda d: d.name)
def test_the_product_form_check_follows_the_declaration(d):
    # one exponential class at one server: product form exactly when declared so
    qn = product_form(compile_net(qpn.parse(_tandem(d.name))))
    assert isinstance(qn, list) == (d.product_form is None), qn


def test_options_are_taken_by_the_disciplines_that_declare_them():
    sliced = disciplines.names_where(takes_quantum=True)
    prio = disciplines.names_where(takes_priority=True)
    assert sliced == ("rr",) and prio == ("prio",)
    for name in disciplines.names():
        text = f"place q queue {name} quantum 1 ms service exp(1)\n"
        if name in sliced:
            qpn.parse(text)
        else:
            with pytest.raises(ModelError, match="'quantum' applies to rr queues only"):
                qpn.parse(text)
        text = f"place q queue {name}{OPTIONS.get(name, '')} nonpreemptive service exp(1)\n"
        if name in prio:
            assert qpn.parse(text).place_map["q"].queue.preemptive is False
        else:
            with pytest.raises(ModelError, match="apply to prio queues only"):
                qpn.parse(text)


@pytest.mark.parametrize("d", disciplines.all_disciplines(), ids=lambda d: d.name)
def test_qpme_and_pnml_carry_the_disciplines_they_can(d):
    text = _tandem(d.name).replace("queue prio", "queue prio nonpreemptive")
    c = compile_net(qpn.parse(text))
    if d.qpme is None:
        with pytest.raises(ModelError, match=f"QPME has no {d.name} queues"):
            qpn_to_qpe(c)
    else:
        assert f'strategy="{d.qpme}"' in qpn_to_qpe(c)
        back, _notes = qpe_to_qpn(qpn_to_qpe(c).encode(), "m.qpe")
        assert d.name in _disciplines_of(back)
    back, _notes = pnml_to_qpn(qpn_to_pnml(c).encode(), "m.pnml")
    assert d.name in _disciplines_of(back)


def _disciplines_of(text: str) -> set[str]:
    return {q.discipline for q in qpn.parse(text).queue_map.values()}


@pytest.mark.parametrize("d", disciplines.all_disciplines(), ids=lambda d: d.name)
def test_the_simulator_serves_every_declared_discipline_by_its_scheduling(d):
    # the simulator reads the declaration (who is served, in which order, whether a server
    # is kept), not the name: 3 jobs stay 3 jobs, and where the CTMC is exact the
    # throughput agrees with it within 3 half-widths of the 95% interval
    net = qpn.parse(_tandem(d.name))
    res = qpn.solve(net, method="des", options=dict(time=3000, replications=10, seed=3, quiet=True))
    assert abs(res.get("tokens", "cpu") + res.get("tokens", "think") - 3) < 1e-9
    if d.ctmc == "exact":
        exact = qpn.solve(net, method="ctmc").get("throughput", "a")
        assert abs(res.get("throughput", "a") - exact) <= 3 * res.ci("throughput", "a"), d.name
