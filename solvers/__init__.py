"""Solvers: one interface, interchangeable methods, a chooser that explains itself.

A solver is registered under a method name and offers:

* ``problems(compiled, options) -> list[str]``: why it cannot solve this net
  (empty if it can); each problem names the construct;
* ``solve(compiled, options) -> Result``.

``solve(net, method=..., **params)`` compiles the net once and hands it to the
chosen solver.  Methods register themselves in :data:`REGISTRY` on import.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from qpn.errors import SolverError

from .result import Measure, Result

METHODS = ("auto", "mva", "ctmc", "symbolic", "des")


class Solver(Protocol):
    name: str

    def problems(self, compiled, options: dict) -> list[str]: ...

    def solve(self, compiled, options: dict) -> Result: ...


REGISTRY: dict[str, Solver] = {}
_MODULES = {"mva": "solvers.mva", "ctmc": "solvers.ctmc", "symbolic": "solvers.symbolic",
            "des": "solvers.des", "auto": "solvers.auto"}


def register(solver: Solver) -> Solver:
    REGISTRY[solver.name] = solver
    return solver


def get_solver(method: str) -> Solver:
    if method not in REGISTRY:
        mod = _MODULES.get(method)
        if mod is None:
            from qpn.errors import suggest
            s = suggest(method, METHODS)
            raise SolverError(f"unknown method '{method}'" + (f"; did you mean '{s}'?" if s else ""),
                              methods=METHODS)
        try:
            __import__(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            raise SolverError(f"method '{method}' is not available in this version of qpn",
                              methods=tuple(m for m in METHODS if m in REGISTRY)) from None
    if method not in REGISTRY:
        raise SolverError(f"method '{method}' is not available in this version of qpn",
                          methods=tuple(m for m in METHODS if m in REGISTRY))
    return REGISTRY[method]


def solve(net, method: str = "auto", options: dict | None = None, **params: Any) -> Result:
    """Solve ``net`` with ``method``; ``params`` override net parameters."""
    from qpn.compile import compile_net
    options = dict(options or {})
    t0 = time.perf_counter()
    compiled = compile_net(net, params or None)
    solver = get_solver(method)
    from .status import Degenerate, empty_reason, source_traps
    from qpn.errors import ModelError
    empty = empty_reason(compiled)
    if empty:       # every method would answer zeros and NaN (or fail on the empty arrays)
        res = Result(method=method, model=compiled.net.name, params=dict(compiled.params),
                     wall_time=time.perf_counter() - t0)
        res.mark_degenerate("empty", empty)
        return res
    traps = source_traps(compiled)
    if traps:   # every method would spin in zero time (the simulator for 10^5 firings first)
        where = next((t.loc for t in compiled.net.flatten().transitions if t.name == traps[0]), None)
        raise ModelError(f"timeless trap: immediate transition(s) {', '.join(repr(t) for t in traps)} "
                         "stay enabled whatever they fire (no input place, or they give back what "
                         "they take), so they fire forever in zero time", where,
                         hint="give it a delay (a timed source), an input it consumes, or an "
                              "inhibitor arc")
    problems = solver.problems(compiled, options)
    if problems:
        others = []
        for m in METHODS:
            if m in ("auto", method):
                continue
            try:
                s = get_solver(m)
            except SolverError:
                continue
            if not s.problems(compiled, options):
                others.append(m)
        raise SolverError(f"method '{method}' cannot solve this net: " + "; ".join(problems),
                          construct=problems[0], methods=others)
    try:
        res = solver.solve(compiled, options)
    except Degenerate as exc:   # no numbers, but an answer (exit status 4 or 5), not an error
        res = Result(method=method, model=compiled.net.name)
        res.mark_degenerate(exc.kind, exc.reason)
    res.params = dict(compiled.params)
    if res.wall_time is None:
        res.wall_time = time.perf_counter() - t0
    return res


__all__ = ["solve", "register", "get_solver", "REGISTRY", "Result", "Measure", "METHODS", "Solver"]
