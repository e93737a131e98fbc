"""Symbolic MVA: closed-form measures of small product-form nets.

Service means, delays, weights and arrival rates become sympy expressions in
the flat net's parameters (a parameter defined by a constant is a positive
symbol; one defined from others is its definition), visit ratios are solved
exactly, and the three raw quantities of :mod:`solvers.measures` come back as
numpy object arrays, so :func:`~solvers.measures.derive` gives every measure
in closed form.

The MVA recursion itself blows up symbolically (each level nests the
previous one), so the closed chains are solved through the quantities MVA
computes implicitly, the product-form normalizing constant ``G``:
``X_c = G(N - e_c) / G(N)``; at a delay station ``Q_ci = D_ci X_c``; at a
single-server station ``Q_ci = D_ci G_i^+(N - e_c) / G(N)``, where ``G_i^+``
is ``G`` of the network with station ``i`` duplicated.  ``G`` is built by
Buzen's recursion (``G(n) += sum_c D_ci G(n - e_c)`` per station) on sympy
polynomials in one placeholder per demand, which keeps it exact and fast;
the placeholders are replaced by the demand expressions at the end.  Open
chains use ``rho/(1 - rho)`` (Erlang C for ``k`` servers); mixed ones
inflate the closed demands by ``1/(1 - rho)`` (see :mod:`.open`).  A
``k``-server station in a closed chain has the load-dependent factor
``|n|!/prod n_c! prod D^n / prod_j min(j, k)`` and its queue length is
``D_ci [F'(s) G_{-i}](N - e_c) / G(N)`` (see :func:`_closed`).  A multi-server
station shared by open and closed chains is refused.

>>> import qpn, sympy
>>> c = qpn.compile_net(qpn.load("models/mm1.qpn"))
>>> tokens, rates, busy = symbolic_mva(c)
>>> sympy.simplify(tokens[c.places[0].qslots[0]])
-demand*lambda/(demand*lambda - 1)
"""
from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

import numpy as np
import sympy as sp

from qpn.errors import ModelError, SolverError
from qpn.expr import Num, BinOp, Call, Ref, TupleExpr, Unary, evaluate, free_names, to_sympy
from qpn.model import EnumColors

from ..status import Unstable
from .productform import QNModel, product_form
from .solver import net_quantities

_EXPR = (Num, Ref, BinOp, Unary, Call, TupleExpr)
_SKIP = ("loc", "source", "replay", "unit", "samples", "column")


def parameter_symbols(net) -> dict[str, Any]:
    """Every parameter of ``net`` as a sympy expression (free ones as positive symbols)."""
    defs = {p.name: p.value for p in net.params}
    out: dict[str, Any] = {}

    def get(name: str):
        if name not in out:
            deps = free_names(defs[name]) & defs.keys()
            out[name] = sp.Symbol(name, positive=True) if not deps else \
                to_sympy(defs[name], {d: get(d) for d in deps})
        return out[name]
    for name in defs:
        get(name)
    return out


def parameter_values(compiled) -> dict[Any, Any]:
    """``{symbol: value}`` to evaluate the expressions of :func:`symbolic_mva`."""
    syms = parameter_symbols(compiled.net)
    return {s: compiled.params[n] for n, s in syms.items() if isinstance(s, sp.Symbol)}


def _exact(x: float) -> Any:
    # decimal literals of the model (0.3) become the rationals the user meant
    return sp.Rational(repr(float(x))) if math.isfinite(x) else sp.oo


def _sx(v, sym):
    return to_sympy(v, sym) if isinstance(v, _EXPR) else _exact(v)


def _mean(dist, bound, sym):
    """Mean of a flat-net distribution as an expression (numeric if it has no closed form)."""
    try:
        changes = {}
        for f in fields(dist):
            v = getattr(dist, f.name)
            if f.name in _SKIP or v is None:
                continue
            changes[f.name] = tuple(_sx(x, sym) for x in v) if isinstance(v, tuple) else _sx(v, sym)
        return sp.sympify(replace(dist, **changes)._mean())
    except (ModelError, TypeError, ValueError, AttributeError):
        return _exact(bound.mean())


def _net_mode(net, cmode):
    t = net.transitions[cmode.tindex]
    if cmode.mode is not None:
        return next((m for m in t.modes if m.name == cmode.mode), None)
    return t.modes[0] if len(t.modes) == 1 else None


