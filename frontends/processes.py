"""Traces of several processes of one run, joined into one trace to model.

``qpn trace`` follows the Python processes a command starts and writes each
one's trace beside the command's (``program.children`` in its header);
``qpn build`` reads those too, and joins traces named on its command line that
were recorded at the same time by different processes (a client and a server
traced separately).  All of them read ``CLOCK_MONOTONIC`` of one machine, so
their timestamps are already on one clock: a send precedes its receive.

The joined trace keeps every thread, each tagged with its process's name
(``Trace.processes``: tid -> name), so the analyzer forms pools, GILs and
socket endpoints per process.  Object ids (addresses) of different processes
may coincide: those of the second and later processes are moved apart, but for ids of
the shared range (``SHARED_IDS`` and up: a pipe between processes, a process pool's
queues and work items, frontends/pytrace/layout.py), which name one thing in every
process; an ``object`` event for such an id is kept once.  Puts and gets on a shared
channel whose items the tracer could not name (a ``multiprocessing.Queue``: the receiver
does not know which put it took) are paired in FIFO order (:func:`pair_channels`).

>>> from qpn.frontends.trace import Trace, TraceHeader
>>> def one(pid, argv, t0):
...     h = TraceHeader(source="pytrace", program={"pid": pid, "argv": argv})
...     evs = [{"kind": "thread_start", "tid": pid, "ts": t0, "name": "MainThread"},
...            {"kind": "acquire", "tid": pid, "ts": t0 + 5, "obj": 77}]
...     return Trace(h, evs, f"{pid}.jsonl")
>>> a, b = one(10, ["front.py"], 0), one(20, ["back.py"], 3)
>>> same_run([a, b])
True
>>> j = join_traces([a, b])
>>> j.processes, [e["obj"] for e in j.events if e["kind"] == "acquire"]
({10: 'front', 20: 'back'}, [77, 4503599627370573])
"""
from __future__ import annotations

import os
import re

from qpn.errors import QPNError

from .clocks import offset as clock_offset
from .pytrace.layout import SHARED_IDS, SHARED_ITEMS, is_shared, shared_item
from .trace import Trace, TraceHeader

#: event fields that hold an object id (an address inside one process)
OBJECT_FIELDS = ("obj", "item", "lock", "queue", "pool")
#: how far apart the object ids of two processes are moved (above any address)
SPACING = 1 << 52


def children_of(trace: Trace) -> list[str]:
    """Paths of the traces of the Python processes ``trace``'s program started
    (``program.children``, relative to ``trace``'s file)."""
    names = (trace.header.program or {}).get("children") or []
    base = os.path.dirname(os.path.abspath(trace.path))
    # file names beside the trace only: a header does not send the reader elsewhere
    return [os.path.join(base, n) for n in names
            if n and n == os.path.basename(n) and n not in (".", "..")]


def span(trace: Trace) -> tuple[int, int]:
    """First and last timestamp of the trace's events (ns)."""
    ts = [e["ts"] for e in trace.events]
    return (min(ts), max(ts)) if ts else (0, 0)


def host(trace: Trace) -> str | None:
    """The machine the trace was taken on (``machine.host``), None if not recorded."""
    return (trace.header.machine or {}).get("host")


def wall_shift(trace: Trace, root: Trace) -> int:
    """ns to add to ``trace``'s timestamps to put them on ``root``'s clock: 0 on one
    machine (one CLOCK_MONOTONIC), else through the two wall clocks (``epoch_ns`` at
    ``start_ns``)."""
    if host(trace) == host(root) or host(trace) is None or host(root) is None:
        return 0
    h, r = trace.header, root.header
    if None in (h.epoch_ns, h.start_ns, r.epoch_ns, r.start_ns):
        return 0
    return (h.epoch_ns - h.start_ns) - (r.epoch_ns - r.start_ns)


