"""PNML place/transition nets: import with qpn's tool-specific timing, export, round
trips, and located errors for broken files."""
import math

import pytest

import qpn
from qpn import solvers
from qpn.dsl.pnml import EXAMPLE, pnml_to_qpn, qpn_to_pnml
from qpn.errors import ModelError

from conftest import MODELS


def imported(xml, name="model.pnml"):
    text, notes = pnml_to_qpn(xml if isinstance(xml, bytes) else xml.encode(), name)
    return qpn.parse(text, name), text, notes


def test_untimed_net_reads_as_unit_rates_and_solves_exactly():
    net, text, notes = imported(EXAMPLE, "two.pnml")
    assert "transition start : 2 idle -> busy delay exp(1)" in text
    assert notes and "unit rates" in notes[0]
    res = solvers.solve(net, "ctmc")
    # busy = 0, 1, 2 with rate 1 up (2 idle needed) and rate 1 down: uniform, 1/3 each
    assert res.get("throughput", "start") == pytest.approx(2 / 3, rel=1e-12)
    assert res.get("tokens", "busy") == pytest.approx(1.0, rel=1e-12)


def test_toolspecific_timing_and_queueing_and_inhibitor_arcs():
    xml = b"""<?xml version="1.0"?>
<pnml><net id="n" type="http://www.pnml.org/version-2009/grammar/ptnet"><page id="g">
  <place id="q"><name><text>server</text></name>
    <toolspecific tool="qpn" version="1"><queue discipline="fcfs"/><service>exp(0.5)</service>
    </toolspecific></place>
  <place id="s"><name><text>stop</text></name></place>
  <transition id="a"><name><text>arrive</text></name>
    <toolspecific tool="qpn" version="1"><delay>exp(1)</delay></toolspecific></transition>
  <transition id="l"><name><text>leave</text></name>
    <toolspecific tool="qpn" version="1"><immediate weight="1"/></toolspecific></transition>
  <arc id="1" source="a" target="q"/><arc id="2" source="q" target="l"/>
  <arc id="3" source="s" target="a"><type value="inhibitor"/></arc>
</page></net></pnml>"""
    net, text, notes = imported(xml)
    assert not notes and "unless stop" in text
    res = solvers.solve(net, "ctmc")      # an M/M/1 queue at rho = 0.5 (stop stays empty)
    assert res.get("tokens", "server") == pytest.approx(1.0, rel=1e-6)


ROUND_TRIP = ["mm1", "mmc", "repairman", "tandem", "mutex", "bounded_queue"]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip_is_a_fixed_point_and_keeps_the_meaning(name):
    net = qpn.load(f"{MODELS}/{name}.qpn")
    x1 = qpn_to_pnml(qpn.compile_net(net))
    net1, _, notes = imported(x1)
    assert not notes                        # every transition carries its timing
    x2 = qpn_to_pnml(qpn.compile_net(net1))
    net2, _, _ = imported(x2)
    assert net2 == net1 and x2 == qpn_to_pnml(qpn.compile_net(net2))
    a, b = solvers.solve(net, "ctmc"), solvers.solve(net1, "ctmc")
    for row in a.rows:
        if row.measure in ("tokens", "throughput") and not row.color and math.isfinite(row.value):
            assert b.get(row.measure, row.element) == pytest.approx(row.value, rel=1e-9, abs=1e-12)


