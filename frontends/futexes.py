"""What each futex address of a traced program is, from how its threads wait and wake on it.

A kernel-side trace (strace, perf) sees a pthread mutex, a condition variable, a barrier
or a join only as ``futex`` calls on an address, and only when a thread had to block.
glibc's protocols leave each kind its own mark (nptl, glibc 2.25 and later):

=====================  ===============================================  ==================
kind                   waits and wakes                                  events
=====================  ===============================================  ==================
join                   a wait (``FUTEX_WAIT_BITSET`` in glibc 2.36)     ``wait on: join``,
                       for a thread's id; no wake (the kernel clears    ``target``
                       the word when the thread exits)
condition variable     ``FUTEX_WAIT_BITSET`` (cond waits take a clock)  ``wait on: cond``,
                                                                        ``notify`` (``all``)
barrier                ``FUTEX_WAIT``, woken all at once (``INT_MAX``)   ``wait on: barrier``
                       by the last thread to arrive                     (the last: ``dur 0``)
mutex                  ``FUTEX_WAIT`` for the value 2 (locked, with     ``acquire``
                       waiters), woken one at a time (a wake of one     (``contended``),
                       alone: an unlock whose waiter gave up);          ``release``
                       ``LOCK_PI``
=====================  ===============================================  ==================

An address that fits none (a hand-rolled futex, an atomics-based queue) stays
``wait on: other`` / ``notify``.  An uncontended lock, a signal nobody waited for and a
barrier round a thread reached last-but-not-blocked make no call: the trace does not have
them (its header lacks ``lock_uncontended``).  A barrier's parties are the threads
that ever took part in it (each round every party waits or wakes, apart from rare races).

>>> calls = [FutexCall(2, 10, 50, 0x40, "wait", False, 2, 0),        # 2 blocks on a mutex
...          FutexCall(1, 40, 1, 0x40, "wake", False, 1, 1),         # 1 unlocks it
...          FutexCall(2, 70, 30, 0x80, "wait", True, 0, 0),         # 2 waits on a condition
...          FutexCall(1, 99, 1, 0x80, "wake", False, 1, 1)]
>>> evs, objs = futex_events(calls, threads={1, 2})
>>> [(e["kind"], e.get("on"), e["obj"]) for e in evs]
[('acquire', None, 64), ('release', None, 64), ('wait', 'cond', 128), ('notify', 'cond', 128)]
>>> [(o["type"], o["obj"]) for o in objs]
[('lock', 64), ('cond', 128)]
"""
from __future__ import annotations

from dataclasses import dataclass, replace

#: a wake of this many or more wakes every waiter (glibc passes INT_MAX)
WAKE_ALL = 1 << 30


@dataclass(frozen=True)
class FutexCall:
    """One futex call: who, when, on which address, what it asked and what it got.

    ``op`` is ``wait``, ``wake``, ``lock`` (``FUTEX_LOCK_PI``) or ``unlock``; ``bitset``
    whether the wait was ``FUTEX_WAIT_BITSET``; ``val`` the value waited for, or the
    number of threads a wake may wake; ``ret`` the call's result (a wake's: threads woken),
    None when unknown; ``space`` the address space (process) the address belongs to."""
    tid: int
    ts: int
    dur: int | None
    addr: int
    op: str
    bitset: bool
    val: int | None
    ret: int | None
    space: int = 0
    cpu: int | None = None            # the thread's (busy) CPU clock at ts


def classify(calls: list[FutexCall], threads: set[int]) -> dict[tuple[int, int], str]:
    """(space, address) -> ``join``, ``cond``, ``barrier``, ``mutex`` or ``other``.

    ``threads``: every thread id the trace has (a wait for one of them is a join)."""
    seen: dict[tuple[int, int], dict] = {}
    for c in calls:
        s = seen.setdefault((c.space, c.addr), {"bitset": 0, "all": 0, "two": 0, "one": 0,
                                                 "pi": 0, "join": 0, "waits": 0})
        if c.op == "wait":
            s["waits"] += 1
            s["bitset"] += c.bitset
            s["two"] += c.val == 2
            s["join"] += c.val in threads and c.val != c.tid
        elif c.op == "wake":
            s["all"] += c.val is not None and c.val >= WAKE_ALL
            s["one"] += c.val == 1
        else:
            s["pi"] += 1
    kinds = {}
    for key, s in seen.items():
        if s["join"] and s["join"] == s["waits"] and not s["one"] + s["all"]:
            kinds[key] = "join"
        elif s["pi"]:
            kinds[key] = "mutex"
        elif s["bitset"]:
            kinds[key] = "cond"
        elif s["all"] and s["waits"]:
            kinds[key] = "barrier"
        elif s["two"] or s["one"]:
            kinds[key] = "mutex"          # (an unlock's wake whose waiter gave up, EAGAIN)
        else:
            kinds[key] = "other"
    return kinds


