"""Questions the analyzer asks of a trace: fragments, queue hand-offs, locks.

All functions take plain event dicts (as read by :mod:`frontends.trace`).

A *fragment* is the code a thread runs between the end of one event and the
start of the next: its wall time and CPU time tell computation that needs the
GIL (CPU well below wall while other threads run) from work in C code that
releases it or from time spent runnable.

>>> evs = [{"kind": "get", "tid": 1, "ts": 0, "cpu": 0, "dur": 50, "obj": 1, "item": 9},
...        {"kind": "put", "tid": 1, "ts": 150, "cpu": 80, "obj": 2, "item": 9}]
>>> [(f.wall, f.cpu) for f in fragments(evs)]
[(100, 80)]
"""
from __future__ import annotations

import collections
from typing import Iterable, NamedTuple, Sequence


def end_ts(ev: dict) -> int:
    """When an event ends: ``ts + dur`` (``ts`` for instantaneous events)."""
    return ev["ts"] + ev.get("dur", 0)


class Fragment(NamedTuple):
    """The stretch of one thread between two consecutive events."""

    tid: int
    before: dict              # the event that ends where the fragment starts
    after: dict               # the event that starts where the fragment ends
    wall: int                 # ns
    cpu: int | None           # ns of thread CPU, None without thread_cpu

    @property
    def site(self) -> tuple:
        """(site before, site after): the code between two events."""
        return (self.before.get("site"), self.after.get("site"))


# Spans that contain other events of their thread: they are not fragment
# boundaries (a condition wait contains its lock's release and re-acquire).
CONTAINERS = frozenset({"task", "span"})


def fragments(thread_events: Sequence[dict], *, containers=CONTAINERS) -> list[Fragment]:
    """Fragments of one thread's events (sorted by ts, as ``Trace.by_thread`` gives).

    Fragment CPU = cpu at the next event - (cpu at the previous one + its
    ``cpu_dur``); when ``cpu_dur`` is absent the span's CPU is taken as 0 (a
    blocking wait).  Nested events (inside an earlier span) are skipped.
    """
    out: list[Fragment] = []
    prev = None
    prev_end = None
    for ev in thread_events:
        if ev["kind"] in containers:
            continue
        if prev is not None:
            if ev["ts"] < prev_end:          # nested in prev (e.g. release inside a wait)
                continue
            cpu = None
            if "cpu" in ev and "cpu" in prev:
                cpu = max(0, ev["cpu"] - prev["cpu"] - prev.get("cpu_dur", 0))
            out.append(Fragment(ev["tid"], prev, ev, ev["ts"] - prev_end, cpu))
        prev, prev_end = ev, end_ts(ev)
    return out


def match_items(events: Iterable[dict]) -> list[tuple[dict, dict]]:
    """Pair each successful queue ``get`` with the ``put`` of the same item.

    Per (queue, item id), gets are matched in completion order with puts in
    start order: ids are unique only among live objects, so an id reused later
    pairs with its own later put.
    """
    puts: dict = collections.defaultdict(collections.deque)
    gets: list = []
    for ev in events:
        k = ev["kind"]
        if k == "put" and ev.get("ok", True):
            puts[(ev["obj"], ev["item"])].append(ev)
        elif k == "get" and ev.get("ok", True) and "item" in ev:
            gets.append(ev)
    for q in puts.values():
        q_sorted = sorted(q, key=lambda e: e["ts"])
        q.clear()
        q.extend(q_sorted)
    pairs = []
    for g in sorted(gets, key=end_ts):
        q = puts.get((g["obj"], g["item"]))
        if q:
            pairs.append((q.popleft(), g))
    return pairs


def lock_holds(events: Iterable[dict]) -> dict[int, list[int]]:
    """Hold times (ns) per lock object, from release events."""
    out: dict[int, list[int]] = collections.defaultdict(list)
    for ev in events:
        if ev["kind"] == "release" and "hold" in ev:
            out[ev["obj"]].append(ev["hold"])
    return dict(out)


