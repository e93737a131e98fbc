"""Symbolic results: closed forms in the model's parameters.

Product-form nets with small populations go through symbolic MVA (the
normalizing constant); other small exponential nets through their CTMC,
solved over rational functions of the parameters.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from qpn.errors import SolverError

from ..registry import register
from ..options import SolverOptions, option, whole
from .result import SymbolicResult


@dataclass(frozen=True)
class SymbolicOptions(SolverOptions):
    """Options of the symbolic solver (its CTMC route also reads the ctmc options)."""
    label = "symbolic"
    max_population: int = option(12, "largest total population solved by symbolic MVA "
                                      "(larger product-form nets go through the CTMC route)",
                                 whole(0, "a whole number"))


class SymbolicSolver:
    """``symbolic``: closed forms in the model's parameters (symbolic MVA, or a small CTMC
    solved over rational functions).

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> c = qpn.compile_net(net)
    >>> solver = SymbolicSolver()
    >>> solver.problems(c, {}), solver.name
    ([], 'symbolic')
    >>> solver.solve(c, {}).expr("throughput", "back")
    (2*z + 2)/(z**2 + 2*z + 2)
    """
    name = "symbolic"
    Options = SymbolicOptions
    reads = ("ctmc",)      # the CTMC route builds the chain with the ctmc options

    def _route(self, compiled, options):
        from ..mva.productform import product_form
        qn = product_form(compiled)
        if not isinstance(qn, list):
            pops = [ch.population for ch in qn.chains if getattr(ch, "population", None)]
            if sum(pops) <= SymbolicOptions.of(options).max_population:
                return "mva", []
        from .ctmc import check_symbolic
        problems = check_symbolic(compiled, options)
        return ("ctmc", problems)

    def problems(self, compiled, options: dict) -> list[str]:
        """Why neither symbolic MVA nor the symbolic CTMC applies.

        >>> import qpn
        >>> SymbolicSolver().problems(qpn.compile_net(qpn.load("models/barrier.qpn")), {})
        ['queue computing: non-exponential service (symbolic CTMC needs exponential rates)']
        """
        how, problems = self._route(compiled, options)
        return problems

    def solve(self, compiled, options: dict) -> SymbolicResult:
        """Closed-form measures as functions of the net's parameters (sympy expressions),
        evaluated at the parameters' values too.

        >>> import qpn
        >>> c = qpn.compile_net(qpn.load("models/mutex.qpn"), {"threads": 2})   # not product form
        >>> res = SymbolicSolver().solve(c, {})
        >>> res.info["route"], res.explanation[0]
        ('ctmc', 'CTMC with 3 states solved over rational functions of the parameters')
        >>> res.expr("utilization", "critical"), round(res.get("utilization", "critical"), 6)
        ((2*hold**2 + 2*hold*think)/(2*hold**2 + 2*hold*think + think**2), 0.324324)
        """
        import sympy as sp
        from ..mva.symbolic import parameter_symbols, parameter_values
        from .ctmc import symbolic_ctmc, symbolic_rows
        t0 = time.perf_counter()
        how, problems = self._route(compiled, options)
        if problems:
            raise SolverError("; ".join(problems), methods=("ctmc", "des"))
        if how == "mva":
            from ..mva.symbolic import symbolic_mva
            tokens, rates, busy = symbolic_mva(compiled, SymbolicOptions.of(options).max_population)
            why = "product form: closed forms by the normalizing constant (symbolic MVA)"
            nstates = None
        else:
            tokens, rates, busy, nstates = symbolic_ctmc(compiled, options)
            why = f"CTMC with {nstates} states solved over rational functions of the parameters"
        rows = symbolic_rows(compiled, tokens, rates, busy)
        values = parameter_values(compiled)
        res = SymbolicResult(method="symbolic", model=compiled.net.name)
        exprs = {}
        for m, e, col, x in rows:
            v = x.subs(values).evalf(30) if x.free_symbols else x.evalf(30)
            res.add(m, e, float(v) if v.is_real else float("nan"), color=col)
            exprs[(m, e, col)] = x
        syms = {n: s for n, s in parameter_symbols(compiled.net).items() if isinstance(s, sp.Symbol)}
        res.info.update(expressions=exprs, symbols=syms, values=values, route=how, states=nstates)
        res.explanation.append(why)
        res.wall_time = time.perf_counter() - t0
        return res


register(SymbolicSolver())

__all__ = ["SymbolicSolver", "SymbolicResult"]
