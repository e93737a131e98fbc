"""Product-form detection: the queueing network read off the net, or the element that breaks it."""
import math

import numpy as np
import pytest

import qpn
from qpn import solvers
from qpn.errors import SolverError
from qpn.solvers.mva import product_form
from qpn.solvers.mva.productform import QNModel

from conftest import MODELS


def pf(text_or_model, **params):
    net = qpn.load(f"{MODELS}/{text_or_model}.qpn") if "\n" not in text_or_model \
        else qpn.parse(text_or_model)
    return product_form(qpn.compile_net(net, params or None))


def reasons(text_or_model, **params):
    r = pf(text_or_model, **params)
    assert isinstance(r, list), "expected the net to be refused"
    return r


# ------------------------------------------------------------- accepted nets
def test_central_server_stations_chains_and_visits():
    qn = pf("central_server")
    assert isinstance(qn, QNModel)
    assert [(s.name, s.discipline, s.servers) for s in qn.stations] == [
        ("terminals", "is", math.inf), ("cpu", "ps", 1), ("disk1", "fcfs", 1), ("disk2", "fcfs", 2)]
    assert [(c.name, c.closed, c.population) for c in qn.chains] == [
        ("terminals(a)", True, 8), ("terminals(b)", True, 6)]
    visits = {(k.label, k.chain): k.visits for k in qn.classes}
    assert visits[("cpu(a)", 0)] == pytest.approx(2.0, rel=1e-12)
    assert visits[("disk1(b)", 1)] == pytest.approx(0.6, rel=1e-12)
    assert visits[("disk2(a)", 0)] == pytest.approx(0.4, rel=1e-12)
    assert qn.demands() == pytest.approx(np.array([[5, 0.1, 0.018, 0.024], [5, 0.16, 0.018, 0.024]]),
                                         rel=1e-12)


def test_class_switching_joins_colors_into_one_chain():
    qn = pf("""
        colors phase = {parse, render}
        place users queue is service exp(1 s) init 3
        place cpu : phase queue ps service parse: exp(4 ms), render: exp(6 ms)
        transition go : users -> cpu(parse)
        transition next : cpu(parse) -> cpu(render)
        transition done : cpu(render) -> users
    """)
    assert len(qn.chains) == 1 and qn.chains[0].population == 3
    assert sorted(k.label for k in qn.classes) == ["cpu(parse)", "cpu(render)", "users"]
    assert qn.demands()[0].tolist() == pytest.approx([1.0, 0.010], rel=1e-12)


def test_junction_place_and_weights_become_visit_ratios():
    qn = pf("""
        place cpu queue ps service exp(10 ms) init 2
        place fork
        place d1 queue fcfs service exp(20 ms)
        place d2 queue fcfs service exp(30 ms)
        transition out : cpu -> fork
        transition pick {
            mode one : fork -> d1 weight 1
            mode two : fork -> d2 weight 3
        }
        transition back1 : d1 -> cpu
        transition back2 : d2 -> cpu
    """)
    v = {k.label: k.visits for k in qn.classes}
    assert v == pytest.approx({"cpu": 1.0, "d1": 0.25, "d2": 0.75}, rel=1e-12)


def test_visit_ratios_beyond_the_floats_are_a_reason_not_a_hang():
    # campaign 49: a way out of weight 1e-320 beside 2 makes 2e320 cpu visits per cycle;
    # the singular traffic equations gave inf visits and auto's MVA ran for minutes
    text = """
        place think queue is service exp(1 s) init 1000000
        place cpu queue ps service exp(40 ms)
        place disk queue fcfs service exp(60 ms)
        transition start : think -> cpu
        transition io : cpu -> disk weight 2
        transition done : cpu -> think weight {w}
        transition back : disk -> cpu
    """
    reasons = product_form(qpn.compile_net(qpn.parse(text.format(w="1e-320"))))
    assert isinstance(reasons, list) and len(reasons) == 1
    assert reasons[0].startswith("place ") and "do not fit in floating point" in reasons[0]
    qn = product_form(qpn.compile_net(qpn.parse(text.format(w="1e-3"))))   # 2001 visits: fine
    assert {k.label: k.visits for k in qn.classes}["cpu"] == pytest.approx(2001, rel=1e-9)


def test_higher_priority_routing_mode_takes_every_token():
    qn = pf("""
        place cpu queue ps service exp(10 ms) init 2
        place d1 queue fcfs service exp(20 ms)
        place d2 queue fcfs service exp(30 ms)
        transition hi priority 2 : cpu -> d1
        transition lo priority 1 : cpu -> d2
        transition b1 : d1 -> cpu
        transition b2 : d2 -> cpu
    """)
    v = {k.label: k.visits for k in qn.classes}
    assert v["d1"] == 1.0 and "d2" not in v  # d2 never receives a token


def test_timed_transitions_are_stations_and_depository_can_be_one():
    qn = pf("repairman")
    assert [(s.element, s.discipline, s.servers) for s in qn.stations] == [
        ("transition fail", "is", math.inf), ("transition fix", "fcfs", 1)]
    qn = pf("""
        place q queue ps service exp(1 s) init 2
        transition wait servers inf : q -> q delay uniform(1 s, 3 s)
    """)
    assert [s.element for s in qn.stations] == ["place q", "transition wait"]
    assert qn.demands()[0].tolist() == pytest.approx([1.0, 2.0], rel=1e-12)


