"""Symbolic MVA: closed forms in the parameters that evaluate to the numeric MVA answer."""
import math

import numpy as np
import pytest
import sympy as sp

import qpn
from qpn import solvers
from qpn.errors import SolverError
from qpn.solvers.measures import derive
from qpn.solvers.mva import symbolic_mva
from qpn.solvers.mva.symbolic import parameter_symbols, parameter_values

from conftest import MODELS


def net_of(text_or_model):
    return qpn.load(f"{MODELS}/{text_or_model}.qpn") if "\n" not in text_or_model \
        else qpn.parse(text_or_model)


def assert_matches_numeric(text_or_model, **params):
    """Every derived measure, evaluated at the parameter values, equals numeric MVA (1e-12)."""
    net = net_of(text_or_model)
    c = qpn.compile_net(net, params or None)
    rows = derive(c, *symbolic_mva(c))
    values = parameter_values(c)
    numeric = solvers.solve(net, "mva", options={"mva": "exact"}, **params)
    checked = 0
    for measure, element, color, expr in rows:
        expr = sp.sympify(np.asarray(expr).item())
        got = float(expr.subs(values))
        want = numeric.get(measure, element, color)
        if math.isnan(want):
            assert math.isnan(got) or got == 0
            continue
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300), (measure, element, color, expr)
        checked += 1
    assert checked >= 5
    return rows


def row(rows, measure, element, color=""):
    for m, e, col, v in rows:
        if (m, e, col) == (measure, element, color):
            return sp.sympify(np.asarray(v).item())
    raise KeyError((measure, element, color))


def test_mm1_closed_form():
    rows = assert_matches_numeric("mm1")
    lam, d = sp.symbols("lambda demand", positive=True)
    assert sp.simplify(row(rows, "tokens", "server") - lam * d / (1 - lam * d)) == 0
    assert sp.simplify(row(rows, "response", "server") - d / (1 - lam * d)) == 0
    assert sp.simplify(row(rows, "utilization", "server") - lam * d) == 0


def test_repairman_closed_form_two_machines():
    rows = assert_matches_numeric("repairman", machines=2)
    Z, S = sp.symbols("mttf repair", positive=True)
    # G(1)/G(2) for a delay Z and a queue S with 2 customers
    X = (Z + S) / (Z ** 2 / 2 + Z * S + S ** 2)
    assert sp.simplify(row(rows, "throughput", "fix") - X) == 0
    assert row(rows, "throughput", "fix").free_symbols == {Z, S}


@pytest.mark.parametrize("model,params", [
    ("mm1", {}),
    ("mmc", {}),
    ("mmc", {"c": 1, "lambda": 0.5}),
    ("mmc", {"c": 7, "lambda": 6.5}),
    ("repairman", {}),
    ("tandem", {}),
    ("tandem", {"N": 12}),
    ("central_server", {"n_a": 3, "n_b": 2}),
    ("central_server", {"n_a": 6, "n_b": 6}),
    ("shared_queue", {}),
    ("counted_loop", {}),
])
def test_example_models_match_numeric(model, params):
    assert_matches_numeric(model, **params)


def test_mixed_open_class_switching_and_races_match_numeric():
    assert_matches_numeric("""
        colors kind = {user, batch}
        param z = 2 s
        param arrival = 1.5
        place think queue is service exp(z) init 3
        place cpu : kind queue ps service user: exp(300 ms), batch: exp(250 ms)
        place disk queue fcfs service exp(40 ms)
        place side_q queue is service exp(1 s)
        transition go : think -> cpu(user)
        transition back : cpu(user) -> think
        transition batch : -> cpu(batch) delay exp(1 / arrival)
        transition io : cpu(batch) -> disk
        transition done : disk ->
        transition side : -> side_q delay exp(1 s)
        transition gone : side_q ->
    """)
    assert_matches_numeric("""
        param p = 3
        place idle init 4
        place a queue fcfs service exp(0.5 s)
        place b queue lcfs-pr service hyperexp(0.5: 0.1 s, 0.5: 0.3 s)
        transition to_a servers inf : idle -> a delay exp(2 s)
        transition to_b servers inf : idle -> b delay exp(4 s)
        transition from_a : a -> idle
        transition from_b {
            mode again : b -> b weight p
            mode home : b -> idle weight 1
        }
    """)


def test_symbolic_weights_give_symbolic_visits():
    net = net_of("""
        param p = 3
        param s = 10 ms
        place think queue is service exp(1 s) init 2
        place cpu queue ps service exp(s)
        transition go : think -> cpu
        transition loop {
            mode again : cpu -> cpu weight p
            mode home : cpu -> think weight 1
        }
    """)
    c = qpn.compile_net(net)
    tokens, rates, busy = symbolic_mva(c)
    p, s = sp.symbols("p s", positive=True)
    assert p in sp.sympify(rates[1]).free_symbols  # loop.again fires p times per cycle
    assert_matches_numeric(net.text())


def test_derived_parameters_are_expanded_and_non_rational_means_still_work():
    net = net_of("""
        param rate = 4
        param mean = 1 / rate
        param k = 2
        place think queue is service exp(sqrt(k) * 1 s) init 3
        place cpu queue ps service exp(mean)
        transition go : think -> cpu
        transition back : cpu -> think
    """)
    syms = parameter_symbols(net)
    assert sp.simplify(syms["mean"] - 1 / sp.Symbol("rate", positive=True)) == 0
    assert_matches_numeric(net.text())


def test_refusals():
    c = qpn.compile_net(net_of("central_server"))
    with pytest.raises(SolverError, match=r"14 tokens \(limit 12\)"):
        symbolic_mva(c)
    with pytest.raises(SolverError, match="place idle"):
        symbolic_mva(qpn.compile_net(net_of("webserver")))
    with pytest.raises(SolverError, match=r"saturates place server: utilization 1\.25"):
        symbolic_mva(qpn.compile_net(net_of("mm1"), {"lambda": 1.25}))
    mixed = net_of("""
        colors kind = {user, batch}
        place think queue is service exp(2 s) init 3
        place cpu : kind queue ps servers 2 service exp(300 ms)
        transition go : think -> cpu(user)
        transition back : cpu(user) -> think
        transition batch : -> cpu(batch) delay exp(1 s)
        transition done : cpu(batch) ->
    """)
    with pytest.raises(SolverError, match="place cpu: a multi-server station visited by both"):
        symbolic_mva(qpn.compile_net(mixed))
