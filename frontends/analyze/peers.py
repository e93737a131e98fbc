"""Condition waits for the peers' state: left out of the model (docs/analyzer.md).

A wait that only the waiting pool's own threads notify, in a small share of its
iterations, waits for a state of its peers (a readers-writer lock's count, a turn) that
the model does not carry; as a synchronisation it could deadlock the model where the
program could not.
"""
from __future__ import annotations

import bisect

from .structure import leaves

#: a condition's waits in fewer than this share of its waiters' iterations are rare
PEER_WAIT_SHARE = 0.05


def peer_waits(an, assumptions: list) -> set:
    """Conditions whose waits are left out of the model (their CPU stays): waits that only
    the waiting pool's own threads notify, in fewer than ``PEER_WAIT_SHARE`` of the pool's
    iterations (a pass that waits again and again, woken while the state is still not
    right, counts once).  Such a wait is for the state of its peers (a readers-writer
    lock's count, a turn), which the model does not carry: as a synchronisation it would
    wait for a notify that may never come (with one thread, never), so the model
    deadlocks where the program could not.  A hand-made barrier waits in most iterations
    and stays."""
    waits: dict = {}
    notifiers: dict = {}
    for r in an.runners:
        if r.mode != "forever" or not r.iterations:
            continue
        header = an.tokens.tokens[r.header]
        starts: dict = {}                  # thread -> when its iterations began
        for lf in leaves(r.items):
            if lf.token == header:
                for st in lf.steps:
                    starts.setdefault(st.tid, []).append(st.ts)
            if lf.action == "wait":
                waits.setdefault(lf.token[1], {}).setdefault(r.name, [r, starts, []])[2].extend(lf.steps)
            elif lf.action in ("notify", "notify_all"):
                notifiers.setdefault(lf.token[1], set()).add(r.name)
    out = set()
    for key, by in waits.items():
        if len(by) != 1:
            continue
        ((name, (r, starts, steps)),) = by.items()
        for ts in starts.values():
            ts.sort()
        passes = len({(st.tid, bisect.bisect_right(starts.get(st.tid, []), st.ts)) for st in steps})
        if notifiers.get(key, set()) - {name} or passes >= PEER_WAIT_SHARE * r.iterations:
            continue
        out.add(key)
        site = an.objects.info(key).get("site", "?")
        assumptions.append((f"waits at {site}", (
            f"left out: {len(steps)} waits in {passes} of the {r.iterations} iterations of "
            f"'{name}' ({100 * passes / r.iterations:.2g}%), notified only by its own threads: "
            "a wait for its peers' state (a readers-writer lock, a turn), which the model "
            "does not carry")))
    return out