def connections(events: Iterable[dict], processes: dict | None = None) -> list[tuple]:
    """[(end, events)]: each end of a socket connection, in the order they were opened,
    with its events in the order they took effect: the
    ``connect`` or ``accept`` that opened it (an accept's connection is its ``conn``
    fd), then the sends and receives on that fd until the fd is opened again.  An end is
    named (own address, peer address) when the opening event recorded both, so the two
    ends of one connection are (a, b) and (b, a); else ("fd", process, fd, ts).  An fd
    is its process's (``processes``: tid -> process, in a trace of several).  One pair
    of addresses may name several ends over a run (a client's port used again).

    Accepts and connects take effect when they return: a worker blocked in accept while
    another thread served the fd's previous connection must not take that one's I/O.

    >>> evs = [{"kind": "io", "tid": 1, "ts": 0, "dur": 5, "op": "connect", "fd": 4,
    ...         "local": "A:1", "peer": "B:80"},
    ...        {"kind": "io", "tid": 1, "ts": 9, "dur": 1, "op": "send", "fd": 4}]
    >>> [(k, [e["op"] for e in v]) for k, v in connections(evs)]
    [(('A:1', 'B:80'), ['connect', 'send'])]
    """
    proc = (processes or {}).get
    ios = sorted((e for e in events if e["kind"] == "io"),
                 key=lambda e: end_ts(e) if e.get("op") in _OPENS else e["ts"])
    live: dict = {}                          # (process, fd) -> the events of its end
    out: list = []
    for ev in ios:
        op = ev.get("op")
        if op in _OPENS:
            fd = ev.get("conn") if op == "accept" else ev.get("fd")
            if fd is None:
                continue
            p = proc(ev["tid"])
            end = ((ev["local"], ev["peer"]) if ev.get("local") and ev.get("peer")
                   else ("fd", p, fd, ev["ts"]))
            live[(p, fd)] = [ev]
            out.append((end, live[(p, fd)]))
        elif op in ("send", "recv"):
            evs = live.get((proc(ev["tid"]), ev.get("fd")))
            if evs is not None:
                evs.append(ev)
    return out


#: the operations that open a connection's end on an fd
_OPENS = ("accept", "connect")


def connection_spans(events: Iterable[dict], processes: dict | None = None) -> list[int]:
    """ns from the end of each ``accept`` to the end of the last socket I/O on the
    connection it returned (its ``conn`` fd), by any thread: how long the traced server
    held the connection (:func:`connections`).  The time before the accept returned (the
    handshake, the accept queue, a worker blocked in accept while idle) and after the
    last send (the client reading the rest) are outside it.  In a trace of several
    processes (``processes``: tid -> process, frontends/processes.py) connections that a
    traced thread made (its connect's addresses are the accept's) are calls between the
    processes, not the clients' (in one process's trace every connection counts: its
    clients may be threads of the program).

    >>> evs = [{"kind": "io", "tid": 1, "ts": 0, "dur": 5, "op": "accept", "fd": 3, "conn": 7},
    ...        {"kind": "io", "tid": 2, "ts": 20, "dur": 10, "op": "recv", "fd": 7},
    ...        {"kind": "io", "tid": 2, "ts": 50, "dur": 30, "op": "send", "fd": 7},
    ...        {"kind": "io", "tid": 1, "ts": 90, "dur": 5, "op": "accept", "fd": 3, "conn": 7}]
    >>> connection_spans(evs)             # the second accept got fd 7 again: no I/O on it
    [75, 0]
    """
    ends = connections(events, processes)
    made = {k for k, evs in ends if evs[0]["op"] == "connect"} if processes else set()
    return [max(map(end_ts, evs)) - end_ts(evs[0]) for k, evs in ends
            if evs[0]["op"] == "accept" and (k[1], k[0]) not in made]


def thread_cpu(thread_events: Sequence[dict]) -> int | None:
    """CPU ns a thread used between its first and last event (None if unknown)."""
    cpus = [e["cpu"] for e in thread_events if "cpu" in e]
    return cpus[-1] - cpus[0] if len(cpus) > 1 else None
