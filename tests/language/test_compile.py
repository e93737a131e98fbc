"""Unfolding: slots, modes, bindings, guards, inhibitors, capacities."""
import numpy as np
import pytest

import qpn
from qpn.errors import ModelError
from qpn.structure.reachability import enabled_modes

from conftest import MODELS


def test_slots_of_queueing_places_and_initial_tokens_in_queue():
    c = qpn.compile_net(qpn.load(f"{MODELS}/central_server.qpn"))
    term = c.places[0]
    assert term.colors == ["a", "b"] and term.queueing
    assert c.m0[term.qslots].tolist() == [8, 6] and c.m0[term.slots].tolist() == [0, 0]
    assert len(c.modes) == 12
    route = [m for m in c.modes if m.transition == "route"]
    assert sorted(m.weight for m in route) == [0.2, 0.2, 0.3, 0.3, 0.5, 0.5]
    assert {q.discipline for q in c.queues} == {"is", "ps", "fcfs"}
    disk2 = [q for q in c.queues if q.name == "disk2"][0]
    assert disk2.servers == 2 and [d.mean() for d in disk2.service] == [0.06, 0.06]
    cpu = [q for q in c.queues if q.name == "cpu"][0]
    assert [d.mean() for d in cpu.service] == [0.05, 0.08]


def test_guards_filter_bindings():
    c = qpn.compile_net(qpn.load(f"{MODELS}/counted_loop.qpn"))
    again = [m for m in c.modes if m.transition == "again"]
    last = [m for m in c.modes if m.transition == "last"]
    # i + 1 < 5 for i in 0..5 -> i in 0..3, for 2 threads
    assert len(again) == 8 and len(last) == 2
    assert all(m.binding["i"] == 4 for m in last)


def test_inhibitor_and_capacity_enabling():
    net = qpn.parse("place a init 3\nplace b capacity 2\nplace stop\n"
                    "transition t : a -> b delay exp(1)\ntransition s : a -> a delay exp(1) unless 2 stop\n")
    c = qpn.compile_net(net)
    pre, post = c.pre.toarray(), c.post.toarray()
    m = c.m0.copy()
    assert enabled_modes(c, pre, post, m).tolist() == [True, True]
    m[1] = 2  # b full
    assert enabled_modes(c, pre, post, m).tolist() == [False, True]
    m[2] = 2  # two tokens in stop inhibit s
    assert enabled_modes(c, pre, post, m).tolist() == [False, False]
    m[2] = 1
    assert enabled_modes(c, pre, post, m).tolist() == [False, True]


def test_shared_queue_has_classes_of_both_places():
    c = qpn.compile_net(qpn.load(f"{MODELS}/shared_queue.qpn"))
    cpu = [q for q in c.queues if q.name == "cpu"][0]
    assert [c.places[p].name for p in cpu.places] == ["parse", "render"]
    assert cpu.servers == 2 and cpu.discipline == "ps"


def test_is_queue_has_infinite_servers_and_rr_parameters():
    c = qpn.compile_net(qpn.load(f"{MODELS}/rr_cpu.qpn"))
    q = {q.name: q for q in c.queues}
    assert q["thinking"].servers == float("inf")
    assert q["cpu"].quantum == pytest.approx(0.01) and q["cpu"].switch == pytest.approx(50e-6)
    assert q["cpu"].servers == 2


def test_record_colors_and_field_access():
    net = qpn.parse("colors k = {x, y}\ncolors r = (kind: k, n: k)\nplace p : r init (x, y), (y, y)\n"
                    "place q : k\ntransition t : p(v) -> q(v.n) when v.kind == x delay exp(1)\n")
    c = qpn.compile_net(net)
    assert len(c.modes) == 2   # kind == x: (x, x) and (x, y)
    assert [m.binding["v"] for m in c.modes] == [("x", "x"), ("x", "y")]


def test_too_many_bindings_is_refused():
    net = qpn.parse("colors s = 1 .. 2000\nplace p : s\nplace q : s\n"
                    "transition t : p(i), q(j) -> p(j) delay exp(1)\n".replace("2000", "10"))
    assert len(qpn.compile_net(net).modes) == 100
    big = "colors s = 1 .. 2000\nplace p : s\nplace q : s\nplace r : s\ntransition t : p(i), q(j), r(k) -> p(j) delay exp(1)\n"
    with pytest.raises(ModelError, match="variable bindings"):
        qpn.parse(big)
