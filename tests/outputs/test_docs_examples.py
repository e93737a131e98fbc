"""Every example output marked in README.md and docs/*.md is what its command prints now
(tools/docs_examples.py; ``python -m tools.docs_examples --write`` regenerates them)."""
import os
import sys

import pytest

from conftest import ROOT_DIR

ROOT = ROOT_DIR
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tools.docs_examples import comparable, examples, files, run  # noqa: E402

CASES = [(os.path.relpath(f, ROOT), cmd, body) for f in files() for cmd, body in examples(f)]


def test_the_docs_have_generated_examples():
    assert len(CASES) >= 4, CASES


@pytest.mark.parametrize("doc,cmd,body", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_example_output_is_current(doc, cmd, body):
    assert comparable(run(cmd)) == comparable(body), \
        f"{doc}: stale example; run python -m tools.docs_examples --write"


def test_rounding_level_numbers_and_durations_do_not_make_an_example_stale():
    """The difference of two solvers' equal answers printed 2.07e-16 on one machine and
    4.14e-16 on another (issue 43): numbers of 1e-13 and below are masked, larger ones
    and every other digit still compared."""
    a = "tokens  think  4.29269  4.29269  2.07e-16\nflow imbalance 1.30e-16, 0.58 s"
    b = "tokens  think  4.29269  4.29269  4.14e-16\nflow imbalance 6.1e-17, 0.61 s"
    assert comparable(a) == comparable(b)
    assert comparable("x 1.5e-12") != comparable("x 3.0e-12")
    assert comparable("tokens 4.29269 2.07e-16") != comparable("tokens 4.29270 2.07e-16")
    assert comparable("rate 2e-5") == "rate 2e-5"