def test_inhibitor_thresholds_and_queueing_places_round_trip():
    """An inhibitor of threshold 3 is written as PIPE writes it (an inscription), and one
    on a queueing place as one arc (its queue and depository count together): an M/M/1/3
    queue, arrivals at rate 0.5 refused while 3 requests are there, service rate 1."""
    net = qpn.parse("place server queue fcfs service exp(1)\n"
                    "transition arrive : -> server unless 3 server delay exp(2)\n"
                    "transition leave : server ->\n", "m.qpn")
    x = qpn_to_pnml(qpn.compile_net(net))
    assert x.count('<type value="inhibitor"/>') == 1 and "<text>3</text></inscription><type" in x
    back, text, _ = imported(x)
    assert "unless 3 server" in text
    p = [0.5 ** n / sum(0.5 ** k for k in range(4)) for n in range(4)]
    res = solvers.solve(back, "ctmc")
    assert res.get("tokens", "server") == pytest.approx(sum(n * q for n, q in enumerate(p)), rel=1e-9)
    assert res.get("throughput", "arrive") == pytest.approx(0.5 * (1 - p[3]), rel=1e-9)


def _mut(old, new):
    src = EXAMPLE.decode()
    assert old in src, old
    return src.replace(old, new, 1)


BROKEN = [
    ("truncated", EXAMPLE.decode()[:300], "not well-formed XML"),
    ("root", "<net/>", "not a PNML file"),
    ("two nets", _mut("</pnml>", '<net id="x" type="ptnet"/></pnml>'), "holds one <net>"),
    ("high-level", _mut("grammar/ptnet", "grammar/highlevelnet"), "is not supported"),
    ("place/transition labels in a symmetric net", _mut("grammar/ptnet", "grammar/symmetricnet"),
     "not a place/transition net's"),
    ("no id", _mut('<place id="p2">', "<place>"), "needs an id"),
    ("duplicate id", _mut('<place id="p2">', '<place id="p1">'), "id 'p1' is used twice"),
    ("marking text", _mut("<text>4</text>", "<text>four</text>"), "the initial marking must be a whole"),
    ("marking negative", _mut("<text>4</text>", "<text>-4</text>"), "the initial marking must be a whole"),
    ("inscription", _mut('<inscription><text>2</text>', '<inscription><text>2.5</text>'),
     "an arc inscription must be a whole"),
    ("inscription zero", _mut('<inscription><text>2</text>', '<inscription><text>0</text>'),
     "must be at least 1"),
    ("dangling arc", _mut('source="p2" target="t2"', 'source="p9" target="t2"'), "does not join"),
    ("place to place", _mut('source="p2" target="t2"', 'source="p2" target="p1"'), "does not join"),
    ("inhibitor out", _mut('<arc id="a2" source="t1" target="p2"/>',
                           '<arc id="a2" source="t1" target="p2"><type value="inhibitor"/></arc>'),
     "runs from a place to a transition"),
    ("bad service", _mut('<place id="p2"><name><text>busy</text></name></place>',
                         '<place id="p2"><name><text>busy</text></name><toolspecific tool="qpn" '
                         'version="1"><queue discipline="ps"/><service>exp(-1)</service></toolspecific></place>'),
     "mean"),
    ("bad discipline", _mut('<place id="p2"><name><text>busy</text></name></place>',
                            '<place id="p2"><name><text>busy</text></name><toolspecific tool="qpn" '
                            'version="1"><queue discipline="lifo"/></toolspecific></place>'),
     "unknown queueing discipline 'lifo'"),
    ("two-line service", _mut('<place id="p2"><name><text>busy</text></name></place>',
                              '<place id="p2"><name><text>busy</text></name><toolspecific tool="qpn" '
                              'version="1"><queue discipline="ps"/><service>exp(1)\nplace x</service>'
                              '</toolspecific></place>'), "one value on one line"),
    ("bad weight", _mut('<transition id="t1"><name><text>start</text></name></transition>',
                        '<transition id="t1"><name><text>start</text></name><toolspecific tool="qpn" '
                        'version="1"><immediate weight="heavy"/></toolspecific></transition>'),
     "attribute 'weight' is not a number"),
    ("bad delay", _mut('<transition id="t1"><name><text>start</text></name></transition>',
                       '<transition id="t1"><name><text>start</text></name><toolspecific tool="qpn" '
                       'version="1"><delay>exq(1)</delay></toolspecific></transition>'), "exq"),
    ("doctype", _mut("<pnml ", '<!DOCTYPE pnml [<!ENTITY x "y">]>\n<pnml '), "document type declaration"),
    # references: each stands for a node of its own kind, under an id of its own
    ("reference kind", _mut('<arc id="a2" source="t1" target="p2"/>',
                            '<referencePlace id="rp" ref="t2"/><arc id="a2" source="rp" target="p2"/>'),
     "a <referencePlace> refers to 't2', which is a transition"),
    ("reference id twice", _mut('<arc id="a2" source="t1" target="p2"/>',
                                '<referencePlace id="p1" ref="p2"/><arc id="a2" source="t1" target="p2"/>'),
     "id 'p1' is used twice"),
    ("reference cycle", _mut('<arc id="a2" source="t1" target="p2"/>',
                             '<referenceTransition id="r1" ref="r2"/><referenceTransition id="r2" ref="r1"/>'
                             '<arc id="a2" source="t1" target="p2"/>'), "ref 'r2' leads to no transition"),
    ("marking beyond counts", _mut("<text>4</text>", "<text>" + "9" * 5000 + "</text>"),
     "the initial marking must be at most 2^53"),
    ("timed and immediate", _mut('<transition id="t1"><name><text>start</text></name></transition>',
                                 '<transition id="t1"><name><text>start</text></name><toolspecific tool="qpn" '
                                 'version="1"><immediate weight="1"/><delay>exp(1)</delay></toolspecific>'
                                 '</transition>'), "timed (<delay>) or immediate (<immediate>), not both"),
]


