"""Threads started one per item: the iterations of a pool.

A server that starts a thread per connection (``socketserver.ThreadingMixIn``,
``http.server.ThreadingHTTPServer``) or a load generator that starts one per request
hands each item to a new thread::

    while True:
        conn, _ = sock.accept()
        threading.Thread(target=handle, args=(conn,)).start()

Each such thread does one item and ends.  Read thread by thread, it is a pool of
hundreds of threads that each ran once, and whose work follows no operation (the
socket calls fold away), so nothing of it is modelled.  What the code does is a
hand-over: the parent puts an item (the start) and a thread takes it.  So:

* a queue is declared for the start site (``spawn_LINE``);
* the parent puts an item where it started each thread;
* the threads are laid end to end on as few *lanes* as never overlap (the most that
  were alive at once), each lane a thread of a pool that takes the next item when the
  last one is done: its take waits from the end of the last thread to the start of
  the next, and each thread's CPU clock continues the lane's.

The pool's size is the number of lanes.  Threads qualify when one parent started at
least ``MIN_THREADS`` at one site, each did an operation (a thread that only computes
is a fork: :mod:`.forks`) and ended, and the parent did an operation between two
starts (threads started in a burst are an ordinary pool).  The parent's joins of
them are left out.

>>> def th(tid, start, end, parent=1):
...     return [{"kind": "thread_start", "tid": tid, "ts": start, "cpu": 0, "parent": parent,
...              "site": "s.py:9", "name": f"Thread-{tid}"},
...             {"kind": "io", "tid": tid, "ts": start + 5, "cpu": 4, "op": "send", "dur": 1},
...             {"kind": "thread_end", "tid": tid, "ts": end, "cpu": 9}]
>>> main = [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0, "name": "MainThread"}]
>>> main += [{"kind": "io", "tid": 1, "ts": t - 2, "cpu": t // 10, "op": "accept", "dur": 1}
...          for t in (10, 30, 35)]
>>> by = {1: main, 2: th(2, 10, 20), 3: th(3, 30, 50), 4: th(4, 35, 45)}
>>> new, objs = spawns_as_pool(by)
>>> sorted(new), [(e["kind"], e["ts"], e.get("cpu")) for e in new[2]]
([1, 2, 4], [('thread_start', 10, 0), ('get', 10, 0), ('io', 15, 4), ('get', 20, 9), ('io', 35, 13), ('thread_end', 50, 18)])
>>> [(e["kind"], e["ts"], e["item"]) for e in new[1] if e["kind"] == "put"]
[('put', 10, 2), ('put', 30, 3), ('put', 35, 4)]
"""
from __future__ import annotations

import heapq
from operator import itemgetter

from .forks import FORKS_BASE, QUIET, cpu_at

#: synthetic ids of the spawn queues: above the fork semaphores' ones
SPAWNS_BASE = FORKS_BASE + (1 << 40)
#: fewer threads started at one site are not read as a thread per item
MIN_THREADS = 3
_TS = itemgetter("ts")


