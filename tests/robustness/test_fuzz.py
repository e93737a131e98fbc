"""The fuzzing harness (tools/fuzz, docs/robustness.md): its parts, and a fast
deterministic slice of a campaign that must find no failure outside KNOWN."""
from __future__ import annotations

import os
import random
import sys
import time

import pytest

from conftest import ROOT_DIR

ROOT = ROOT_DIR
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from qpn.cli import COMMANDS  # noqa: E402
from tools.fuzz import mutate  # noqa: E402
from tools.fuzz.campaign import Finding, coarse, run_campaign, shrink_input  # noqa: E402
from tools.fuzz.corpus import model_seeds  # noqa: E402
from tools.fuzz.netgen import generated_models  # noqa: E402
from tools.fuzz.pool import Pool  # noqa: E402
from tools.fuzz.runner import (CRASH, HANG, MEMORY, OK, USER_ERROR, WRONG,  # noqa: E402
                               Outcome, run_command)

#: Failure signatures (exception @ file (function), line numbers dropped) that the
#: slice below finds on the current code.  Each is a bug being fixed elsewhere;
#: once a fix is merged its line goes, and the slice keeps it fixed.
KNOWN = {
    # check's reachability exploration of a large marking graph outlives the budget
    # (timing-dependent: seen under load only)
    "HANG in check @ qpn/structure/reachability.py (explore)",
    "HANG in check @ qpn/structure/reachability.py (level)",
    "HANG in check @ qpn/structure/reachability.py (step)",
    "HANG in check @ qpn/structure/reachability.py (<listcomp>)",
    "HANG in check @ qpn/structure/reachability.py (_enabled)",
}

SLICE_SEED = 20251126


def test_fast_slice_finds_no_new_crash_hang_or_memory_failure(tmp_path_factory):
    t0 = time.perf_counter()
    # seeds that are the same in every run and checkout: the traces of the test
    # programs (timed runs) are left to the campaigns
    # (half the inputs it had: the default run stays under its 10 minutes; the campaigns of
    # docs/robustness.md run thousands)
    camp = run_campaign(150, 100, SLICE_SEED, jobs=2, budget=10.0, shrink=False, quick=True,
                        programs="none", cache_dir=str(tmp_path_factory.mktemp("fuzz-seeds")),
                        qpe=30, pnml=30, lqn=30, extremes=40)
    # the extremes (tools/fuzz/extremes.py) add models, traces, include bundles and outputs
    # onto special files (tools/fuzz/outputs.py) to the 340 inputs of the five kinds
    assert camp.total == 380 and camp.inputs["qpe"] == camp.inputs["pnml"] == camp.inputs["lqn"] == 30
    assert camp.inputs["model"] > 150 and camp.inputs["trace"] > 100, camp.inputs
    assert camp.inputs["bundle"] and camp.inputs["outputs"], camp.inputs
    # the inputs reach past the parser: every command succeeds on a good share
    ok = {c: n for (c, o), n in camp.outcomes.items() if o == OK}
    print("succeeded:", ok)
    assert all(ok.get(c, 0) >= 20 for c in ("check", "fmt", "flatten", "solve", "trace-check",
                                             "build", "convert")), ok
    new = {coarse(sig): f for sig, f in camp.failures.items() if coarse(sig) not in KNOWN}
    report = "\n".join(f"{sig} ({f.outcome}, {sorted(f.commands)}, from {f.origin}):\n"
                       f"{f.data.decode('utf-8', 'replace')[:800]}\n{f.detail[-600:]}"
                       for sig, f in sorted(new.items()))
    assert not new, "new failures (reproduce with python -m tools.fuzz, docs/robustness.md):\n" + report
    print(f"fuzz slice: {camp.total} inputs in {time.perf_counter() - t0:.1f} s, "
          f"known failure signatures: {sorted({coarse(s) for s in camp.failures})}")


# ---------------------------------------------------------------- the parts
def _selftest(monkeypatch, body):
    """Register ``qpn selftest FILE`` running ``body``."""
    def fn(args):
        return body()
    monkeypatch.setitem(COMMANDS, "selftest", (fn, lambda p: None, "fuzz harness self-test"))


