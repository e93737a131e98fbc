"""How long a waiting thread takes to run again once what it waits for is there.

A GIL released while another thread of the process waits for it stays unused until
that thread has been woken and put on a core: tens of microseconds on an idle core of a
virtual machine, up to a time slice when the cores are busy (Linux lets the running
thread finish its slice first).  A process whose threads hand the GIL over thousands of
times a second loses a share of it that way; a model whose GIL passes to the next
thread at once predicts too much throughput at saturation (suites/two_tier_capacity:
+17% at 4 and 8 workers before this).

The trace cannot see the GIL change hands, but it sees the same wake-up where a message
crosses processes: a receive that was already blocked when the other process's send
ended returns one wake-up later.  Only receives in a process none of whose other threads
could hold the GIL at the send (each was inside a call) count, so the time is the
wake-up alone, not also a wait for the GIL behind a thread running Python.  The model
(emit.py) pools them over a machine's processes: the mean rests on the few percent that
waited for a core.

>>> evs = [{"kind": "io", "tid": 1, "ts": 0, "dur": 10, "op": "connect", "fd": 3,
...         "local": "A:1", "peer": "B:2"},
...        {"kind": "io", "tid": 2, "ts": 0, "dur": 12, "op": "accept", "fd": 4, "conn": 5,
...         "local": "B:2", "peer": "A:1"},
...        {"kind": "io", "tid": 2, "ts": 20, "dur": 500, "op": "recv", "fd": 5},
...        {"kind": "io", "tid": 3, "ts": 15, "dur": 900, "op": "recv", "fd": 9},
...        {"kind": "io", "tid": 1, "ts": 100, "dur": 20, "op": "send", "fd": 3}]
>>> wake_latencies(evs, {1: "client", 2: "server", 3: "server"})
{'server': [400]}
"""
from __future__ import annotations

import bisect
import collections
from typing import Iterable

from ..trace_query import connections, end_ts

#: wake-ups needed before a process's GIL gets a hand-over time in the model
MIN_WAKEUPS = 20


def wake_latencies(events: Iterable[dict], processes: dict,
                   span: tuple[float, float] | None = None) -> dict[str, list[int]]:
    """ns from the end of a send to the return of the receive on the connection's other
    end that was blocked in it, per receiving process, where every other thread of that
    process was inside a call (none held the GIL) when the send ended.

    Parameters
    ----------
    events : the trace's events (of several processes, on one clock: frontends/processes.py)
    processes : tid -> process name; receives and sends in one process are left out
    span : (lo, hi) ns: only sends that ended inside it (the work phase)

    Returns
    -------
    process name -> wake-up times in ns (processes with none are absent)
    """
    events = list(events)
    calls: dict = collections.defaultdict(list)       # tid -> [(start, end)] of its calls
    for e in events:
        if e["kind"] in ("io", "acquire", "wait", "get", "put") and e.get("dur"):
            calls[e["tid"]].append((e["ts"], end_ts(e)))
    for v in calls.values():
        v.sort()
    threads: dict = collections.defaultdict(set)
    for tid, p in processes.items():
        if tid in calls:
            threads[p].add(tid)

    def inside(tid: int, at: int) -> bool:
        spans = calls[tid]
        if not spans or at < spans[0][0] or at >= spans[-1][1]:
            return True            # before its first call or after its last: not running Python
        i = bisect.bisect_right(spans, (at, float("inf"))) - 1
        return i >= 0 and spans[i][0] <= at < spans[i][1]

    ends = collections.defaultdict(list)
    for key, evs in connections(events, processes):
        ends[key].append(evs)
    out: dict = collections.defaultdict(list)
    for key, same in ends.items():
        other = ends.get((key[1], key[0])) if key[0] != "fd" else None
        if len(same) != 1 or not other or len(other) != 1:
            continue               # an address pair used for several connections: ambiguous
        recvs = [e for e in same[0] if e["op"] == "recv"]
        for s in (e for e in other[0] if e["op"] == "send"):
            at = end_ts(s)
            if span is not None and not span[0] <= at <= span[1]:
                continue
            r = next((r for r in recvs if end_ts(r) > at), None)
            if r is None or r["ts"] >= s["ts"]:
                continue           # not blocked in the receive before the send
            proc = processes.get(r["tid"])
            if proc is None or proc == processes.get(s["tid"]):
                continue
            if all(inside(t, at) for t in threads[proc] if t != r["tid"]):
                out[proc].append(end_ts(r) - at)
    return dict(out)
