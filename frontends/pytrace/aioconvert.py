"""asyncio tasks as virtual threads: the runner's side of :mod:`.aiopatch`.

The traced process records, per step of a task, when it ran and the CPU its loop's
thread used (``aio_step``), and every event the way a thread records it, on the loop's
OS thread.  :func:`attribute` then gives the tasks their threads:

* every task is a thread of its own, ``tid = VIRTUAL | pid << 24 | serial``
  (:func:`virtual_tid`): a ``thread_start`` at its creation (``cpu`` 0, ``parent`` the
  creating task or thread, ``site``, ``name``, ``task: true``, ``loop``), a
  ``thread_end`` at the end of its last step;
* an event the loop's thread recorded during a step of task T is T's, and its ``cpu``
  T's clock: the loop thread's CPU used in T's steps so far.  The loop thread keeps the
  events outside steps, its clock less all the steps' CPU before them (the loop's own
  work: its selector, transports, timers), so the tasks' CPU plus the loop's is the
  thread's;
* an event that spans steps (an await: it began in one step of its task and was
  recorded in the next) gets as ``cpu_dur`` the task's CPU in it, and an asyncio lock's
  acquisition is ``contended`` when it spanned steps (the task had to wait; else its
  ``dur`` is 0, as a threading lock's free acquisition);
* what a task awaited at the end of a step, when that is another task or an executor's
  future, becomes a ``wait`` (``on: join`` with the task's ``target``, ``on: future``
  with the concurrent future's ``obj``) from the end of that step to the start of the
  next;
* each event loop is an ``object`` of type ``loop`` on its thread when it first runs a
  task; an OS thread started from inside a step has that task as its ``parent``.

Steps nested in steps (a loop run inside a task, as nest_asyncio does) are handled: the
inner task owns the time of its step, the outer the rest of its own.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

from .layout import LONG

#: the bit that marks a virtual thread id: above any OS thread id, exact in JSON
VIRTUAL = 1 << 50
_NEVER = -(1 << 63)


def virtual_tid(pid: int, serial: int) -> int:
    """The thread id of task number ``serial`` of process ``pid``.

    >>> virtual_tid(4242, 3) == (1 << 50) | (4242 << 24) | 3
    True
    """
    return VIRTUAL | (pid << 24) | serial


class _Seg:
    """A stretch of one OS thread's life owned by one task (``owner``) or by the loop
    (``owner`` 0): its start, its CPU clock there, and how the thread's CPU clock ``c``
    maps to the owner's (``c - a`` kept within ``[lo, hi]``)."""

    __slots__ = ("start", "end", "c0", "c1", "owner", "a", "lo", "hi", "S")

    def __init__(self, start, end, c0, c1, owner):
        self.start, self.end, self.c0, self.c1, self.owner = start, end, c0, c1, owner
        self.a = self.lo = self.hi = None
        self.S = 0                      # all task CPU of the thread before this stretch

    @property
    def cpu(self) -> int:
        if self.c0 is None or self.c1 is None:
            return 0
        return max(0, self.c1 - self.c0)

    def clock(self, c: int) -> int:
        v = c - self.a
        if self.lo is not None and v < self.lo:
            return self.lo
        if self.hi is not None and v > self.hi:
            return self.hi
        return v

    def loop_clock(self, c: int) -> int:
        """The loop's own clock at thread CPU ``c`` in this stretch."""
        if not self.owner:
            return self.clock(c)
        return (self.c0 if self.c0 is not None else c) - self.S


class _Thread:
    """The stretches of one life of one OS thread that ran task steps."""

    def __init__(self, steps: list):
        bounds = []
        for t0, c0, dur, cdur, n in steps:
            bounds.append((t0, 1, -dur, c0, n))
            bounds.append((t0 + dur, 0, dur, c0 + cdur, n))
        bounds.sort(key=lambda b: (b[0], b[1], b[2]))
        segs, stack = [], []
        prev_ts, prev_c = _NEVER, None
        for ts, opening, _, c, n in bounds:
            segs.append(_Seg(prev_ts, ts, prev_c, c, stack[-1] if stack else 0))
            if opening:
                stack.append(n)
            elif n in stack:
                del stack[len(stack) - 1 - stack[::-1].index(n)]
            prev_ts, prev_c = ts, c
        segs.append(_Seg(prev_ts, None, prev_c, None, stack[-1] if stack else 0))
        S = 0
        for g in segs:
            g.S = S
            if g.owner:
                S += g.cpu
            else:
                g.a = S
                g.lo = None if g.c0 is None else g.c0 - S
                g.hi = None if g.c1 is None else max(g.c1 - S, g.lo if g.lo is not None else 0)
        self.segs = segs
        self.starts = [g.start for g in segs]

    def at(self, ts: int) -> _Seg:
        return self.segs[bisect_right(self.starts, ts) - 1]


