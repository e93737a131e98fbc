"""Nets that `qpn check` accepts but have no steady state: `qpn solve` says why, with an
exit status of its own (solvers.status), instead of a traceback or a table of NaN (issue 15)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import qpn
from conftest import MODELS
from qpn.cli import main
from qpn.solvers.des.flat import _check_sentinels
from qpn.solvers.status import ExitStatus, epilog, exit_status

DEADLOCK = "net dl\nplace a init 1\nplace b\ntransition t1 : a -> b\n"
# a closed net whose transition has no output: its token leaves, then nothing can happen
NO_OUTPUT = ("net noout\nplace a init 1\nplace b queue fcfs service exp(1)\n"
             "transition t1 : a -> b\ntransition t2 : b ->\n")
NO_TOKENS = ("net notok\nplace a\nplace b queue fcfs service exp(1)\n"
             "transition t1 : a -> b\ntransition t2 : b -> a\n")
EMPTY = "net empty\n"
# arrivals into a queue whose depository nothing drains
OPEN_NO_EXIT = "net openq\nplace b queue fcfs service exp(1)\ntransition arr : -> b delay exp(2)\n"
# arrivals every 0.5 s on average into a server of mean 1 s
MM1_OVERLOAD = ("net mm1\nplace b queue fcfs service exp(1)\ntransition arr : -> b delay exp(0.5)\n"
                "transition dep : b ->\n")


def _solve(tmp_path, capsys, text: str, *args: str) -> tuple[int, str, str, dict]:
    f = tmp_path / "m.qpn"
    f.write_text(text)
    js = tmp_path / "out.json"
    rc = main(["solve", str(f), "-q", "--json", str(js), *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err, (json.loads(js.read_text()) if js.exists() else {})


@pytest.mark.parametrize("method", ["auto", "ctmc", "symbolic"])
def test_deadlock_names_the_dead_marking(tmp_path, capsys, method):
    rc, out, err, js = _solve(tmp_path, capsys, DEADLOCK, "-m", method)
    assert rc == ExitStatus.DEADLOCK == 4
    reason = "the net reaches a marking where nothing can happen: b"
    solver = "symbolic" if method == "symbolic" else "ctmc"   # closed forms have their own CTMC
    assert out == f"dl: {solver} -- DEADLOCK: {reason}\n"
    assert err == f"error: deadlock: {reason}\n"
    assert (js["status"], js["reason"], js["measures"]) == ("deadlock", reason, [])


@pytest.mark.parametrize("method", ["auto", "ctmc", "des"])
def test_transition_without_output_deadlocks_in_every_method(tmp_path, capsys, method):
    # the simulator once indexed with -1 here (IndexError); the CTMC printed NaN
    rc, out, err, js = _solve(tmp_path, capsys, NO_OUTPUT, "-m", method)
    assert rc == 4 and js["status"] == "deadlock" and js["measures"] == []
    if method == "des":
        assert js["reason"] == ("the net reaches a marking where nothing can happen: 10 of 10 "
                                f"replication(s) got stuck there (first at t = {js['info']['precision']['deadlock']:.6g} s)")
    else:
        assert js["reason"] == "the net reaches a marking where nothing can happen: (empty)"
    assert "nan" not in out


@pytest.mark.parametrize("method", ["auto", "mva", "ctmc", "symbolic", "des"])
def test_no_tokens_and_empty_model_are_empty(tmp_path, capsys, method):
    rc, out, err, js = _solve(tmp_path, capsys, NO_TOKENS, "-m", method)
    assert rc == ExitStatus.EMPTY == 6
    assert out.startswith(f"notok: {method} -- EMPTY: no tokens: the initial marking is empty and "
                          "every transition needs input tokens")
    assert js["status"] == "empty" and js["measures"] == []
    rc, out, err, js = _solve(tmp_path, capsys, EMPTY, "-m", method)
    assert rc == 6
    assert out == f"empty: {method} -- EMPTY: the model has no places: nothing to solve\n"
    assert err == "error: empty: the model has no places: nothing to solve\n"


@pytest.mark.parametrize("method", ["auto", "ctmc"])
def test_open_queue_without_departure_is_unstable(tmp_path, capsys, method):
    # was: RuntimeError "Factor is exactly singular" from SuperLU
    rc, out, err, js = _solve(tmp_path, capsys, OPEN_NO_EXIT, "-m", method)
    assert rc == ExitStatus.UNSTABLE == 5
    reason = ("tokens pile up in 'b' without bound: nothing takes them out (the CTMC cut off at "
              "60 tokens gets stuck there)")
    assert out == f"openq: ctmc -- UNSTABLE: {reason}\n"
    assert (js["status"], js["reason"]) == ("unstable", reason)


def test_open_queue_without_departure_other_methods(tmp_path, capsys):
    rc, out, err, js = _solve(tmp_path, capsys, OPEN_NO_EXIT, "-m", "mva")
    assert rc == 2 and "no transition takes tokens from its depository" in err
    rc, out, err, js = _solve(tmp_path, capsys, OPEN_NO_EXIT, "-m", "des", "--events", "20000",
                              "-R", "4")
    assert rc == 5 and js["status"] == "unstable"
    assert js["reason"].startswith("tokens in b keep growing through the run (")
    assert "-- UNSTABLE: tokens in b keep growing" in out.splitlines()[0]
    assert js["measures"]          # the estimates stay: they show what grows


@pytest.mark.parametrize("method,reason", [
    ("mva", "the open workload saturates place b: utilization 2 >= 1"),
    ("ctmc", "tokens in 'b' grow without bound (arrivals above service)"),
    # the simulator checks the open load as auto does (issue 43: it ran, warned of its
    # warm-up and exited 0)
    ("des", "the open workload saturates place b: utilization 2 >= 1"),
])
def test_overloaded_queue_is_unstable(tmp_path, capsys, method, reason):
    rc, out, err, js = _solve(tmp_path, capsys, MM1_OVERLOAD, "-m", method)
    assert rc == 5 and js["status"] == "unstable" and reason in js["reason"]
    assert out.startswith(f"mm1: {method} -- UNSTABLE: ")


CRITICAL = """net gen
colors job = {a, b}
place q0 : job init 5 a
transition t0 {
  mode m0 : q0(x) ->  delay erlang(2, 1)
  mode m1 :  -> q0(a) delay erlang(2, 1)
}
"""


def test_a_critically_loaded_net_is_unstable_after_four_cutoffs():
    # campaign 23: arrivals equal service (a symmetric random walk); the mass at the
    # cut-off halved as it doubled, so the CTMC doubled on to 3,840 (7.8 s, a HANG) and
    # answered a mean of half the cut-off
    res = qpn.solve(qpn.parse(CRITICAL), method="ctmc")
    assert res.degenerate == "unstable" and "arrivals equal service" in res.reason
    masses = [float(m) for m in res.reason.split("doubles (")[1].split(")")[0].split(", ")]
    assert len(masses) == 4 and all(0.48 <= b / a <= 0.52 for a, b in zip(masses, masses[1:]))
    mm1 = open(f"{MODELS}/mm1.qpn").read()
    crit = qpn.solve(qpn.parse(mm1), method="ctmc", **{"lambda": 1.0})
    assert crit.degenerate == "unstable" and "arrivals equal service" in crit.reason
    # near-critical but stable: not flagged, and exact to the truncation (M/M/1, rho = 0.99)
    near = qpn.solve(qpn.parse(mm1), method="ctmc", **{"lambda": 0.99})
    assert near.degenerate is None
    assert near.get("tokens", "server") == pytest.approx(0.99 / 0.01, rel=1e-6)


def test_a_closed_net_still_in_its_transient_is_imprecise_not_unstable(tmp_path, capsys):
    # campaign 24: a mutex with 10^6 threads simulated for 4,000 events; 'waiting' rose
    # through the run and the net was called unstable, though a P-invariant bounds it
    text = open(f"{MODELS}/mutex.qpn").read().replace("param threads = 5", "param threads = 1000000")
    assert "1000000" in text
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "des", "--events", "4000", "-R", "2",
                              "--threads", "1")
    assert rc == ExitStatus.IMPRECISE == 3 and js["status"] == "imprecise"
    assert js["imprecise"] == "the run ended in the start state's transient: tokens in waiting kept rising"
    assert any("though a P-invariant bounds them" in w for w in js["warnings"])
    assert not any("unstable" in w for w in js["warnings"])
    # an open queue that grows is still unstable (nothing bounds it)
    rc, out, err, js = _solve(tmp_path, capsys, OPEN_NO_EXIT, "-m", "des", "--events", "20000", "-R", "4")
    assert rc == 5 and js["status"] == "unstable"


def test_a_healthy_net_is_ok(tmp_path, capsys):
    rc, out, err, js = _solve(tmp_path, capsys, MM1_OVERLOAD.replace("exp(0.5)", "exp(2)"), "-m", "mva")
    assert rc == 0 and (js["status"], js["reason"]) == ("ok", None)
    assert out.splitlines()[0] == "mm1: mva"


def test_exit_statuses_are_listed_in_help_and_ordered(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    out = capsys.readouterr().out
    assert epilog() in out
    assert "    4  the net deadlocks: no steady state, no measures" in out
    assert exit_status(["ok", "imprecise", "unstable"]) == ExitStatus.UNSTABLE
    assert exit_status(["deadlock", "partial"]) == ExitStatus.INTERRUPTED == 130
    assert exit_status(["ok"]) == 0


def test_python_api_returns_the_status():
    res = qpn.solve(qpn.parse(DEADLOCK), method="ctmc")
    assert (res.status, res.degenerate, res.rows) == ("deadlock", "deadlock", [])
    with pytest.raises(qpn.QPNError, match="no measure 'tokens' for 'b'"):
        res.get("tokens", "b")


def test_simulator_sentinels_are_checked():
    slot_queue = np.array([-1, 0]); slot_class = np.array([-1, 0]); slot_ring = np.array([0, -1])
    ok = dict(outs=[[(1, 1)], []], timed=[1], stim_idx=np.array([1]), mode_col=np.array([-1, 0]),
              mode_sampler=np.array([-1, 1]), clock_kind=np.array([0, 0]), mode_multi=np.array([-1, -1]))
    _check_sentinels(slot_queue, slot_class, slot_ring, **ok)      # an output-less mode is fine
    with pytest.raises(AssertionError, match="a timed mode without its clock column or sampler"):
        _check_sentinels(slot_queue, slot_class, slot_ring, **dict(ok, mode_col=np.array([0, -1])))
    with pytest.raises(AssertionError, match="a slot without its queue class or token ring"):
        _check_sentinels(slot_queue, slot_class, np.array([-1, -1]), **ok)


def test_symbolic_results_write_json(tmp_path, capsys):
    # the closed forms are keyed by tuples: --json once raised TypeError on them
    rc = main(["solve", f"{MODELS}/repairman.qpn", "-m", "symbolic", "-q", "--json",
               str(tmp_path / "s.json")])
    capsys.readouterr()
    js = json.loads((tmp_path / "s.json").read_text())
    assert rc == 0 and js["status"] == "ok" and js["method"] == "symbolic"
    assert {m["measure"] for m in js["measures"]} >= {"throughput", "tokens"}


def test_overloaded_queue_stops_doubling_its_cutoff_once_the_mass_stays_flat(tmp_path, capsys):
    # mass at the cut-off 1 - 1/rho = 0.5 at 60, 120 and 240: no need to go on to 3,840
    rc, out, err, js = _solve(tmp_path, capsys, MM1_OVERLOAD, "-m", "ctmc")
    assert rc == 5 and js["info"]["cutoff"] == 240
    assert js["info"]["truncated_mass"] == pytest.approx(0.5, abs=1e-6)



def _mm1_cutoff_mass(rho: float, n: int) -> float:
    """P(n jobs) of an M/M/1 queue truncated at n: its mass at the cut-off."""
    return (1 - rho) * rho ** n / (1 - rho ** (n + 1))


@pytest.mark.parametrize("rho", [0.9, 0.99, 0.999])
def test_a_stable_queue_near_saturation_keeps_doubling_its_cutoff(rho):
    from qpn.solvers.ctmc.solver import _plainly_growing
    masses = [_mm1_cutoff_mass(rho, n) for n in (60, 120, 240)]
    assert not _plainly_growing(masses), masses     # ratios per doubling fall (rho^N)


def test_a_mass_whose_decay_slows_down_stops_the_doubling():
    """A fuzzed server whose queue holds 2^31 requests: the mass at the cut-off went
    0.0147, 0.0080, 0.0047, 0.0032, 0.0026 over 60 .. 960 (4.6 s of explorations)."""
    from qpn.solvers.ctmc.solver import _growing, _plainly_growing
    masses = [0.014722896221481456, 0.008025046200056634, 0.004730389460905477]
    assert _plainly_growing(masses)
    assert _growing(None, [("tokens", "q", "", 3.0)], masses)   # the same verdict as at 960


# an immediate transition with no input place is enabled in every marking
SOURCE_TRAP = ("net trap\nplace q queue ps service exp(10) init 3\nplace r init 1\n"
               "transition t0 immediate : -> q, r\ntransition t1 : r -> q delay exp(1)\n"
               "transition t2 : q ->\n")


@pytest.mark.parametrize("method", ["auto", "des", "ctmc", "mva"])
def test_an_immediate_source_is_refused_with_its_location(tmp_path, capsys, method):
    rc, out, err, js = _solve(tmp_path, capsys, SOURCE_TRAP, "-m", method)
    assert rc == 2 and "m.qpn:4:12: error: timeless trap: immediate transition(s) 't0' stay enabled" in err
    assert "hint: give it a delay" in err


@pytest.mark.parametrize("method", ["auto", "ctmc"])
def test_an_immediate_self_loop_enabled_at_the_start_is_refused(tmp_path, capsys, method):
    # t2 gives back the token it takes and puts one into an ordered queue: nothing can
    # disable it before time passes (the CTMC's vanishing resolution grew to 8.8 GB, found by
    # fuzzing); a rival that can take its token makes it a retry loop, which is solved
    text = ("net gen\nplace q0 queue ps service hyperexp(mean = 2, scv = 2) departure in-order\n"
            "place q2 init 3\ntransition t2 : q2 -> q2, q0 weight 2\ntransition out : q0 ->\n")
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", method)
    assert rc == 2 and "m.qpn:4:12: error: timeless trap: immediate transition(s) 't2' stay enabled" in err
    rival = text.replace("transition out", "transition rest : q2 -> weight 1\ntransition out")
    from qpn.solvers.status import source_traps
    from qpn.compile import compile_net
    assert source_traps(compile_net(qpn.parse(rival))) == []


def test_an_immediate_source_that_an_inhibitor_stops_is_solved(tmp_path, capsys):
    text = SOURCE_TRAP.replace("transition t0 immediate : -> q, r",
                               "transition t0 immediate : -> q, r unless 3 q")
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "des", "--events", "2000", "-R", "2",
                              "--allow-imprecise")
    assert rc in (0, 3), err
    assert "timeless trap" not in err


def test_a_trap_that_fills_a_queue_is_caught_across_store_growth(tmp_path, capsys):
    # each firing adds a token to q: the simulator's store grows (a return from the compiled
    # loop) many times before 10^5 firings; the count must survive those returns
    # (the inhibitor, far beyond 10^5 tokens, keeps it from the sure traps refused before
    # solving: this is the simulator's own detection)
    text = ("net trap\nplace p init 1\nplace q queue fcfs service exp(1)\n"
            "transition t immediate : p -> p, q unless 1000000 q\n")
    from qpn.errors import SolverError
    from qpn.solvers.des.jit.loop import MAX_IMMEDIATE
    with pytest.raises(SolverError, match=r"timeless trap: immediate transitions keep firing"):
        qpn.solve(qpn.parse(text), method="des", options={"events": 1000, "replications": 2})
    assert MAX_IMMEDIATE == 100_000


def test_the_wall_clock_cap_stops_a_timeless_loop_that_fills_a_long_queue(tmp_path, capsys):
    # m0 and m1 alternate without time passing, each m0 adds 2 tokens to a det-service queue
    # (O(tokens) per arrival): the 10^5 firings that prove a trap would take tens of
    # seconds, so the run stops at the wall-clock cap, even with a fixed --events horizon,
    # mid-burst, exits "imprecise" and says where (found by fuzzing: 51 runs over 5 s)
    text = ("net gen\ncolors job = {a}\nplace q0 : job queue random service det(2) init 1 a\n"
            "place q1 : job init 1 a capacity 5\ntransition t0 immediate {\n"
            "  mode m0 :  -> 2 q0(a), 2 q1(a) weight 3\n  mode m1 : q1(x) ->  weight 5\n}\n")
    from qpn.solvers.des.jit.loop import MAX_IMMEDIATE, YIELD_EVERY
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "des", "--events", "4000", "--wall", "0.2")
    assert rc == ExitStatus.IMPRECISE
    burst = js["info"]["precision"]["immediate_burst"]
    assert YIELD_EVERY <= burst["firings"] < MAX_IMMEDIATE and burst["firings"] % YIELD_EVERY == 0
    assert burst["time"] == 0.0
    assert js["info"]["stopped_by"] == "wall-clock cap"
    assert any("immediate firings in a row without time passing" in w for w in js["warnings"])
    assert "stopped by the wall-clock cap" in err


def test_two_to_the_31_tokens_are_not_a_negative_count(tmp_path, capsys):
    # the barrier with 2^31 parties: the CTMC is refused by its bound, the simulator by
    # its memory estimate; no state with a wrapped int32 count ('deadlock ... =-2147483648')
    text = open(f"{MODELS}/barrier.qpn").read().replace("param parties = 3", "param parties = 2147483648")
    assert "2147483648" in text
    for method in ("auto", "ctmc"):
        rc, out, err, js = _solve(tmp_path, capsys, text, "-m", method, "--limit", "20000")
        assert rc == 2 and "deadlock" not in err and "-2147483648" not in err + out
        assert "above the limit" in err or "memory limit" in err


def test_the_state_registry_keeps_counts_beyond_int32():
    from qpn.solvers.ctmc.explore import Registry
    reg = Registry(lambda R: R[:, 0].copy(), 1, 10)
    ids, new = reg.lookup_or_add(np.array([[2**31], [5]], dtype=np.int64))
    assert sorted(reg.rows().ravel().tolist()) == [5, 2**31]


def test_a_batch_of_tokens_with_several_first_phases_is_merged_or_refused():
    # hyperexponential service: each token picks one of two first phases; 40 tokens
    # started together make 41 distinct rows (not 2^40), 2*10^6 would make too many
    from qpn.errors import SolverError
    base = ("net h\nplace q queue is service hyperexp(0.5: 1, 0.5: 2) init N\n"
            "transition t : q -> q\n")
    res = qpn.solve(qpn.parse(base.replace("N", "40")), method="ctmc")
    assert res.info["states"] == 41
    assert res.get("tokens", "q") == pytest.approx(40, rel=1e-12)
    from qpn import resources
    resources.set_memory_limit(2**60)    # past the bound's guards, to the batch itself
    try:
        with pytest.raises(SolverError, match="ways to pick their first phases"):
            qpn.solve(qpn.parse(base.replace("N", "2000000")), method="ctmc",
                      options={"limit": 10**13, "cutoff": 60})
    finally:
        resources.set_memory_limit(None)


@pytest.mark.parametrize("dist,what", [
    ("lognormal(3, 9223372036854775808)", "squared coefficient of variation is 9.22e+18, beyond 1e+12"),
    ("normal(1e308, 3)", "its mean or variance is beyond the range of floating point numbers"),
    ("gamma(1, 1e13)", "squared coefficient of variation is 1e+13, beyond 1e+12"),
])
def test_distributions_whose_moments_no_solver_can_use_are_located_errors(tmp_path, capsys, dist, what):
    # found by the fuzzer: a phase-type fit divided by zero, a mean squared overflowed
    text = f"net d\nplace q queue fcfs service {dist} init 1\ntransition t : q -> q\n"
    f = tmp_path / "d.qpn"
    f.write_text(text)
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert "d.qpn:2:" in err and what in err and "Traceback" not in err


def test_a_long_single_chain_goes_to_linearizer_not_65536_exact_levels(tmp_path, capsys):
    text = open(f"{MODELS}/tandem.qpn").read()
    assert "param N = " in text
    import re
    text = re.sub(r"param N = \d+", "param N = 65536", text)
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "mva")
    assert rc == 0 and "Linearizer (approximate MVA): exact MVA would take 65,537 population levels" \
        in " ".join(js["explanation"])
    # the bottleneck saturates: s2, one server of 200 ms, passes 5 jobs per second
    assert js["measures"] and res_throughput(js, "t31") == pytest.approx(1 / 0.2, rel=1e-6)


def res_throughput(js: dict, element: str) -> float:
    return next(r["value"] for r in js["measures"] if r["measure"] == "throughput" and r["element"] == element)


def test_merging_successors_with_a_multiword_key(tmp_path):
    # a wide state (a population near 2^62 per word) makes the key several words; equal
    # successors of one parent are merged (numpy cannot sort structured void fields)
    from qpn.solvers.ctmc.explore import Keyer
    k = Keyer(np.array([2**40, 2**40]))
    assert k.words == 2
    from types import SimpleNamespace

    from qpn.solvers.ctmc.explore import Explorer
    R = np.array([[1, 2], [1, 2], [3, 4], [1, 2]])
    w, par, P = np.array([1.0, 2.0, 4.0, 8.0]), np.array([0, 0, 0, 1]), np.zeros((4, 1))
    R2, w2, par2, _ = Explorer._merge(SimpleNamespace(keyer=k), R, w, par, P)
    got = sorted(zip(par2.tolist(), map(tuple, R2.tolist()), w2.tolist()))
    assert got == [(0, (1, 2), 3.0), (0, (3, 4), 4.0), (1, (1, 2), 8.0)]


def test_immediate_firings_that_never_reach_a_tangible_marking_are_a_trap(tmp_path, capsys):
    # found by the fuzzer (spsolve of an empty system): t0 doubles q1 in zero time forever
    text = 'net gen\ncolors job = {a}\nplace q0\nplace q1 : job\ntransition t0 immediate {\n  mode m0 : q0, q1(x) -> 2 q1(x), q0 weight 3\n}\ntransition t1 {\n  mode m0 :  -> q0, q1(a) delay exp(3)\n}\ntransition t2 :  -> q0 delay exp(1)\ntransition t3 {\n  mode m0 :  ->  delay exp(2)\n  mode m1 :  -> q0, 2 q1(a) delay exp(2)\n}\n'
    # (depending on the cut-off, the chain up to it is singular or has no tangible marking)
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "ctmc")
    assert rc == 2 and "Traceback" not in err
    assert ("timeless trap: immediate transitions 't0' never lead to a marking where time passes" in err
            or "the CTMC has no unique steady state" in err)


def test_an_ordered_queue_beyond_the_cutoff_is_a_clear_refusal(tmp_path, capsys):
    # found by the fuzzer (RuntimeError): 2^31 tokens in an FCFS queue with a
    # hyperexponential service, whose CTMC keeps the order of at most 60 tokens
    text = 'net gen\nplace q0 queue fcfs servers 1 service exp(0.5) init 1\nplace q1 queue fcfs service hyperexp(mean = 3, scv = 1) init 2147483648\ntransition t0 {\n  mode m0 : q0 -> q0\n  mode m1 : q0, q1 -> \n}\ntransition t1 immediate {\n  mode m0 : 2 q1, 2 q0 ->  weight 0.1\n}\ntransition t2 immediate : q1, q0 -> q0, 2 q1 unless q1\n'
    # the bound counts the 2^31 tokens placed at the start (the cut-off stops growth only)
    # and refuses before exploring
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "ctmc", "--limit", "200000")
    assert rc == 2 and "at most 4.61e+18 states" in err and "above the limit of 200,000 states" in err
    # auto turns to the simulator, which refuses 2^31 tokens by its memory estimate
    rc, out, err, js = _solve(tmp_path, capsys, text, "--limit", "20000")
    assert rc == 2 and "the simulator's state" in err and "memory limit" in err


def test_a_stalled_steady_state_solve_is_imprecise_not_an_answer(monkeypatch, tmp_path, capsys):
    # whatever the linear solvers return, a residual |pi Q| far from 0 is not the chain's
    # steady state: said in the warnings, the title, the JSON and the exit status
    import qpn.solvers.ctmc.solver as ctmc_solver
    monkeypatch.setattr(ctmc_solver, "_steady", lambda ctmc, method: (
        np.full(ctmc.n, 1.0 / ctmc.n), {"method": "gauss-seidel", "residual": 0.09, "tried": ["gauss-seidel"]}))
    rc, out, err, js = _solve(tmp_path, capsys, NO_TOKENS.replace("place a\n", "place a init 3\n"),
                              "-m", "ctmc")
    assert rc == ExitStatus.IMPRECISE
    assert js["imprecise"].startswith("the steady-state solvers stalled at flow imbalance 9.0e-02")
    assert "PRECISION NOT REACHED" in out


def test_json_output_is_strict_json_with_null_for_undefined_means(tmp_path, capsys):
    # a place nothing ever enters: its mean residence is 0/0 -- NaN in the table, and in
    # the JSON it was the bare word NaN, which jq, JavaScript and strict parsers reject
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    rc, out, err, _ = _solve(tmp_path, capsys, "net gen\nplace q0\ntransition t0 :  ->  delay exp(1)\n")
    js = strict((tmp_path / "out.json").read_text())
    res = {(m["measure"], m["element"]): m["value"] for m in js["measures"]}
    assert res[("residence", "q0")] is None and res[("throughput", "t0")] == 1.0
    f = tmp_path / "sw.qpn"
    f.write_text("net gen\nparam r = 1\nplace q0\ntransition t0 :  ->  delay exp(r)\n")
    assert main(["solve", str(f), "-q", "--sweep", "r=1,2", "--json", str(tmp_path / "sw.json")]) == 0
    capsys.readouterr()
    pts = strict((tmp_path / "sw.json").read_text())["points"]
    assert [p["result"]["measures"][3]["value"] for p in pts] == [None, None]


def test_numbers_at_the_edge_of_float_range_give_no_numpy_warning_lines():
    # samples near 1e308 and a service time of 1e-320 ms overflow inside numpy: the user
    # gets the located error or the result, not "RuntimeWarning: overflow" lines
    import warnings
    from qpn.errors import ModelError
    huge = ("net gen\nplace s init 1\nplace w\ntransition wake : s -> w "
            "delay replay([1e308, 1e-320, 1.5], unit = ms)\ntransition back : w -> s delay exp(1)\n")
    tiny = ("net rrcpu\ncolors g = {a, b}\nplace think : g queue is service exp(1 s) init 2 a, 2 b\n"
            "place cpu : g queue rr servers 2 quantum 10 ms switch 50 us "
            "service a: det(50 ms), b: det(1e-320 ms)\n"
            "transition run : think(x) -> cpu(x)\ntransition stop : cpu(x) -> think(x)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ModelError, match=r"<string>:4:32: error: .*beyond the range"):
            qpn.check(qpn.parse(huge))
        res = qpn.solve(qpn.parse(tiny), method="des", options={"events": 3000, "replications": 2})
        assert res.get("throughput", "run") > 0


def test_a_shared_queue_that_no_place_uses_does_not_break_the_ctmc(tmp_path, capsys):
    # its phase list is empty (max() of nothing: a ValueError, found by fuzzing)
    text = ("param jobs = 6\nshared queue cpu : ps servers 2\n"
            "place users\n    queue is\n    service exp(1 s)\n    init jobs\n")
    rc, out, err, js = _solve(tmp_path, capsys, text, "-m", "ctmc")
    assert rc == ExitStatus.DEADLOCK and "users:depository=6" in err
