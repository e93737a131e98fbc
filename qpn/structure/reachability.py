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


def enabled_modes(c: CompiledNet, pre: np.ndarray, post: np.ndarray, m: np.ndarray,
                  dense: tuple | None = None) -> np.ndarray:
    """Boolean vector: which compiled modes are enabled in marking ``m``.

    ``dense``: :func:`dense_constraints` of ``c``, computed once by a caller that asks
    for many markings (converting the sparse matrices at every marking cost 80% of
    the exploration of a net with a capacity)."""
    inh, cap_t, cap_pre = dense if dense is not None else dense_constraints(c, pre, post)
    ok = np.all(pre <= m, axis=1)
    if inh is not None:
        blocked = inh @ m >= c.inh_threshold
        if blocked.any():
            ok[np.unique(c.inh_mode[blocked])] = False
    if cap_t is not None and ok.any():
        load = (m @ cap_t)[None, :] + cap_pre      # (modes x capacity groups) after firing
        ok &= np.all(load <= c.cap_limit[None, :], axis=1)
    return ok


def dense_constraints(c: CompiledNet, pre: np.ndarray, post: np.ndarray) -> tuple:
    """(inhibitor matrix, capacity matrix (slots x groups), each mode's change of every
    capacity group's load) as dense arrays; None where the net has none."""
    inh = c.inh.toarray() if c.inh_threshold.size else None
    if not c.cap_limit.size:
        return inh, None, None
    cap_t = c.cap.T.toarray()
    return inh, cap_t, (post - pre) @ cap_t


def explore(c: CompiledNet, limit: int = 20_000) -> ReachabilityResult:
    """Breadth-first search of the net's markings up to ``limit`` of them: the modes ever
    enabled, the dead markings, and whether immediate firings can loop forever."""
    pre = c.pre.toarray()
    post = c.post.toarray()
    dense = dense_constraints(c, pre, post)
    imm = np.array([md.kind == "immediate" for md in c.modes], dtype=bool)
    prio = np.array([md.priority for md in c.modes], dtype=float)
    qslots = np.flatnonzero(c.slot_is_queue)
    # depository slot of each queue slot
    dest = np.empty(c.nslots, dtype=np.int64)
    for q in c.queues:
        for s, d in zip(q.classes, q.dslots):
            dest[s] = d
    ever = np.zeros(len(c.modes), dtype=bool)
    seen = {c.m0.tobytes()}
    stack = [c.m0.copy()]
    deadlocks: list[np.ndarray] = []
    complete = True
    while stack:
        m = stack.pop()
        en = enabled_modes(c, pre, post, m, dense) if len(c.modes) else np.zeros(0, bool)
        succ = []
        if (en & imm).any():
            top = prio[en & imm].max()
            fire = np.flatnonzero(en & imm & (prio == top))
            ever[fire] = True
            succ = [m - pre[i] + post[i] for i in fire]
        else:
            fire = np.flatnonzero(en)
            ever[fire] = True
            succ = [m - pre[i] + post[i] for i in fire]
            for s in qslots[m[qslots] > 0]:
                n = m.copy()
                n[s] -= 1
                n[dest[s]] += 1
                succ.append(n)
            if not succ:
                deadlocks.append(m)
        for n in succ:
            key = n.tobytes()
            if key not in seen:
                if len(seen) >= limit:
                    complete = False
                    stack.clear()
                    break
                seen.add(key)
                stack.append(n)
    return ReachabilityResult(complete, len(seen), ever, deadlocks[:5])
