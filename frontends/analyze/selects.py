"""A wait in ``select`` followed by the receive or accept it was waiting for is one wait.

A thread that serves several sockets waits in ``select`` (or a selector) and then
calls ``recv`` or ``accept``, which return at once: the data is there.  Read apart, the
receive never blocks and the wait is code that took wall time without CPU, so the
receive cannot be seen waiting for an answer, and the thread looks busy.  A ``select``
wait whose next operation on the thread is a ``recv`` or ``accept`` becomes part of
that operation: it begins when the ``select`` began.  Other ``select`` waits (a timeout
that found nothing, a select followed by something else) stay as they were (folded).

>>> evs = [{"kind": "wait", "tid": 1, "ts": 10, "cpu": 5, "on": "select", "dur": 100,
...         "cpu_dur": 2},
...        {"kind": "io", "tid": 1, "ts": 112, "cpu": 8, "op": "recv", "dur": 3, "cpu_dur": 3,
...         "fd": 4}]
>>> new = selects_into_io({1: evs})[1]
>>> [(e["kind"], e["ts"], e["dur"], e["cpu"], e["cpu_dur"], e["waited"]) for e in new]
[('io', 10, 105, 5, 6, 100)]
"""
from __future__ import annotations

#: operations a select wait may have been for
_AFTER = frozenset({"recv", "accept"})
_QUIET = frozenset({"object", "sample", "counter", "mark", "cpu", "disk", "wakeup", "probe"})


def selects_into_io(by: dict) -> dict:
    """Events by thread with each select wait merged into the receive or accept that
    follows it (``by`` is not changed: threads that change get new lists)."""
    return select_waits(by)[0]


def select_waits(by: dict) -> tuple[dict, frozenset]:
    """:func:`selects_into_io`, and the threads that waited in ``select`` (event loops:
    eventloop.py)."""
    out = dict(by)
    tids = set()
    for tid, evs in by.items():
        if not any(e["kind"] == "wait" and e.get("on") == "select" for e in evs):
            continue
        tids.add(tid)
        new, pending = [], None
        for e in evs:
            if e["kind"] == "wait" and e.get("on") == "select":
                if pending is not None:
                    new.append(pending)
                pending = e
                continue
            if pending is not None and e["kind"] not in _QUIET:
                if e["kind"] == "io" and e.get("op") in _AFTER:
                    end = e["ts"] + e.get("dur", 0)
                    m = dict(e, ts=pending["ts"], dur=end - pending["ts"],
                             waited=pending.get("dur", 0))
                    c0, c1 = pending.get("cpu"), e.get("cpu")
                    if c0 is not None:
                        m["cpu"] = c0
                        if c1 is not None:
                            m["cpu_dur"] = max(0, c1 + e.get("cpu_dur", 0) - c0)
                    new.append(m)
                    pending = None
                    continue
                new.append(pending)
                pending = None
            new.append(e)
        if pending is not None:
            new.append(pending)
        out[tid] = new
    return out, frozenset(tids)


__all__ = ["selects_into_io", "select_waits"]