def _class_service(c, qn: QNModel, sym, env) -> list:
    S = []
    for k in qn.classes:
        st = qn.stations[k.station]
        if st.queue is None:  # a timed station: rate = sum of its modes' rates
            rates = [1 / _delay(c, m, sym) for m in qn.timed_slots[k.slot]]
            S.append(sp.cancel(1 / sp.Add(*rates)))
            continue
        q = c.queues[st.queue]
        place = c.net.place_map[c.places[q.places[k.qclass]].name]
        color = c.slot_color[k.slot]
        dist = next((s.dist for s in place.service if s.color is not None
                     and evaluate(s.color, env) == color), None)
        dist = dist or next(s.dist for s in place.service if s.color is None)
        S.append(_mean(dist, q.service[k.qclass], sym))
    return S


def _delay(c, m: int, sym):
    nm = _net_mode(c.net, c.modes[m])
    if nm is None or nm.delay is None:
        return _exact(c.modes[m].delay.mean())
    return _mean(nm.delay, c.modes[m].delay, sym)


def _weight(c, m: int, sym):
    nm = _net_mode(c.net, c.modes[m])
    if nm is None or nm.weight is None:
        return _exact(c.modes[m].weight)
    try:
        return to_sympy(nm.weight, sym)
    except ModelError:  # depends on a binding variable
        return _exact(c.modes[m].weight)


def _routes(c, qn: QNModel, sym):
    """Symbolic probability (or source rate) of every route."""
    groups: dict[int, list] = {}
    for r in qn.routes:
        if r.src is not None and r.prob > 0:
            groups.setdefault(r.src, []).append(r)
    prob: dict[int, Any] = {}
    for src, rs in groups.items():
        f = _weight if rs[0].kind == "immediate" else (lambda c_, m, s: 1 / _delay(c_, m, s))
        w = [f(c, r.mode, sym) for r in rs]
        tot = sp.Add(*w)
        for r, wi in zip(rs, w):
            prob[r.mode] = sp.cancel(wi / tot)
    rate = {r.mode: 1 / _delay(c, r.mode, sym) for r in qn.routes if r.src is None}
    return prob, rate


def _visits(c, qn: QNModel, prob, rate):
    """Slot visits per chain (exact), and mode visits."""
    V = np.zeros((len(qn.chains), c.nslots), dtype=object)
    for ci, ch in enumerate(qn.chains):
        idx = ch.slots if not ch.closed else ch.recurrent
        if not idx:
            continue
        pos = {s: j for j, s in enumerate(idx)}
        A = sp.eye(len(idx))
        b = sp.zeros(len(idx), 1)
        for r in qn.routes:  # A = I - P^T
            if r.src in pos and r.dst in pos and r.mode in prob:
                A[pos[r.dst], pos[r.src]] -= prob[r.mode]
            if r.src is None and r.dst in pos:
                b[pos[r.dst]] += rate[r.mode]
        for q in c.queues:
            for s, d in zip(q.classes, q.dslots):
                if s in pos and d in pos:
                    A[pos[d], pos[s]] -= 1
        if ch.closed:
            j = pos[ch.reference]
            A[j, :] = sp.zeros(1, len(idx))
            A[j, j] = 1
            b[j] = 1
        v = A.LUsolve(b)
        for s, j in pos.items():
            V[ci, s] = sp.cancel(v[j])
    MV = np.zeros((len(qn.chains), len(c.modes)), dtype=object)
    for ci, ch in enumerate(qn.chains):
        sl = set(ch.slots)
        for r in qn.routes:
            if r.src is None and (r.dst in sl or (r.dst is None and not ch.slots
                                                  and qn.mode_visits[ci, r.mode] > 0)):
                MV[ci, r.mode] = rate[r.mode]
            elif r.src in sl and r.mode in prob:
                MV[ci, r.mode] = V[ci, r.src] * prob[r.mode]
    return V, MV


def _algebra(names: list[str], values: list):
    """Where the normalizing constant is computed, and how to read a ratio back.

    When every demand is a rational function of the parameters: directly in
    that field (``sympy.field``); with few parameters its elements are small
    and ratios come out cancelled.  Otherwise in a sparse polynomial ring
    (``sympy.ring``, far faster than dense ``Poly``) with one placeholder per
    demand, replaced by the demand expressions at the end.
    Returns (one, the element standing for each value, ratio(a, b) -> expression).
    """
    syms = sorted(set().union(*[sp.sympify(v).free_symbols for v in values]), key=str)
    try:
        K, *_ = sp.field(syms or [sp.Dummy()], sp.QQ)
        return K.one, [K.from_expr(sp.sympify(v)) for v in values], \
            lambda a, b: (a / b).as_expr()
    except (ValueError, TypeError, sp.PolynomialError, sp.CoercionFailed):
        ring, *gens = sp.ring(names, sp.QQ)
        return ring.one, gens, lambda a, b: a.as_expr(*values) / b.as_expr(*values)