def _one_word_per_cond(calls: list[FutexCall]) -> list[FutexCall]:
    """glibc's condition variable waits on either of two words (``__g_signals[2]``, 8-byte
    aligned, 4 bytes apart): both become the first, the condition's one address."""
    words = {(c.space, c.addr) for c in calls if c.op == "wait" and c.bitset and c.addr & 7}
    if not words:
        return calls
    return [replace(c, addr=c.addr & ~7) if (c.space, c.addr) in words else c for c in calls]


_TYPE = {"mutex": "lock", "cond": "cond", "barrier": "barrier"}


#: a thread's waits on one mutex this close (ns) are one acquisition (woken, beaten to it)
MERGE_GAP = 50_000


def futex_events(calls: list[FutexCall], threads: set[int], *,
                 merge_gap: int = MERGE_GAP) -> tuple[list[dict], list[dict]]:
    """The neutral events of ``calls`` (in ts order) and the ``object`` events declaring
    the mutexes, conditions and barriers found (a barrier with its ``parties``).

    A thread's back-to-back waits on one mutex (woken, then beaten to it: the next wait
    starts within ``merge_gap`` ns of the last one's end) are one acquisition, from the
    first wait's start to the last one's end."""
    calls = _one_word_per_cond(sorted(calls, key=lambda c: c.ts))
    kinds = classify(calls, threads)
    events: list[dict] = []
    last_acquire: dict[int, dict] = {}          # tid -> its acquire still growing
    parties: dict[tuple[int, int], set] = {}
    first: dict[tuple[int, int], FutexCall] = {}
    for c in calls:
        key = (c.space, c.addr)
        kind = kinds[key]
        first.setdefault(key, c)
        ev: dict = {"tid": c.tid, "ts": c.ts, "obj": c.addr}
        if c.cpu is not None:
            ev["cpu"] = c.cpu
        dur = c.dur if c.dur is not None else 0
        ok = c.ret is not None and c.ret >= 0
        grow = last_acquire.pop(c.tid, None)
        if kind == "mutex" and c.op in ("wait", "lock"):
            if grow is not None and grow["obj"] == c.addr and \
                    c.ts - (grow["ts"] + grow["dur"]) <= merge_gap:
                grow["dur"] = max(grow["dur"], c.ts + dur - grow["ts"])
                last_acquire[c.tid] = grow
                continue
            ev.update(kind="acquire", dur=dur, contended=True)
            last_acquire[c.tid] = ev
        elif kind == "mutex":
            ev.update(kind="release")
        elif kind == "cond":
            if c.op == "wait":
                ev.update(kind="wait", on="cond", dur=dur, ok=ok)
            else:
                ev.update(kind="notify", on="cond", all=c.val is not None and c.val >= WAKE_ALL,
                          waiters=max(0, c.ret or 0))
        elif kind == "barrier":
            parties.setdefault(key, set()).add(c.tid)
            if c.op == "wait":
                ev.update(kind="wait", on="barrier", dur=dur, ok=True)
            elif c.val is not None and c.val >= WAKE_ALL:
                ev.update(kind="wait", on="barrier", dur=0, ok=True)    # the last to arrive
            else:
                continue
        elif kind == "join" and c.op == "wait":
            ev.update(kind="wait", on="join", dur=dur, ok=ok, target=c.val)
        elif c.op in ("wait", "lock"):
            ev.update(kind="wait", on="other", dur=dur, ok=ok)
        else:
            ev.update(kind="notify", waiters=max(0, c.ret or 0))
        events.append(ev)
    objects = []
    for key, c in first.items():
        kind = kinds[key]
        if kind in _TYPE:
            o = {"kind": "object", "tid": c.tid, "ts": c.ts, "obj": c.addr, "type": _TYPE[kind],
                 "name": f"{kind}_{c.addr:x}", **({"cpu": c.cpu} if c.cpu is not None else {})}
            if kind == "barrier":
                o["parties"] = len(parties[key])
            objects.append(o)
    return events, objects
