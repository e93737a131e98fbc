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
