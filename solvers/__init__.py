"""Solvers: one interface, interchangeable methods, a chooser that explains itself.

A solver is registered under a method name and offers:

* ``Options``: a frozen dataclass of its typed, documented options
  (:mod:`solvers.options`);
* ``problems(compiled, options) -> list[str]``: why it cannot solve this net
  (empty if it can); each problem names the construct;
* ``solve(compiled, options) -> Result``.

``options`` is the user's mapping; a solver reads it through ``Options.of``.
``solve(net, method=..., **params)`` compiles the net once and hands it to the
chosen solver.  Methods register themselves in :data:`~solvers.registry.REGISTRY` on import;
:data:`~solvers.registry._MODULES` is the one list of the modules that hold them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .registry import METHODS, REGISTRY, Solver, all_solvers, get_solver, register
from .result import Measure, Result

if TYPE_CHECKING:
    from .interface import check_options, solve  # noqa: F401  (their types, for checkers)


def __getattr__(name: str):
    # solve() and check_options() live in .interface, imported on first use: its import
    # documents solve's options, which imports every solver (scipy, numba's loader)
    if name in ("solve", "check_options"):
        from . import interface
        value = getattr(interface, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["solve", "register", "get_solver", "all_solvers", "REGISTRY", "Result", "Measure", "METHODS", "Solver"]