def same_run(traces: list[Trace]) -> bool:
    """True when the traces are processes of one run: different processes (pids, or
    machines), and each one's events overlap in time with the first's (repeats of one
    program do not); traces of other machines are compared through the wall clocks."""
    ids = [((t.header.program or {}).get("pid"), host(t)) for t in traces]
    if len(traces) < 2 or any(i[0] is None for i in ids) or len(set(ids)) < len(ids):
        return False
    lo, hi = span(traces[0])
    for t in traces[1:]:
        s, e = span(t)
        d = wall_shift(t, traces[0])
        if not (s + d < hi and e + d > lo):
            return False
    return True


def process_name(header: TraceHeader) -> str:
    """A process's name for the model: its script's (or executable's) stem."""
    argv = (header.program or {}).get("argv") or [header.program.get("executable") or "process"]
    stem = os.path.splitext(os.path.basename(argv[0] or "process"))[0]
    return re.sub(r"\W+", "_", stem).strip("_") or "process"


def _names(traces: list[Trace]) -> list[str]:
    """Distinct process names: the stem, then its first differing argument, then the pid."""
    names = [process_name(t.header) for t in traces]
    for name in set(names):
        same = [i for i, n in enumerate(names) if n == name]
        if len(same) < 2:
            continue
        for i in same:
            argv = traces[i].header.program.get("argv") or []
            arg = next((a for a in argv[1:] if re.fullmatch(r"[A-Za-z_]\w*", a)), None)
            names[i] = f"{name}_{arg}" if arg else f"{name}_{traces[i].header.program['pid']}"
        if len({names[i] for i in same}) < len(same):
            for i in same:
                names[i] = f"{name}_{traces[i].header.program['pid']}"
    return names


def join_traces(traces: list[Trace]) -> Trace:
    """One trace of the processes ``traces`` (the first is the run's root: its header
    and program are the joined trace's); ``processes`` maps each thread to its
    process's name."""
    if len(traces) == 1:
        return traces[0]
    root = traces[0]
    sources = {t.header.source for t in traces}
    if len(sources) > 1:
        raise QPNError("qpn build: the traces of one run come from different tracers ("
                       + ", ".join(sorted(sources)) + "): join traces of one tracer")
    names = _names(traces)
    events: list = []
    groups: dict = {}
    declared: set = set()                   # shared ids whose object event is kept
    processes: dict = {}
    warnings = list(root.warnings)
    clocks = _align(traces, names)
    for k, (t, name) in enumerate(zip(traces, names)):
        by = t.by_thread()
        clash = set(by) & set(groups)
        if clash and wall_shift(t, root):            # another machine: thread ids of its own
            by = _renumbered(by, k * SPACING)
            clash = set(by) & set(groups)
        if clash:
            raise QPNError(f"{t.path}: thread ids {sorted(clash)[:3]} are also in another "
                           "process's trace: these traces are not of one run on one machine")
        if k:
            for evs in by.values():
                for ev in evs:
                    for f in OBJECT_FIELDS:
                        v = ev.get(f)
                        if type(v) is int and not SHARED_IDS <= v < 2 * SHARED_IDS:
                            ev[f] = v + k * SPACING
            warnings += [f"{os.path.basename(t.path)}: {w}" for w in t.warnings]
        for tid, evs in by.items():
            processes[tid] = t.processes.get(tid, name)
            groups[tid] = evs = _first_declarations(evs, declared)
            events += evs
    caps = {c: all(t.header.capabilities.get(c, False) for t in traces)
            for c in root.header.capabilities}
    h = root.header
    header = TraceHeader(h.source, caps, h.clock, dict(h.program), dict(h.runtime), h.start_ns,
                         h.epoch_ns, h.version, h.probe_ns, h.probe_cond_ns, dict(h.machine),
                         dict(h.extra))
    header.program["processes"] = names
    hosts = [host(t) or "" for t in traces]
    if len(set(hosts)) > 1:
        header.program["hosts"] = hosts
        header.program["host_cpus"] = [int(t.header.runtime.get("cpus") or 0) for t in traces]
    warnings += clocks
    events.sort(key=lambda e: e["ts"])
    pair_channels(events)
    joined = _Joined(header, events, root.path, warnings,
                     all(t.complete for t in traces), processes)
    joined._groups = groups
    return joined


