"""The physics of a trace: what the events say together (see docs/trace-format.md).

:class:`Timeline` sees the reader's events one by one and checks that their times
are clock readings, that no part of the trace lies detached from the rest (a corrupt
timestamp), and that each thread's life is in order (started before its events,
ended after them, not started twice).  An impossible event is an error at its line;
a lenient reader leaves it out and names its line.  ``qpn trace-check`` and ``qpn
build`` read through the same reader, so they apply the same rules.
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from itertools import repeat
from operator import add, itemgetter, mul, sub

from .trace_schema import TraceError


#: The timeline's rules (see Timeline): a time below 0 or from 2^62 ns (146 years) on is
#: no clock reading; a part of the trace more than GAP_FLOOR and GAP_RATIO times the
#: body's span away from it (a body of BODY_MIN events or more) is detached.
MAX_TS = 1 << 62
GAP_FLOOR = 3600 * 10 ** 9
GAP_RATIO = 1000
BODY_MIN = 10
#: problems named one by one in --lenient's warnings (then counted)
_NAMED = 50


class _Thread:
    """One thread id's state in the timeline."""

    __slots__ = ("live", "started", "start", "end", "pre", "pre_list", "late")

    def __init__(self, live: bool, started: bool, pos: int, replay: bool) -> None:
        self.live, self.started = live, started
        self.start = pos if started else None      # pos of its (latest) thread_start
        self.end = None if live else pos           # pos of its latest thread_end
        self.pre = None if started else pos        # its first event, if before any start
        self.pre_list = [pos] if replay and not started else None   # (replay: all of them)
        self.late: list = []                       # (pos, code): after the end of a thread
                                                   # not started (yet)