def _closed(N: list[int], d, servers: np.ndarray, inflate):
    """X[c] and Q[c, i] of the closed chains from the normalizing constant ``G``.

    A station with ``k`` servers has the generating function
    ``F(s) = sum_{m<k} s^m/m! + s^k/k! / (1 - s/k)`` in ``s = sum_c D_c t_c``,
    so multiplying by it needs only "times s" and "divide by (1 - s/k)"
    (Buzen's recursion), each one pass over the population vectors.
    """
    C, M = d.shape
    delay = np.isinf(servers)
    live_g = [(c, i) for c in range(C) for i in range(M) if not delay[i] and d[c, i] != 0]
    values = [sp.Add(*[d[c, i] for i in range(M) if delay[i]]) for c in range(C)] + \
        [d[k] * inflate[k[1]] for k in live_g]
    names = [f"z{c}" for c in range(C)] + [f"g{c}_{i}" for c, i in live_g]
    one, elems, ratio = _algebra(names, values)
    zp = elems[:C]
    gp = dict(zip(live_g, elems[C:]))
    dims = tuple(n + 1 for n in N)

    def times_s(A, i, m):
        # (A s / m)(n) = sum_c D_ci A(n - e_c) / m
        out = np.empty(dims, dtype=object)
        for n in np.ndindex(dims):
            acc = A[n] * 0
            for c in range(C):
                if n[c] > 0 and (c, i) in gp:
                    acc = acc + gp[c, i] * A[_dec(n, c)]
            out[n] = acc * sp.QQ(1, m)
        return out

    def divide(A, i, k):
        # H = A / (1 - s/k): H(n) = A(n) + sum_c D_ci/k H(n - e_c)
        H = A.copy()
        for n in np.ndindex(dims):
            for c in range(C):
                if n[c] > 0 and (c, i) in gp:
                    H[n] = H[n] + gp[c, i] * H[_dec(n, c)] * sp.QQ(1, k)
        return H

    def powers(A, i, top):
        out = [A]  # s^m/m! A for m = 0..top
        for m in range(1, top + 1):
            out.append(times_s(out[-1], i, m))
        return out

    def apply(A, i):
        k = int(servers[i])
        if k == 1:
            return divide(A, i, 1)
        S = powers(A, i, k)
        return sum(S[:k], np.zeros(dims, dtype=object)) + divide(S[k], i, k)

    def apply_derivative(A, i):
        # F'(s) = sum_{m<k-1} s^m/m! + s^(k-1)/(k-1)!/(1 - s/k) + s^k/k!/k/(1 - s/k)^2
        k = int(servers[i])
        S = powers(A, i, k)
        out = sum(S[:k - 1], np.zeros(dims, dtype=object)) + divide(S[k - 1], i, k)
        last = divide(divide(S[k], i, k), i, k)
        for n in np.ndindex(dims):
            out[n] = out[n] + last[n] * sp.QQ(1, k)
        return out

    def network(skip=None):
        G = np.empty(dims, dtype=object)
        for n in np.ndindex(dims):  # all delay stations together: prod_c Z_c^n_c / n_c!
            G[n] = one * sp.QQ(1, math.prod(math.factorial(x) for x in n))
            for c in range(C):
                if n[c]:  # (no delay station: Z = 0, and the ring refuses 0**0)
                    G[n] = G[n] * zp[c] ** n[c]
        for i in range(M):
            if i != skip and not delay[i]:
                G = apply(G, i)
        return G
    G = network()
    GN = G[tuple(N)]
    X = np.zeros(C, dtype=object)
    Q = np.zeros((C, M), dtype=object)
    for c in range(C):
        if N[c] > 0:
            X[c] = ratio(G[_dec(N, c)], GN)
    for i in range(M):
        live = [c for c in range(C) if N[c] > 0 and (delay[i] or (c, i) in gp)]
        if delay[i]:
            for c in live:
                Q[c, i] = d[c, i] * X[c]
            continue
        if not live:
            continue
        # Q_ci = D_ci [F_i'(s) G_{-i}](N - e_c) / G(N); for one server F' G_{-i} = G / (1 - s)
        H = divide(G, i, 1) if servers[i] == 1 else apply_derivative(network(skip=i), i)
        for c in live:
            Q[c, i] = d[c, i] * inflate[i] * ratio(H[_dec(N, c)], GN)
    return X, Q


def _dec(n, c: int) -> tuple:
    m = list(n)
    m[c] -= 1
    return tuple(m)


def _erlang(A, k: int):
    """Mean customers at an open M/M/k station with offered load A (Erlang C)."""
    rho = A / k
    top = A ** k / sp.factorial(k) / (1 - rho)
    wait = top / (sp.Add(*[A ** j / sp.factorial(j) for j in range(k)]) + top)
    return A + wait * rho / (1 - rho)


