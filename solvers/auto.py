"""``auto``: choose a method and say why, in one line.

MVA when the net is product form; else the CTMC when its estimated state
space fits and every delay is exponential or exactly phase-type (erlang,
hyperexp); else the simulator.
"""
from __future__ import annotations

from qpn.distributions import Erlang, Exp, HyperExp, HyperExpFit
from qpn.errors import SolverError
from qpn.resources import MemoryLimitError

from .registry import get_solver, register
from .options import SolverOptions
from .result import Result

EXACT_PH = (Exp, Erlang, HyperExp, HyperExpFit)
#: the share of the simulation's wall-clock cap (--wall) the CTMC probe may spend (as a
#: budget of states, at most PROBE_SECONDS' worth): a user who caps a solve at 1 s does not
#: wait 2 s for it
PROBE_SHARE_OF_WALL = 0.25


def _non_ph(compiled) -> list[str]:
    out = []
    for q in compiled.queues:
        for k, d in enumerate(q.service):
            if not isinstance(d, EXACT_PH):
                out.append(f"queue {q.name}: {d.kind} service is not phase-type")
                break
    for m in compiled.modes:
        if m.kind == "timed" and not isinstance(m.delay, EXACT_PH):
            out.append(f"transition {m.transition}: {m.delay.kind} delay is not phase-type")
    return out


def choose(compiled, options: dict) -> tuple[str, str]:
    """(method, one-line reason)."""
    from .mva.productform import product_form
    from .mva.solver import describe as describe_mva
    qn = product_form(compiled)
    if not isinstance(qn, list):
        kinds = sorted({"closed" if getattr(ch, "population", None) else "open" for ch in qn.chains})
        return "mva", (f"the net is product form ({' and '.join(kinds)}, {len(qn.chains)} chain(s)): "
                       + describe_mva(qn, options))
    from .mva.productform import LOAD_DEPENDENT
    # product form with load-dependent queues, which the MVA here does not take: say so
    lead = "not for MVA" if all(LOAD_DEPENDENT in r for r in qn) else "not product form"
    why_not_pf = qn[0]
    ctmc = get_solver("ctmc")
    problems = ctmc.problems(compiled, options) + _non_ph(compiled)
    if not problems:
        from .ctmc.solver import PROBE_SECONDS, CTMCOptions, keep_probe, probe, size_problem
        from .des.options import DESOptions
        from .ctmc.spec import build_spec
        o = CTMCOptions.of(options)
        try:
            cutoff = o.first_cutoff
            spec = build_spec(compiled, cutoff=cutoff, det_order=o.det_order, rr=o.rr)
        except SolverError as exc:
            problems = [str(exc)]
        except MemoryLimitError as exc:
            problems = [str(exc).splitlines()[0].removeprefix("error: ")]
        else:
            # a bound too high for the limits: count exactly if small, in at most a quarter
            # of the wall-clock cap the user gave the solve (--wall 1: not 2 s of probing)
            seconds = min(PROBE_SECONDS, DESOptions.of(options).wall * PROBE_SHARE_OF_WALL)
            space = probe(spec, o.limit, seconds=seconds)
            too_large = size_problem(spec, o.limit)
            if too_large is None:
                if space is not None:
                    keep_probe(compiled, o, cutoff, spec, space)
                return "ctmc", (f"{lead} ({why_not_pf}); the CTMC has "
                                f"{spec.estimate_phrase()} and every delay is exponential or "
                                "phase-type")
            problems = [too_large]
    return "des", f"{lead} ({why_not_pf}); not for the CTMC: {problems[0]}"


class AutoSolver:
    """Chooses a method (:func:`choose`); the options go on to the method it chose."""
    name = "auto"
    Options = SolverOptions

    def problems(self, compiled, options: dict) -> list[str]:
        """None: some method always applies (the simulator at worst)."""
        return []

    def solve(self, compiled, options: dict) -> Result:
        """Solve with the method :func:`choose` picks; its reason opens the explanation."""
        method, reason = choose(compiled, options)
        solver = get_solver(method)
        problems = solver.problems(compiled, options)
        if problems:
            raise SolverError(f"auto chose {method} but: " + "; ".join(problems))
        try:
            res = solver.solve(compiled, options)
        except SolverError as exc:
            # the chain met a limit only solving could find (an ordered queue past its
            # bound at a larger cut-off): simulate, and say why
            if method == "des" or "des" not in getattr(exc, "methods", ()):
                raise
            reason = f"{method} was chosen ({reason}) but: {exc}"
            method, solver = "des", get_solver("des")
            res = solver.solve(compiled, options)
        res.explanation.insert(0, f"auto: chose {method}: {reason}")
        res.info["chosen"] = method
        return res


register(AutoSolver())
