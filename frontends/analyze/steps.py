"""A thread's events as *steps*: an operation and the code fragment before it.

A step is one operation the model represents -- take or put an item, lock or
unlock a mutex, acquire or release permits, await a barrier, wait on or notify
a condition, file or socket I/O, sleep -- together with the code fragment
that ran before it: the stretch since the end of the previous operation
(``trace_query.fragments``).  The fragment's CPU demand is the difference of
the thread CPU clock (``cpu``) between the two events; the CPU an operation
used itself (``cpu_dur``: copying data, re-taking the GIL) counts with the
fragment before it (a critical section is not made longer by the CPU its
lock's waiters burn), except for file I/O, whose own time the model keeps
(page-cache hits are CPU).  Without ``thread_cpu`` the wall time stands in.

Operations the model does not represent (object creation, joins, waits for
futures and events, markers, failed tries, re-entrant lock acquisitions) are
*folded*: their fragment and their own time go to the next step.  Events
nested in an earlier span of the same thread (the lock release inside a
condition wait) are skipped.

A step's *token* ``(action, target, site)`` names what it does where: the
same operation reached from two code locations gives two tokens, so the call
graph keeps the two paths apart (context splitting by site).

>>> from qpn.frontends.analyze.objects import ObjectTable
>>> evs = [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0},
...        {"kind": "object", "tid": 1, "ts": 10, "cpu": 10, "obj": 5, "type": "lock"},
...        {"kind": "acquire", "tid": 1, "ts": 100, "cpu": 90, "obj": 5, "dur": 0, "site": "p.py:3"},
...        {"kind": "release", "tid": 1, "ts": 400, "cpu": 380, "obj": 5, "site": "p.py:3"}]
>>> steps = thread_steps(evs, ObjectTable(evs))
>>> [(s.action, s.site, s.cpu, s.wall) for s in steps]
[('lock', 'p.py:3', 90, 100), ('unlock', 'p.py:3', 290, 300)]
"""
from __future__ import annotations

from typing import Sequence

from .objects import ObjectTable, kind_of

#: actions that take part in the model; everything else is folded
ACTIONS = ("take", "put", "lock", "unlock", "acquire", "release", "await", "wait",
           "notify", "notify_all", "io", "sock", "sleep")
#: actions of a producer / consumer of items (c_out / c_in)
SOCKET_OPS = frozenset({"send", "recv", "accept", "connect"})
CONTAINERS = frozenset({"task", "span"})
SKIPPED = frozenset({"cpu", "disk", "wakeup", "sample", "counter", "mark", "probe"})


class Step:
    """One operation of one thread and the fragment before it (times in ns)."""

    __slots__ = ("tid", "action", "key", "site", "ev", "start", "cpu", "wall",
                 "own_cpu", "dur", "drop", "klass", "tok", "out", "ts", "item", "fd", "hidden")

    def __init__(self, tid, action, key, site, ev, start, cpu, wall, own_cpu, dur):
        self.tid = tid
        self.action = action          # one of ACTIONS
        self.key = key                # object key (obj, generation), or the I/O op
        self.site = site              # code location of the operation
        self.ev = ev                  # the event
        self.start = start            # when the fragment began (end of the previous op)
        self.cpu = cpu                # fragment CPU (None: unknown, e.g. start-up)
        self.wall = wall              # fragment wall time
        self.own_cpu = own_cpu        # CPU the operation used itself
        self.dur = dur                # how long the operation took (blocking included)
        self.drop = False
        self.klass = None             # the fragment class (model step) it was assigned to
        self.tok = None               # small int standing for ``token`` (see structure.py)
        self.out = False              # outside the work phase
        # copied from the event while it is at hand: later passes over a
        # million steps then need not touch the event dicts (memory latency)
        self.ts = ev["ts"]            # when the operation began
        self.item = ev.get("item")    # the queue item handed over (take / put)
        self.fd = ev.get("fd")        # the file descriptor of an I/O operation
        self.hidden = 0               # blocked time of folded operations in the fragment

    @property
    def token(self) -> tuple:
        """(action, object key, site): what identifies the step's place in the code."""
        return (self.action, self.key, self.site)

    @property
    def end(self) -> int:
        """When the step ended (ns)."""
        return self.ts + self.dur

    @property
    def blocked(self) -> int:
        """Time the operation spent waiting (its duration minus its own CPU)."""
        return max(0, self.dur - self.own_cpu)

    def __repr__(self) -> str:
        return f"Step({self.action} {self.key} @{self.site}, cpu={self.cpu}, wall={self.wall})"


