"""Symbolic steady state of small exponential nets through their CTMC.

Every transition rate of the chain is linear in the base rates (1/mean of
each queue class and each timed mode): the chain is generated once with the
model's values and once more per base rate with that rate doubled, which
gives the exact coefficients.  The generator is then solved over the field of
rational functions of the parameters (sympy DomainMatrix), so the stationary
probabilities, and every measure derived from them, are closed forms.

>>> import qpn, sympy
>>> res = qpn.solve(qpn.load("models/mutex.qpn"), method="symbolic", threads=2)
>>> sympy.factor(res.expr("throughput", "acquire"))
2*(hold + think)/(2*hold**2 + 2*hold*think + think**2)
"""
from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import sympy as sp

from qpn.distributions import Exp
from qpn.errors import SolverError

from ..ctmc.explore import Explorer
from ..ctmc.solver import CTMCOptions, CTMCSolver, class_busy
from ..ctmc.spec import build_spec
from ..measures import derive

MAX_STATES = 400


def _exact(x: float):
    """A float coefficient as the rational it stands for (weights like 0.3, shares like 2/3)."""
    f = Fraction(x).limit_denominator(10 ** 8)
    if abs(float(f) - x) <= 1e-13 * max(1.0, abs(x)):
        return sp.Rational(f.numerator, f.denominator)
    return sp.Float(x, 30)


def _bases(c) -> list[tuple]:
    out = []
    for qi, q in enumerate(c.queues):
        for k in range(len(q.classes)):
            out.append(("queue", qi, k))
    for m, mode in enumerate(c.modes):
        if mode.kind == "timed":
            out.append(("mode", m))
    return out


def _perturbed(c, base, factor: float = 2.0):
    """A copy of compiled net ``c`` with one base rate multiplied by ``factor``."""
    d = copy.copy(c)
    if base[0] == "queue":
        _, qi, k = base
        d.queues = list(c.queues)
        q = copy.copy(c.queues[qi])
        q.service = list(q.service)
        q.service[k] = Exp(q.service[k].mean() / factor)
        d.queues[qi] = q
    else:
        m = base[1]
        d.modes = list(c.modes)
        md = copy.copy(c.modes[m])
        md.delay = Exp(md.delay.mean() / factor)
        d.modes[m] = md
    return d


def _generate(c, o):
    spec = build_spec(c, cutoff=o.first_cutoff, det_order=o.det_order, rr=o.rr)
    return spec, Explorer(spec, MAX_STATES * 4).run()


def check_symbolic(c, options: dict | None = None) -> list[str]:
    """Why compiled net ``c`` has no symbolic CTMC: what the numerical CTMC cannot model
    (:meth:`~solvers.ctmc.solver.CTMCSolver.problems`), non-exponential services and
    delays."""
    out = CTMCSolver().problems(c, options or {})
    for q in c.queues:
        if not all(d.is_exponential() for d in q.service):
            out.append(f"queue {q.name}: non-exponential service (symbolic CTMC needs exponential rates)")
    for m in c.modes:
        if m.kind == "timed" and not m.delay.is_exponential():
            out.append(f"transition {m.transition}: non-exponential delay")
    return out