def _put_site(e: dict, site: str) -> None:
    """Give event ``e`` a site, in its place (after ``cpu``), keeping the dict itself."""
    after = "cpu" if "cpu" in e else "ts"
    items = list(e.items())
    e.clear()
    for k, v in items:
        e[k] = v
        if k == after:
            e["site"] = site


def attribute(events: list, aio: list, acquires: list, started: list, pid: int,
              sites: dict) -> int:
    """Give asyncio's tasks their virtual threads (see the module's docstring).

    ``events``: the trace's events (OS thread ids), changed in place and extended;
    ``aio``: the ``aio_*`` records as ``(os tid, record)``; ``acquires``: the events made
    of ``aio_acquire`` records; ``started``: ``(thread_start event, when its start() was
    called)`` of the OS threads the program started.  Returns the number of tasks."""
    tasks: dict = {}
    names: dict = {}
    steps_of: dict = defaultdict(list)          # os tid -> steps
    waits: dict = {}                            # (serial, t0) -> what the step ended waiting on
    for tid, r in aio:
        k = r[0]
        if k == "aio_step":
            _, _, t0, c0, n, dur, cdur, w = r[:8]
            steps_of[tid].append((t0, c0, dur, cdur, n))
            if w is not None:
                waits[n, t0] = w
        elif k == "aio_task":
            _, _, ts, _, sid, n, name, qual, loop, new = r[:10]
            tasks[n] = {"tid": tid, "ts": ts, "site": sid, "name": name, "qual": qual,
                        "loop": loop, "new": new}
        elif k == "aio_name":
            names[r[5]] = r[6]
    if not tasks and not steps_of:
        return 0

    # each OS thread's lives (a thread id may come back after a thread_end)
    lives: dict = defaultdict(list)
    for e in events:
        if e["kind"] == "thread_start":
            lives[e["tid"]].append(e["ts"])
    for v in lives.values():
        v.sort()

    def life(tid: int, ts: int) -> int:
        v = lives.get(tid)
        if not v or len(v) == 1:
            return 0
        return max(0, bisect_right(v, ts) - 1)

    by_key: dict = defaultdict(list)
    for tid, st in steps_of.items():
        for s in st:
            by_key[tid, life(tid, s[0])].append(s)
    threads = {key: _Thread(st) for key, st in by_key.items()}

    # each task's clock: the CPU of its stretches, in time order over all threads
    owned = sorted((g for th in threads.values() for g in th.segs if g.owner),
                   key=lambda g: g.start)
    K: dict = defaultdict(int)
    ends: dict = defaultdict(list)              # serial -> [(end of a stretch, clock there)]
    for g in owned:
        k0 = K[g.owner]
        g.a = (g.c0 if g.c0 is not None else 0) - k0
        g.lo, g.hi = k0, k0 + g.cpu
        K[g.owner] = g.hi
        ends[g.owner].append((g.end, g.hi))

    def task_clock(n: int, ts: int) -> int:
        v = ends.get(n)
        if not v:
            return 0
        i = bisect_right(v, (ts, 1 << 63)) - 1
        return v[i][1] if i >= 0 else 0

    def vt(n: int) -> int:
        return virtual_tid(pid, n)

    def where(tid, ts):
        th = threads.get((tid, life(tid, ts)))
        return None if th is None else th.at(ts)

    # a task whose own frames hold no code of the program (gather(asyncio.sleep(1))): its
    # events are at the site that created it
    created_at = {n: sites[info["site"]] for n, info in tasks.items()
                  if info["site"] is not None and info["site"] in sites}
    acquired = {id(e) for e in acquires}
    for e in events:
        tid = e["tid"]
        th = threads.get((tid, life(tid, e["ts"])))
        if th is None:
            continue
        ts = e["ts"]
        g = th.at(ts)
        c = e.get("cpu")
        kind = e["kind"]
        if g.owner and kind not in ("thread_start", "thread_end"):
            e["tid"] = vt(g.owner)
            if c is not None:
                e["cpu"] = g.clock(c)
            if "site" not in e and g.owner in created_at:
                _put_site(e, created_at[g.owner])
        elif c is not None:
            e["cpu"] = g.loop_clock(c)
        dur = e.get("dur")
        if dur:
            g2 = th.at(ts + dur)
            crossed = g2 is not g
            if crossed and "cpu_dur" in e and c is not None:
                c_end = c + e["cpu_dur"]
                if g2.owner == g.owner:
                    k_end = g2.clock(c_end) if g.owner else g2.loop_clock(c_end)
                elif g.owner:
                    k_end = task_clock(g.owner, ts + dur)
                else:
                    k_end = g2.loop_clock(c_end)
                # the owner's CPU in the span is part of the thread's, never more (a
                # clamp to a stretch's bounds must not add the thread's other CPU)
                e["cpu_dur"] = min(e["cpu_dur"], max(0, k_end - e["cpu"]))
        else:
            crossed = False
        if id(e) in acquired:
            e["contended"] = crossed
            if not crossed:
                e["dur"] = 0
                e.pop("cpu_dur", None)
    for e in events:
        if e["kind"] == "wait" and e.get("on") == "join" and e.get("target", 0) < 0:
            e["target"] = vt(-e["target"])

    # OS threads started from inside a step: the task started them
    for ev, when in started:
        p = ev.get("parent")
        if p is None or when is None:
            continue
        g = where(p, when)
        if g is not None and g.owner:
            ev["parent"] = vt(g.owner)

    out = []
    steps_by_task: dict = defaultdict(list)
    for st in steps_of.values():
        for t0, c0, dur, cdur, n in st:
            steps_by_task[n].append((t0, t0 + dur))
    for n in set(tasks) | set(steps_by_task):
        info = tasks.get(n)
        st = sorted(steps_by_task.get(n, ()))
        if info is not None:
            ts = info["ts"]
            start = {"kind": "thread_start", "tid": vt(n), "ts": ts, "cpu": 0}
            s = sites.get(info["site"]) if info["site"] is not None else None
            if s is not None:
                start["site"] = s
            name = names.get(n) or info["name"] or info["qual"]
            if name:
                start["name"] = name
            g = where(info["tid"], ts)
            start["parent"] = vt(g.owner) if g is not None and g.owner else info["tid"]
            start["task"] = True
            start["loop"] = info["loop"]
        else:                                   # seen only running (its creation not kept)
            ts = st[0][0]
            start = {"kind": "thread_start", "tid": vt(n), "ts": ts, "cpu": 0,
                     "name": names.get(n) or "task", "task": True}
        out.append(start)
        for (t0, t1), (u0, _) in zip(st, st[1:]):
            w = waits.get((n, t0))
            if w is None:
                continue
            on, v, sid = w
            ev = {"kind": "wait", "tid": vt(n), "ts": t1, "cpu": task_clock(n, t1)}
            s = sites.get(sid) if sid is not None else created_at.get(n)
            if s is not None:
                ev["site"] = s
            ev["on"] = on
            if on == "future":
                ev["obj"] = v
            ev["dur"] = max(0, u0 - t1)
            if on == "join":
                ev["target"] = vt(v)
            if ev["dur"] > LONG:
                ev["cpu_dur"] = 0
            out.append(ev)
        end_ts = max(ts, st[-1][1]) if st else ts
        out.append({"kind": "thread_end", "tid": vt(n), "ts": end_ts, "cpu": K.get(n, 0)})

    # each loop, on its thread, when it first runs a task
    first_step: dict = {}
    for tid, st in steps_of.items():
        for t0, c0, dur, cdur, n in st:
            info = tasks.get(n)
            if info is None:
                continue
            first_step.setdefault(info["loop"], []).append((t0, c0, tid))
    for v in first_step.values():
        v.sort()
    for n in sorted(tasks, key=lambda n: tasks[n]["ts"]):
        info = tasks[n]
        if not info["new"]:
            continue
        v = first_step.get(info["loop"], [])
        i = bisect_right(v, (info["ts"], 1 << 63, 0))
        if i >= len(v):
            continue
        t0, c0, tid = v[i]
        g = where(tid, t0)
        ev = {"kind": "object", "tid": tid, "ts": t0,
              "cpu": g.loop_clock(c0) if g is not None else c0}
        s = sites.get(info["site"]) if info["site"] is not None else None
        if s is not None:
            ev["site"] = s
        ev["obj"] = info["loop"]
        ev["type"] = "loop"
        out.append(ev)
    events.extend(out)
    return len(set(tasks) | set(steps_by_task))