def symbolic_mva(compiled, max_population: int = 12) -> tuple[np.ndarray, np.ndarray, list]:
    """``(slot_tokens, mode_rates, class_busy)`` as sympy expressions in the parameters.

    Raises :class:`SolverError` if the net is not product form, has a
    multi-server station shared by open and closed chains, or closed chains
    with more than ``max_population`` customers in total.

    >>> import qpn, sympy
    >>> c = qpn.compile_net(qpn.load("models/interactive.qpn"))    # 2 users, think z = 1 s
    >>> tokens, rates, busy = symbolic_mva(c)
    >>> sympy.factor(rates[1])                     # throughput of back, in the parameter z
    2*(z + 1)/(z**2 + 2*z + 2)
    >>> rates[1].subs(parameter_values(c)), sympy.simplify(tokens.sum())   # z = 1; the population
    (0.800000000000000, 2)
    """
    c = compiled
    qn = product_form(c)
    if isinstance(qn, list):
        raise SolverError("symbolic MVA: the net is not product form: " + "; ".join(qn),
                          construct=qn[0], methods=("ctmc", "des"))
    D = qn.demands()
    for i, st in enumerate(qn.stations):
        if not st.delay and st.servers > 1 and D[qn.open, i].sum() > 0 and D[qn.closed, i].sum() > 0:
            raise SolverError(f"{st.element}: a multi-server station visited by both open and "
                              f"closed chains (symbolic mixed MVA handles single-server and delay "
                              f"stations)", construct=st.element, methods=("ctmc", "des"))
    N = [qn.chains[k].population for k in qn.closed]
    if sum(N) > max_population:
        raise SolverError(f"symbolic MVA: the closed chains hold {sum(N)} tokens (limit "
                          f"{max_population})", construct="population", methods=("mva",))
    sym = parameter_symbols(c.net)
    env = dict(c.params)
    for cs in c.net.colorsets:
        if isinstance(cs, EnumColors):
            env.update({v: v for v in cs.values})
    S = _class_service(c, qn, sym, env)
    prob, rate = _routes(c, qn, sym)
    V, MV = _visits(c, qn, prob, rate)
    visits = [V[k.chain, k.slot] for k in qn.classes]
    M = len(qn.stations)
    d = np.zeros((len(qn.chains), M), dtype=object)
    for k, cl in enumerate(qn.classes):
        d[cl.chain, cl.station] += visits[k] * S[k]
    servers = np.array([st.servers for st in qn.stations], dtype=float)
    delay = np.isinf(servers)
    cl, op = qn.closed, qn.open
    U = d[op].sum(axis=0) if op else np.full(M, sp.S.Zero, dtype=object)
    values = parameter_values(c)
    for i in range(M):
        u = float(sp.sympify(U[i]).subs(values)) if op else 0.0
        if not delay[i] and u >= servers[i]:
            raise Unstable(f"the open workload saturates {qn.stations[i].element}: "
                           f"utilization {u / servers[i]:.6g} >= 1 (no steady state: its tokens "
                           "grow without bound)", construct=qn.stations[i].element)
    inflate = [1 / (1 - U[i]) if servers[i] == 1 else sp.Integer(1) for i in range(M)]
    X = np.zeros(len(qn.chains), dtype=object)
    Q = np.zeros((len(qn.chains), M), dtype=object)
    X[op] = sp.Integer(1)
    if cl:
        Xc, Qc = _closed(N, d[cl], servers, inflate)
        X[cl], Q[cl] = Xc, Qc
    Qcl = Q[cl].sum(axis=0) if cl else np.zeros(M, dtype=object)
    for o in op:
        for i in range(M):
            if delay[i] or d[o, i] == 0:
                Q[o, i] = d[o, i]
            elif servers[i] == 1:
                Q[o, i] = d[o, i] * (1 + Qcl[i]) * inflate[i]
            else:  # open chains only: M/M/k, split by load
                Q[o, i] = sp.cancel(_erlang(U[i], int(servers[i]))) * d[o, i] / U[i]
    return net_quantities(c, qn, X, Q, visits, S, MV)


__all__ = ["symbolic_mva", "parameter_symbols", "parameter_values"]


# public names for other symbolic solvers (the CTMC path reuses them)
mean_expr = _mean
delay_expr = _delay
exact_number = _exact


def class_service_mean(c, qi: int, k: int, sym, env) -> Any:
    """Mean service time of class ``k`` of compiled queue ``qi`` as an expression."""
    q = c.queues[qi]
    place = c.net.place_map[c.places[q.places[k]].name]
    color = c.slot_color[q.classes[k]]
    dist = next((s.dist for s in place.service if s.color is not None
                 and evaluate(s.color, env) == color), None)
    dist = dist or next(s.dist for s in place.service if s.color is None)
    return _mean(dist, q.service[k], sym)
