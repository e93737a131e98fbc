"""Waits on futures as a counting semaphore between the pool and the waiter.

``executor.map``, ``Future.result`` and ``as_completed`` wait for tasks of a
thread pool.  Folded like other waits, they vanish from the model: the thread
that submitted the tasks then runs ahead and its queue grows without bound.
The trace links each wait to its task: the ``wait`` (``on: future``) names the
future, which the worker's ``task`` span names too, and the task's ``item`` is
the one a ``put`` handed to the pool's queue.  So, before the analysis, for
every pool queue whose tasks some thread waits for:

* a semaphore with no permits is declared (``NAME_done``, NAME the queue's);
* the worker releases one permit where each task of that pool ended;
* each wait becomes an acquisition of one permit, with the wait's timing.

A waiter that waits for its own N tasks acquires N permits, as many as the
pool releases for them: exact in counts, and in the order of completions
rather than of the futures (``map`` returns results in order; the time the
last one takes is the same).  Tasks nobody waits for release nothing.

>>> by = {1: [{"kind": "put", "tid": 1, "ts": 10, "obj": 7, "item": 70},
...           {"kind": "put", "tid": 1, "ts": 11, "obj": 7, "item": 71},
...           {"kind": "wait", "tid": 1, "ts": 20, "on": "future", "obj": 9, "dur": 50},
...           {"kind": "wait", "tid": 1, "ts": 70, "on": "future", "obj": 8, "dur": 30}],
...       2: [{"kind": "get", "tid": 2, "ts": 12, "obj": 7, "item": 70},
...           {"kind": "task", "tid": 2, "ts": 13, "dur": 40, "obj": 9, "item": 70},
...           {"kind": "get", "tid": 2, "ts": 54, "obj": 7, "item": 71},
...           {"kind": "task", "tid": 2, "ts": 55, "dur": 40, "obj": 8, "item": 71}]}
>>> pool = [{"kind": "object", "ts": 1, "obj": 7, "type": "simple_queue"},
...         {"kind": "object", "ts": 1, "obj": 6, "type": "pool", "queue": 7}]
>>> new_by, objs = futures_as_semaphores(by, pool)
>>> [e["kind"] for e in new_by[1]]
['put', 'put', 'acquire', 'acquire']
>>> [e["kind"] for e in new_by[2]]
['get', 'task', 'release', 'get', 'task', 'release']
>>> objs[0]["type"], objs[0]["permits"], new_by[2][2]["ts"], new_by[1][2]["obj"] == objs[0]["obj"]
('sem', 0, 53, True)
"""
from __future__ import annotations

import heapq
from operator import itemgetter

#: synthetic object ids: far above any id(obj) a 64-bit CPython gives
SYNTHETIC = 1 << 62
_TS = itemgetter("ts")


def futures_as_semaphores(by: dict, objects: list) -> tuple[dict, list]:
    """(events by thread with the future waits rewritten, the semaphores to declare).

    ``by``: tid -> events sorted by ts (not changed: threads that change get new lists);
    ``objects``: the trace's ``object`` events."""
    if not any(o.get("type") == "pool" for o in objects):
        return by, []                     # no executor: nothing to read through every event
    # an item's queue is the one it was first put into: a process pool's worker puts the
    # same item on the pool's result channel after running it
    first_put: dict = {}
    for evs in by.values():
        for e in evs:
            if e["kind"] == "put" and "item" in e:
                was = first_put.get(e["item"])
                if was is None or e["ts"] < was[0]:
                    first_put[e["item"]] = (e["ts"], e["obj"])
    queue_of_item = {item: q for item, (_, q) in first_put.items()}
    # CPython reuses ids: a future id names many futures over a run, so waits and tasks
    # are matched by queue, not one to one.  Every wait on a future of the pool's tasks
    # acquires, every task of that pool releases: the counts agree when each future is
    # waited for once (map, result, as_completed).
    queue_of_future: dict = {}
    tasks: list = []                                    # (tid, end, queue, site)
    for tid, evs in by.items():
        for e in evs:
            if e["kind"] == "task" and "obj" in e and e.get("item") in queue_of_item:
                q = queue_of_item[e["item"]]
                queue_of_future[e["obj"]] = q
                tasks.append((tid, e["ts"] + e.get("dur", 0), q, e.get("site")))
    # only pools whose tasks are work items: at least two per thread that ran them (a
    # pool of long-lived loops, one task per thread, is joined at its end, not per item)
    ran: dict = {}
    for tid, _, q, _ in tasks:
        n, tids = ran.get(q, (0, set()))
        ran[q] = (n + 1, tids | {tid})
    items = {q for q, (n, tids) in ran.items() if n >= 2 * len(tids)}
    queues = sorted({queue_of_future[e["obj"]] for evs in by.values() for e in evs
                     if e["kind"] == "wait" and e.get("on") == "future"
                     and queue_of_future.get(e.get("obj")) in items})
    if not queues:
        return by, []
    first = min((evs[0]["ts"] for evs in by.values() if evs), default=0)
    sem = {q: SYNTHETIC + k for k, q in enumerate(queues)}
    declared = {o["obj"]: o for o in objects}
    new_objects = []
    for q in queues:
        qo = declared.get(q, {})
        new_objects.append({"kind": "object", "tid": qo.get("tid", 0), "ts": first - 1, "obj": sem[q],
                            "type": "sem", "permits": 0, "site": qo.get("site"),
                            "name_suffix": "_done", "queue": q})
    out = dict(by)
    for tid, evs in by.items():
        if any(e["kind"] == "wait" and e.get("on") == "future" for e in evs):
            new = []
            for e in evs:
                if e["kind"] == "wait" and e.get("on") == "future" and \
                        queue_of_future.get(e.get("obj")) in sem:
                    e = {k: v for k, v in e.items() if k != "on"}
                    e.update(kind="acquire", obj=sem[queue_of_future[e["obj"]]])
                new.append(e)
            out[tid] = new
    releases: dict = {}
    for tid, end, q, site in tasks:
        if q in sem:
            releases.setdefault(tid, []).append({"kind": "release", "tid": tid, "ts": end,
                                                 "obj": sem[q], "site": site})
    for tid, rels in releases.items():
        rels.sort(key=_TS)
        # merge is stable: a release comes after the events that share its ts (the task)
        out[tid] = list(heapq.merge(out[tid], rels, key=_TS))
    return out, new_objects


__all__ = ["futures_as_semaphores", "SYNTHETIC"]
