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


def loop_overheads(an) -> dict:
    """Per event loop (its object id): (factor, the loop's own CPU in the work phase, its
    tasks' CPU there, the loop thread's tid).  The loop's own work -- waiting in the
    selector, reading sockets into the streams, running timers and callbacks that are no
    task's step -- runs on its thread under the GIL between the tasks' steps, one at a time
    like them: the model spreads it over the tasks' CPU steps (``factor`` = 1 + own /
    tasks'), and leaves the thread out as a runner of its own."""
    lo, hi = an.phase if an.phase is not None else (float("-inf"), float("inf"))
    by = an.trace.by_thread()
    loops: dict = {}
    for e in an.trace.events:
        if e["kind"] == "object" and e.get("type") == "loop":
            loops.setdefault(e["obj"], e["tid"])
    out = {}
    for loop, tid in loops.items():
        own = _cpu_between(by.get(tid, ()), lo, hi)
        tasks = sum(_cpu_between(evs, lo, hi) for t, evs in by.items()
                    if evs and evs[0]["kind"] == "thread_start" and evs[0].get("task")
                    and evs[0].get("loop") == loop)
        if tasks > 0 and own > 0:
            out[loop] = (1.0 + own / tasks, own, tasks, tid)
    return out


def _cpu_between(evs, lo, hi) -> float:
    """CPU a thread used between ``lo`` and ``hi`` (its clock at its first and last events
    inside them)."""
    inside = [e["cpu"] for e in evs if e.get("cpu") is not None and lo <= e["ts"] <= hi]
    return float(inside[-1] - inside[0]) if len(inside) > 1 else 0.0


__all__ = ["lanes", "loop_of", "per_request", "loop_overheads", "LANES_FACTOR", "MIN_LANES"]
