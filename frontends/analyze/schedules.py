"""Requests issued on a schedule: sleeps that keep a plan become an open source.

A client that keeps a schedule sleeps until the next planned instant, whatever
its loop did before::

    for planned in plan:
        delay = planned - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        send(...)                      # and perhaps wait for the answer

Its requests do not wait for earlier answers: an open workload, a ``source``
with a rate parameter.  A loop with a think time sleeps a time of its own after
its work: a closed loop.  The code shape does not tell them apart; the timing
does.  For a schedule, the sleep after an iteration is shorter by as much as
the iteration took (``asked = gap - work``), so the slope of the time asked for
against the time since the last wake-up is -1; for a think time it is 0.  And
an iteration that overran its slot does not sleep at all.

Where the slope cannot be read (the work between sleeps hardly varies: a
fire-and-forget client), the two readings give nearly the same arrivals; the
sleeps are read as a schedule when the times asked for vary (a fixed sleep is a
period that follows the loop's own work) and the model's header says that the
trace could not tell.

A schedule's sleeps become takes from a queue nobody in the trace puts into
(``plan_LINE``); an iteration that overran takes at once, where its next
operation began.  The analysis then makes that queue an open ``source`` at the
rate of the takes, so the threads that kept the schedule take planned requests
as they arrive: a request waits when every such thread is busy, as the program's
late requests do.

>>> sleeps = [(5 + (i % 3), 10 - (i % 3) + 0.01 * (i % 2)) for i in range(30)]
>>> v = verdict([w for w, _ in sleeps], [r for _, r in sleeps], asked_vary=True)
>>> v.schedule, round(v.slope, 2)
(True, -1.0)
>>> v = verdict([5 + (i % 3) for i in range(30)], [10 + (i % 4) for i in range(30)], True)
>>> v.schedule, round(v.slope, 2)
(False, 0.0)
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass

from .spawns import SPAWNS_BASE

#: synthetic ids of the plan queues: above the spawn queues' ones
PLANS_BASE = SPAWNS_BASE + (1 << 40)
#: sleeps at one site (over all threads) needed to read a schedule
MIN_SLEEPS = 8
#: the slope's standard error below which it decides
DECISIVE_SE = 0.35
#: events that are no operation of the thread
_QUIET = frozenset({"thread_start", "thread_end", "object", "sample", "counter", "mark",
                    "cpu", "disk", "wakeup", "probe", "feature"})


@dataclass
class Verdict:
    """What the sleeps at one site say: a schedule or not, and from what."""

    schedule: bool
    slope: float          # of the time asked for against the work since the last wake-up
    se: float             # its standard error (inf: the work did not vary)
    pairs: int            # consecutive iterations that both slept
    decided: bool         # the slope or the skipped sleeps decided (else: whether asked vary)
    skipped: int = 0      # iterations that did not sleep
    skip_work: float = math.nan     # mean work (ns) of the iteration before a skipped sleep
    sleep_work: float = math.nan    # ... before a sleep

    def reason(self) -> str:
        """Why, in the words of the model's header."""
        if self.decided and self.skipped and not (abs(self.slope + 1) <= max(0.3, 2 * self.se)
                                                 and self.se <= DECISIVE_SE):
            return (f"{self.skipped} iteration(s) that came after longer work "
                    f"({self.skip_work / 1e6:.3g} ms against {self.sleep_work / 1e6:.3g} ms "
                    "before a sleep) did not sleep at all: they were late for their planned "
                    "instant, which a think time never is")
        if self.decided:
            return (f"each sleep is shorter by the time the iteration before it took (slope "
                    f"{self.slope:.2f} +- {self.se:.2f} over {self.pairs} pairs of iterations)")
        return ("the trace cannot tell it from a think time (the work between sleeps hardly "
                "varies and no sleep was skipped); the times asked for vary, so read as a "
                "schedule")


def verdict(work: list, asked: list, asked_vary: bool, skip_work: list = (),
            sleep_work: list = ()) -> Verdict:
    """A schedule when the time asked for falls by the time the work took (slope -1) or
    when iterations after longer work skip the sleep (late for their instant); a think
    time when the time asked for does not depend on the work (slope 0) and no sleep is
    skipped; undecided otherwise: then a schedule if the times asked for vary.

    ``work``/``asked``: consecutive iterations that both slept, the time since the last
    wake-up and the time asked for; ``skip_work``/``sleep_work``: the work of the
    iteration before each skipped sleep / each sleep."""
    n = len(work)
    b, se = math.nan, math.inf
    if n >= 3:
        mw, ma = sum(work) / n, sum(asked) / n
        sxx = sum((w - mw) ** 2 for w in work)
        if sxx > 0:
            b = sum((w - mw) * (a - ma) for w, a in zip(work, asked)) / sxx
            res = sum((a - ma - b * (w - mw)) ** 2 for w, a in zip(work, asked))
            se = math.sqrt(res / max(1, n - 2) / sxx)
    k = len(skip_work)
    mean = (lambda xs: sum(xs) / len(xs) if xs else math.nan)
    facts = dict(skipped=k, skip_work=mean(skip_work), sleep_work=mean(sleep_work))
    tol = max(0.3, 2 * se)
    if se <= DECISIVE_SE and abs(b + 1) <= tol:
        return Verdict(True, b, se, n, True, **facts)
    total = k + len(sleep_work)
    if k >= max(3, 0.01 * total) and facts["skip_work"] > facts["sleep_work"]:
        return Verdict(True, b, se, n, True, **facts)
    if se <= DECISIVE_SE and abs(b) <= tol and not k:
        return Verdict(False, b, se, n, True, **facts)
    return Verdict(asked_vary, b, se, n, False, **facts)


