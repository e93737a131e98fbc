"""What a fresh process loads before qpn does anything: `import qpn` and `qpn --help`
import no numpy, scipy, numba or solver module (the model's classes and
`qpn.solvers.solve` are imported on first use; `qpn` sets up only the arguments of the
command it runs).  Their CPU time is benchmarks/test_bench_startup.py's."""
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "numba", "sympy", "lark", "networkx", "qpn.solvers.mva",
         "qpn.solvers.ctmc", "qpn.solvers.des", "qpn.solvers.auto", "qpn.model")


def _loaded(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                          "print(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def _heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_import_qpn_loads_no_numerical_library():
    assert _heavy(_loaded("import qpn")) == []


def test_qpn_help_loads_no_solver():
    mods = _loaded("import contextlib, io\nfrom qpn.cli import main\n"
                   "with contextlib.redirect_stdout(io.StringIO()):\n"
                   "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert _heavy(mods) == [] and "qpn.solvers.cli" in mods and "qpn.frontends.cli" in mods


def test_a_model_class_is_there_on_first_use():
    mods = _loaded("import qpn\nassert qpn.Net.__name__ == 'Net' and qpn.QueueingPlace\n"
                   "from qpn import Transition, solve\nfrom qpn.solvers import solve as s\n"
                   "assert s.__module__ == 'qpn.solvers.interface' and 'mva:' in s.__doc__")
    assert "qpn.model" in mods and "qpn.solvers.interface" in mods
    with pytest.raises(AttributeError, match="no attribute 'Nett'"):
        import qpn
        qpn.Nett
