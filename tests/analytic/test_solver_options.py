"""Solver options: declared once per solver (solvers.options), checked by name and value
on every path, listed in solvers.solve's docstring and in qpn solve --help."""
from __future__ import annotations

import dataclasses

import pytest

import qpn
from qpn import solvers
from conftest import MODELS
from qpn.cli import main
from qpn.errors import SolverError
from qpn.solvers.des.options import DESOptions

MM1 = f"{MODELS}/mm1.qpn"


def _fields():
    return [(s, f) for s in solvers.all_solvers() for f in s.Options.fields()]


def test_every_option_is_listed_in_solve_docstring_and_help(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    help_text = capsys.readouterr().out
    doc = solvers.solve.__doc__
    assert len(_fields()) >= 30
    for s, f in _fields():
        line = f"{f.name} ("
        assert line in doc and line in help_text, f.name
        flag = f.metadata["flag"]
        if flag:
            for name in flag.names or ("--" + f.name.replace("_", "-"),):
                assert name in help_text, name
    # the simulator's flags sit in its own group, the CTMC's in another
    assert "des options (simulation" in help_text and "ctmc options (CTMC" in help_text


def test_an_unknown_option_is_refused_with_the_nearest_name():
    with pytest.raises(SolverError, match="unknown solver option 'sede'; did you mean 'seed'"):
        solvers.solve(qpn.load(MM1), "mva", options={"sede": 3})
    with pytest.raises(SolverError, match="unknown solver option 'zzz' \\(options: atol, buckets"):
        solvers.solve(qpn.load(MM1), "auto", options={"zzz": 1})


@pytest.mark.parametrize("given,message", [
    ({"rtol": -1}, "option rtol=-1: must be > 0"),
    ({"time": "ten"}, "option time='ten': expected a time"),
    ({"replications": 0}, "option replications=0: must be >= 1"),
    ({"watch": "tokens,speed"}, "expected names out of tokens"),
    ({"level": 1.5}, "option level=1.5: must be between 0 and 1"),
    ({"limit": 2.5}, "option limit=2.5: expected a whole number"),
    ({"steady": "lu"}, "option steady='lu': not one of auto, direct"),
    ({"seed": True}, "option seed=True: expected an integer"),
])
def test_values_are_checked_whichever_method_runs(given, message):
    # a simulation option's value is checked even when MVA solves (one dict serves all)
    with pytest.raises(SolverError, match=message.replace("(", "\\(").replace(")", "\\)")):
        solvers.solve(qpn.load(MM1), "mva", options=given)


def test_text_values_convert_as_on_the_command_line():
    o = DESOptions.of({"time": "10 min", "crn": "yes", "replications": "4", "warmup": "none",
                       "workers": "auto", "events": "1e6", "watch": "throughput"})
    assert (o.time, o.crn, o.replications, o.warmup, o.workers, o.events, o.watch) == \
        (600.0, True, 4, 0, "auto", 1_000_000, ("throughput",))
    assert DESOptions.of(o) is o and o.replace(seed="7").seed == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.seed = 3


def test_truncation_reaches_the_ctmc_and_passes_through_the_simulator():
    # 'truncation' was read by the CTMC but unknown to the simulator's hand-written list,
    # so auto -> des refused it ("unknown simulation option")
    net = qpn.load(MM1)
    fine = solvers.solve(net, "ctmc", **{"lambda": 0.9})
    coarse = solvers.solve(net, "ctmc", options={"truncation": 1e-3}, **{"lambda": 0.9})
    assert (fine.info["cutoff"], coarse.info["cutoff"]) == (240, 60)
    assert coarse.info["truncated_mass"] <= 1e-3 and fine.info["truncated_mass"] <= 1e-10
    assert fine.get("tokens", "server") == pytest.approx(9.0, rel=1e-8)
    sim = solvers.solve(net, "des", options={"truncation": 1e-3, "events": 20_000, "replications": 2,
                                             "quiet": True, "seed": 2})
    assert sim.status == "ok" and 0.7 < sim.get("utilization", "server") < 0.9


def test_a_flag_of_another_method_is_refused_and_symbolic_reads_the_ctmc_flags(capsys):
    assert main(["solve", MM1, "-m", "des", "--limit", "5"]) == 2
    err = capsys.readouterr().err
    assert "--limit is a CTMC option; it has no effect with --method des" in err
    assert main(["solve", MM1, "-m", "symbolic", "--cutoff", "80", "-q"]) == 0
    assert main(["solve", MM1, "-m", "des", "--option", "time=10 min", "--option", "replications=2",
                 "--option", "crn=on", "-q"]) == 0


def test_max_cutoff_stops_the_doubling_and_the_result_says_what_is_left():
    # an option added by touching solvers/ctmc/solver.py alone: the declaration gives the
    # name check, the value check, --option, the --help line and the docstring line
    net = qpn.load(MM1)
    short = solvers.solve(net, "ctmc", options={"max_cutoff": 100}, **{"lambda": 0.95})
    full = solvers.solve(net, "ctmc", **{"lambda": 0.95})
    assert (short.info["cutoff"], full.info["cutoff"]) == (120, 480)
    # M/M/1/K truncated at K = 120: mass 0.05 * 0.95^120 / (1 - 0.95^121) at the cut-off
    assert short.info["truncated_mass"] == pytest.approx(0.05 * 0.95 ** 120 / (1 - 0.95 ** 121), rel=1e-6)
    assert any("truncated at 120 tokens" in w and "raise --cutoff; the adaptive cut-off stops at "
               "max_cutoff 100: --option max_cutoff=N" in w for w in short.warnings), short.warnings
    assert full.get("tokens", "server") == pytest.approx(19.0, rel=1e-8)
    assert "max_cutoff (2000; a whole number >= 1)" in solvers.solve.__doc__
    with pytest.raises(SolverError, match="option max_cutoff=0: must be >= 1"):
        solvers.solve(net, "mva", options={"max_cutoff": 0})


def test_an_option_given_as_a_parameter_says_where_it_goes():
    # keyword arguments of solve are the net's parameters; seed=3 was "unknown parameter"
    with pytest.raises(SolverError, match=r"'seed' is a solver option, not a parameter of the net: "
                                          r"pass it as options=\{'seed': 3\}"):
        solvers.solve(qpn.load(MM1), "des", seed=3)
    with pytest.raises(qpn.ParameterError, match="unknown parameter 'lamda'"):
        solvers.solve(qpn.load(MM1), "mva", lamda=0.5)