@pytest.mark.parametrize("label,text,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_pnml_files_give_located_errors(label, text, message):
    with pytest.raises(ModelError) as e:
        imported(text.encode(), "broken.pnml")
    assert message in str(e.value), str(e.value)
    assert e.value.loc is not None and e.value.loc.file == "broken.pnml" and e.value.loc.line >= 1


def test_export_refuses_colors_and_modes():
    with pytest.raises(ModelError, match="colored tokens") as e:
        qpn_to_pnml(qpn.compile_net(qpn.load(f"{MODELS}/central_server.qpn")))
    assert e.value.loc is not None


def _named(net_attrs: str, name: str | None) -> bytes:
    label = f"<name><text>{name}</text></name>" if name is not None else ""
    return EXAMPLE.decode().replace(
        '<net id="n1" type="http://www.pnml.org/version-2009/grammar/ptnet">',
        f'<net {net_attrs} type="http://www.pnml.org/version-2009/grammar/ptnet">{label}').encode()


@pytest.mark.parametrize("attrs,name,expected", [
    ('id="n-7"', "Web shop: checkout (v2)", "Web_shop_checkout_v2"),   # the <name>, as a name
    ('id="repair-shop"', None, "repair_shop"),                          # else the net's id
    ('id="2nd"', None, "pnml_2nd"),                                     # not a leading digit
    ('id="x"', "place", "pnml_place"),                                  # not a keyword
    ('id="x"', "Café Müller", "Cafe_Muller"),                           # accents dropped
    ('id="--"', " ", "two"),                                            # else the file's stem
])
def test_the_imported_model_is_named_after_the_net(tmp_path, attrs, name, expected):
    data = _named(attrs, name)
    net, text, _ = imported(data, "two.pnml")
    assert f"\nnet {expected}\n" in text and net.name == expected
    path = tmp_path / "two.pnml"              # through the loader, to the result's name
    path.write_bytes(data)
    assert solvers.solve(qpn.load(str(path)), "ctmc").model == expected


def test_a_round_trip_keeps_the_models_name():
    net = qpn.load(f"{MODELS}/mm1.qpn")
    back, _, _ = imported(qpn_to_pnml(qpn.compile_net(net)).encode(), "exported.pnml")
    assert back.name == "mm1"
