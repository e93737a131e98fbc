"""The examples in the docstrings of qpn.dsl, qpn.solvers and qpn.frontends run as
written.  Their folders (dsl/, solvers/, frontends/) install under qpn
(pyproject.toml's package-dir); pytest's own doctest collection would import them by
their folder names as a second copy of each module, so they are imported here by the
names they install as (qpn/'s own modules are collected by pytest, testpaths)."""
import doctest
import importlib
import pathlib

import pytest

from conftest import ROOT_DIR
from tools.import_graph import PACKAGES, module_files

def _has_examples(path) -> bool:
    with open(path, encoding="utf-8") as fh:
        return ">>> " in fh.read()


FOUND = module_files(pathlib.Path(ROOT_DIR), {f: p for f, p in PACKAGES.items() if p.startswith("qpn.")})
#: the modules with examples (by the name they install as)
MODULES = sorted(name for name, path in FOUND.items()
                 if not name.endswith("__main__") and _has_examples(path))


def test_every_installed_folder_is_read():
    assert {m.split(".")[1] for m in FOUND} == {"dsl", "solvers", "frontends"}
    assert {m.split(".")[1] for m in MODULES} == {"dsl", "solvers", "frontends"}
    assert len(FOUND) > 130 and len(MODULES) > 80


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.chdir(ROOT_DIR)              # examples read models/ relative to the checkout
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has '>>> ' in its text but no example doctest finds"
    failures = []
    for t in tests:
        out: list[str] = []
        result = runner.run(t, out=out.append, clear_globs=True)
        if result.failed:
            failures.append("".join(out))
    assert not failures, "\n".join(failures)
