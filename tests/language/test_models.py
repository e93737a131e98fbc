"""Every example model parses, prints canonically, re-parses equal and passes check."""
import glob
import os

import pytest

import qpn
from qpn.cli import main
from qpn.model import (EnumColors, Include, Port, QueueingPlace, RangeColors, RecordColors,
                       Subnet)

from conftest import MODELS

FILES = sorted(glob.glob(os.path.join(MODELS, "*.qpn")) + glob.glob(os.path.join(MODELS, "lib", "*.qpn"))
               + glob.glob(os.path.join(MODELS, "published", "*.qpn")))


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, MODELS) for f in FILES])
def test_model_round_trip_and_check(path):
    net = qpn.load(path)
    text = net.text()
    again = qpn.parse(text, path)
    assert again == net
    assert again.text() == text                 # printing is a fixed point
    with open(path) as fh:
        assert fh.read() == text, "model file is not in canonical format (run qpn fmt --write)"
    rep = qpn.check(net)
    assert not rep.errors, [str(e) for e in rep.errors]
    assert not rep.warnings, [str(e) for e in rep.warnings]


def test_at_least_ten_models_covering_every_construct():
    nets = [qpn.load(f) for f in FILES]
    assert len(nets) >= 10
    flat = [n.flatten() for n in nets]
    places = [p for n in flat for p in n.places]
    qplaces = [p for p in places if isinstance(p, QueueingPlace)]
    queues = [n.queue_map[p.queue_name] for n in flat for p in n.places if isinstance(p, QueueingPlace)]
    disciplines = {q.discipline for q in queues}
    assert disciplines == {"is", "fcfs", "ps", "random", "prio", "lcfs-pr", "rr"}
    assert any(q.discipline == "prio" and q.preemptive for q in queues)
    assert any(q.discipline == "prio" and not q.preemptive for q in queues)
    assert any(q.switch is not None for q in queues)
    assert any(str(q.servers) != str(qpn.expr.Num(1)) and q.discipline != "is" for q in queues)
    assert any(p.departure == "in-order" for p in qplaces)
    assert any(isinstance(p.queue, str) for p in qplaces)                 # shared queue
    assert any(len(p.service) > 1 for p in qplaces)                       # per-color service
    assert any(p.capacity is not None for p in places)
    kinds = {type(c) for n in nets for c in n.colorsets}
    assert kinds == {EnumColors, RangeColors, RecordColors}
    trans = [t for n in flat for t in n.transitions]
    modes = [m for t in trans for m in t.modes]
    assert {t.kind for t in trans} == {"immediate", "timed"}
    assert any(t.priority is not None for t in trans)
    assert any(t.servers is not None and str(t.servers) != "1" for t in trans)
    assert any(len(t.modes) > 1 for t in trans)
    assert any(m.guard is not None for m in modes)
    assert any(m.inhibitors for m in modes)
    assert any(m.weight is not None for m in modes)
    assert any(not isinstance(a.terms[0].count, qpn.expr.Num) for m in modes for a in m.inputs)  # parametric
    dists = {type(s.dist).__name__ for p in qplaces for s in p.service} | \
        {type(m.delay).__name__ for m in modes if m.delay is not None}
    assert {"Exp", "Det", "Uniform", "Erlang", "HyperExp", "HyperExpFit", "Gamma", "Lognormal",
            "Normal", "Empirical"} <= dists
    assert any(getattr(m.delay, "replay", False) for m in modes)
    assert any(isinstance(i, Subnet) for n in nets for i in n.items)
    assert any(len(n.instances) >= 2 and len({i.subnet for i in n.instances}) == 1 for n in nets)
    assert any(isinstance(i, Include) for n in nets for i in n.items)
    assert any(isinstance(i, Port) for n in nets for s in n.subnets for i in s.items)


@pytest.mark.parametrize("name", ["mm1", "central_server", "mutex", "subnets", "distributions"])
def test_cli_commands_on_models(name, capsys, tmp_path):
    path = os.path.join(MODELS, f"{name}.qpn")
    assert main(["check", path]) == 0
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "places" in out and "transitions" in out
    dot = tmp_path / "m.dot"
    assert main(["dot", path, "-o", str(dot)]) == 0
    assert dot.read_text().startswith("digraph")
    assert main(["fmt", "--check", path]) == 0
