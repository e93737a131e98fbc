"""Compact in-process event records and their conversion to neutral events.

Inside the traced program an event is a tuple ``(kind, tid, ts, cpu, site,
*fields)`` appended to one list: no dict, no formatting, so a wrapped call
costs about a microsecond.  ``FIELDS[kind]`` names the trailing positions;
trailing ``None`` values may be left off and ``None`` fields are omitted from
the neutral event.  Blocking operations carry ``cpu_dur`` only when they
lasted longer than ``LONG`` ns (a wait that blocks still burns CPU on wake-ups
and GIL hand-offs; a short one is not worth a second clock read).  This module is shared by the agent (inside the traced
process, stdlib only) and the runner (which converts).

>>> to_event(("release", 7, 100, 40, None, 9, 25), {})
{'kind': 'release', 'tid': 7, 'ts': 100, 'cpu': 40, 'obj': 9, 'hold': 25}
"""
from __future__ import annotations

LONG = 20_000

#: Ids that name the same thing in every process of a run (frontends/processes.py does not
#: move them apart): a channel between processes is ``SHARED_IDS + inode`` of its pipe
#: (both ends of an ``os.pipe`` have one inode, in the parent and in forked or spawned
#: children), and an item on it ``shared_item(channel, n)``, in a range of its own.
SHARED_IDS = 1 << 60
SHARED_ITEMS = SHARED_IDS + (1 << 59)
SHARED_END = SHARED_IDS << 1
#: an item's number on its channel: 40 bits (a pool's own numbering within them)
ITEM_BITS = 40


def shared_item(channel: int, n: int) -> int:
    """The run-wide id of item ``n`` of shared channel ``channel`` (19 bits of the pipe's
    inode, 40 of ``n``: two channels of one run collide only if their inodes agree in the
    low 19 bits, and an item id is reused only after 2**40 items of one channel).

    >>> hex(shared_item(SHARED_IDS + 5, 3))
    '0x1800050000000003'
    """
    return SHARED_ITEMS + (((channel - SHARED_IDS) & 0x7FFFF) << ITEM_BITS) + (n & ((1 << ITEM_BITS) - 1))


def is_shared(v: object) -> bool:
    """Whether ``v`` is an id of the shared range (a channel or an item of one)."""
    return type(v) is int and SHARED_IDS <= v < SHARED_END

FIELDS: dict[str, tuple[str, ...]] = {
    "thread_start": ("name", "parent", "daemon", "native", "args", "library"),
    "thread_end": (),
    "object": ("obj", "type", "params"),
    "acquire": ("obj", "dur", "contended", "ok", "timeout", "count", "cpu_dur"),
    "release": ("obj", "hold", "count"),
    "wait": ("on", "obj", "dur", "ok", "timeout", "target", "requested", "cpu_dur"),
    "notify": ("on", "obj", "all", "waiters"),
    "put": ("obj", "item", "dur", "size", "ok", "cpu_dur"),
    "get": ("obj", "item", "dur", "size", "ok", "cpu_dur"),
    "io": ("op", "obj", "path", "fd", "bytes", "dur", "cpu_dur", "peer", "ok", "calls", "conn",
           "local"),
    "task": ("item", "dur", "cpu_dur", "func", "obj"),
    "span": ("name", "req", "dur", "cpu_dur"),
    "request": ("req", "phase", "name"),
    "mark": ("name", "text"),
    "feature": ("name", "value"),
    "mpi": ("op", "obj", "bytes", "peer", "dur", "cpu_dur", "count"),
}


def to_event(rec: tuple, sites: dict[int, str], tids: dict[int, int] | None = None) -> dict:
    """Turn one record into a neutral-format event dict.

    ``tids`` maps the recorder's thread idents to OS thread ids; it is updated
    from thread_start records, so records must come in recording order.
    """
    kind, tid, ts, cpu, site = rec[0], rec[1], rec[2], rec[3], rec[4]
    if tids is not None:
        if kind == "thread_start" and len(rec) > 8 and rec[8] is not None:
            tids[tid] = rec[8]
            # the OS tid names the thread (not a field of its own); its arguments stay
            rec = rec[:6] + (tids.get(rec[6], rec[6]) if rec[6] is not None else None,) + \
                rec[7:8] + (None,) + rec[9:]
        tid = tids.get(tid, tid)
    ev = {"kind": kind, "tid": tid, "ts": ts}
    if cpu is not None:
        ev["cpu"] = cpu
    if site is not None:
        s = sites.get(site)
        if s is not None:
            ev["site"] = s
    for name, value in zip(FIELDS[kind], rec[5:]):
        if value is None:
            continue
        if name == "params":
            ev.update((k, v) for k, v in value.items() if v is not None)
        else:
            ev[name] = value
    return ev