def symbolic_ctmc(c, options: dict | None = None):
    """(slot_tokens, mode_rates, class_busy) as sympy object arrays, plus the state count."""
    from ..mva.symbolic import class_service_mean, delay_expr, parameter_symbols
    o = CTMCOptions.of(options)
    problems = check_symbolic(c, options)
    if problems:
        raise SolverError("; ".join(problems), construct=problems[0], methods=("ctmc", "des"))
    spec = build_spec(c, cutoff=o.first_cutoff, det_order=o.det_order, rr=o.rr)
    if spec.cutoff is not None:
        raise SolverError("symbolic solution of an open net needs a product form (MVA); the CTMC "
                          "of this net would be truncated", construct="open net", methods=("ctmc",))
    if spec.estimate > 4 * MAX_STATES:
        raise SolverError(f"about {spec.estimate:,.0f} states: too many for a symbolic solution "
                          f"(limit {MAX_STATES})", construct="state-space size", methods=("ctmc",))
    spec, base = _generate(c, o)
    n = len(base.states)
    moving = np.zeros(n, dtype=bool)
    moving[base.src[base.rate > 0]] = True
    if not moving.all():          # a dead marking: the closed forms would be numbers for nothing
        from ..status import Deadlocked, deadlock_reason
        raise Deadlocked(deadlock_reason(c, base.states, np.flatnonzero(~moving)))
    if n > MAX_STATES:
        raise SolverError(f"{n} states: too many for a symbolic solution (limit {MAX_STATES})",
                          construct="state-space size", methods=("ctmc",))
    sym = parameter_symbols(c.net)
    env = dict(c.params)
    bases = _bases(c)
    coef_t, coef_f, rate_exprs = [], [], []
    for b in bases:
        if b[0] == "queue":
            _, qi, k = b
            value = 1.0 / c.queues[qi].service[k].mean()
            rate_exprs.append(1 / class_service_mean(c, qi, k, sym, env))
        else:
            value = 1.0 / c.modes[b[1]].delay.mean()
            rate_exprs.append(1 / delay_expr(c, b[1], sym))
        _, sp_b = _generate(_perturbed(c, b), o)
        if len(sp_b.states) != n or len(sp_b.rate) != len(base.rate) or \
                not np.array_equal(sp_b.src, base.src) or not np.array_equal(sp_b.dst, base.dst):
            raise SolverError("the chain's structure depends on rates; cannot solve symbolically")
        coef_t.append((sp_b.rate - base.rate) / value)
        coef_f.append((sp_b.flow_rate - base.flow_rate) / value)
    # symbolic generator entries: sum_b mu_b * C_b
    params = sorted({s for e in rate_exprs for s in sp.sympify(e).free_symbols}, key=str)
    from sympy.polys.matrices import DomainMatrix
    from sympy.polys.domains import QQ
    field = QQ.frac_field(*params) if params else QQ
    mu = [field.from_sympy(sp.sympify(e)) for e in rate_exprs]
    Q: dict[tuple[int, int], object] = {}
    for i, (s, d) in enumerate(zip(base.src, base.dst)):
        if s == d:
            continue
        val = field.zero
        for b in range(len(bases)):
            cb = coef_t[b][i]
            if abs(cb) > 1e-15:
                val += mu[b] * field.from_sympy(_exact(cb))
        if val != field.zero:
            key = (int(s), int(d))
            Q[key] = Q.get(key, field.zero) + val
    out = [field.zero] * n
    for (s, d), v in Q.items():
        out[s] += v
    # pin pi[k] = 1 and solve the balance equations of the other states (transposed)
    k = 0
    idx = [i for i in range(n) if i != k]
    pos = {s: j for j, s in enumerate(idx)}
    rows = [[field.zero] * (n - 1) for _ in range(n - 1)]
    rhs = [[field.zero] for _ in range(n - 1)]
    for (s, d), v in Q.items():
        if d != k:
            if s == k:
                rhs[pos[d]][0] -= v
            else:
                rows[pos[d]][pos[s]] += v
    for s in idx:
        rows[pos[s]][pos[s]] -= out[s]
    if n == 1:
        pi = [sp.Integer(1)]
    else:
        A = DomainMatrix(rows, (n - 1, n - 1), field)
        bvec = DomainMatrix(rhs, (n - 1, 1), field)
        x = A.lu_solve(bvec)
        xs = [field.to_sympy(x[j, 0].element) for j in range(n - 1)]
        unnorm = [sp.Integer(1) if i == k else xs[pos[i]] for i in range(n)]
        total = sp.Add(*unnorm)
        pi = [sp.cancel(u / total) for u in unnorm]
    pi_arr = np.array(pi, dtype=object)
    S = base.states.astype(np.int64)
    slot_tokens = np.array([sp.Add(*[pi[i] * int(S[i, j]) for i in range(n) if S[i, j]])
                            for j in range(c.nslots)], dtype=object)
    mode_rates = np.array([sp.Integer(0)] * len(c.modes), dtype=object)
    for i in range(len(base.flow_state)):
        st, m = int(base.flow_state[i]), int(base.flow_mode[i])
        coef = sp.Integer(0)
        for b in range(len(bases)):
            cb = coef_f[b][i]
            if abs(cb) > 1e-15:
                coef += field.to_sympy(mu[b]) * _exact(cb)
        mode_rates[m] += pi[st] * coef
    busy = [np.array([sp.Add(*[pi[i] * _exact(float(B[i, kk])) for i in range(n) if B[i, kk]])
                      for kk in range(B.shape[1])], dtype=object)
            for B in class_busy(spec, base.states)]
    return slot_tokens, mode_rates, busy, n


def symbolic_rows(c, slot_tokens, mode_rates, busy):
    """Measure rows as every solver derives them, each value a cancelled sympy expression."""
    rows = derive(c, slot_tokens, mode_rates, busy)
    out = []
    for m, e, col, v in rows:
        if isinstance(v, np.ndarray):
            v = v.item()
        out.append((m, e, col, sp.cancel(sp.sympify(v))))
    return out