def test_open_chain_arrival_rate_and_departure_fifo_on_single_fcfs():
    qn = pf("""
        place s queue fcfs service exp(1 s) departure in-order
        transition arrive : -> s delay exp(2 s)
        transition leave : s ->
    """)
    assert not qn.chains[0].closed and qn.chains[0].arrival_rate == pytest.approx(0.5)
    assert qn.chains[0].name == "arrive"


# ------------------------------------------------------------- refused nets
def test_webserver_is_refused_naming_place_idle():
    r = reasons("webserver")
    assert r[0].startswith("place idle: a passive resource: tokens wait in an ordinary place "
                           "with initial tokens")
    assert "transition accept: synchronizes 2 tokens (not a routing step)" in r
    with pytest.raises(SolverError, match="place idle") as err:
        solvers.solve(qpn.load(f"{MODELS}/webserver.qpn"), "mva")
    assert err.value.construct.startswith("place idle")


def test_mutex_is_refused_naming_the_lock():
    r = reasons("mutex")
    assert r[0].startswith("place lock: a passive resource")
    assert "transition acquire: synchronizes 2 tokens (not a routing step)" in r
    assert "transition release: produces 2 tokens (a fork, not a routing step)" in r


@pytest.mark.parametrize("model,expected", [
    ("priorities", "queue cpu: prio is not product form"),
    ("priorities", "transition dispatch_normal: inhibitor arc"),
    ("rr_cpu", "queue cpu: rr is not product form"),
    ("bounded_queue", "place buffer: capacity"),
    ("fifo_departure", "place channel: departure in-order on a ps queue"),
    ("barrier", "transition release: synchronizes 3 tokens"),
    ("include_demo", "place ssd.device: FCFS with class-dependent service times"),
    ("distributions", "transition wake: a non-exponential delay (empirical) with servers 1"),
])
def test_example_models_refused_with_the_element(model, expected):
    assert any(r.startswith(expected) for r in reasons(model)), reasons(model)


def test_fcfs_class_dependent_and_non_exponential():
    base = """
        colors k = {a, b}
        place clients : k queue is service exp(1 s) init 2 a, 2 b
        place db : k queue fcfs service {svc}
        transition go : clients(x) -> db(x)
        transition back : db(x) -> clients(x)
    """
    assert reasons(base.replace("{svc}", "a: exp(1 ms), b: exp(2 ms)")) == \
        ["place db: FCFS with class-dependent service times"]
    assert reasons(base.replace("{svc}", "det(1 ms)")) == \
        ["place db: FCFS with non-exponential service (det)"]
    assert isinstance(pf(base.replace("{svc}", "exp(1 ms)")), QNModel)
    # PS and LCFS-PR accept any class-dependent distribution
    ps = base.replace("queue fcfs", "queue ps").replace("{svc}", "a: det(1 ms), b: erlang(2, 3 ms)")
    assert isinstance(pf(ps), QNModel)
    lcfs = ps.replace("queue ps", "queue lcfs-pr")
    assert isinstance(pf(lcfs), QNModel)
    assert reasons(lcfs.replace("queue lcfs-pr", "queue lcfs-pr servers 2"))[0].startswith(
        "place db: LCFS-PR with 2 servers needs exponential service")


def test_structural_reasons():
    assert reasons("""
        place a init 1
        place b
        transition t : a -> b
        transition u : b -> a
    """) == ["transition t: immediate transitions loop forever (a timeless trap)"]
    r = reasons("""
        place q queue ps service exp(1 s) init 2
        transition out : q ->
    """)
    assert r == ["place q: a closed chain where tokens leave through a sink and no source refills them"]
    r = reasons("""
        place q queue ps service exp(1 s)
        place r queue ps service exp(1 s)
        transition arrive : -> q delay exp(1 s)
        transition t : q -> r
        transition u : r -> q
    """)
    assert r[0].startswith("place ") and "can never leave" in r[0]
    assert reasons("place q queue ps service exp(1 s) init 1\n") == \
        ["place q: no transition takes tokens from its depository"]
    r = reasons("""
        place q queue ps service exp(1 s) init 1
        transition now : q -> q
        transition later : q -> q delay exp(1 s)
    """)
    assert r == ["place q: taken both by immediate and timed transitions"]
    r = reasons("""
        place s queue ps service exp(1 s)
        transition arrive : -> s delay det(1 s)
        transition leave : s ->
    """)
    assert r == ["transition arrive: a source with a non-exponential delay (det) is not a Poisson "
                 "arrival stream"]
    r = reasons("""
        place p init 3
        transition x : p -> p delay exp(1 s)
        transition y servers inf : p -> p delay exp(1 s)
    """)
    assert r == ["place p: taken by timed transitions with different servers (x, y)"]


def test_two_recurrent_cycles_in_one_chain():
    r = reasons("""
        place start init 2
        place a queue ps service exp(1 s)
        place b queue ps service exp(1 s)
        transition left : start -> a
        transition right : start -> b
        transition la : a -> a
        transition rb : b -> b
    """)
    assert r == ["place a: a closed chain where tokens end up in 2 separate cycles (a, b)"]
