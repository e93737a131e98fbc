"""Every function and class of the public API shows a tiny example of its use.

The API is what the packages export in ``__all__``: ``qpn`` (the model and its entry
points), ``qpn.dsl`` and ``qpn.solvers`` with its four solver packages; with each
exported class go its public methods.  The examples themselves run in
test_doctests.py (qpn.dsl, qpn.solvers) and in pytest's doctest collection (qpn/).
"""
import importlib
import inspect

import pytest

API_PACKAGES = ("qpn", "qpn.dsl", "qpn.solvers", "qpn.solvers.ctmc", "qpn.solvers.des",
                "qpn.solvers.mva", "qpn.solvers.symbolic")


def api_callables(packages=API_PACKAGES) -> dict[str, object]:
    """Qualified name -> object of every exported function and class, and of the public
    methods (those defined by the class itself) of every exported class."""
    out: dict[str, object] = {}
    for pkg in packages:
        module = importlib.import_module(pkg)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            out[f"{pkg}.{name}"] = obj
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if inspect.isfunction(value) and not attr.startswith("_"):
                        out[f"{pkg}.{name}.{attr}"] = value
    return out


def test_the_api_is_what_the_packages_export():
    names = api_callables()
    # the entry points a user meets first are part of it
    for name in ("qpn.parse", "qpn.load", "qpn.solve", "qpn.Net.flatten", "qpn.solvers.solve",
                 "qpn.solvers.Result.table", "qpn.solvers.mva.exact_mva", "qpn.solvers.des.simulate",
                 "qpn.solvers.ctmc.build", "qpn.solvers.symbolic.SymbolicSolver.solve"):
        assert name in names
    assert len(names) > 100


@pytest.mark.parametrize("pkg", API_PACKAGES)
def test_every_api_callable_has_an_example(pkg):
    missing = [name for name, obj in api_callables((pkg,)).items()
               if ">>> " not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{len(missing)} without an example: {', '.join(missing)}"