def _is_sleep(e: dict) -> bool:
    return e["kind"] == "wait" and e.get("on") == "sleep"


def _token(e: dict) -> tuple:
    return (e["kind"], e.get("site"), e.get("op") or e.get("on"))


def schedules_as_sources(by: dict) -> tuple[dict, list, list]:
    """(events by thread with schedule-keeping sleeps as takes from plan queues, the
    queues to declare, header lines saying what was read).  ``by``: tid -> events sorted
    by ts (not changed: threads that change get new lists)."""
    sites: dict = collections.defaultdict(list)          # sleep site -> [(tid, index)]
    for tid, evs in by.items():
        for i, e in enumerate(evs):
            if _is_sleep(e) and e.get("site"):
                sites[e["site"]].append((tid, i))
    out, objects, notes = dict(by), [], []
    for site, where in sites.items():
        if len(where) < MIN_SLEEPS:
            continue
        tids = sorted({t for t, _ in where})
        nexts = collections.Counter()
        work, asked, all_asked = [], [], []
        for tid in tids:
            evs = by[tid]
            idx = [i for t, i in where if t == tid]
            for i in idx:
                nx = next((e for e in evs[i + 1:] if e["kind"] not in _QUIET), None)
                if nx is not None:
                    nexts[_token(nx)] += 1
                all_asked.append(evs[i].get("requested", evs[i].get("dur", 0)))
        if not nexts:
            continue
        anchor = nexts.most_common(1)[0][0]
        skip_work, sleep_work = [], []
        for tid in tids:
            evs = by[tid]
            idx = set(i for t, i in where if t == tid)
            last_wake, slept, iters = None, False, 0
            begun = None                     # when the current iteration's work began
            for i, e in enumerate(evs):
                if i in idx:
                    if last_wake is not None and slept and iters == 1:
                        work.append(e["ts"] - last_wake)
                        asked.append(e.get("requested", e.get("dur", 0)))
                    if begun is not None:
                        sleep_work.append(e["ts"] - begun)
                    last_wake, slept, iters = e["ts"] + e.get("dur", 0), True, 0
                    begun = None
                elif e["kind"] not in _QUIET and _token(e) == anchor:
                    iters += 1
                    if iters > 1:               # an iteration that did not sleep
                        slept = False
                    if begun is not None and iters > 1:
                        skip_work.append(e["ts"] - begun)
                    begun = e["ts"]
        m = sum(all_asked) / len(all_asked)
        var = sum((a - m) ** 2 for a in all_asked) / len(all_asked)
        v = verdict(work, asked, m > 0 and var / (m * m) >= 0.05, skip_work, sleep_work)
        if not v.schedule:
            continue
        q = PLANS_BASE + len(objects)
        first = min(by[t][0]["ts"] for t in tids)
        how = v.reason()
        objects.append({"kind": "object", "tid": tids[0], "ts": first - 1, "obj": q,
                        "type": "queue", "site": site, "name_type": "plan",
                        "why": f"requests planned by the sleeps at {site}, a schedule (see "
                               "the header; not an object of the program)"})
        late, items = 0, iter(range(q + 1, q + (1 << 32)))
        for tid in tids:
            evs = by[tid]
            idx = set(i for t, i in where if t == tid)
            new, slept, seen = [], False, False
            for i, e in enumerate(evs):
                if i in idx:
                    # the request is due at the planned instant (the time asked for); the
                    # thread wakes later by the OS's timer slack and wake-up: a sleep of its own
                    dur = e.get("dur", 0)
                    asked = min(dur, e.get("requested", dur))
                    new.append({"kind": "get", "tid": tid, "ts": e["ts"], "obj": q,
                                "item": next(items), "site": site, "dur": asked,
                                "cpu": e.get("cpu"), "planned": True})
                    if dur > asked:
                        new.append({"kind": "wait", "tid": tid, "ts": e["ts"] + asked,
                                    "on": "sleep", "requested": 0, "dur": dur - asked,
                                    "site": site, "cpu": e.get("cpu")})
                    slept = True
                    continue
                if e["kind"] not in _QUIET and _token(e) == anchor:
                    if seen and not slept:      # overran its slot: the next request at once
                        new.append({"kind": "get", "tid": tid, "ts": e["ts"], "obj": q,
                                    "item": next(items), "site": site, "dur": 0,
                                    "cpu": e.get("cpu")})
                        late += 1
                    seen, slept = True, False
                new.append(e)
            out[tid] = new
        notes.append(f"# Schedule: {len(where)} sleeps at {site} "
                     f"({len(tids)} thread{'s' if len(tids) > 1 else ''}) end at planned "
                     f"instants: {how}.  The requests are an open source with a rate "
                     "parameter (the threads take them as planned, late when busy), not a "
                     "loop of sleeps.")
    return out, objects, notes


__all__ = ["schedules_as_sources", "verdict", "Verdict", "PLANS_BASE"]