def classify(ev: dict, objects: ObjectTable, held: dict) -> tuple | None:
    """(action, key) of an event, or None if it is folded into the next step."""
    k = ev["kind"]
    if k == "get" or k == "put":
        if ev.get("ok", True) is False or "obj" not in ev:
            return None
        return ("take" if k == "get" else "put", objects.key(ev["obj"], ev["ts"]))
    if k == "acquire" or k == "release":
        if ev.get("ok", True) is False:
            return None
        key = objects.key(ev["obj"], ev["ts"])
        if kind_of(objects.type(key, "lock")) == "semaphore":
            return (k, key)
        action = lock_action(k, key, held)
        return None if action is None else (action, key)
    if k == "wait":
        on = ev.get("on")
        if on == "barrier":
            return ("await", objects.key(ev["obj"], ev["ts"])) if "obj" in ev else None
        if on == "cond" and "obj" in ev:
            return ("wait", objects.key(ev["obj"], ev["ts"]))
        if on == "sleep":
            return ("sleep", None)
        return None                          # join, future, event, gil, select, other
    if k == "notify":
        if ev.get("on", "cond") != "cond" or "obj" not in ev:
            return None
        return ("notify_all" if ev.get("all") else "notify", objects.key(ev["obj"], ev["ts"]))
    if k == "io":
        op = ev["op"]
        if op in SOCKET_OPS:
            return ("sock", op)
        if ev.get("ok", True) is False:
            return None
        return ("io", op)
    return None


def lock_action(kind: str, key, held: dict) -> str | None:
    """``lock``/``unlock`` for an acquire/release of mutex ``key``, or None for a
    re-entrant (RLock) one inside the outer pair, which folds; ``held`` counts
    the thread's depth per mutex."""
    depth = held.get(key, 0)
    if kind == "acquire":
        held[key] = depth + 1
        return "lock" if depth == 0 else None
    if depth <= 0:
        return "unlock"
    held[key] = depth - 1
    return "unlock" if depth == 1 else None


FOLDED_KINDS = frozenset({"thread_start", "thread_end", "object", "request"})
IGNORED_KINDS = CONTAINERS | SKIPPED


def thread_steps(events: Sequence[dict], objects: ObjectTable, *,
                 thread_cpu: bool = True, tokens=None, joins: list | None = None,
                 probe_ns: int = 0, probe_cond_ns: int | None = None,
                 cond_locks: frozenset = frozenset(),
                 probe_queue_ns: int | None = None) -> list[Step]:
    """The steps of one thread (its events sorted by ``ts``).

    ``tokens`` (a :class:`~frontends.analyze.structure.Tokens`) numbers the
    steps' tokens as they are made.  The thread's joins of other threads
    (folded) are appended to ``joins`` if given (see :mod:`.joins`).
    ``probe_ns``: the recorder's own CPU per event (the header's ``probe_ns``),
    taken off the CPU between two events: the untraced program does not spend it.
    ``probe_cond_ns`` is that cost for events on the locks of conditions
    (``cond_locks``, raw object ids) and notifications, whose wrappers sit behind
    a library frame, ``probe_queue_ns`` for a queue's puts and gets; a fragment
    between two events loses half of each one's.
    """
    cond_cost = probe_ns if probe_cond_ns is None else probe_cond_ns
    queue_cost = probe_ns if probe_queue_ns is None else probe_queue_ns
    two_costs = cond_cost != probe_ns or queue_cost != probe_ns
    prev_probe = probe_ns
    out: list[Step] = []
    append = out.append
    held: dict = {}
    is_sem: dict = {}          # object key -> a semaphore (else a lock)
    prev_end = None            # end of the previous boundary event
    prev_cpu = None            # thread CPU clock at that end
    pend_cpu = 0               # folded CPU waiting for the next step
    pend_wait = 0              # folded operations' blocked time (in the next fragment's wall)
    frag_start = 0
    ignored, folded = IGNORED_KINDS, FOLDED_KINDS
    okey, ones = objects.key, objects.single
    ids, toks = (tokens.ids, tokens.tokens) if tokens is not None else (None, None)
    for ev in events:
        kind = ev["kind"]
        if kind in ignored:
            continue
        ts = ev["ts"]
        get = ev.get
        c = get("cpu") if thread_cpu else None
        if prev_end is None:
            frag_cpu = 0
            frag_start = ts
        elif ts < prev_end:
            continue                         # nested in the previous span
        elif c is not None and prev_cpu is not None:
            this = (cond_cost if kind == "notify" or get("obj") in cond_locks else
                    queue_cost if kind == "put" or kind == "get" else probe_ns) \
                if two_costs else probe_ns
            frag_cpu = c - prev_cpu - ((prev_probe + this) >> 1)
            prev_probe = this
            if frag_cpu < 0:
                frag_cpu = 0
        else:
            frag_cpu = ts - prev_end         # no CPU clock: wall time stands in
        dur = get("dur", 0)
        own = get("cpu_dur", 0) if dur else 0
        if kind == "get" or kind == "put":   # the common case, inlined
            if get("ok", True) is False or "obj" not in ev:
                action = None
            else:
                action = "take" if kind == "get" else "put"
                obj = ev["obj"]
                one = ones.get(obj)          # ObjectTable.key's common case, inlined
                key = one[1] if one is not None and ts >= one[0] else okey(obj, ts)
        elif kind == "io":                   # as classify() does, inlined
            key = ev["op"]
            action = "sock" if key in SOCKET_OPS else None if get("ok", True) is False else "io"
        elif kind == "acquire" or kind == "release":     # classify(), with the type cached
            if get("ok", True) is False:
                action = None
            else:
                obj = ev["obj"]
                one = ones.get(obj)
                key = one[1] if one is not None and ts >= one[0] else okey(obj, ts)
                sem = is_sem.get(key)
                if sem is None:
                    sem = is_sem[key] = kind_of(objects.type(key, "lock")) == "semaphore"
                action = kind if sem else lock_action(kind, key, held)
        elif kind in folded or kind[:2] == "x_":
            action = None
        else:
            what = classify(ev, objects, held)
            action, key = what if what is not None else (None, None)
        if action is None:
            # fold: the fragment and the event's own CPU go to the next step
            pend_cpu += frag_cpu + own
            if dur > own:
                pend_wait += dur - own
            if kind == "wait" and joins is not None and get("on") == "join":
                joins.append(ev)
        else:
            # an operation's own CPU (cpu_dur: copying data, re-taking the GIL
            # after a wait) counts with the fragment before it, except for
            # file I/O, whose own time the model represents
            site = get("site")
            st = Step(ev["tid"], action, key, site, ev, frag_start,
                      pend_cpu + frag_cpu + (own if action != "io" else 0), ts - frag_start,
                      own, dur)
            if ids is not None:
                # without code locations (a kernel-side trace) the file (or, without paths,
                # the descriptor) tells apart reads of the program's data from the loader's
                t = (action, key, site if site is not None or action != "io"
                     else get("path") or (f"fd {get('fd')}" if "fd" in ev else None))
                i = ids.get(t)
                if i is None:
                    i = ids[t] = len(toks)
                    toks.append(t)
                st.tok = i
            if pend_wait:
                st.hidden = pend_wait
                pend_wait = 0
            append(st)
            pend_cpu = 0
            frag_start = ts + dur
        prev_end = ts + dur
        prev_cpu = (c + own) if c is not None else None
    return out