@pytest.mark.parametrize("body, outcome, signature", [
    (lambda: 0, OK, None),
    (lambda: int("x"), CRASH, "ValueError @ qpn/cli.py (_run)"),
    (lambda: (_ for _ in ()).throw(MemoryError()), MEMORY, "MemoryError @ qpn/cli.py (_run)"),
    (lambda: print("oops", file=sys.stderr) or 1, USER_ERROR, None),
    (lambda: 1, CRASH, "exit 1 with no message in selftest"),
    (lambda: print(f'Traceback (most recent call last):\n  File "{ROOT}/qpn/model.py", line 7, in f\n'
                   "KeyError: 1", file=sys.stderr) or 0, CRASH, "printed traceback @ qpn/model.py (f)"),
])
def test_outcome_classes(monkeypatch, body, outcome, signature):
    _selftest(monkeypatch, body)
    res, _ = run_command("selftest", ["selftest", "m.qpn"], 5.0)
    # the innermost project frame of an exception from the test's own code is main()
    assert (res.outcome, res.signature and coarse(res.signature)) == (outcome, signature)


def _spin() -> int:
    # bounded: an alarm that never came fails the test instead of hanging the run
    # (seen once in a run on both cores: the worker spun for minutes)
    t = time.perf_counter()
    while time.perf_counter() - t < 5:
        pass
    return 0


def test_a_command_over_its_budget_is_a_hang(monkeypatch):
    _selftest(monkeypatch, _spin)
    t0 = time.perf_counter()
    res, _ = run_command("selftest", ["selftest", "m.qpn"], 0.2)
    assert (res.outcome, res.signature) == (HANG, "HANG in selftest @ qpn/cli.py (_run)")
    assert time.perf_counter() - t0 < 2


def test_the_budget_holds_when_the_process_blocks_the_alarm_signal(monkeypatch):
    """A library loaded earlier in the process may block SIGALRM (MPICH's UCX did): the
    budget comes from a timer thread, so the hang is still caught."""
    import signal
    _selftest(monkeypatch, _spin)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        t0 = time.perf_counter()
        res, _ = run_command("selftest", ["selftest", "m.qpn"], 0.2)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    assert (res.outcome, res.signature) == (HANG, "HANG in selftest @ qpn/cli.py (_run)")
    assert time.perf_counter() - t0 < 2


def test_innermost_project_frame_is_the_signature(monkeypatch):
    from qpn.errors import suggest
    # the exception comes from difflib; the signature names the project's frame
    _selftest(monkeypatch, lambda: suggest(1, ["a"]))
    res, _ = run_command("selftest", ["selftest", "m.qpn"], 5.0)
    assert res.outcome == CRASH
    assert res.signature.startswith("TypeError @ qpn/errors.py:") and res.signature.endswith(" (suggest)")
    assert coarse(res.signature) == "TypeError @ qpn/errors.py (suggest)"


def test_fmt_output_that_does_not_load_again_is_wrong(tmp_path, monkeypatch):
    from tools.fuzz import runner
    monkeypatch.chdir(tmp_path)
    res = Outcome("fmt", OK)
    runner._check_fmt(res, "place a init 1\nplace a\n", 5.0)
    assert res.outcome == WRONG
    assert res.signature == ("fmt output does not load: error: duplicate place '…' "
                             "(first declared at fmtN.qpn:N:N)")


def test_tokens_give_the_text_back_and_mutations_are_reproducible():
    text = model_seeds()["models/mm1.qpn"]
    assert "".join(t for _, t in mutate.tokens(text)) == text
    a = [mutate.mutate_model(random.Random(5), text) for _ in range(3)]
    b = [mutate.mutate_model(random.Random(5), text) for _ in range(3)]
    assert a == b and all(m != text.encode() for m in a)
    trace = b'{"kind": "header", "format": "qpn-trace", "version": 1}\n{"kind": "mark", "tid": 1}\n'
    assert mutate.mutate_trace(random.Random(2), trace) == mutate.mutate_trace(random.Random(2), trace)
    assert mutate.mutate_trace(random.Random(2), trace) != trace


