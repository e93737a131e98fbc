"""Threads started to compute and joined: fork and join as two semaphores.

The simplest parallel program starts K threads that each compute a share and end,
then joins them (Monte Carlo samples, image tiles, a parallel map by hand)::

    threads = [Thread(target=work, args=(k,)) for k in range(K)]
    for t in threads: t.start()
    for t in threads: t.join()

A child that only computes leaves no operation in the trace, so it has no step and
nothing is modelled; the joins fold.  What the code does is a fork and a join, and
in a model that repeats the run, a pool of K threads that wait for the start:

* two semaphores with no permits are declared, ``NAME_start`` and ``NAME_done``;
* the parent releases K start permits where it started the round's first child,
  and acquires K done permits where it joined the first (the joins' waiting summed);
* each child acquires a start permit where it began and releases a done permit
  where it ended, so its work is the fragment between the two.

The model writer gives the parent's counts as the pool's size parameter, so the
fork follows the pool at every size.  A round is the children started at one site
before the parent joins any of them; a parent that forks and joins in a loop has one
round per pass.  Only children that compute and nothing else are read so: no
operation but on objects they made themselves (numpy's generator lock).  A child
that waits, sleeps, does I/O or hands items over has steps of its own, and the
analysis finds its loop as for any thread (a poller, a pool fed by a queue:
:mod:`.joins`).  A round with a child its parent did not join is left alone.

>>> by = {1: [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0},
...           {"kind": "wait", "tid": 1, "ts": 30, "cpu": 25, "on": "join", "target": 2, "dur": 90},
...           {"kind": "wait", "tid": 1, "ts": 120, "cpu": 26, "on": "join", "target": 3, "dur": 5}],
...       2: [{"kind": "thread_start", "tid": 2, "ts": 10, "cpu": 0, "parent": 1, "site": "p.py:8"},
...           {"kind": "thread_end", "tid": 2, "ts": 118, "cpu": 100}],
...       3: [{"kind": "thread_start", "tid": 3, "ts": 20, "cpu": 0, "parent": 1, "site": "p.py:8"},
...           {"kind": "thread_end", "tid": 3, "ts": 124, "cpu": 98}]}
>>> new_by, objs = forks_as_semaphores(by)
>>> [(e["kind"], e["ts"], e.get("dur")) for e in new_by[1][1:]]
[('release', 10, None), ('acquire', 30, 95)]
>>> [e["kind"] for e in new_by[2]]
['thread_start', 'acquire', 'release', 'thread_end']
>>> [(o["name_suffix"], o["fork"], o["children"]) for o in objs]
[('_start', 'start', [2, 3]), ('_done', 'done', [2, 3])]
"""
from __future__ import annotations

import heapq
from operator import itemgetter

from .condqueue import ITEMS_BASE

#: synthetic ids of the fork semaphores: above the items semaphores' ones, so their
#: acquisitions and releases count as hand-overs (phases.work_phase)
FORKS_BASE = ITEMS_BASE + (1 << 40)
#: events that are no operation of the thread
QUIET = frozenset({"thread_start", "thread_end", "object", "sample", "counter", "mark"})
_TS = itemgetter("ts")


def forks_as_semaphores(by: dict, processes: dict | None = None) -> tuple[dict, list]:
    """(events by thread with forks and joins rewritten, the semaphores to declare).

    ``by``: tid -> events sorted by ts (not changed: threads that change get new lists);
    ``processes``: tid -> process, in a trace of several.  A child process is a forked
    computation only when its one thread computes (a worker given its share); a process
    whose main thread starts threads of its own and waits for them (a server's tier) is
    not."""
    procs = processes or {}
    threads_of: dict = {}
    for t, p in procs.items():
        threads_of[p] = threads_of.get(p, 0) + 1
    starts = {evs[0]["tid"]: evs[0] for evs in by.values()
              if evs and evs[0]["kind"] == "thread_start" and evs[0].get("parent") in by
              and (procs.get(evs[0]["tid"]) == procs.get(evs[0]["parent"])
                   or threads_of.get(procs.get(evs[0]["tid"])) == 1)}
    if not starts:
        return by, []
    joined = {}                                   # child -> the parent's join event
    for tid, evs in by.items():
        for e in evs:
            if e["kind"] == "wait" and e.get("on") == "join" and \
                    starts.get(e.get("target"), {}).get("parent") == tid:
                joined.setdefault(e["target"], e)
    rounds = _rounds(starts, joined, by)
    if not rounds:
        return by, []
    out = dict(by)
    adds: dict = {}
    objects = []
    sems: dict = {}                  # (parent, site) -> (start, done): one pair for its rounds
    for parent, site, children in rounds:
        first = starts[children[0]]
        at = _between(by[parent], first["ts"])
        if (parent, site) not in sems:
            sems[(parent, site)] = (FORKS_BASE + 2 * len(sems), FORKS_BASE + 2 * len(sems) + 1)
            mine = [cs for p, s, cs in rounds if (p, s) == (parent, site)]
            every = [c for cs in mine for c in cs]
            for sem, what in zip(sems[(parent, site)], ("start", "done")):
                objects.append({"kind": "object", "tid": parent, "ts": min(at, first["ts"]) - 1,
                                "obj": sem,
                                "type": "sem", "permits": 0, "site": site, "name_suffix": f"_{what}",
                                "name_type": "fork", "fork": what, "children": every,
                                "width": max(map(len, mine)),     # threads at once
                                "parent": parent, "why": (
                                    f"threads started at {site}: a permit per thread "
                                    + ("to start" if what == "start" else "that ended, for the join")
                                    + " (not an object of the program)")})
        sem_start, sem_done = sems[(parent, site)]
        adds.setdefault(parent, []).append(
            {"kind": "release", "tid": parent, "ts": at, "obj": sem_start, "site": site,
             "cpu": cpu_at(by[parent], at), "n": len(children)})
        for c in children:
            s, end = starts[c], by[c][-1]
            adds.setdefault(c, []).extend([
                {"kind": "acquire", "tid": c, "ts": s["ts"], "cpu": s.get("cpu"), "obj": sem_start,
                 "dur": 0, "site": site},
                {"kind": "release", "tid": c, "ts": end["ts"], "cpu": end.get("cpu"), "obj": sem_done,
                 "site": site}])
    waits = {id(joined[c]): (k, c) for k, (_, _, children) in enumerate(rounds) for c in children}
    for tid in {r[0] for r in rounds}:
        new, done = [], set()
        for e in out[tid]:
            hit = waits.get(id(e))
            if hit is None:
                new.append(e)
                continue
            k, _ = hit
            if k in done:                          # one acquisition of K permits per round
                continue
            done.add(k)
            js = [joined[c] for c in rounds[k][2]]
            end = max(j["ts"] + j.get("dur", 0) for j in js)
            new.append({"kind": "acquire", "tid": tid, "ts": e["ts"], "cpu": e.get("cpu"),
                        "obj": sems[rounds[k][:2]][1], "dur": end - e["ts"], "site": e.get("site"),
                        "cpu_dur": sum(j.get("cpu_dur", 0) for j in js), "n": len(js)})
        out[tid] = new
    for tid, evs in adds.items():
        evs.sort(key=_TS)
        base = out[tid]
        if base and base[-1]["kind"] == "thread_end":
            # a child's release goes before its end (merge is stable on equal ts)
            out[tid] = list(heapq.merge(base[:-1], evs, key=_TS)) + [base[-1]]
        else:
            out[tid] = list(heapq.merge(base, evs, key=_TS))
    return out, objects


