"""Symbolic results, the auto chooser, and `qpn solve`."""
import json
import math

import pytest
import sympy as sp

import qpn
from qpn.cli import main
from qpn.errors import SolverError

from conftest import MODELS


@pytest.mark.parametrize("K", [1, 2, 3, 6])
def test_symbolic_mutex_equals_numeric(K):
    net = qpn.load(f"{MODELS}/mutex.qpn")
    sym = qpn.solve(net, method="symbolic", threads=K)
    num = qpn.solve(net, method="ctmc", threads=K)
    cells = [(a, b) for a, b, _ in sym.compare(num)]
    assert len(cells) > 20
    for a, b in cells:
        assert a.value == pytest.approx(b.value, rel=1e-12, abs=1e-15)
    assert sym.info["route"] == "ctmc"


def test_symbolic_closed_forms_are_the_textbook_ones():
    net = qpn.load(f"{MODELS}/mutex.qpn")
    think, hold = sp.symbols("think hold", positive=True)
    x1 = qpn.solve(net, method="symbolic", threads=1).expr("throughput", "acquire")
    assert sp.simplify(x1 - 1 / (think + hold)) == 0
    x2 = qpn.solve(net, method="symbolic", threads=2).expr("throughput", "acquire")
    # birth-death: p1/p0 = 2h/t, p2/p0 = 2h^2/t^2, X = (1 - p0) / h
    assert sp.simplify(x2 - 2 * (hold + think) / (2 * hold ** 2 + 2 * hold * think + think ** 2)) == 0
    mm1 = qpn.solve(qpn.load(f"{MODELS}/mm1.qpn"), method="symbolic")
    lam, d = sp.symbols("lambda demand", positive=True)
    assert sp.simplify(mm1.expr("tokens", "server") - lam * d / (1 - lam * d)) == 0
    assert mm1.info["route"] == "mva"
    assert "\\frac" in mm1.latex("response", "server")


def test_symbolic_evaluates_at_other_parameters():
    net = qpn.load(f"{MODELS}/mutex.qpn")
    sym = qpn.solve(net, method="symbolic", threads=3)
    other = qpn.solve(net, method="ctmc", threads=3, think="2 s", hold="0.5 s")
    v = sym.evaluate("throughput", "acquire", think=2.0, hold=0.5)
    assert v == pytest.approx(other.get("throughput", "acquire"), rel=1e-12)


def test_symbolic_refuses_large_or_non_exponential():
    with pytest.raises(SolverError, match="too many for a symbolic solution"):
        qpn.solve(qpn.load(f"{MODELS}/mutex.qpn"), method="symbolic", threads=500)
    with pytest.raises(SolverError, match="open net needs a product form"):
        qpn.solve(qpn.load(f"{MODELS}/webserver.qpn"), method="symbolic")
    with pytest.raises(SolverError, match="non-exponential"):
        qpn.solve(qpn.load(f"{MODELS}/barrier.qpn"), method="symbolic")


@pytest.mark.parametrize("model,method,why", [
    ("central_server", "mva", "product form"),
    ("tandem", "mva", "product form"),
    ("mutex", "ctmc", "place lock"),
    ("webserver", "ctmc", "place idle"),
    ("priorities", "ctmc", "transition dispatch_normal: inhibitor arc"),
])
def test_auto_chooses_and_explains(model, method, why):
    res = qpn.solve(qpn.load(f"{MODELS}/{model}.qpn"))
    assert res.info["chosen"] == method
    line = res.explanation[0]
    assert line.startswith(f"auto: chose {method}: ") and why in line


def test_a_method_that_cannot_names_the_construct_and_who_can():
    with pytest.raises(SolverError) as info:
        qpn.solve(qpn.load(f"{MODELS}/webserver.qpn"), method="mva")
    msg = str(info.value)
    assert "place idle" in msg and "methods that can:" in msg and "ctmc" in msg


def test_cli_solve_exports_and_compares(tmp_path, capsys):
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    assert main(["solve", f"{MODELS}/tandem.qpn", "--method", "ctmc", "--json", str(out_json),
                 "--csv", str(out_csv)]) == 0
    data = json.loads(out_json.read_text())
    assert data["method"] == "ctmc" and data["info"]["states"] == 21
    row = next(m for m in data["measures"] if m["measure"] == "throughput" and m["element"] == "t12")
    csv_lines = out_csv.read_text().splitlines()
    assert csv_lines[0] == "measure,element,color,value,ci_halfwidth,unit"
    assert any(l.startswith("throughput,t12,,") and float(l.split(",")[3]) == row["value"] for l in csv_lines)
    capsys.readouterr()
    assert main(["solve", f"{MODELS}/tandem.qpn", "--method", "ctmc", "--compare", "mva"]) == 0
    out = capsys.readouterr().out
    worst = float(out.strip().splitlines()[-1].split(":")[1].split()[0])
    assert worst < 1e-10


def test_cli_solve_set_and_transient(capsys):
    assert main(["solve", f"{MODELS}/mutex.qpn", "--method", "ctmc", "--set", "threads=2",
                 "--measure", "throughput", "-q"]) == 0
    out = capsys.readouterr().out
    val = float(next(l for l in out.splitlines() if l.startswith("throughput  acquire")).split()[-1])
    assert val == pytest.approx(2 * (0.2 + 1) / (2 * 0.04 + 2 * 0.2 + 1), rel=1e-5)
    assert main(["solve", f"{MODELS}/mutex.qpn", "--transient", "0,1,50", "--measure", "tokens"]) == 0
    out = capsys.readouterr().out
    assert out.count("t = ") == 3


def test_cli_solve_error_is_located_not_traceback(capsys):
    assert main(["solve", f"{MODELS}/webserver.qpn", "--method", "mva"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "place idle" in err


def test_the_symbolic_solver_refuses_what_the_ctmc_cannot_model_and_takes_its_options():
    # round robin has an exact chain only as processor sharing (rr='ps'); before, the
    # symbolic solver offered itself for it and failed inside
    net = qpn.parse("place cpu queue rr quantum 1 ms service exp(1) init 2\n"
                    "place think queue is service exp(2)\n"
                    "transition a : cpu -> think\ntransition b : think -> cpu\n")
    with pytest.raises(SolverError, match="round robin with a quantum .no exact Markov model. "
                                          r"\(methods that can: des\)"):
        qpn.solve(net, method="symbolic")
    sym = qpn.solve(net, method="symbolic", options={"rr": "ps"})
    num = qpn.solve(net, method="ctmc", options={"rr": "ps"})
    assert sym.get("throughput", "a") == pytest.approx(num.get("throughput", "a"), rel=1e-9)
    # 2 jobs, PS at rate 1 and IS at rate 1/2 each: jobs at the cpu 0, 1, 2 with
    # pi ~ (1, 1, 1/2), so X = 1 - pi0 = 3/5
    assert sym.get("throughput", "a") == pytest.approx(3 / 5, rel=1e-12)
