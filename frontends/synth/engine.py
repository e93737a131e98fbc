"""The event loop of the synthetic program: a clock, threads as generators, events.

Every simulated thread runs a Python generator.  A step that completes at once
just returns; a step that must wait registers the thread with whatever will
wake it (a cpu, a lock, a timer ...) and ``yield``\\ s.  Whoever wakes it calls
:meth:`Sim.resume`, with a value the ``yield`` returns (an item, ``True`` or
``False`` for an operation with a timeout).  Woken threads run before the clock
advances, in the order they were woken, so a run is deterministic.

Time is kept in float seconds and written as integer nanoseconds; the thread's
CPU clock (``cpu``) advances only by the demands of its ``cpu`` steps.

>>> sim = Sim(horizon=1.0)
>>> def body(th):
...     sim.at(sim.now + 0.25, sim.resume, th)
...     yield
...     sim.ev(th, "mark", None, name="woke")
>>> t = sim.spawn("demo-1", body, parent=None)
>>> sim.run()
>>> [(e["kind"], e["ts"]) for e in sim.events]
[('thread_start', 0), ('mark', 250000000), ('thread_end', 250000000)]
"""
from __future__ import annotations

import heapq
from collections import deque

from qpn.errors import QPNError

#: the synthetic process id; the main thread's tid
PID = 1000
#: steps without time passing after which a thread is declared a busy loop
SPIN_LIMIT = 1_000_000


def ns(t: float) -> int:
    """Seconds -> integer nanoseconds."""
    return int(round(t * 1e9))


class Thread:
    """One simulated thread: identity, CPU clock and the item it is handling."""

    __slots__ = ("tid", "name", "gen", "cpu", "item", "wid", "alive", "parent", "pending",
                 "children", "end", "signal_at", "relock_contended", "held", "runner")

    def __init__(self, tid: int, name: str, runner: str = ""):
        self.tid, self.name, self.runner = tid, name, runner
        self.gen = None
        self.cpu = 0.0            # seconds of CPU used (the ``cpu`` field)
        self.item = None          # the request / item this thread is handling
        self.wid = 0              # bumped when a timed wait ends (stale timeouts see it)
        self.alive = True
        self.parent = None        # a forking thread that waits for this one
        self.pending = 0          # children still running (for a forking thread)
        self.children: list = []
        self.end = None           # when it ended (seconds)
        self.signal_at = 0.0      # when a condition wait was signalled
        self.relock_contended = False
        self.held: dict = {}      # lock obj -> ns its acquisition ended (for hold)


class Sim:
    """Clock, timers, ready threads and the events written so far."""

    def __init__(self, horizon: float, max_events: int | None = None):
        self.now = 0.0
        self.horizon = float(horizon)
        self.max_events = max_events
        self.heap: list = []
        self.seq = 0
        self.ready: deque = deque()
        self.events: list[dict] = []
        self.threads: list[Thread] = []
        self.next_tid = PID + 1
        self.next_obj = 0x7F3A_0000_1000
        self.next_item = 0x7F3B_0000_0000
        self.truncated = False

    # -- ids ---------------------------------------------------------------
    def new_obj(self) -> int:
        """A fresh object id (spaced like a real runtime's addresses)."""
        self.next_obj += 0x40
        return self.next_obj

    def new_item(self) -> int:
        """A fresh id for an item put in a queue."""
        self.next_item += 0x30
        return self.next_item

    # -- scheduling --------------------------------------------------------
    def at(self, t: float, fn, *args) -> None:
        """Call ``fn(*args)`` at time ``t``."""
        heapq.heappush(self.heap, (t, self.seq, fn, args))
        self.seq += 1

    def resume(self, th: Thread, value=None) -> None:
        """Let a blocked thread go on now; its ``yield`` returns ``value``."""
        self.ready.append((th, value))

    def spawn(self, name: str, body, *, parent: Thread | None, site: str | None = None,
              runner: str = "", tid: int | None = None) -> Thread:
        """Start a thread running ``body(thread)`` (a generator function) now."""
        if tid is None:
            tid, self.next_tid = self.next_tid, self.next_tid + 1
        th = Thread(tid, name, runner)
        ev = {"kind": "thread_start", "tid": tid, "ts": ns(self.now), "cpu": 0}
        if site:
            ev["site"] = site
        ev["name"] = name
        if parent is not None:
            ev["parent"] = parent.tid
        ev["daemon"] = False
        self.events.append(ev)
        th.gen = body(th)
        self.threads.append(th)
        self.ready.append((th, None))
        return th

    def finish(self, th: Thread) -> None:
        """A thread's body returned: its ``thread_end`` and its waiting parent."""
        th.alive = False
        th.end = self.now
        self.events.append({"kind": "thread_end", "tid": th.tid, "ts": ns(self.now),
                            "cpu": ns(th.cpu)})
        p = th.parent
        if p is not None:
            p.pending -= 1
            if p.pending == 0:
                self.resume(p)

    def run(self) -> None:
        """Run until the horizon (or ``max_events``); threads still alive stay so."""
        heap, ready = self.heap, self.ready
        spin, last = 0, -1.0
        while True:
            while ready:
                th, value = ready.popleft()
                if not th.alive:
                    continue
                try:
                    th.gen.send(value)
                except StopIteration:
                    self.finish(th)
                if self.now == last:
                    spin += 1
                    if spin > SPIN_LIMIT:
                        raise QPNError(f"thread '{th.name}' runs without time passing at "
                                       f"t = {self.now:g} s (a loop with no step that waits or "
                                       f"takes time)")
                else:
                    spin, last = 0, self.now
            if self.max_events is not None and len(self.events) >= self.max_events:
                self.truncated = True
                return
            if not heap or heap[0][0] > self.horizon:
                self.now = self.horizon
                return
            t, _, fn, args = heapq.heappop(heap)
            self.now = t
            fn(*args)

    # -- events ------------------------------------------------------------
    def ev(self, th: Thread, kind: str, site: str | None, **fields) -> dict:
        """Append an event of ``th`` at the current time (fields that are None are left out).

        ``dur=None`` marks a blocking operation still under way: :meth:`done`
        fills it in; operations never completed are dropped by :meth:`trace_events`.
        """
        d = {"kind": kind, "tid": th.tid, "ts": ns(self.now), "cpu": ns(th.cpu)}
        if site is not None:
            d["site"] = site
        for k, v in fields.items():
            if v is not None or k == "dur":
                d[k] = v
        self.events.append(d)
        return d

    def done(self, d: dict) -> dict:
        """A blocking operation ends now: its ``dur``."""
        d["dur"] = ns(self.now) - d["ts"]
        return d

    def trace_events(self) -> list[dict]:
        """Completed events sorted by ``ts`` (creation order breaks ties)."""
        out = [e for e in self.events if not ("dur" in e and e["dur"] is None)]
        out.sort(key=lambda e: e["ts"])
        return out