def _between(evs: list, ts: int) -> int:
    """``ts``, or just before the parent's event whose span holds it: a child process
    begins (its interpreter started) while its parent is already inside another call
    (writing the child's input), and an event inside a span is read as nested in it."""
    for e in evs:
        if e["ts"] > ts:
            break
        if e["ts"] < ts < e["ts"] + e.get("dur", 0):
            return e["ts"] - 1              # just before it: not nested in it
    return ts


def _rounds(starts: dict, joined: dict, by: dict) -> list:
    """[(parent, site, children)]: children started at one site before the parent
    joined any of them, each joined by it, each computing only."""
    kids: dict = {}
    for c, s in starts.items():
        kids.setdefault(s["parent"], set()).add(c)
    # a thread a library started for itself (a queue's feeder, a pool's result handler) is
    # no computation of the program's: left to the rest of the analysis (which leaves it
    # out when it does little)
    computes = {c for c in starts if _computes_only(by[c], kids.get(c, set()))
                and not starts[c].get("library") and not _library_site(starts[c].get("site"))}
    plain = {c for c in computes if c in joined and by[c][-1]["kind"] == "thread_end"}
    out = []
    by_parent: dict = {}
    for c, s in starts.items():
        if c in computes:                    # (a sibling that does other things is no part)
            by_parent.setdefault((s["parent"], s.get("site")), []).append(c)
    for (parent, site), children in by_parent.items():
        children.sort(key=lambda c: starts[c]["ts"])
        batch: list = []
        for c in children + [None]:
            # a start after the first join of the batch opens the next round
            if c is None or (batch and starts[c]["ts"] > min(
                    (joined[b]["ts"] for b in batch if b in joined), default=float("inf"))):
                if batch and all(b in plain for b in batch):
                    out.append((parent, site, batch))
                batch = []
            if c is not None:
                batch.append(c)
    out.sort(key=lambda r: starts[r[2][0]]["ts"])
    return out


def _library_site(site: str | None) -> bool:
    """Whether a code site is in the interpreter's library or an installed package."""
    return bool(site) and ("/lib/python" in site or "site-packages" in site
                           or "dist-packages" in site)


def _computes_only(evs: list, kids: set = frozenset()) -> bool:
    """No operation but on objects the thread made itself, and joins of the threads it
    started itself (forks within a fork)."""
    own = {e["obj"] for e in evs if e["kind"] == "object"}
    return all(e["kind"] in QUIET or e.get("obj") in own and e["kind"] != "io"
               or e["kind"] == "wait" and e.get("on") == "join" and e.get("target") in kids
               for e in evs)


def cpu_at(evs: list, ts: int) -> int | None:
    """A thread's CPU clock at ``ts``, from its events around it: the clock runs at most
    as fast as the wall clock, and never past the next event's reading."""
    prev = nxt = None
    for e in evs:
        if e.get("cpu") is None:
            continue
        if e["ts"] <= ts:
            prev = e
        else:
            nxt = e
            break
    if prev is None:
        return None if nxt is None else nxt["cpu"]
    c = prev["cpu"] + prev.get("cpu_dur", 0) + max(0, ts - prev["ts"] - prev.get("dur", 0))
    return min(c, nxt["cpu"]) if nxt is not None else c


__all__ = ["forks_as_semaphores", "FORKS_BASE"]
