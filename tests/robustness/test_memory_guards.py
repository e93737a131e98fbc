"""Memory guards: refuse before allocating, with the estimate, the limit and the option
that raises it (issue 15: a 2^31 population in a FIFO place ran into 24 GB)."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

import qpn
from qpn import resources
from qpn.cli import main
from conftest import MODELS, ROOT_DIR, TESTS_DIR
from qpn.resources import MemoryLimitError, parse_size

ROOT = ROOT_DIR
HUGE = ["--set", "window=2147483648"]


def test_parse_size_units_and_errors():
    assert parse_size("8GiB") == 8 * 2**30
    assert parse_size("2g") == 2 * 2**30
    assert parse_size("500 MB") == 500_000_000
    with pytest.raises(qpn.QPNError, match="'lots' is not a memory size"):
        parse_size("lots")


def test_limit_sources_in_order(monkeypatch):
    monkeypatch.setenv(resources.ENV, "3GiB")
    assert resources.memory_limit() == (3 * 2**30, "set by QPN_MEMORY_LIMIT")
    resources.set_memory_limit("1GiB")
    try:
        assert resources.memory_limit() == (2**30, "set by --memory-limit")
    finally:
        resources.set_memory_limit(None)
    monkeypatch.delenv(resources.ENV)
    limit, source = resources.memory_limit()
    assert source.startswith("half of the ") and 0 < limit <= resources.available_memory()


def test_require_message(monkeypatch):
    monkeypatch.setenv(resources.ENV, "1GiB")
    with pytest.raises(MemoryLimitError) as info:
        resources.require("the thing", 3 * 2**30, hint="use less")
    assert str(info.value) == (
        "error: the thing would need about 3.0 GiB, above the memory limit of 1.0 GiB "
        "(set by QPN_MEMORY_LIMIT)\nhint: raise the limit with --memory-limit SIZE or "
        "QPN_MEMORY_LIMIT=SIZE (e.g. --memory-limit 4GiB), or use less")


def test_ctmc_of_a_huge_fifo_population_is_refused_with_the_bound(capsys):
    rc = main(["solve", "models/fifo_departure.qpn", *HUGE, "--method", "ctmc"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("the CTMC has more than 1e308 states (upper bound from a product over "
                          "P-invariants), above the limit of 2,000,000 states (set --limit")


def test_simulator_of_a_huge_population_is_refused_with_the_estimate(capsys):
    rc = main(["solve", "models/fifo_departure.qpn", *HUGE, "--method", "des",
               "--memory-limit", "1GiB"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: the simulator's state (10 lanes x 4,294,967,624 entries of "
                          "token stores, clocks and counters) would need about 320.0 GiB, above "
                          "the memory limit of 1.0 GiB (set by --memory-limit)\n")
    assert "--memory-limit 401GiB" in err


def test_ctmc_memory_refusal_names_the_bound_and_the_option(capsys):
    # 23,751 states need a few MiB: a 1 MiB limit refuses before exploring
    rc = main(["solve", "models/bench/closed_network.qpn", "--method", "ctmc",
               "--memory-limit", "1MiB"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: the CTMC with at most 23,751 states (a proven upper bound from "
                          "the P-invariants) would need about ")
    assert "above the memory limit of 1.0 MiB (set by --memory-limit)" in err


def test_auto_turns_to_simulation_when_the_ctmc_does_not_fit(monkeypatch):
    from qpn.compile import compile_net
    from qpn.solvers.auto import choose
    monkeypatch.setenv(resources.ENV, "1MiB")
    c = compile_net(qpn.load("models/bench/closed_network.qpn").with_params(N=30).flatten())
    method, why = choose(c, {})
    assert method in ("mva", "des")
    if method == "des":
        assert "above the memory limit of 1.0 MiB" in why


def test_bad_memory_limit_option_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "models/mm1.qpn", "--memory-limit", "lots"])
    assert info.value.code == 2
    assert "argument --memory-limit: 'lots' is not a memory size" in capsys.readouterr().err


def _wide_net(P: int = 61, K: int = 77) -> str:
    """A 61-place, 77-color cycle (the net on which `qpn check` hung for > 100 s)."""
    lines = ["net wide", f"colors c = 1 .. {K}"]
    for i in range(P):
        q = "\n    queue ps\n    service exp(1 ms)" if i % 2 else ""
        init = ("\n    init " + ", ".join(str(k) for k in range(1, K + 1))) if i == 0 else ""
        lines.append(f"place p{i} : c{q}{init}")
    for i in range(P):
        lines.append(f"transition t{i} : p{i}(x) -> p{(i + 1) % P}(x)"
                     + (" delay exp(1 ms)" if i % 2 == 0 else ""))
    return "\n".join(lines) + "\n"


def test_check_of_a_wide_colored_net_is_fast(tmp_path, capsys):
    path = tmp_path / "wide.qpn"
    path.write_text(_wide_net())
    from qpn.structure.check import _merged
    from qpn.compile import compile_net
    C, m0, labels, _ = _merged(compile_net(qpn.load(str(path)).flatten()))
    assert C.shape == (61 * 77, 61 * 77) and int(m0.sum()) == 77
    assert (C.sum(axis=0) == 0).all()        # every mode moves one token along
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out.endswith("wide.qpn: ok: 61 places, 61 transitions\n")


def _run_limited(args: list[str], vmem: int) -> subprocess.CompletedProcess:
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (vmem, vmem))
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop(resources.ENV, None)
    return subprocess.run([sys.executable, "-m", "qpn.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)


@pytest.mark.parametrize("method", ["ctmc", "des", "auto"])
def test_refusal_happens_before_allocation_under_ulimit(method):
    # 3 GiB of address space: a process that tried would die with MemoryError (or be
    # killed); the guard derives its limit from the room left and refuses first
    proc = _run_limited(["solve", "models/fifo_departure.qpn", *HUGE, "--method", method], 3 * 2**30)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "out of memory" not in proc.stderr
    assert ("would need about" in proc.stderr) or ("more than 1e308 states" in proc.stderr)


def test_progress_goes_to_stderr_only_and_not_with_quiet(monkeypatch, capsys):
    monkeypatch.setenv("QPN_PROGRESS", "1")      # as on a terminal
    assert main(["solve", "models/mutex.qpn", "--method", "ctmc"]) == 0
    out, err = capsys.readouterr()
    assert "exploring the CTMC" in err and "solving the CTMC (6 states)" in err
    assert "exploring" not in out and "\r" not in out
    assert main(["solve", "models/mutex.qpn", "--method", "ctmc", "-q"]) == 0
    out2, err2 = capsys.readouterr()
    assert "exploring" not in err2 and out2 == out
    monkeypatch.delenv("QPN_PROGRESS")             # pytest's stderr is no terminal
    assert main(["solve", "models/mutex.qpn", "--method", "ctmc"]) == 0
    assert "exploring" not in capsys.readouterr().err


def test_sweep_progress_on_tqdm(monkeypatch, capsys):
    from qpn.solvers.sweep import run_sweep
    monkeypatch.setenv("QPN_PROGRESS", "1")
    sw = run_sweep(qpn.load("models/mm1.qpn"), "mva", {"lambda": [0.1, 0.2]}, progress=True)
    assert len(sw.points) == 2
    err = capsys.readouterr().err
    assert "solving 2 points (mva):   0%|          | 0/2 " in err   # a total, so an ETA


def test_check_states_the_bound_and_says_it_is_one(capsys):
    assert main(["check", "models/fifo_departure.qpn", *HUGE]) == 0
    out = capsys.readouterr().out.splitlines()
    # bounded, but not small: check says so instead of passing it quietly
    assert out == ["models/fifo_departure.qpn: ok: 2 places, 2 transitions, bounded (covered by "
                   "2 P-invariant(s))",
                   "models/fifo_departure.qpn: the CTMC has more than 1e308 states (upper bound "
                   "from a product over P-invariants)"]
    assert main(["check", "models/mutex.qpn"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "models/mutex.qpn: the CTMC has at most 6 states (a proven upper bound from the "
        "P-invariants)")


def _counted_loop(tmp_path, threads: int):
    text = open(os.path.join(TESTS_DIR, "..", "models", "counted_loop.qpn")).read()
    assert "param threads = 2" in text
    f = tmp_path / "loop.qpn"
    f.write_text(text.replace("param threads = 2", f"param threads = {threads}"))
    return f


def test_a_net_that_unfolds_too_far_is_refused_with_the_estimate(tmp_path, capsys):
    # 65,536 threads x 6 loop counts: 786,432 slots in 'cpu' alone, 1,835,008 in all
    f = _counted_loop(tmp_path, 65536)
    for argv in (["check", str(f)], ["solve", str(f), "-q"], ["show", str(f)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "loop.qpn:17:7: error: the net unfolds into 1,835,008 slots and color bindings, more " \
               "than the limit of 20,000 (place 'cpu' 786,432, transition 'again' 393,216" in err
        assert "hint: use smaller color sets or parameters (--set NAME=VALUE)" in err
        assert "QPN_EXPANSION_LIMIT=N raises the limit" in err
    # loading (fmt) checks a sample of the bindings and keeps working
    assert main(["fmt", str(f)]) == 0
    assert "param threads = 65536" in capsys.readouterr().out
    # the same model with smaller parameters solves
    assert main(["check", str(f), "--set", "threads=2"]) == 0


def test_validating_a_net_too_large_to_unfold_checks_every_color_without_unfolding(monkeypatch):
    # campaign 50: a counted loop of 10^6 rounds took 2.3 s of CPU to refuse, most of it
    # validation building a slot per color; now the slots are numbers (ranges) and a
    # sample of the colors binds its service
    import qpn.compile as compile_mod
    made = []
    add = compile_mod._Compiler.add_classes

    def counting(self, cq, p, pi, colors, slots, qslots):
        add(self, cq, p, pi, colors, slots, qslots)
        made.append((type(slots).__name__, len(slots), len(cq.classes)))
    monkeypatch.setattr(compile_mod._Compiler, "add_classes", counting)
    text = ("colors n = 1 .. 1000000\nplace a : n init 1, 2\n"
            "place q : n queue fcfs service exp(1) init 3\n"
            "transition u : q(y) -> a(y)\n")
    assert compile_mod.compile_net(qpn.parse(text).flatten(), check_only=True) is None
    # (parse validates too: one call there, one here)
    assert made and set(made) == {("range", 1_000_000, compile_mod.CHECKED_SAMPLE)}
    # within the limit, every slot is made
    made.clear()
    small = text.replace("1000000", "100")
    assert compile_mod.compile_net(qpn.parse(small).flatten()).m0.sum() == 3   # colors 1, 2, 3
    assert made and set(made) == {("list", 100, 100)}


def test_expansion_estimate_counts_slots_and_bindings():
    from qpn.compile import _Compiler
    from qpn.params import param_values
    net = qpn.parse("colors n = 1 .. 10\nplace a : n init 1, 2\n"
                    "place q : n queue fcfs service exp(1)\n"
                    "transition t : a(x) -> q(1) when x > 5\ntransition u : q(y) -> a(y)\n").flatten()
    parts = _Compiler(net, param_values(net)).expansion()
    # a: 10 slots; q: 10 x 2 (queue and depository); t, u: 10 bindings each (guards not applied)
    assert sorted(n for n, _w, _l in parts) == [10, 10, 10, 20]


def test_the_expansion_limit_can_be_raised(tmp_path, capsys, monkeypatch):
    f = _counted_loop(tmp_path, 800)       # 28 slots and bindings per thread
    assert main(["check", str(f)]) == 2
    assert "unfolds into 22,400 slots" in capsys.readouterr().err
    monkeypatch.setenv("QPN_EXPANSION_LIMIT", "25_000")
    assert main(["check", str(f)]) == 0
    monkeypatch.setenv("QPN_EXPANSION_LIMIT", "lots")
    assert main(["check", str(f)]) == 2
    assert "QPN_EXPANSION_LIMIT must be a whole number, got 'lots'" in capsys.readouterr().err


def test_simulation_progress_on_tqdm(monkeypatch, capsys):
    # the simulator's share done goes on the same tqdm bar as the CTMC's (not a hand-made line)
    monkeypatch.setenv("QPN_PROGRESS", "1")
    assert main(["solve", "models/mutex.qpn", "--method", "des", "--events", "20000", "-R", "2",
                 "--allow-imprecise"]) in (0, 3)
    out, err = capsys.readouterr()
    assert "simulating:   0%|" in err and "/100 " in err
    assert "simulating" not in out
    assert main(["solve", "models/mutex.qpn", "--method", "des", "--events", "20000", "-R", "2",
                 "--allow-imprecise", "-q"]) in (0, 3)
    assert "simulating" not in capsys.readouterr().err


# an IS queue with FIFO departure: each state holds the order of 80 tokens, and one BFS
# level of ~800 states has ~370,000 successors (held at once: 2 GB for 2 s, found by fuzzing)
WIDE_LEVELS = ("net wide\nplace q0 init 40\nplace q1 queue is service exp(2) init 40 departure in-order\n"
               "transition t0 immediate : 2 q1, 2 q0 ->  weight 2\n"
               "transition t1 {\n  mode m0 : q1 ->  unless q0\n  mode m1 : q0, 2 q1 -> \n}\n"
               "transition t2 {\n  mode m0 : q0, 2 q1 -> q1\n}\n")


def test_a_wide_level_is_explored_in_chunks_with_the_same_chain(monkeypatch):
    # chunks of the frontier must give the very chain one pass gives (the same states,
    # edges and rates), and the memory check must see the fan-out actually met
    from qpn.compile import compile_net
    from qpn.solvers.ctmc import explore
    from qpn.solvers.ctmc.spec import build_spec
    net = qpn.load(os.path.join(MODELS, "fifo_departure.qpn"))
    spec = build_spec(compile_net(net, {}), cutoff=60)
    whole = explore.Explorer(spec).run()
    calls = []
    orig = explore.Explorer._level
    monkeypatch.setattr(explore, "CHUNK_SUCCESSORS", 8)
    monkeypatch.setattr(explore.Explorer, "_level", lambda self, *a: calls.append(1) or orig(self, *a))
    parts = explore.Explorer(spec).run()
    assert len(calls) > parts.levels           # some levels went in several chunks
    assert len(parts.states) == len(whole.states)
    key = lambda sp: sorted(zip(map(tuple, sp.states[sp.src]), map(tuple, sp.states[sp.dst]),  # noqa: E731
                                sp.rate.round(12)))
    assert key(parts) == key(whole)


def test_a_wide_level_never_generates_much_more_than_a_chunk_at_once(monkeypatch):
    # the clock (a probe's 2 s budget) and the memory check are read between chunks: a
    # chunk must stay near CHUNK_SUCCESSORS rows even where the fan-out jumps 20x
    from qpn.compile import compile_net
    from qpn.solvers.ctmc import explore
    from qpn.solvers.ctmc.spec import build_spec
    spec = build_spec(compile_net(qpn.parse(WIDE_LEVELS), {}), cutoff=60)
    sizes = []
    orig = explore.Explorer._level

    def level(self, dyn, reg, frontier, rows, srcs, *rest):
        out = orig(self, dyn, reg, frontier, rows, srcs, *rest)
        sizes.append(len(srcs[-1]) if srcs else 0)
        return out
    monkeypatch.setattr(explore.Explorer, "_level", level)
    ex = explore.Explorer(spec, 20_000)
    from qpn.errors import SolverError
    with pytest.raises(SolverError, match="exceeds the limit of 20,000 states"):
        ex.run()
    # in one piece the third level made 370,000 successor rows before the state limit was seen
    assert len(sizes) >= 5 and max(sizes) <= explore.CHUNK_SUCCESSORS


def test_power_iteration_of_a_stiff_chain_is_bounded_by_its_work():
    # rates 10^10 apart: the fallback would need millions of sweeps; it stops at POWER_WORK
    import numpy as np
    import scipy.sparse as sp
    from qpn.solvers.ctmc import linalg
    n = 50
    rows, cols, vals = [], [], []
    for i in range(n - 1):
        rows += [i, i + 1]
        cols += [i + 1, i]
        vals += [4e10, 1.0]
    Q = linalg.generator(np.array(rows), np.array(cols), np.array(vals), n)
    _, info = linalg._power(Q, 1e-14, 10 ** 9)
    nnz = (sp.identity(n, format="csr") + Q).nnz
    assert info["iterations"] <= linalg.POWER_WORK // nnz + 1


def test_a_probe_stops_inside_an_endless_resolution_of_immediate_firings():
    # immediate modes that grow q1 and an LCFS-PR queue forever in zero time: resolving the
    # initial marking alone took 46 s, past the probe's 2 s budget, which was read only
    # between breadth-first levels (found by fuzzing)
    from qpn.compile import compile_net
    from qpn.errors import SolverError
    from qpn.solvers.ctmc import explore
    from qpn.solvers.ctmc.spec import build_spec
    text = ("net gen\nparam p0 = 2\nparam p1 = 3\ncolors job = {a, b, c}\n"
            "place q0 : job init 3 a capacity 3\nplace q1 init 2\n"
            "place q2 queue lcfs-pr servers p0 service hyperexp(mean = 0.1, scv = 4) init p1\n"
            "place q3 init 1\ntransition t0 immediate priority 2 {\n  mode m0 : q3, q1 -> \n"
            "  mode m1 : q3 -> q1, q2\n}\ntransition t1 {\n  mode m0 : q0(x) -> q1 unless q3 weight 0.1\n"
            "  mode m1 :  -> q3, 2 q0(a) weight 10\n}\n")
    spec = build_spec(compile_net(qpn.parse(text), {}), cutoff=60)
    with pytest.raises(SolverError, match=r"exploration stopped after 0.3 s of CPU time at (round \d+ of immediate "
                                          r"firings|[\d,]+ vanishing markings)"):
        explore.Explorer(spec, 20_000, seconds=0.3).run()


def test_vanishing_markings_count_against_the_state_limit():
    # t0 gives back its 2 tokens, t2 takes 2 of 2^31: a run of 2^30 immediate firings; the
    # resolution resolved up to 200,000 vanishing markings whatever --limit said (22 s)
    from qpn.compile import compile_net
    from qpn.errors import SolverError
    from qpn.solvers.ctmc import explore
    from qpn.solvers.ctmc.spec import build_spec
    text = ("net gen\nplace q0 init 2147483648\ntransition t0 : 2 q0 -> 2 q0 weight 5\n"
            "transition t1 : q0 ->  delay exp(5)\ntransition t2 {\n  mode m0 : 2 q0 ->  weight 1\n}\n")
    spec = build_spec(compile_net(qpn.parse(text), {}), cutoff=60)
    with pytest.raises(SolverError, match="more than 500 vanishing markings in a row"):
        explore.Explorer(spec, 500).run()
