"""Untimed reachability of a compiled net (small nets; for structural checks).

Immediate modes have priority over timed ones and over service completions,
and higher immediate priorities over lower ones, as in the timed semantics.
Service lets any queued token finish (a superset of what each discipline
allows), so "never enabled" here means never enabled under any timing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..compile import CompiledNet


@dataclass
class ReachabilityResult:
    """What a bounded exploration of the markings found."""
    complete: bool                     # False if the limit was hit
    markings: int
    ever_enabled: np.ndarray           # per compiled mode
    deadlocks: list[np.ndarray] = field(default_factory=list)
    vanishing_loop: bool = False


def enabled_modes(c: CompiledNet, m: np.ndarray) -> np.ndarray:
    """Boolean vector: which compiled modes are enabled in marking ``m`` (input tokens,
    inhibitors and capacities; priorities are the search's business).

    >>> import qpn
    >>> from qpn.compile import compile_net
    >>> c = compile_net(qpn.parse("place a init 1\\nplace b capacity 1 init 1\\n"
    ...                           "transition t : a -> b delay exp(1)"))
    >>> enabled_modes(c, c.m0).tolist(), enabled_modes(c, np.array([1, 0])).tolist()
    ([False], [True])
    """
    rules = _Rules(c)
    return _enabled(c, rules.pre, np.asarray(m, dtype=np.int64)[None, :], rules.cap)[0]


#: entries of the (markings x arcs) work arrays of one batch of the search
_BATCH_CELLS = 1 << 22
#: a level of the search with fewer markings than this is stepped marking by marking
#: in Python (a chain of markings, as in an open queue, would pay numpy's overhead
#: at each of its thousands of levels)
_SMALL_LEVEL = 24


def explore(c: CompiledNet, limit: int = 20_000) -> ReachabilityResult:
    """Breadth-first search of the net's markings up to ``limit`` of them: the modes ever
    enabled, the dead markings (the shallowest first), and whether immediate firings
    can loop forever.

    A level of the search with many markings is one batch of array operations
    (enabling, priorities, successors); a level of a few is stepped in Python.

    >>> import qpn
    >>> from qpn.compile import compile_net
    >>> net = qpn.parse("place a init 2\\nplace b\\ntransition t : a -> b delay exp(1)")
    >>> r = explore(compile_net(net))
    >>> r.complete, r.markings, r.ever_enabled.tolist(), [m.tolist() for m in r.deadlocks]
    (True, 3, [True], [[0, 2]])
    """
    rules = _Rules(c)
    ever = np.zeros(rules.nmodes, dtype=bool)
    m0 = tuple(int(x) for x in c.m0)
    seen = {m0}
    frontier = [m0]
    deadlocks: list[tuple] = []
    complete = True
    while frontier and complete:
        if len(frontier) < _SMALL_LEVEL:
            succ: list = []
            for m in frontier:
                fired, nxt = rules.step(m)
                ever[fired] = True
                succ.extend(nxt)
                if not nxt and len(deadlocks) < 5:
                    deadlocks.append(m)
        else:
            succ = []
            ms = np.array(frontier, dtype=np.int64)
            for lo in range(0, len(ms), rules.batch):
                fired, nxt, dead = rules.level(ms[lo:lo + rules.batch])
                ever |= fired
                succ.extend(map(tuple, nxt.tolist()))
                deadlocks.extend(map(tuple, dead[:max(0, 5 - len(deadlocks))].tolist()))
        frontier = []
        for n in succ:
            if n not in seen:
                if len(seen) >= limit:
                    complete = False
                    break
                seen.add(n)
                frontier.append(n)
    return ReachabilityResult(complete, len(seen), ever,
                              [np.array(m, dtype=np.int64) for m in deadlocks[:5]])


class _Rules:
    """The firing rules of a compiled net, as arrays for a batch of markings and as
    sparse Python lists for one marking (:meth:`level` and :meth:`step` agree)."""

    def __init__(self, c: CompiledNet) -> None:
        self.c = c
        self.pre = c.pre.tocsr()
        self.delta = (c.post - c.pre).toarray()
        self.nmodes, nslots = self.delta.shape
        self.imm = np.array([md.kind == "immediate" for md in c.modes], dtype=bool)
        self.prio = np.array([md.priority for md in c.modes], dtype=float)
        self.qslots = np.flatnonzero(c.slot_is_queue)
        self.qdelta = np.zeros((len(self.qslots), nslots), dtype=np.int64)  # a queued token served
        for q in c.queues:
            for s, d in zip(q.classes, q.dslots):
                i = np.searchsorted(self.qslots, s)
                self.qdelta[i, s] -= 1
                self.qdelta[i, d] += 1
        self.cap = None
        if c.cap_limit.size:
            cap_t = c.cap.T.toarray()
            self.cap = cap_t, self.delta @ cap_t        # each mode's change of each load
        width = max(self.pre.nnz, self.nmodes * max(1, c.cap_limit.size), nslots, 1)
        self.batch = max(1, _BATCH_CELLS // width)
        # the same rules as sparse lists, for one marking at a time
        p = self.pre
        self.need = [list(zip(p.indices[p.indptr[i]:p.indptr[i + 1]].tolist(),
                              p.data[p.indptr[i]:p.indptr[i + 1]].tolist()))
                     for i in range(self.nmodes)]
        self.change = [[(int(s), int(self.delta[i, s])) for s in np.flatnonzero(self.delta[i])]
                       for i in range(self.nmodes)]
        self.kinds = list(zip(self.imm.tolist(), self.prio.tolist()))
        inh = c.inh.tocsr()
        self.inhibitors = [(inh.indices[inh.indptr[g]:inh.indptr[g + 1]].tolist(), int(t), int(md))
                           for g, (t, md) in enumerate(zip(c.inh_threshold, c.inh_mode))]
        capm = c.cap.tocsr() if c.cap_limit.size else None
        self.groups = [] if capm is None else [
            (capm.indices[capm.indptr[g]:capm.indptr[g + 1]].tolist(), int(lim),
             self.cap[1][:, g].tolist()) for g, lim in enumerate(c.cap_limit)]
        self.served = [(int(s), int(np.flatnonzero(self.qdelta[i] > 0)[0]))
                       for i, s in enumerate(self.qslots)]

    def level(self, ms: np.ndarray) -> tuple:
        """For the markings ``ms``: (the modes that fire in any of them, the successors,
        the dead markings)."""
        en = _enabled(self.c, self.pre, ms, self.cap)
        cand = en & self.imm
        has_imm = cand.any(axis=1)
        if has_imm.any():          # only the highest immediate priority fires
            top = np.where(cand, self.prio, -np.inf).max(axis=1)
            fire = np.where(has_imm[:, None], cand & (self.prio == top[:, None]), en)
        else:
            fire = en
        served = (ms[:, self.qslots] > 0) & ~has_imm[:, None]
        dead = ~fire.any(axis=1) & ~served.any(axis=1)
        r, i = np.nonzero(fire)
        r2, i2 = np.nonzero(served)
        succ = np.concatenate([ms[r] + self.delta[i], ms[r2] + self.qdelta[i2]])
        return fire.any(axis=0), succ, ms[dead]

    def step(self, m: tuple) -> tuple[list, list]:
        """For one marking: (the modes that fire, the successors)."""
        blocked = {md for slots, t, md in self.inhibitors if sum(m[s] for s in slots) >= t}
        loads = [(sum(m[s] for s in slots), lim, ch) for slots, lim, ch in self.groups]
        en = [i for i, need in enumerate(self.need)
              if i not in blocked and all(m[s] >= k for s, k in need)
              and all(load + ch[i] <= lim for load, lim, ch in loads)]
        imm = [i for i in en if self.kinds[i][0]]
        served = []
        if imm:                    # only the highest immediate priority fires
            top = max(self.kinds[i][1] for i in imm)
            en = [i for i in imm if self.kinds[i][1] == top]
        else:
            served = [(s, d) for s, d in self.served if m[s] > 0]
        succ = []
        for i in en:
            n = list(m)
            for s, d in self.change[i]:
                n[s] += d
            succ.append(tuple(n))
        for s, d in served:
            n = list(m)
            n[s] -= 1
            n[d] += 1
            succ.append(tuple(n))
        return en, succ


def _enabled(c: CompiledNet, pre, ms: np.ndarray, cap: tuple | None) -> np.ndarray:
    """(markings x modes) booleans: which modes are enabled in each of the markings ``ms``
    (the batch form of :func:`enabled_modes`; ``pre`` is CSR, ``cap`` the capacity
    matrix (slots x groups) and each mode's change of every group's load, or None)."""
    nmodes = pre.shape[0]
    if not nmodes:
        return np.zeros((len(ms), 0), dtype=bool)
    short = ms[:, pre.indices] < pre.data            # an input arc the marking cannot serve
    cum = np.zeros((len(ms), pre.nnz + 1), dtype=np.int64)
    np.cumsum(short, axis=1, out=cum[:, 1:])
    ok = cum[:, pre.indptr[1:]] == cum[:, pre.indptr[:-1]]
    if c.inh_threshold.size:
        blocked = (c.inh @ ms.T).T >= c.inh_threshold          # (markings x inhibitor groups)
        if blocked.any():
            hit = np.zeros_like(ok)
            r, g = np.nonzero(blocked)
            hit[r, c.inh_mode[g]] = True
            ok &= ~hit
    if cap is not None and ok.any():
        cap_t, change = cap
        load = (ms @ cap_t)[:, None, :] + change[None, :, :]
        ok &= np.all(load <= c.cap_limit[None, None, :], axis=2)
    return ok
