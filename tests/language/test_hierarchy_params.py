"""Hierarchy (subnets, instances, flatten) and parameters (expressions, overrides)."""
import pytest

import qpn
from qpn.errors import ModelError, ParameterError
from qpn.model import Place, QueueingPlace

from conftest import MODELS


def test_flatten_names_are_paths_and_params_global():
    net = qpn.load(f"{MODELS}/subnets.qpn")
    flat = net.flatten()
    assert flat.is_flat
    names = [p.name for p in flat.places]
    assert names == ["front.requests", "front.replies", "front.idle", "front.cpu",
                     "back.requests", "back.replies", "back.idle", "back.cpu", "clients"]
    assert [t.name for t in flat.transitions][:2] == ["front.start", "front.finish"]
    v = flat.param_values()
    assert v["front.threads"] == 4 and v["back.threads"] == 2          # default used for back
    assert v["front.demand"] == pytest.approx(0.005) and v["back.demand"] == pytest.approx(0.02)
    cpu = flat.place_map["front.cpu"]
    assert isinstance(cpu, QueueingPlace) and cpu.queue.name == "front.cpu"
    # ports become plain places
    assert type(flat.place_map["front.requests"]) is Place
    # the flat net prints and parses back to itself
    assert qpn.parse(flat.text()) == flat


def test_instance_override_and_top_level_override():
    net = qpn.load(f"{MODELS}/subnets.qpn")
    n2 = net.with_params(**{"front.threads": 8, "users": 20})
    v = n2.param_values()
    assert v["users"] == 20
    assert n2.flatten().param_values()["front.threads"] == 8
    # printable: the override is an instance argument
    assert "instance front = Server(threads = 8, demand = 5 ms)" in n2.text()
    assert qpn.parse(n2.text()) == n2
    # the original is unchanged (immutable)
    assert net.flatten().param_values()["front.threads"] == 4


def test_override_flat_path_param():
    flat = qpn.load(f"{MODELS}/subnets.qpn").flatten()
    assert flat.with_params(**{"back.demand": "40 ms"}).param_values()["back.demand"] == pytest.approx(0.04)


def test_nested_subnets_and_shared_global_queue():
    src = """
shared queue cpu : ps servers 2
subnet Worker(d = 1 ms) {
    input jobs
    output done
    place busy on cpu service exp(d)
    transition go : jobs -> busy
    transition end : busy -> done
}
subnet Pool(n = 2, d = 1 ms) {
    input jobs
    output done
    instance w = Worker(d = 2 * d)
    place idle init n
    transition take : jobs, idle -> w.jobs
    transition give : w.done -> done, idle
}
instance pool = Pool(n = 3, d = 5 ms)
place src init 4
transition submit : src -> pool.jobs
transition back : pool.done -> src
"""
    flat = qpn.parse(src).flatten()
    assert "pool.w.busy" in flat.place_map
    busy = flat.place_map["pool.w.busy"]
    assert busy.queue == "cpu"                        # the global shared queue
    v = flat.param_values()
    assert v["pool.w.d"] == pytest.approx(0.01)      # 2 * pool.d
    arcs = {a.place for t in flat.transitions for m in t.modes for a in m.inputs + m.outputs}
    assert {"pool.w.jobs", "pool.w.done", "pool.jobs", "pool.done"} <= arcs
    c = qpn.compile_net(flat)
    assert len(c.queues) == 1 and c.queues[0].name == "cpu"


def test_param_expressions_and_dependencies():
    net = qpn.parse("param a = 2\nparam b = a ^ 3 + min(a, 1)\nparam c = sqrt(b - 5) * 10 ms\n")
    v = net.param_values()
    assert v["b"] == 9 and v["c"] == pytest.approx(0.02)
    assert net.with_params(a=3).param_values()["b"] == 28


def test_with_params_rejects_unknown_and_non_numeric():
    net = qpn.parse("param n = 1\nplace p init n\n")
    with pytest.raises(ParameterError, match="unknown parameter 'm'"):
        net.with_params(m=2)
    with pytest.raises(ParameterError, match="must be a number"):
        net.with_params(n="four")
    with pytest.raises(ParameterError, match="must be a number"):
        net.with_params(n=True)
    assert net.with_params(n="2 * 3").param_values()["n"] == 6


def test_parametric_arc_multiplicity_and_colors():
    net = qpn.parse("param k = 3\ncolors s = 1 .. k\nplace p : s init 1, 2, (k) 3\nplace q\n"
                    "transition t : p(i) -> (i) q delay exp(1)\n")
    c = qpn.compile_net(net)
    assert c.m0.tolist()[:3] == [1, 1, 3]
    assert c.post.toarray()[:, 3].tolist() == [1, 2, 3]      # q receives i tokens
    c5 = qpn.compile_net(net, {"k": 5})
    assert len(c5.places[0].colors) == 5


def test_missing_instance_port_arguments_and_errors_in_template():
    with pytest.raises(ModelError, match="undefined name 'x'") as info:
        qpn.parse("subnet S(n = 1) { place p init x }\ninstance s = S()\n")
    assert info.value.loc.line == 1
