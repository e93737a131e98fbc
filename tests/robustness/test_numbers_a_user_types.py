"""Numbers a user types and files a user feeds, at their extremes (issue 43): a clear
error or a correct answer, never a traceback, an allocation past the memory, or a run
past the wall-clock cap."""
from __future__ import annotations

import json
import sys

import pytest

import qpn
from qpn.cli import main
from qpn.errors import QPNError
from conftest import MODELS

MM1 = f"{MODELS}/mm1.qpn"


@pytest.mark.parametrize("times,said", [
    ("-1", "transient times must be finite and >= 0 seconds, got -1.0"),
    ("nan", "transient times must be finite and >= 0 seconds, got nan"),
    ("1e308", "the transient solution at t = 1e+308 s needs about inf uniformization steps"),
])
def test_transient_times_out_of_range_are_refused(capsys, times, said):
    assert main(["solve", MM1, "--method", "ctmc", f"--transient={times}"]) == 2
    assert said in capsys.readouterr().err


def test_a_transient_time_a_stiff_chain_cannot_reach_is_refused_with_the_estimate(capsys):
    """A 1 ns step makes 10^9 uniformization steps per second of model time: refused with
    the count, before any is taken."""
    model = ("place a init 1\nplace b\ntransition f : a -> b delay exp(rate = 1e9)\n"
             "transition g : b -> a delay exp(1 s)\n")
    net = qpn.parse(model)
    with pytest.raises(qpn.SolverError, match=r"t = 10 s needs about 1e\+10 uniformization steps"):
        qpn.solvers.ctmc.solve_transient(qpn.compile_net(net), [0.0, 10.0])
    short = qpn.solvers.ctmc.solve_transient(qpn.compile_net(net), [1e-8])[0]
    assert short.get("tokens", "b") == pytest.approx(1 - 2.718281828459045 ** -10, rel=1e-6)


def test_a_subnormal_delay_simulates_without_a_division_by_zero(tmp_path, capsys):
    model = tmp_path / "sub.qpn"
    model.write_text("place a init 1\nplace b\ntransition t : a -> b delay det(1e-320 ms)\n"
                     "transition u : b -> a delay exp(1 s)\n")
    assert main(["solve", str(model), "--method", "des", "--events", "20000", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "throughput" in out


def _result_file(tmp_path, ci) -> str:
    rows = [{"measure": "utilization", "element": "server", "color": "", "value": 0.8, "ci": ci,
             "n": 100, "unit": ""}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"method": "des", "model": "mm1", "status": "ok", "level": 0.95,
                                "measures": rows}))
    return str(path)


def test_plot_of_a_result_whose_ci_is_not_a_number(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = str(tmp_path / "p.png")
    assert main(["plot", _result_file(tmp_path, [1, 2]), "-o", out]) == 2
    assert "result row utilization server: ci is [1, 2], expected a number" in capsys.readouterr().err
    assert main(["plot", _result_file(tmp_path, float("nan")), "-o", out]) == 0   # drawn, no bar
    with open(out, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_to_frame_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)       # import pandas -> ImportError
    res = qpn.solve(qpn.load(MM1), method="mva")
    with pytest.raises(QPNError, match="needs pandas") as err:
        res.to_frame()
    assert err.value.hint == "pip install pandas" and "hint: pip install pandas" in str(err.value)


def test_a_fixed_run_too_long_to_hold_goes_to_the_streaming_engine():
    """--events 1e30 on an M/M/1: the Lindley kernel draws a lane's customers at once
    (it took the address space); the event engine streams to its wall-clock cap."""
    from qpn.solvers.des.group import choose_kernel
    from qpn.solvers.des.lanes import build_lanes
    from qpn.solvers.des.solver import options_of
    net = build_lanes([qpn.compile_net(qpn.load(MM1))], 2)
    assert choose_kernel(net, options_of({"events": 10 ** 6}))[0] == "lindley"
    assert choose_kernel(net, options_of({"events": 10 ** 30}))[0] == "general"
    assert choose_kernel(net, options_of({"time": 1e30}))[0] == "general"


def test_replications_whose_set_up_outlasts_the_wall_cap_are_refused_with_what_fits(capsys):
    """-R 100000 --wall 3 ran for minutes: each replication's set-up costs about 0.1 ms,
    3,000 of them far more than 10 ms on any machine."""
    rc = main(["solve", f"{MODELS}/mutex.qpn", "--method", "des", "-R", "3000", "--wall", "0.01",
               "--seed", "1"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "setting up 3,000 replications outlasts the wall-clock cap of 0.01 s" in err
    assert "replications (-R), or a longer --wall" in err
