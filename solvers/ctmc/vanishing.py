"""Vanishing markings that can loop through immediate firings, absorbed exactly.

When rounds of immediate firings do not end (a loop of immediate transitions, or a run
longer than the explorer's rounds), the vanishing markings reachable from the entering
rows are collected as a graph (:func:`vanishing_graph`), checked for timeless traps
(:func:`refuse_traps`), and absorbed into the tangible markings they lead to with
``(I - P_VV)^-1`` (:func:`absorb`): for each vanishing marking, the probability of
each tangible exit and the expected firings of each immediate mode on the way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qpn.errors import SolverError

#: vanishing markings resolved at once, at most (and the explorer's state limit)
MAX_VANISHING = 200_000


@dataclass
class VanishingGraph:
    """Vanishing markings (by number), their edges and the tangible rows they reach."""
    rows: list = field(default_factory=list)          # vanishing markings' rows
    keys: dict = field(default_factory=dict)          # a row's key -> its number
    to_vanishing: list = field(default_factory=list)  # (from, to, probability)
    to_tangible: list = field(default_factory=list)   # (from, tangible row number, probability)
    tangible: list = field(default_factory=list)      # tangible rows reached, with repeats
    mode_prob: list = field(default_factory=list)     # (marking, immediate mode, probability)
    cut: set = field(default_factory=set)             # markings whose choice the cut-off changed
    entries: list = field(default_factory=list)       # per entering row, its marking

    def add(self, key, row: np.ndarray) -> tuple[int, bool]:
        """The number of the marking of ``key`` and whether it is new."""
        v = self.keys.get(key)
        if v is not None:
            return v, False
        self.keys[key] = v = len(self.rows)
        self.rows.append(row)
        return v, True


def vanishing_graph(ex, R0: np.ndarray) -> VanishingGraph:
    """Every vanishing marking reachable from the (vanishing) rows ``R0`` by immediate
    firings, breadth first; ``ex`` is the :class:`~.explore.Explorer` (its choice of
    immediate modes, its dynamics, its keys and its budget).

    A round fires the whole frontier as one batch: per marking in Python, a thin chain
    of 17,165 vanishing markings took 8 s (campaign 49)."""
    g = VanishingGraph()
    for k, row in zip(ex._key_list(R0), R0):
        g.entries.append(g.add(k, row)[0])
    todo = list(range(len(g.rows)))
    cap = min(MAX_VANISHING, ex.limit)
    while todo:
        ex.spend_round(len(todo), f"{len(g.rows):,} vanishing markings")
        batch = np.stack([g.rows[v] for v in todo])
        E, P = ex._immediate_choice(batch)
        if not E.any(axis=1).all():
            raise RuntimeError("tangible row in vanishing set")
        g.cut.update(np.asarray(todo)[ex._cut_rows(batch, E)].tolist())
        bi, jj = np.nonzero(P > 0)            # row-major: marking by marking, mode by mode
        src = np.asarray(todo, dtype=np.int64)[bi]
        pij = P[bi, jj]
        g.mode_prob.extend(zip(src.tolist(), ex.imm[jj].tolist(), pij.tolist()))
        # par carries the pair's number through the splits of fire (phases, servers)
        Rn, wn, pair = ex.dyn.fire(batch[bi], pij, np.arange(len(bi)), ex.imm[jj])
        order = np.argsort(pair, kind="stable")
        Rn, wn, vsrc = Rn[order], wn[order], src[pair[order]]
        En, _ = ex._immediate_choice(Rn)
        vanish = En.any(axis=1)
        keys = iter(ex._key_list(Rn[vanish]))
        todo = []
        for r, (v, wr, is_v) in enumerate(zip(vsrc.tolist(), wn.tolist(), vanish.tolist())):
            if is_v:
                u, new = g.add(next(keys), Rn[r])
                if new:
                    todo.append(u)
                g.to_vanishing.append((v, u, wr))
            else:
                g.to_tangible.append((v, len(g.tangible), wr))
                g.tangible.append(Rn[r])
        if len(g.rows) > cap:
            # vanishing markings count against the state limit too (--limit 20,000 let
            # 200,000 of them take 22 s)
            raise SolverError(f"immediate transitions generate more than {cap:,} vanishing "
                              "markings in a row (the state limit; a very long run of "
                              "immediate firings)", methods=("des",))
    return g


def _edges(g: VanishingGraph):
    import scipy.sparse as sp
    nv = len(g.rows)
    e = g.to_vanishing
    return sp.csr_matrix(((np.ones(len(e)) if e else []), ([x[0] for x in e], [x[1] for x in e])),
                         shape=(nv, nv))


def entries_at_cutoff(g: VanishingGraph) -> np.ndarray:
    """Per entering row: whether it can reach a marking whose choice the population
    cut-off changed (its parent is then at the cut-off)."""
    hit = np.zeros(len(g.rows), dtype=bool)
    if not g.cut:
        return hit[np.asarray(g.entries, dtype=np.int64)]
    hit[list(g.cut)] = True
    Pvv = _edges(g)
    while True:     # add the markings with an edge into the set, until none is new
        more = hit | ((Pvv @ hit.astype(float)) > 0)
        if (more == hit).all():
            break
        hit = more
    return hit[np.asarray(g.entries, dtype=np.int64)]


def refuse_traps(g: VanishingGraph, modes) -> None:
    """SolverError when immediate firings can go on forever: a closed set of vanishing
    markings with no way out, or no tangible marking reached at all."""
    from scipy.sparse.csgraph import connected_components
    Pvv = _edges(g)
    exits = np.zeros(len(g.rows), dtype=bool)
    for v, _t, _w in g.to_tangible:
        exits[v] = True
    _n, lab = connected_components(Pvv, directed=True, connection="strong")
    for comp in range(_n):
        members = np.flatnonzero(lab == comp)
        if exits[members].any():
            continue
        inside = set(members.tolist())
        if set(Pvv[members].indices.tolist()) <= inside:
            trans = sorted({modes[m].transition for v, m, _p in g.mode_prob if v in inside})
            raise SolverError("timeless trap: immediate transitions "
                              f"{', '.join(repr(t) for t in trans)} can fire forever without "
                              "time passing", construct="timeless trap", methods=())
    if not g.tangible:     # every path of immediate firings stays vanishing (up to the cut-off)
        trans = sorted({m.transition for m in modes if m.kind == "immediate"})
        raise SolverError("timeless trap: immediate transitions "
                          f"{', '.join(repr(t) for t in trans)} never lead to a marking where "
                          "time passes (their firings pile tokens up to the CTMC's cut-off)",
                          construct="timeless trap", methods=())


def absorb(g: VanishingGraph, nmodes: int, solve):
    """(X, N): per vanishing marking, the probability of each tangible row (X, nv x nt)
    and the expected firings of each mode before time passes (N, nv x nmodes), both
    sparse rows; ``solve(A, B)`` is ``A^-1 B`` (a SolverError when A is singular)."""
    import scipy.sparse as sp
    nv, nt = len(g.rows), len(g.tangible)
    A = sp.identity(nv, format="csc")
    if g.to_vanishing:
        a, b, c = zip(*g.to_vanishing)
        A = A - sp.csc_matrix((c, (a, b)), shape=(nv, nv))
    t = g.to_tangible
    B = sp.csc_matrix(([e[2] for e in t], ([e[0] for e in t], [e[1] for e in t])), shape=(nv, nt))
    mp = g.mode_prob
    M = sp.csc_matrix(([p for _, _, p in mp], ([v for v, _, _ in mp], [m for _, m, _ in mp])),
                      shape=(nv, nmodes))
    out = []
    for rhs, ncols in ((B, nt), (M, nmodes)):
        # spsolve returns a 1-D array when the right side has one column (or A one row)
        X = solve(A, rhs)
        out.append(sp.csr_matrix(np.reshape(X, (nv, ncols))) if not sp.issparse(X) else X.tocsr())
    return tuple(out)
