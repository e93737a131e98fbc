"""asyncio tasks: threads of the model that share their event loop.

``qpn trace`` records every asyncio Task as a thread of its own (a virtual thread:
``thread_start`` with ``task: true`` and ``loop``, docs/trace-format.md), so the
analysis reads tasks as it reads threads: a task per request is a pool of lanes
(spawns.py), an ``asyncio.Semaphore`` a semaphore, ``run_in_executor`` a future the
executor's pool completes (futures.py), a client that keeps a schedule an open source
(schedules.py).  What a task has that a thread has not is its loop: the loop runs one
step of one task at a time, on one thread.  So in the model the loop is a mutex
(``mutex loop``): a task holds it for every piece of its code, and releases it at
every await, as the loop moves on to the next ready task; and the loop's thread holds
the GIL while it runs a step (the task's code is Python).

Tasks made one per request are as many as the requests in flight: the pool of their
lanes is sized well above the traced maximum (:func:`lanes`), so that it never holds a
request back at another load.

>>> lanes(3), lanes(40)
(64, 160)
"""
from __future__ import annotations

from .structure import leaves

#: the pool of per-request tasks: this many times the traced maximum, and at least MIN_LANES
LANES_FACTOR = 4
MIN_LANES = 64


def lanes(traced: int) -> int:
    """The size of a pool of per-request tasks, from the most alive at once in the trace."""
    return max(MIN_LANES, LANES_FACTOR * traced)


def loop_of(an, r) -> int | None:
    """The event loop (its object id) whose tasks runner ``r``'s threads all are; None for
    threads."""
    by = an.trace.by_thread()
    loops = set()
    for t in r.group.tids:
        evs = by.get(t) or ()
        first = evs[0] if evs else None
        if first is None or first["kind"] != "thread_start" or not first.get("task"):
            return None
        loops.add(first.get("loop"))
    return loops.pop() if len(loops) == 1 else None


def per_request(an, r) -> bool:
    """Whether runner ``r``'s tasks were started one per request: they take their start
    from a spawn queue (spawns.py laid them on lanes)."""
    return loop_of(an, r) is not None and any(
        lf.action == "take" and an.objects.info(lf.token[1]).get("name_type") == "spawn"
        for lf in leaves(r.items))


__all__ = ["lanes", "loop_of", "per_request", "LANES_FACTOR", "MIN_LANES"]
