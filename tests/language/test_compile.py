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
    m = c.m0.copy()
    assert enabled_modes(c, m).tolist() == [True, True]
    m[1] = 2  # b full
    assert enabled_modes(c, m).tolist() == [False, True]
    m[2] = 2  # two tokens in stop inhibit s
    assert enabled_modes(c, m).tolist() == [False, False]
    m[2] = 1
    assert enabled_modes(c, m).tolist() == [False, True]


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


MIXED = """place a init 3
place b capacity 2
place stop
place q queue fcfs service exp(1) init 1
transition t : a -> b delay exp(1)
transition s : a -> a delay exp(1) unless 2 stop
transition halt priority 2 : b -> stop
transition back : b -> q
transition out : q -> a delay exp(2)
"""


@pytest.mark.parametrize("source", ["mixed", "sw_server.qpn", "central_server.qpn",
                                    "subnets.qpn", "counted_loop.qpn", "webserver.qpn",
                                    "priorities.qpn"])
def test_the_search_steps_one_marking_as_it_steps_a_batch(source, monkeypatch):
    # explore() steps small levels marking by marking in Python and large ones as one
    # batch of arrays: all-scalar and all-batch searches must find the same graph
    from qpn.structure import reachability as r
    net = qpn.parse(MIXED) if source == "mixed" else qpn.load(f"{MODELS}/{source}")
    c = qpn.compile_net(net)
    found = {}
    for small in (1, 10**9):
        monkeypatch.setattr(r, "_SMALL_LEVEL", small)
        found[small] = [r.explore(c, limit) for limit in (300, 20_000)]
    for a, b in zip(found[1], found[10**9]):
        assert (a.complete, a.markings) == (b.complete, b.markings)
        if a.complete:
            assert a.ever_enabled.tolist() == b.ever_enabled.tolist()
            assert bool(a.deadlocks) == bool(b.deadlocks)
    # and one batch of markings gives what stepping each of them gives
    rules = r._Rules(c)
    ms = [tuple(int(x) for x in c.m0)]
    for m in list(ms):
        ms.extend(rules.step(m)[1])
    for m in list(ms)[:50]:
        ms.extend(rules.step(m)[1])
    fired, succ, dead = rules.level(np.array(ms[:200], dtype=np.int64))
    one = [rules.step(m) for m in ms[:200]]
    assert sorted(map(tuple, succ.tolist())) == sorted(n for _, nx in one for n in nx)
    assert set(np.flatnonzero(fired).tolist()) == {i for en, _ in one for i in en}
    assert sorted(map(tuple, dead.tolist())) == sorted(m for m, (_, nx) in zip(ms, one) if not nx)


def test_the_computed_color_index_agrees_with_a_table_of_every_color():
    # compile's color index is computed (a range's offset, a record's mixed-radix number):
    # a table of 10^6 loop contexts took 0.6 s to build at each of three compiles
    from qpn.colors import ColorIndex, color_values
    from qpn.expr import Num
    from qpn.model import EnumColors, RangeColors, RecordColors
    sets = {"job": EnumColors("job", ("a", "b", "c")), "n": RangeColors("n", Num(-2), Num(5)),
            "m": RangeColors("m", Num(0), Num(0))}
    sets["r"] = RecordColors("r", (("k", "job"), ("i", "n"), ("z", "m")))
    sets["rr"] = RecordColors("rr", (("x", "r"), ("y", "n")))
    foreign = (7, -3, 2.0, 2.5, True, "d", ("a", 1), ("a", 1, 0), (("a", 1, 0), 3), None,
               (("a", 1.0, 0), 3.0), ("a", -2, 0))
    for name, cs in sets.items():
        vals = color_values(cs, sets, {})
        table = {v: i for i, v in enumerate(vals)}
        ix = ColorIndex(cs, sets, {})
        assert ix.size == len(vals) and [ix[v] for v in vals] == list(range(len(vals))), name
        for v in foreign:          # equal as a dict's keys compare: 2.0 is 2, True is 1
            assert (v in ix) == (v in table), (name, v)
            assert ix.get(v) == table.get(v), (name, v)