def test_generated_nets_are_reproducible_and_mostly_valid(tmp_path):
    from qpn import load
    from qpn.errors import QPNError
    # 200 nets: 67% of 400 loaded (2026-11-27); 55% is 3.6 standard errors below that,
    # while 40 nets swung from 18 to 31 valid with the seed
    nets = generated_models(200, 7)
    assert nets == generated_models(200, 7) and len(set(nets)) > 150
    good = 0
    for i, text in enumerate(nets):
        path = tmp_path / f"g{i}.qpn"
        path.write_text(text)
        try:
            load(str(path))
            good += 1
        except QPNError:
            pass
    assert good >= 0.55 * len(nets)


class _FakePool:
    """Fails with signature S whenever the input holds the line 'BAD'."""

    def __init__(self):
        self.runs = 0

    def run(self, kind, data, only):
        self.runs += 1
        return [Outcome(only[0], CRASH, signature="S" if b"BAD\n" in data else None)]


def test_shrinking_keeps_the_failure_and_drops_the_rest():
    lines = [b"line %d\n" % i for i in range(40)]
    data = b"".join(lines[:13] + [b"BAD\n"] + lines[13:])
    f = Finding("S", CRASH, "trace", commands={"build"}, data=data)
    pool = _FakePool()
    assert shrink_input(pool, f) == b"BAD\n"
    assert pool.runs <= 80


class _FakeCampaignPool:
    """A pool for run_campaign: the 3rd input it is handed crashes; it records what the
    report on disk said while the campaign ran."""

    def __init__(self, out):
        self.out, self.workers, self.seen = out, [], []

    def __call__(self, *args):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, items):
        import json
        for n, (key, kind, data) in enumerate(items):
            sig = "S" if n == 2 else None
            yield key, kind, data, [Outcome("check", CRASH if sig else OK, signature=sig)]
            path = os.path.join(self.out, "report.json")
            if os.path.exists(path):
                with open(path) as fh:
                    r = json.load(fh)
                self.seen.append((r["finished"], tuple(r["complete"])))


def test_a_campaign_keeps_its_findings_and_says_how_far_it_got(tmp_path, monkeypatch):
    # campaign 49 was killed with its session at 68,201 inputs and lost its 5 findings:
    # now each new failure's input is saved at once, and the report is a checkpoint
    # that says from where to go on (--window)
    import tools.fuzz.campaign as campaign
    out = str(tmp_path / "c")
    pool = _FakeCampaignPool(out)
    monkeypatch.setattr(campaign, "Pool", pool)
    monkeypatch.setattr(campaign, "CHECKPOINT_SECONDS", 0.0)
    camp = run_campaign(12, 0, 5, out=out, shrink=False, window=(5, 12))
    assert camp.total == 7 and camp.finished and (camp.first, camp.next_missing) == (5, 12)
    assert pool.seen[0] == (False, (5, 6)) and pool.seen[-1] == (False, (5, 12))
    found = sorted(os.listdir(os.path.join(out, "found")))
    assert found == ["01-S.qpn", "signatures.txt"]
    whole = list(campaign.make_inputs(12, 0, 5, str(tmp_path / "seeds")))
    assert open(os.path.join(out, "found", "01-S.qpn"), "rb").read() == whole[7][2]
    text = open(os.path.join(out, "report.txt")).read()
    assert "finished; inputs 5..11 of the sequence all done" in text


def _dying_worker(conn, budget, memory, workdir, quick):
    """A stand-in worker: ends its process on its first input (a segfault, the
    kernel's OOM killer), or never answers (a hang no alarm reaches)."""
    conn.send(("ready", None))
    kind, data, only = conn.recv()
    conn.send(("begin", "build"))
    if data == b"die":
        os._exit(3)
    time.sleep(600)