def fold(walk: Sequence[Step], keep, *, discard_leading: bool = True,
         in_place: bool = False) -> list[Step]:
    """The steps of ``walk`` for which ``keep(step)`` holds.

    A dropped step's fragment (and a file operation's own CPU; other
    operations' own CPU is already counted in their fragment) moves
    into the next kept step's fragment (the code still ran).  Steps dropped before the first kept one are
    discarded with their CPU when ``discard_leading`` (start-up code), and the
    first kept step then has an unknown fragment (``cpu = None``).
    A kept step whose fragment grows is a new Step, unless ``in_place`` (when
    nothing else refers to the walk's steps yet: it saves a copy per step).
    """
    out: list[Step] = []
    pend_cpu, pend_known, pend_wait = 0, True, 0
    start = None
    leading = True
    for st in walk:
        if start is None and not leading and pend_known and keep(st):
            out.append(st)                   # the common case: kept, nothing pending
            continue
        if not keep(st):
            if leading and discard_leading:
                continue
            if st.cpu is None:
                pend_known = False
            else:
                pend_cpu += st.cpu + (st.own_cpu if st.action == "io" else 0)
            pend_wait += st.hidden + max(0, st.dur - st.own_cpu)
            if start is None:
                start = st.start
            continue
        if leading and discard_leading:
            cpu = None                       # its fragment is start-up code
            s0 = st.start
        else:
            if start is None and pend_known:     # nothing folded into it: keep it as is
                out.append(st)
                leading = False
                continue
            cpu = None if (st.cpu is None or not pend_known) else st.cpu + pend_cpu
            s0 = start if start is not None else st.start
        if in_place:
            st.start, st.cpu, st.wall = s0, cpu, st.ts - s0
            st.hidden += pend_wait
            out.append(st)
        else:
            new = Step(st.tid, st.action, st.key, st.site, st.ev, s0, cpu, st.ts - s0,
                       st.own_cpu, st.dur)
            new.klass, new.tok = st.klass, st.tok
            new.hidden = st.hidden + pend_wait
            out.append(new)
        leading = False
        pend_cpu, pend_known, start, pend_wait = 0, True, None, 0
    return out
