"""What a user pays before qpn does anything: a fresh interpreter importing qpn, and
the commands that only print, check or format.

    python -m pytest benchmarks/test_bench_startup.py --benchmark-only -s

Each case is a fresh process, run ROUNDS times, alternating with a bare interpreter
(``python -c pass``) on the same clock (CPU time, user + system, of the child:
``clocks.run_timed``); the figure is the median over the bare one's median.  Targets
(issue 42): ``import qpn`` at most 0.1 s and ``qpn --help`` at most 0.15 s of CPU over
a bare interpreter.  ``qpn fmt``, ``qpn show`` and ``qpn check`` are printed beside
them (they parse a model, so they import the parser and the model's numpy; ``check``
also explores the state space).
"""
from __future__ import annotations

import os
import statistics
import sys

import pytest

from clocks import Figures, load_average, run_timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("QPN_BENCH_ROUNDS", 9))
FIGURES = Figures()
MM1 = os.path.join(ROOT, "models", "mm1.qpn")
QPN = [sys.executable, "-m", "qpn.cli"]
CASES = {
    "import qpn": ([sys.executable, "-c", "import qpn"], 0.10),
    "qpn --help": (QPN + ["--help"], 0.15),
    "qpn solve --help": (QPN + ["solve", "--help"], None),
    "qpn fmt models/mm1.qpn": (QPN + ["fmt", MM1], None),
    "qpn show models/mm1.qpn": (QPN + ["show", MM1], None),
}


@pytest.fixture(scope="module", autouse=True)
def summary():
    yield
    FIGURES.print_all("CPU over a bare interpreter (median of fresh processes)")


def _cpu(args) -> float:
    p, cpu, _ = run_timed(args, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-400:]
    return cpu


@pytest.mark.parametrize("name", list(CASES))
def test_startup_cpu_over_a_bare_interpreter(benchmark, name):
    args, target = CASES[name]
    bare, own = [], []

    def rounds():
        for _ in range(ROUNDS):
            bare.append(_cpu([sys.executable, "-c", "pass"]))
            own.append(_cpu(args))
    benchmark.pedantic(rounds, rounds=1, iterations=1)
    extra = statistics.median(own) - statistics.median(bare)
    FIGURES.say(f"{name}: {extra:.3f} s CPU over a bare interpreter ({statistics.median(bare):.3f} s), "
                f"median of {ROUNDS}; target {target if target is not None else '-'}; "
                f"{load_average()}")
    if target is not None:
        assert extra <= target