class Timeline:
    """The physics of a trace: its times and its threads' lifecycles.

    The reader (:class:`TraceReader`) shows it every event, so ``qpn trace-check``
    and ``qpn build`` apply the same rules.  They are:

    1. **Time is a clock reading**: ``ts`` is >= 0 and below 2^62 ns (146 years: a
       monotonic clock counts from boot, the real-time clock from 1970).
    2. **No detached events**: sort the timestamps and cut wherever two consecutive
       ones are more than an hour apart (GAP_FLOOR) -- unless the silence is accounted
       for: an event before it lasts (``ts + dur``) until less than an hour before its
       end (a thread waited or ran a task all along), or some thread's ``cpu`` clock
       advanced across it by all but less than an hour of the wall time (it
       computed).  The part with the most events (the earliest on a tie) is the
       trace's body.  When it holds at least 10 events (BODY_MIN), every other part
       that lies more than an hour *and* more than 1000 times the body's span
       (GAP_RATIO) away from the body is detached: corrupt timestamps, not a pause (a
       program does not go silent, neither waiting nor computing, for a thousand
       times as long as all it did; smaller traces cannot tell).  A corrupt ``ts``
       that lands within a thread's life, or near the rest, is not caught by this
       rule (only by rule 3 if it leaves the thread's life).
    3. **Lifecycles**: per thread id, in ts order (on a tie a ``thread_start`` first
       and a ``thread_end`` last: events of one ns are simultaneous; then file order),
       its events come after a ``thread_start`` and before the ``thread_end`` that follows it;
       ``thread_start`` and ``thread_end`` alternate.  So an event (or a
       ``thread_end``) before the thread's first ``thread_start``, after its
       ``thread_end``, a second start or end are impossible.  Two exceptions the
       tracers produce are warnings, not errors: an id started again after its
       ``thread_end`` (the OS reuses thread ids), and a thread with no
       ``thread_start`` at all (one that ran before tracing began, or that the
       program started with ``_thread``): it is read as running from the first of its
       events.

    Detached events are set aside before rule 3 is applied (a corrupt ts is one
    problem, not also a lifecycle one), and so are times that break rule 1.  An
    impossible event is an error (``file:line``, what is wrong, a hint); with
    ``--lenient`` it is dropped instead, with a warning naming its line.

    Cost: the reader's scanner vouches for an event of a running thread whose ts is
    not below the previous event's and less than an hour after it (EventChecker), so
    in a file sorted by ts -- what the tracers write -- this class sees the
    thread_start and thread_end events and little else.  A file not sorted by ts (or
    with a problem, or a tie rule 3 orders otherwise) is checked once read: the events
    are sorted (by index, in C) and replayed, a pass in Python.  A silence of more
    than an hour costs a pass too (rule 2 looks at durations and CPU clocks).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.streaming = True      # sorted by ts so far: checked while read
        self.live: set = set()     # tids that are running (the scanner's test)
        self.last = 0              # the scanner vouches for last <= ts < lim
        self.lim = 0
        self.first: int | None = None    # first (in-range) ts
        self.gaps: list = []       # (ts before, ts after, pos after): jumps over GAP_FLOOR
        self.bad_ts: list = []     # positions of events with ts out of [0, MAX_TS)
        self.bases: list = []      # position of each chunk's first event
        self.chunks: list = []     # (events, number of the first line, line numbers or None)
        self.base = 0              # position of the current chunk's first event
        self.total = 0
        self.seen_to = -1          # the last position shown to see()
        self._reset(False)

    def _reset(self, replay: bool) -> None:
        self.replay = replay
        self.live.clear()
        self.threads: dict = {}
        self.errors: list = []     # (pos, code, tid, other pos, [positions dropped])
        self.notes: list = []      # (pos, code, tid, other pos)

    # --- while reading ------------------------------------------------------
    def chunk(self, base: int, events: list, start: int, lines: list | None) -> None:
        """Events from position ``base`` on: ``events``, from line ``start`` (or at ``lines``)."""
        self.base = base
        if self.bases and self.bases[-1] == base:      # the same events, parsed again
            self.chunks[-1] = (events, start, lines)
        else:
            self.bases.append(base)
            self.chunks.append((events, start, lines))

    def see(self, ev: dict, i: int) -> None:
        """A valid event at index ``i`` of the current chunk that the scanner did not vouch for."""
        pos = self.base + i
        self.seen_to = pos
        t = ev["ts"]
        if not 0 <= t < MAX_TS:
            self.bad_ts.append(pos)
            return
        if not self.streaming:
            return
        if t < self.last:              # not sorted: replayed once read
            self._unsorted()
            return
        if self.first is None:
            self.first = t
        elif t - self.last > GAP_FLOOR:
            self.gaps.append((self.last, t, pos))
        self.last = t
        self.lim = min(t + GAP_FLOOR, MAX_TS)
        self.step(ev, pos)

    def step(self, ev: dict, pos: int) -> None:
        """Rule 3 for one more event, in order: by ts; on a tie, a thread_start first and
        a thread_end last (events at one ns are simultaneous), then by position."""
        kind, tid = ev["kind"], ev["tid"]
        th = self.threads.get(tid)
        if kind == "thread_start":
            if th is None:
                self.threads[tid] = _Thread(True, True, pos, self.replay)
                self.live.add(tid)
                return
            if not self.replay and (not th.started or (not th.live and
                                                       self.event(th.end)["ts"] == ev["ts"])):
                self._unsorted()       # an error, or a tie the file order breaks otherwise
                return
            if not th.started:         # events (or an end) came before its first start
                self.errors.append((th.pre, "before", tid, pos, th.pre_list))
                th.started, th.pre_list, th.late = True, None, []
            elif th.live:
                self.errors.append((pos, "start2", tid, th.start, [pos]))
                return
            else:
                self.notes.append((pos, "reuse", tid, th.end))
            th.live, th.start = True, pos
            self.live.add(tid)
        elif kind == "thread_end":
            if th is None:
                self.threads[tid] = _Thread(False, False, pos, self.replay)
            elif not th.live:
                self._past_end(th, tid, pos, "end2")
            else:
                th.live, th.end = False, pos
                self.live.discard(tid)
                if th.pre_list is not None and not th.started:
                    th.pre_list.append(pos)
        elif th is None:
            self.threads[tid] = _Thread(True, False, pos, self.replay)
            if not self.replay:        # (replay: live holds the started threads only)
                self.live.add(tid)
        elif not th.live:
            if not self.replay and self.event(th.end)["ts"] == ev["ts"]:
                self._unsorted()       # (at its end's ns: decided in order once read)
            else:
                self._past_end(th, tid, pos, "after")
        elif th.pre_list is not None and not th.started:
            th.pre_list.append(pos)

    def _past_end(self, th, tid, pos: int, what: str) -> None:
        """An event (``after``) or a second end (``end2``) of an ended thread: an error if
        it started, else kept for the check of its (later) start."""
        if th.started:
            self.errors.append((pos, what, tid, th.end, [pos]))
        else:
            th.late.append((pos, what, th.end))
            if th.pre_list is not None:
                th.pre_list.append(pos)

    def _unsorted(self) -> None:
        """From here on the file is not read in the rules' order: sort it once read."""
        self.streaming = False
        self.live.clear()

    # --- once read ----------------------------------------------------------
    def event(self, pos: int) -> dict:
        k = bisect_right(self.bases, pos) - 1
        return self.chunks[k][0][pos - self.bases[k]]

    def line(self, pos: int) -> int:
        k = bisect_right(self.bases, pos) - 1
        _, start, lines = self.chunks[k]
        return start + pos - self.bases[k] if lines is None else lines[pos - self.bases[k]]

    def _all(self) -> list:
        out: list = []
        for k, (events, _, _) in enumerate(self.chunks):
            end = self.bases[k + 1] if k + 1 < len(self.bases) else self.total
            out += events[:end - self.bases[k]]
        return out

    def finish(self, total: int) -> None:
        """Apply the rules to the ``total`` events read; sets ``problems`` (the errors:
        (line, message, hint, positions to drop)) and ``warnings`` (line, message)."""
        self.total = total
        if self.seen_to >= total:      # (a chunk parsed again came out shorter)
            self.streaming = False
        events = order = None
        # the parts between long silences, in ts order: (first ts, last ts, events, from, to)
        # with from/to positions (read in order) or indices into order (else)
        segs = []
        if self.streaming:
            bad = set(self.bad_ts)
            if self.first is not None:
                cuts = [(self.first, 0)] + [(t1, p) for _, t1, p in self.gaps]
                ends = [t0 for t0, _, _ in self.gaps] + [self.last]
                nbad = sorted(bad)
                for k, ((t1, p0), t0) in enumerate(zip(cuts, ends)):
                    p1 = cuts[k + 1][1] if k + 1 < len(cuts) else total
                    n = p1 - p0 - (bisect_left(nbad, p1) - bisect_left(nbad, p0))
                    segs.append((t1, t0, n, p0, p1))
        else:                          # (loops in C where they can be)
            events = self._all()
            tss = list(map(_ts, events))
            self.bad_ts = ([p for p, t in enumerate(tss) if not 0 <= t < MAX_TS]
                           if tss and (min(tss) < 0 or max(tss) >= MAX_TS) else [])
            bad = set(self.bad_ts)
            order = _order(events, tss, bad)
            st = list(map(tss.__getitem__, order))
            if st:
                steps = list(map(sub, st[1:], st))
                cut = ([k + 1 for k, d in enumerate(steps) if d > GAP_FLOOR]
                       if steps and max(steps) > GAP_FLOOR else [])
                for k0, k in zip([0] + cut, cut + [len(st)]):
                    segs.append((st[k0], st[k - 1], k - k0, k0, k))
        if len(segs) > 1:              # silences a recorded wait (ts + dur) spans are none
            if events is None:
                events = self._all()
            segs = _covered(segs, events, order, bad)
        detached = []                  # (pos, body's events, body's span, distance, later?)
        if len(segs) > 1:
            b = max(range(len(segs)), key=lambda k: segs[k][2])
            b0, b1, bn = segs[b][:3]
            limit = max(GAP_FLOOR, GAP_RATIO * (b1 - b0))
            for k, (t0, t1, n, lo, hi) in enumerate(segs):
                if k == b or bn < BODY_MIN or not (t0 - b1 if k > b else b0 - t1) > limit:
                    continue
                for p in (range(lo, hi) if order is None else order[lo:hi]):
                    if p not in bad:
                        t = events[p]["ts"]
                        detached.append((p, bn, b1 - b0, t - b1 if k > b else b0 - t, k > b))
        if detached or not self.streaming:
            skip = bad | {d[0] for d in detached}
            self._reset(True)
            if events is None:
                events = self._all()
            if order is None:
                order = _order(events, list(map(_ts, events)), bad)
            step, running = self.step, self.live
            for p in order:
                e = events[p]
                # (an event of a thread that started and runs: nothing to do)
                if e["tid"] in running and (k := e["kind"]) != "thread_start" and \
                        k != "thread_end" or p in skip:
                    continue
                step(e, p)
        self._conclude(detached)

    def _conclude(self, detached: list) -> None:
        line, ev = self.line, self.event
        probs = []                     # (pos, message, hint, drops)
        for p in self.bad_ts:
            e = ev(p)
            t = e["ts"]
            why = (f"ts {t} is negative: a clock reading never is" if t < 0 else
                   f"ts {t} is beyond 2^62 ns (146 years): no clock a tracer reads gets there")
            probs.append((p, f"{e['kind']} event: {why}", "a corrupt or hand-edited time field",
                          [p]))
        for later in (False, True):    # one problem for those before the body, one after
            group = [d for d in detached if d[4] == later]
            if not group:
                continue
            p, bn, span, dist, _ = min(group)
            e = ev(p)
            more = len(group) - 1
            probs.append((p, f"{e['kind']} event: ts {e['ts']} is {_dur(dist)} "
                             f"{'after' if later else 'before'} the trace's other {bn} events, "
                             f"which span {_dur(span)}"
                             + (f"; {more} more events as far away" if more else ""),
                          f"more than an hour and {GAP_RATIO} times their span away, with no "
                          "wait (dur) or computation (cpu) across the silence: a corrupt "
                          "timestamp, not a pause", sorted(d[0] for d in group)))
        # threads never started: what came after their end is impossible all the same
        for tid, th in self.threads.items():
            if not th.started:
                for p, code, other in th.late:
                    self.errors.append((p, code, tid, other, [p]))
                self.notes.append((th.pre, "unannounced", tid, None))
        lifecycle = ("a thread's events lie between its thread_start and its thread_end; a "
                     "wrong tid or ts (a corrupt or hand-edited line, lines of another trace) "
                     "does this")
        after: dict = {}               # the events after one thread_end: one problem
        for p, code, tid, other, drops in self.errors:
            if code == "after":
                after.setdefault(other, []).append(p)
        for p, code, tid, other, drops in self.errors:
            if code == "after":
                if p != min(after[other]):
                    continue
                drops = sorted(after[other])
            e, o = ev(p), ev(other)
            if code == "before":
                more = len(drops) - 1
                what = "thread_end" if e["kind"] == "thread_end" else f"{e['kind']} event"
                msg = (f"{what} of thread {tid} (ts {e['ts']}) before the thread started: its "
                       f"thread_start is at line {line(other)} (ts {o['ts']})"
                       + (f"; {more} more of its events before that (or that thread_start is "
                          "wrong)" if more else ""))
                probs.append((p, msg, lifecycle, drops))
            elif code == "after":
                more = len(drops) - 1
                probs.append((p, f"{e['kind']} event of thread {tid} (ts {e['ts']}) after the "
                                 f"thread ended: its thread_end is at line {line(other)} "
                                 f"(ts {o['ts']})"
                                 + (f"; {more} more of its events after that (or that "
                                    "thread_end is wrong)" if more else ""),
                              lifecycle, drops))
            else:
                k0, what, other_kind = (("thread_start", "started", "thread_end")
                                        if code == "start2" else
                                        ("thread_end", "ended", "thread_start"))
                probs.append((p, f"thread {tid} {what} twice: {k0} at line {line(other)} "
                                 f"(ts {o['ts']}) and at line {line(p)} (ts {e['ts']}), with no "
                                 f"{other_kind} between",
                              "a thread id is reused only after the thread ended; a copied "
                              "line or two merged traces do this", drops))
        probs.sort(key=lambda pr: pr[0])         # positions go with the lines
        seen: set = set()
        self.problems = []
        for p, msg, hint, drops in probs:
            drops = [q for q in drops if q not in seen]
            if drops:
                seen.update(drops)
                self.problems.append((line(p), msg, hint, drops))
        self.problems.sort(key=lambda pr: pr[0])
        notes = []
        for p, code, tid, other in self.notes:
            e = ev(p)
            if code == "reuse":
                notes.append((line(p), f"thread id {tid} is started again (ts {e['ts']}) after "
                              f"its thread_end at line {line(other)} (ts {ev(other)['ts']}): "
                              "two threads with one id, read as one thread"))
            else:
                notes.append((line(p), f"thread {tid} has events but no thread_start (the "
                              f"first: {e['kind']}, ts {e['ts']}): read as running from there "
                              "(a thread started before tracing began, or with _thread)"))
        self.warnings = sorted(notes)

    def report(self, strict: bool) -> tuple["TraceError | None", list, list]:
        """(the error to raise when strict, the warnings, the positions to drop)."""
        warnings = [f"{self.path}:{ln}: {msg}" for ln, msg in self.warnings[:_NAMED]]
        if len(self.warnings) > _NAMED:
            warnings.append(f"{self.path}: {len(self.warnings) - _NAMED} more such warnings")
        if not self.problems:
            return None, warnings, []
        if strict:
            ln, msg, hint, first = self.problems[0]
            n = sum(len(d) for *_, d in self.problems[1:])
            if n:
                msg += f" ({n} more impossible event(s) after it)"
            shown = json.dumps(self.event(first[0]))
            return (TraceError(msg, self.path, ln, 0, shown[:200] + "..." * (len(shown) > 200),
                               hint=f"{hint}; --lenient drops "
                               + ("the event and says so" if n + len(first) == 1 else
                                  "them and names each")),
                    warnings, [])
        drops = []
        errs = []
        for ln, msg, hint, d in self.problems:
            drops += d
            if len(errs) < _NAMED:
                shown = sorted(map(self.line, d))
                errs.append(f"{self.path}:{ln}: {msg}; dropped (line{'s' * (len(shown) > 1)} "
                            f"{_spans(shown)})")
        if len(self.problems) > _NAMED:
            rest = sum(len(d) for *_, d in self.problems[_NAMED:])
            errs.append(f"{self.path}: {len(self.problems) - _NAMED} more problems: "
                        f"{rest} more impossible event(s) dropped")
        return None, errs + warnings, drops


