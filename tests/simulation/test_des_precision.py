"""The simulator says how precise it is: precision not reached, reproducing a
capped run, estimates that rest on few observations, deadlocks.

* A sequential run that the wall-clock cap stops has not reached its target:
  the table header, the JSON and the exit status (3, unless
  ``--allow-imprecise``) say so, and ``--events N`` with the step count it
  stopped at reproduces it bit for bit (the cap stops at a step count).
* A rare wait (an M/M/30 pool, Erlang C: P(wait) = 0.073, mean wait 9.11 ms)
  simulated briefly rests on a few long waits: it is flagged; the default
  sequential run reaches the exact value, with the number of observations
  behind each estimate.
* A net that deadlocks is an imprecise answer, not a steady state.
"""
import json
import math

import pytest

import qpn
from conftest import MODELS
from des_support import DES_MODELS
from qpn.cli import main

POOL30 = f"{DES_MODELS}/pool30.qpn"


def erlang_c_wait(c: int, a: float, mu: float = 1.0) -> float:
    """Mean wait in queue of M/M/c with offered load a = lambda / mu (Erlang C)."""
    s = sum(a ** k / math.factorial(k) for k in range(c))
    t = a ** c / math.factorial(c) * c / (c - a)
    return t / (s + t) / (c * mu - a * mu)


def load(path) -> dict:
    with open(path) as f:
        return json.load(f)


def test_capped_run_says_imprecise_and_is_reproduced_by_its_step_count(tmp_path, capsys):
    # a target no 1-second run reaches (0.1%): the cap ends it
    a, b = tmp_path / "capped.json", tmp_path / "events.json"
    common = [f"{MODELS}/sw_services.qpn", "--method", "des", "--seed", "7", "--replications", "4"]
    status = main(["solve", *common, "--rtol", "0.001", "--wall", "1", "--json", str(a)])
    out, err = capsys.readouterr()
    capped = load(a)
    assert status == 3
    assert "PRECISION NOT REACHED" in out.splitlines()[0]
    assert "error: precision not reached" in err
    assert capped["precision_reached"] is False
    assert capped["imprecise"].startswith("stopped by the wall-clock cap")
    assert capped["info"]["stopped_by"] == "wall-clock cap"
    n = capped["info"]["precision"]["events_per_replication"]
    assert n > 0 and f"--events {n}" in " ".join(capped["warnings"])
    # the same seed and the step count: the same bits, and a fixed-length run is not "imprecise"
    assert main(["solve", *common, "--events", str(n), "--json", str(b)]) == 0
    again = load(b)
    assert again["imprecise"] is None
    assert again["info"]["events"] == capped["info"]["events"]
    assert again["measures"] == capped["measures"]


def test_deadlock_exits_4_and_allow_imprecise_does_not_accept_it(tmp_path, capsys):
    # two threads take two locks in opposite order: sooner or later each holds one
    f = tmp_path / "locks.qpn"
    f.write_text("net locks\nplace a_idle init 1\nplace b_idle init 1\nplace l1 init 1\nplace l2 init 1\n"
                 "place a_has1\nplace b_has2\nplace a_work queue is service exp(1)\n"
                 "place b_work queue is service exp(1)\n"
                 "transition a1 : a_idle, l1 -> a_has1 delay exp(1)\n"
                 "transition a2 : a_has1, l2 -> a_work delay exp(1)\n"
                 "transition a3 : a_work -> a_idle, l1, l2\n"
                 "transition b1 : b_idle, l2 -> b_has2 delay exp(1)\n"
                 "transition b2 : b_has2, l1 -> b_work delay exp(1)\n"
                 "transition b3 : b_work -> b_idle, l1, l2\n")
    out_json = tmp_path / "dead.json"
    assert main(["solve", str(f), "--method", "des", "--json", str(out_json)]) == 4
    out, err = capsys.readouterr()
    res = load(out_json)
    assert res["imprecise"] == "the net deadlocks"
    assert res["status"] == "deadlock" and res["measures"] == []
    assert res["reason"].startswith("the net reaches a marking where nothing can happen: 10 of 10 ")
    assert any(w.startswith("the net deadlocks: 10 of 10 replication(s)") for w in res["warnings"])
    assert "-- DEADLOCK: the net reaches a marking where nothing can happen" in out
    assert main(["solve", str(f), "--method", "des", "--allow-imprecise", "-q"]) == 4