def test_a_worker_that_dies_or_hangs_past_its_alarm_is_replaced():
    with Pool(1, budget=0.1, memory=0, target=_dying_worker, slack=0.5) as pool:
        res = pool.run("trace", b"die")
        assert [(r.command, r.outcome, r.signature) for r in res] == \
            [("build", CRASH, "worker died (exit 3) in build")]
        t0 = time.perf_counter()
        res = pool.run("trace", b"spin")
        assert [(r.command, r.outcome, r.signature) for r in res] == \
            [("build", HANG, "HANG in build @ (not interruptible: killed)")]
        assert time.perf_counter() - t0 < 10
        assert pool.workers[0].proc.is_alive()        # a fresh worker took over


# ------------------------------------------------- the oracles of issue 43
def test_the_outputs_oracle_finds_a_node_renamed_over(tmp_path, monkeypatch):
    """Outputs onto a FIFO, a private device node and a hard-linked file keep them; the
    old writer (a temp file renamed over whatever was there) is caught as WRONG."""
    from tools.fuzz.runner import run_input
    import qpn.fileio as fileio
    model = open(os.path.join(ROOT, "models", "mm1.qpn"), "rb").read()
    work = tmp_path / "w"
    work.mkdir()
    outcomes = {r.command: r.outcome for r in run_input("outputs", model, 30.0, str(work))}
    assert set(outcomes.values()) == {OK}, outcomes
    monkeypatch.setattr(fileio, "_special_kind", lambda path: None)     # the old writer
    outcomes = {r.command: (r.outcome, r.signature) for r in
                run_input("outputs", model, 30.0, str(work), only=("solve --json FIFO",))}
    assert outcomes == {"solve --json FIFO": (WRONG, "solve --json FIFO: the FIFO was replaced")}


def test_the_flow_oracle_finds_an_answer_that_is_not_a_steady_state(tmp_path, monkeypatch):
    """A CTMC answer whose arrivals and departures differ is WRONG when it exits 0 with
    status ok, however it got there (here qpn's own check is switched off)."""
    from tools.fuzz.runner import run_input
    import numpy as np
    import qpn.solvers.ctmc.solver as ctmc_solver
    import qpn.solvers.flowcheck as flowcheck
    real = ctmc_solver._steady

    def off_balance(c, method):
        pi, info = real(c, method)
        pi = pi * (1 + 0.05 * np.arange(len(pi)) / len(pi))
        return pi / pi.sum(), dict(info, residual=0.0)
    monkeypatch.setattr(ctmc_solver, "_steady", off_balance)
    monkeypatch.setattr(flowcheck, "flow_violations", lambda res, tol=0: [])
    model = open(os.path.join(ROOT, "models", "mutex.qpn"), "rb").read()
    work = tmp_path / "w"
    work.mkdir()
    (res,) = run_input("model", model, 30.0, str(work), only=("solve",))
    assert res.outcome == WRONG and res.signature.startswith("flow check (ctmc): place "), res


def test_the_extreme_generators_reach_every_class():
    """Each generator's inputs are what its name says, reproducibly from the seed."""
    from tools.fuzz import extremes
    rng = random.Random(7)
    huge = {extremes.huge_numbers(rng) for _ in range(30)}
    assert any("10^308 * 10" in m for m in huge) and any("2^1024" in m for m in huge)
    assert all(m.count("subnet ") >= 11 for m in (extremes.deep_subnets(rng) for _ in range(5)))
    assert any(b"\xed\xa0\x80" in extremes.surrogates(rng) for _ in range(20))
    trace = (b'{"kind":"header","format":"qpn-trace","version":1,"source":"t"}\n'
             b'{"kind":"thread_start","tid":1,"ts":0,"name":"main"}\n'
             b'{"kind":"thread_end","tid":1,"ts":50}\n')
    made = {extremes.impossible_trace(random.Random(s), trace) for s in range(40)}
    assert any(b'"ts": -' in t for t in made) and any(b"\\ud800" in t for t in made)
    assert any(str(2 ** 70).encode() in t for t in made)