_ts = itemgetter("ts")


def _spans(lines: list, most: int = 100) -> str:
    """Sorted line numbers as runs: '4, 7-9, 12' (the first ``most`` runs, then a count).

    >>> _spans([4, 7, 8, 9, 12])
    '4, 7-9, 12'
    """
    runs: list = []
    for n in lines:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:most])
    return text + (f", ... ({len(lines)} in all)" if len(runs) > most else "")


_kind = itemgetter("kind")


def _order(events: list, tss: list, bad: set) -> list:
    """The positions of ``events`` (their ts ``tss``; less those in ``bad``) in the rules'
    order: by ts; on a tie a thread_start first, a thread_end last, then by position (a
    stable sort of keys 4 ts + 0, 1 or 2, made in C but for the few marks)."""
    keys = list(map(add, map(mul, tss, repeat(4)), repeat(1)))
    kinds = list(map(_kind, events))
    for kind, d in (("thread_start", -1), ("thread_end", 1)):
        i = -1
        try:
            while True:
                i = kinds.index(kind, i + 1)
                keys[i] += d
        except ValueError:
            pass
    n = len(events)
    return sorted((p for p in range(n) if p not in bad) if bad else range(n),
                  key=keys.__getitem__)


def _covered(segs: list, events: list, order: list | None, bad: set) -> list:
    """``segs`` (see Timeline.finish) joined where the silence between two of them is
    accounted for: an event before it lasts (ts + dur) until less than GAP_FLOOR before
    its end (a thread waited, or ran a task, all along), or a thread's CPU clock
    advanced across it by all but less than GAP_FLOOR of the wall time (it computed)."""
    covered = [False] * len(segs)      # [j]: the silence before segs[j] is accounted for
    reach = -1
    last: dict = {}                    # tid -> (ts, cpu, segment) of its latest event
    for j, (t0, _, _, lo, hi) in enumerate(segs):
        if j and reach >= t0 - GAP_FLOOR:
            covered[j] = True
        for i in range(lo, hi):
            p = i if order is None else order[i]
            if p in bad:
                continue
            e = events[p]
            t = e["ts"]
            if (x := t + e.get("dur", 0)) > reach:
                reach = x
            if (c := e.get("cpu")) is not None:
                prev = last.get(tid := e["tid"])
                if prev is not None and prev[2] < j and c - prev[1] >= t - prev[0] - GAP_FLOOR:
                    for m in range(prev[2] + 1, j + 1):
                        covered[m] = True
                last[tid] = (t, c, j)
    out = [segs[0]]
    for seg, cov in zip(segs[1:], covered[1:]):
        if cov:
            t0, t1, n, lo, _ = out[-1]
            out[-1] = (t0, max(t1, seg[1]), n + seg[2], lo, seg[4])
        else:
            out.append(seg)
    return out


def _dur(ns: int) -> str:
    """A duration in words: '3.2 ms', '2.5 h', '292 years'."""
    for unit, size in (("years", 365.25 * 86400e9), ("days", 86400e9), ("h", 3600e9),
                       ("min", 60e9), ("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= 2 * size or (unit in ("s", "ms", "us") and ns >= size):
            return f"{ns / size:.3g} {unit}"
    return f"{ns} ns"