def _first_declarations(evs: list, declared: set) -> list:
    """``evs`` without the ``object`` events of shared ids already declared by another
    process (or earlier in ``evs``); ``declared`` gains the ones kept."""
    out = None
    for n, ev in enumerate(evs):
        if ev["kind"] == "object" and is_shared(ev.get("obj")):
            if ev["obj"] in declared:
                if out is None:
                    out = evs[:n]
                continue
            declared.add(ev["obj"])
        if out is not None:
            out.append(ev)
    return evs if out is None else out


def pair_channels(events: list) -> int:
    """Name the items of puts and gets on shared channels that the tracer could not name
    (a put's ``item`` outside the shared range, a get without one): on each channel, the
    i-th get to complete took the i-th put to complete (FIFO, as a pipe is).  Items already
    shared (a process pool's) are left as they are.  Changes the events in place; returns
    how many puts were paired.

    >>> ch = SHARED_IDS + 9
    >>> evs = [{"kind": "put", "tid": 1, "ts": 0, "dur": 5, "obj": ch, "item": 77},
    ...        {"kind": "put", "tid": 1, "ts": 10, "obj": ch, "item": 77},
    ...        {"kind": "get", "tid": 2, "ts": 2, "dur": 20, "obj": ch},
    ...        {"kind": "get", "tid": 3, "ts": 1, "dur": 12, "obj": ch}]
    >>> pair_channels(evs)
    2
    >>> [e["item"] - shared_item(ch, 0) for e in evs]
    [0, 1, 1, 0]
    """
    puts: dict = {}
    gets: dict = {}
    for e in events:
        k = e["kind"]
        if k != "put" and k != "get":
            continue
        obj = e.get("obj")
        if not is_shared(obj) or obj >= SHARED_ITEMS:
            continue
        item = e.get("item")
        if item is not None and is_shared(item):
            continue
        if e.get("ok") is False:        # refused (full) or none taken (empty)
            continue
        (puts if k == "put" else gets).setdefault(obj, []).append(e)
    paired = 0
    for obj in set(puts) | set(gets):
        ps = sorted(puts.get(obj, ()), key=_end)
        gs = sorted(gets.get(obj, ()), key=_end)
        for n, e in enumerate(ps):
            e["item"] = shared_item(obj, n)
        for n, e in enumerate(gs[:len(ps)]):
            e["item"] = shared_item(obj, n)
        paired += min(len(ps), len(gs))
    return paired


def _end(e: dict) -> int:
    return e["ts"] + e.get("dur", 0)


#: event fields that hold a thread id
THREAD_FIELDS = ("tid", "parent", "target")


def _renumbered(by: dict, shift: int) -> dict:
    """The threads of another machine's trace with ids moved by ``shift`` (in place)."""
    for evs in by.values():
        for ev in evs:
            for f in THREAD_FIELDS:
                if type(ev.get(f)) is int and (f != "target" or ev["kind"] == "wakeup"
                                               or ev.get("on") == "join"):
                    ev[f] += shift
    return {tid + shift: evs for tid, evs in by.items()}


def _align(traces: list[Trace], names: list[str]) -> list[str]:
    """Put the traces of other machines on the first one's clock (frontends/clocks.py):
    first the wall clocks' offset, then the messages to and from the processes already
    placed (those of the first machine, then each machine aligned before).  Shifts the
    events in place; says how each was aligned."""
    root = traces[0]
    placed = [e for t in traces if not wall_shift(t, root) for e in t.events]
    # an fd is its process's: the processes' events are told apart by their trace
    whose = {e["tid"]: k for k, t in enumerate(traces) for e in t.events}
    notes = []
    for t, name in zip(traces, names):
        guess = wall_shift(t, root)
        if not guess:
            continue
        d, how = clock_offset(placed, t.events, guess, whose)
        for ev in t.events:
            ev["ts"] += d
        placed += t.events
        notes.append(f"{name} (host {host(t)}): clock aligned to {names[0]}'s (host "
                     f"{host(root)}) by {how}")
    return notes


class _Joined(Trace):
    def by_thread(self):
        return self._groups
