"""The one door to the solvers: :func:`solve` compiles a net once and hands it to the
chosen method; :func:`check_options` checks a user's options against every method.

Imported on first use of ``qpn.solvers.solve`` (the package's ``__getattr__``): filling
:func:`solve`'s docstring with every method's options imports every solver, which a
command that only prints help, checks or formats a model never needs.
"""
from __future__ import annotations

import time
from typing import Any

from qpn.errors import ParameterError, SolverError

from .registry import METHODS, all_solvers, get_solver
from .result import Result


def check_options(options: dict | None) -> None:
    """Every name in ``options`` declared by some solver and every value acceptable to
    each solver that declares it (a SolverError naming the option otherwise)."""
    if options:
        for s in all_solvers():
            s.Options.of(options)


def solve(net, method: str = "auto", options: dict | None = None, **params: Any) -> Result:
    """Solve ``net`` with ``method``.

    Parameters
    ----------
    net : qpn.Net
        A model (``qpn.load``, ``qpn.parse``).
    method : str
        ``auto`` (chooses, and says why in the result's explanation), ``mva``,
        ``ctmc``, ``symbolic`` or ``des``.
    options : dict, optional
        Solver options by name, listed below (one dict may hold several
        methods' options; each method reads its own).  A name no method
        declares, or a value its method cannot take, is a SolverError.
    **params
        Values of the net's parameters, overriding the model's.

    Returns
    -------
    Result
        Measures with their units (and, from the simulator, confidence
        intervals and observation counts), the method and why it was chosen.

    Options, as each solver's ``Options`` dataclass declares them (name, default,
    accepted values; this list is filled in from the registered solvers)::

    {options}

    Examples
    --------
    >>> import qpn
    >>> from qpn import solvers
    >>> res = solvers.solve(qpn.load("models/mm1.qpn"), "mva", options={"tol": 1e-12})
    >>> round(res.get("utilization", "server"), 6), res.method
    (0.8, 'mva')
    """
    from qpn.compile import compile_net
    from .options import SolverOptions
    options = options.as_dict() if isinstance(options, SolverOptions) else dict(options or {})
    t0 = time.perf_counter()
    solver = get_solver(method)
    check_options(options)        # before compiling: a misspelt option costs nothing
    try:
        compiled = compile_net(net, params or None)
    except ParameterError:
        from .options import option_names
        misplaced = sorted(set(params) & option_names())
        if misplaced:          # solve(net, seed=3): keyword arguments are the net's parameters
            name = misplaced[0]
            raise SolverError(f"'{name}' is a solver option, not a parameter of the net: pass it "
                              f"as options={{{name!r}: {params[name]!r}}}", construct="options") from None
        raise
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
    if res.status == "ok":
        from .flowcheck import flow_violations
        broken = flow_violations(res)
        if broken:      # not a steady state, whatever the solver's own test said
            res.imprecise = f"the answer fails the flow check ({broken[0]})"
            res.warnings.append("the answer is not a steady state: " + "; ".join(broken[:5])
                                + (f"; and {len(broken) - 5} more" if len(broken) > 5 else "")
                                + ": the measures may be far off; simulate (--method des) to check")
    res.params = dict(compiled.params)
    if res.wall_time is None:
        res.wall_time = time.perf_counter() - t0
    return res


def _document_options() -> None:
    """Fill solve's docstring with every registered solver's options."""
    from .options import describe_all
    lines = describe_all().splitlines()
    solve.__doc__ = solve.__doc__.replace("{options}", "\n    ".join(lines))


_document_options()


__all__ = ["solve", "check_options"]