def spawns_as_pool(by: dict) -> tuple[dict, list]:
    """(events by thread with threads started per item laid on lanes, the queues to
    declare).  ``by``: tid -> events sorted by ts (not changed: new lists)."""
    # the threads one site started, by parents alike: the parent itself, or parents that
    # were started at one site themselves (a connection's handler per client, each
    # starting a task per request: one hand-over for all of them)
    groups: dict = {}
    for tid, evs in by.items():
        if evs and evs[0]["kind"] == "thread_start" and evs[0].get("parent") in by:
            parent = evs[0]["parent"]
            first = by[parent][0] if by[parent] else {}
            kin = ("site", first.get("site")) if first.get("kind") == "thread_start" and \
                first.get("site") and first.get("task") else ("tid", parent)
            groups.setdefault((kin, evs[0].get("site")), []).append(tid)
    out = dict(by)
    objects: list = []
    moved: dict = {}                   # a thread laid on a lane -> the lane's thread
    shifts: dict = {}                  # ... and what its CPU clock was moved by
    for (kin, site), kids in sorted(groups.items(), key=lambda g: min(
            by[k][0]["ts"] for k in g[1])):
        kids.sort(key=lambda t: by[t][0]["ts"])
        parents = sorted({by[k][0]["parent"] for k in kids})
        if len(parents) == 1:
            if not _per_item(kids, by, parents[0]):
                continue
        elif len(kids) < MIN_THREADS or any(
                by[k][-1]["kind"] != "thread_end" or all(e["kind"] in QUIET for e in by[k])
                for k in kids):
            continue
        parent = parents[0]
        q = SPAWNS_BASE + len(objects)
        first = by[kids[0]][0]
        objects.append({"kind": "object", "tid": parent, "ts": first["ts"] - 1, "obj": q,
                        "type": "queue", "site": site, "name_type": "spawn",
                        "why": f"threads started at {site}, one per item: a hand-over to a "
                               "pool (not an object of the program)"})
        mine = set(kids)
        for p in parents:
            home = moved.get(p, p)            # a parent laid on a lane already: the lane's
            puts = [{"kind": "put", "tid": home, "ts": by[k][0]["ts"], "obj": q, "item": k,
                     "site": site, "dur": 0, "cpu": _plus(cpu_at(by[p], by[k][0]["ts"]),
                                                        shifts.get(p, 0))}
                    for k in kids if by[k][0]["parent"] == p]
            rest = [e for e in out[home]
                    if not (e["kind"] == "wait" and e.get("on") == "join"
                            and e.get("target") in mine)]
            out[home] = list(heapq.merge(rest, puts, key=_TS))
        for lane in _lanes(kids, by):
            for k in lane:
                out.pop(k, None)
                moved[k] = lane[0]
            out[lane[0]] = _laid(lane, by, q, site, shifts)
    return out, objects


def _per_item(kids: list, by: dict, parent: int) -> bool:
    if len(kids) < MIN_THREADS:
        return False
    for k in kids:
        evs = by[k]
        if evs[-1]["kind"] != "thread_end" or all(e["kind"] in QUIET for e in evs):
            return False
    # the parent did an operation between two starts (not a burst at start-up)
    ops = [e["ts"] for e in by[parent] if e["kind"] not in QUIET]
    starts = [by[k][0]["ts"] for k in kids]
    i = 0
    for a, b in zip(starts, starts[1:]):
        while i < len(ops) and ops[i] <= a:
            i += 1
        if i < len(ops) and ops[i] < b:
            return True
    return False


def _lanes(kids: list, by: dict) -> list:
    """The threads (sorted by start) on as few lanes as never overlap."""
    free: list = []                  # (end, lane index)
    lanes: list = []
    for k in kids:
        start, end = by[k][0]["ts"], by[k][-1]["ts"]
        if free and free[0][0] <= start:
            _, i = heapq.heappop(free)
        else:
            i = len(lanes)
            lanes.append([])
        lanes[i].append(k)
        heapq.heappush(free, (end, i))
    return lanes


def _plus(cpu, shift: int):
    return None if cpu is None else cpu + shift


def _laid(lane: list, by: dict, q: int, site, shifts: dict | None = None) -> list:
    """One lane's events: the first thread's start, each thread's take and events (its
    CPU clock continuing the lane's), the last thread's end; ``shifts`` gets each
    thread's clock shift."""
    tid = lane[0]
    out = [dict(by[tid][0])]
    clock, last_end = None, None
    for k in lane:
        evs = by[k]
        c0 = evs[0].get("cpu") or 0
        shift = 0 if clock is None else clock - c0
        if shifts is not None:
            shifts[k] = shift
        begin = evs[0]["ts"]
        at = begin if last_end is None else last_end
        out.append({"kind": "get", "tid": tid, "ts": at, "obj": q, "item": k, "site": site,
                    "dur": begin - at, "cpu": c0 + shift})
        for e in evs[1:-1]:
            e2 = dict(e, tid=tid)
            if e2.get("cpu") is not None:
                e2["cpu"] += shift
            out.append(e2)
        end = evs[-1]
        clock = (end.get("cpu") if end.get("cpu") is not None else c0) + shift
        last_end = end["ts"]
    out.append(dict(by[lane[-1]][-1], tid=tid, cpu=clock))
    return out


__all__ = ["spawns_as_pool", "SPAWNS_BASE"]
