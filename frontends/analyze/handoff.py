"""GIL hand-overs after a barrier trips: how long each thread first held the GIL.

When a barrier trips, all its parties are released at once, but each must
take the GIL to return into Python, so they return one after another.  The
tracer's wrapper notes a wait's end after the thread got the GIL back, so the
returns show the hand-overs: a party that returned at e_i held the GIL until
the next one returned at e_(i+1), when it blocked or called C code that
releases the GIL (hashing, I/O).  The first stretch of its next fragment,
``e_(i+1) - e_i``, is then GIL-bound, and the rest of the fragment may not
be.  This tells apart what fragment-level CPU clocks cannot: three threads
released together that each run 0.66 ms of Python and then 1.2 ms of hashing
fit GIL-free shares from 0.42 up, but their returns come 0.66 ms apart.

The stretch is counted only while no thread outside the barrier's parties was
running (it could hold the GIL instead), and at most the fragment's CPU.

>>> from qpn.frontends.analyze.steps import Step
>>> def st(tid, action, ts, dur, start):     # times in us
...     return Step(tid, action, ("b", 1), "p.py:1", {"ts": ts * 1000}, start * 1000,
...                 10 ** 6, (ts - start) * 1000, 0, dur * 1000)
>>> walks = {1: [st(1, "await", 0, 400, 0), st(1, "lock", 2000, 0, 400)],
...          2: [st(2, "await", 50, 650, 0), st(2, "lock", 2100, 0, 700)],
...          3: [st(3, "await", 100, 0, 0), st(3, "lock", 1900, 0, 100)]}
>>> sorted((s.tid, h) for s, h in first_holds(walks).items())   # the last to arrive goes on
[(1, 300000), (3, 300000)]
"""
from __future__ import annotations

import bisect
import collections

#: returns closer than this (ns) are the kernel's wake-up, not a GIL hand-over
MIN_GAP = 20_000


def first_holds(walks: dict) -> dict:
    """{step: ns} for fragments that began when a barrier released their thread:
    how long the thread held the GIL before the next party got it."""
    awaits = collections.defaultdict(list)
    nxt = {}
    for w in walks.values():
        for i, s in enumerate(w):
            if s.action == "await":
                awaits[s.key].append(s)
                if i + 1 < len(w):
                    nxt[id(s)] = w[i + 1]
    if not awaits:
        return {}
    busy = _running(walks)
    out = {}
    for key, evs in awaits.items():
        arrivals = sorted(s.ts for s in evs)
        trips = collections.defaultdict(list)
        for s in evs:                   # released by the last arrival before it returned
            trips[arrivals[bisect.bisect_right(arrivals, s.end) - 1]].append(s)
        for group in trips.values():
            if len(group) < 2:
                continue
            group.sort(key=lambda s: s.end)
            tids = {s.tid for s in group}
            for s, t in zip(group, group[1:]):
                frag = nxt.get(id(s))
                gap = t.end - s.end
                if frag is None or frag.cpu is None or gap < MIN_GAP or frag.start != s.end:
                    continue
                if any(busy_in(busy[o], s.end, t.end) for o in busy if o not in tids):
                    continue            # another thread may have held the GIL
                out[frag] = min(gap, frag.cpu)
    return out


def _running(walks: dict) -> dict:
    """tid -> (starts, ends) of its fragments (when it ran or wanted to run)."""
    out = {}
    for tid, w in walks.items():
        out[tid] = ([s.start for s in w], [s.ts for s in w])
    return out


def busy_in(spans, a: int, b: int) -> bool:
    """Whether a fragment of ``spans`` (sorted, disjoint) overlaps (a, b)."""
    starts, ends = spans
    i = bisect.bisect_left(ends, a + 1)
    return i < len(starts) and starts[i] < b