def test_rare_wait_is_flagged_when_it_rests_on_a_few_long_waits():
    net = qpn.load(POOL30)
    short = qpn.solve(net, method="des", options={"time": 20, "seed": 1, "quiet": True})
    flags = [w for w in short.warnings if "effective observations" in w]
    assert len(flags) == 1 and flags[0].startswith("residence waiting (mean ")
    # no false alarm on the stations: `busy` is infinite-server (its "utilization" is 22 busy)
    assert not any("saturated" in w for w in short.warnings)


def test_rare_wait_default_run_reaches_erlang_c_with_its_observations():
    net = qpn.load(POOL30)
    res = qpn.solve(net, method="des", options={"seed": 1, "quiet": True})
    assert res.info["stopped_by"] == "precision" and res.imprecise is None
    assert not any("effective observations" in w for w in res.warnings)
    row = res.cell("residence", "waiting")
    w = row.value
    exact = erlang_c_wait(30, 22.0)
    assert exact == pytest.approx(0.0091114, rel=1e-4)
    assert abs(w - exact) <= 1.8 * row.ci and row.ci < 0.1 * exact
    # the observations behind it: every visit to `waiting` after the warm-up, over the
    # replications; about rate x simulated time of the kept part
    kept = 10 * (res.info["simulated_time"] - res.info["warmup_time"])      # per replication, 10 of them
    assert row.n == pytest.approx(22.0 * kept, rel=0.05)
    thr = res.cell("throughput", "start")
    assert thr.n == pytest.approx(row.n, rel=1e-3)


UNSTABLE = """
net unstable
param work = 2 ms
software {
    cpu host cores 2 ps
    blocking queue q
    pool main size 1 { cpu exp(1 ms) as make
                       put q }
    pool w size 1 { take q
                    cpu exp(work) as serve }
}
"""


def test_an_unstable_model_is_named_not_averaged_quietly():
    # items are made at 1000/s and served at 500/s: q grows by ~500 per second, and no
    # estimate describes a steady state.  (A model of executor.map that lost its waits
    # on futures did this and reported "stopped by precision" with only a warm-up note.)
    net = qpn.parse(UNSTABLE)
    opts = {"time": 20.0, "replications": 4, "seed": 2, "quiet": True}
    r = qpn.solve(net, method="des", options=opts)
    grow = [w for w in r.warnings if "keep growing" in w]
    assert len(grow) == 1 and grow[0].startswith("tokens in q.items")
    # the same model with service faster than arrivals (rho = 0.5): no such warning
    stable = qpn.solve(net, method="des", options=opts, work=0.5e-3)
    assert not [w for w in stable.warnings if "keep growing" in w]
    assert stable.get("tokens", "q.items") < 5


def test_time_other_work_held_the_cpus_is_not_counted_against_the_cap(tmp_path, monkeypatch):
    """The cap counts wall time less the time the run's threads waited, runnable, for a
    CPU another process held (/proc/self/task/*/schedstat): here every read says the
    run waited 10 s more, so a 1 s cap never ends a run that needs longer, which stops
    at its event count instead."""
    from qpn.solvers.des import run as des_run
    from qpn.cli import main as cli
    waited = iter(range(0, 10**15, 10**10))
    monkeypatch.setattr(des_run, "waited_ns", lambda: next(waited))
    budget = des_run.Budget(1.0, threads=2)
    assert not budget.over() and budget.spent() == 0.0
    out = tmp_path / "r.json"
    rc = cli(["solve", f"{MODELS}/sw_services.qpn", "--method", "des", "--seed", "7",
              "--replications", "4", "--events", "400000", "--wall", "0.2", "--threads", "1",
              "--json", str(out), "-q"])
    res = load(out)
    assert rc == 0 and res["info"]["stopped_by"] == "events" and res["info"]["events"] >= 1_600_000
