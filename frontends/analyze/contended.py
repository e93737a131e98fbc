"""Locks and conditions a trace shows only when a thread blocked on them.

A kernel-side trace (strace, perf: the header lacks ``lock_uncontended``) sees a
mutex only when a thread had to wait for it and a condition variable only when a
waiter slept or a notify woke one: the acquisitions that found the lock free, the
waits that found their predicate true and the notifies nobody waited for made no
system call.  Read as a model those partial sequences are wrong in both directions
(a lock taken in one pass of ten; a notify that in the model finds no waiter and
is lost), so they are left out: their events are removed before the analysis, the
time a thread spent blocked in them is not CPU (the trace's CPU clock does not
run in a system call), and the model's header names them.  Barriers and joins,
which every party reaches through a system call or a wake, stay.

A join shows only when the joined thread was still running (:func:`unseen_joins`): a
worker that only computed and had ended leaves its parent's ``pthread_join`` without a
call; a worker still waiting for work when the process exits is killed, not joined.
Such a thread -- no operation left, never seen joined -- is joined, ``inferred``, right
before its parent's first event after its end (or its parent's end), so that
:mod:`.forks` reads the pair as a fork and a join.

>>> evs = {1: [{"kind": "acquire", "tid": 1, "ts": 5, "obj": 9, "dur": 40},
...            {"kind": "io", "tid": 1, "ts": 60, "op": "read"}]}
>>> objs = [{"kind": "object", "tid": 1, "ts": 0, "obj": 9, "type": "lock", "name": "mutex_9"}]
>>> by, note = blocking_only(evs, objs, {"file_io": True})
>>> [e["kind"] for e in by[1]], note
(['io'], ['# Seen only when a thread blocked (no lock_uncontended in the trace), not modelled: lock mutex_9 (1 waits).'])
"""
from __future__ import annotations

import re

#: object types whose events are partial without lock_uncontended
PARTIAL = frozenset({"lock", "rlock", "cond", "sem", "bsem"})
_KINDS = frozenset({"acquire", "release", "wait", "notify"})


def blocking_only(by: dict, objects: list, capabilities: dict) -> tuple[dict, list[str]]:
    """(events by thread without the partial objects' events, header notes).

    ``capabilities``: the trace header's.  With ``lock_uncontended`` nothing changes."""
    if capabilities.get("lock_uncontended"):
        return by, []
    partial = {o["obj"]: o for o in objects if o.get("type") in PARTIAL}
    declared = {o["obj"] for o in objects}
    waits: dict = {}
    out = {}
    for tid, evs in by.items():
        kept = []
        for e in evs:
            if e["kind"] == "notify" and e.get("obj") not in declared:
                continue                  # a wake on an address of unknown use
            if e["kind"] in _KINDS and e.get("obj") in partial and e.get("on") in (None, "cond"):
                if e["kind"] in ("acquire", "wait"):
                    waits[e["obj"]] = waits.get(e["obj"], 0) + 1
                continue
            kept.append(e)
        out[tid] = kept if len(kept) != len(evs) else evs
    if not waits:
        return out, []
    # objects of one kind made per task (a future each) are one line: name_ADDRESS -> name
    kinds: dict = {}
    for o, n in sorted(waits.items()):
        name = str(partial[o].get("name", o))
        key = (partial[o]["type"], re.sub(r"_[0-9a-f]+$", "", name))
        got = kinds.setdefault(key, [name, 0, 0])
        got[1] += 1
        got[2] += n
    names = ", ".join(f"{t} {name if k == 1 else base} ({n} waits"
                      + (f", {k} objects)" if k > 1 else ")")
                      for (t, base), (name, k, n) in kinds.items())
    return out, [f"# Seen only when a thread blocked (no lock_uncontended in the trace), not "
                 f"modelled: {names}."]


def unseen_joins(by: dict, capabilities: dict) -> tuple[dict, int]:
    """(events by thread with the joins a kernel-side trace could not see, how many).

    A thread that ended with its process (``exit`` kills the threads still waiting for
    work) is joined right before its parent's end.

    Only without ``lock_uncontended`` (a trace that shows blocking calls only)."""
    if capabilities.get("lock_uncontended"):
        return by, 0
    quiet = {"thread_start", "thread_end", "object"}
    joined = {e.get("target") for evs in by.values() for e in evs
              if e["kind"] == "wait" and e.get("on") == "join"}
    out, n = dict(by), 0
    for tid, evs in by.items():
        start = evs[0] if evs and evs[0]["kind"] == "thread_start" else None
        parent = start.get("parent") if start else None
        if parent not in by or tid in joined or evs[-1]["kind"] != "thread_end" or \
                any(e["kind"] not in quiet for e in evs) or not out[parent]:
            continue
        end = evs[-1]["ts"]
        pev = out[parent]
        at = next((i for i, e in enumerate(pev) if e["ts"] > end and e["kind"] != "thread_end"),
                  None)
        if at is None and pev[-1]["kind"] == "thread_end":
            at = len(pev) - 1            # ended with the process (exit kills the threads)
        if at is None:
            continue
        nxt = pev[at]
        join = {"kind": "wait", "tid": parent, "ts": nxt["ts"], "on": "join", "target": tid,
                "dur": 0, "ok": True, "inferred": True,
                **({"cpu": nxt["cpu"]} if "cpu" in nxt else {})}
        out[parent] = pev[:at] + [join] + pev[at:]
        n += 1
    return out, n
