"""Run the engine over lanes until a stopping rule holds; report progress.

Stopping: fixed simulated time per lane, fixed number of events per lane, or
sequential (the default): stop when every watched measure's confidence
half-width is within ``rtol`` (relative) or ``atol`` (absolute), or at the
wall-clock cap.  Ctrl-C stops cleanly; the statistics so far come back
marked partial.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from qpn import progress



@dataclass
class RunInfo:
    """How a run ended: steps made, wall seconds, whether a cap stopped it (and which),
    events simulated."""
    steps: int
    wall: float
    partial: bool
    stopped_by: str
    events: int


class _Progress:
    """The run's share done (simulated time, events, or the wall-clock cap) on the shared
    tqdm bar (:mod:`qpn.progress`: stderr, terminals only, not with -q), twice a second."""

    def __init__(self, quiet: bool, T, N, by: str, wall_cap: float):
        self.cm = None if quiet else progress.progress("simulating", total=100, unit="%")
        self.bar = self.cm.__enter__() if self.cm is not None else None
        self.T, self.N, self.by, self.wall_cap = T, N, by, wall_cap
        self.t0 = self.last = time.perf_counter()

    def show(self, lanes) -> None:
        """``lanes``: a callable returning the lanes' (times, steps), read at most twice a second."""
        now = time.perf_counter()
        if self.bar is None or now - self.last <= 0.5:
            return
        self.last = now
        if self.by == "time":
            share = np.mean(np.minimum(lanes()[0] / self.T, 1.0))
        elif self.by == "events":
            share = np.mean(np.minimum(lanes()[1] / self.N, 1.0))
        else:
            share = min((now - self.t0) / self.wall_cap, 0.999)
        pct = 100.0 * max(min(float(share), 1.0), 0.0)
        if pct > self.bar.n:
            self.bar.update(pct - self.bar.n)

    def close(self) -> None:
        """Close the progress bar."""
        if self.cm is not None:
            self.cm.__exit__(None, None, None)


def waited_ns() -> int:
    """Nanoseconds this process's threads spent runnable but waiting for a CPU (the
    second field of /proc/self/task/*/schedstat; 0 where the kernel does not keep it).

    >>> waited_ns() >= 0
    True
    """
    total = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total


class Budget:
    """The wall-clock cap less the time other work held the CPUs the run waited for
    (its threads runnable, every core busy): on a loaded machine a 5 s solve is not
    cut at 60 s of wall time because it got 20 s of the CPUs.  ``threads``: how many
    of the run's threads share the wait."""

    def __init__(self, cap: float, threads: int = 1) -> None:
        self.cap, self.threads = float(cap), max(int(threads), 1)
        self.t0, self.w0 = time.perf_counter(), waited_ns()

    def spent(self, now: float | None = None) -> float:
        """Seconds of the cap used: wall time since the start less the wait per thread."""
        now = time.perf_counter() if now is None else now
        lost = (waited_ns() - self.w0) / 1e9 / self.threads
        return max(now - self.t0 - lost, 0.0)

    def over(self, now: float | None = None) -> bool:
        return self.spent(now) > self.cap


def run(engine, *, t_end: float | None, events: int | None, sequential=None,
        wall_cap: float = 60.0, quiet: bool = False,
        first_check: int = 20_000, check_growth: float = 1.5) -> RunInfo:
    """Drive ``engine`` to the end; ``sequential`` is a callable returning True to stop.

    Sequential checks happen at step counts (``first_check``, then each the
    last times ``sequential.growth``, else ``check_growth``), which depend on the
    statistics only, never at wall-clock moments, so that a
    seed reproduces the run exactly; only the wall-clock cap is not reproducible."""
    L = engine.L
    T = np.full(L, math.inf if t_end is None else float(t_end))
    N = np.full(L, np.iinfo(np.int64).max if events is None else int(events), dtype=np.int64)
    stats = engine.stats
    t0 = time.perf_counter()
    budget = Budget(wall_cap)
    next_check = max(int(first_check), 1)
    steps = 0
    partial = False
    stopped = "time" if t_end is not None else ("events" if events is not None else "precision")
    bar = _Progress(quiet, T, N, stopped, wall_cap)
    # a kernel may step only its live lanes once many have finished (the sequential
    # rule reads every lane, so not with it)
    narrow = sequential is None and hasattr(engine, "drop_finished")
    lanes_now = getattr(engine, "lanes_now", lambda name: getattr(engine, name))
    try:
        while True:
            live = engine.step(T, N)
            if live:
                steps += 1
                if steps % stats.width == 0:
                    engine.flush()
                    if narrow:
                        engine.drop_finished()
            now = time.perf_counter()
            if not live:
                break
            bar.show(lambda: (lanes_now("t"), lanes_now("steps")))
            if sequential is not None and steps >= next_check:
                if sequential():
                    stopped = "precision"
                    break
                next_check = max(next_check + 1, int(steps * getattr(sequential, "growth", check_growth)))
            if budget.over(now):
                stopped = "wall-clock cap"
                break
    except KeyboardInterrupt:
        partial = True
        stopped = "interrupted"
    finally:
        bar.close()
    engine.flush(regular=False)
    if narrow:
        engine.restore_lanes()
    return RunInfo(steps, time.perf_counter() - t0, partial, stopped, int(engine.steps.sum()))


#: steps per lane of the first chunk, and the times (s) under which a chunk doubles
#: and over which it halves
FIRST_CHUNK, QUICK_CHUNK, SLOW_CHUNK = 1, 0.02, 0.25


def chunk_steps(lanes: int) -> int:
    """Steps per lane between two returns to Python: about 2^17 events per round over
    all lanes, at least 1024 per lane (a call costs microseconds); a power of two, so
    chunk ends fall on the same step counts in every run."""
    c = 1 << 17
    while c > 1024 and c * lanes > (1 << 17):
        c //= 2
    return c


def run_chunked(engine, *, t_end: float | None, events: int | None, sequential=None,
                wall_cap: float = 60.0, quiet: bool = False,
                first_check: int = 20_000, check_growth: float = 1.5) -> RunInfo:
    """Drive an engine that advances lanes in chunks (:class:`.events.EventEngine`).

    Every lane still running advances to the same step count: the next chunk
    end, sequential check or histogram epoch, whichever comes first.  These
    step counts depend on the number of lanes only, so a seed reproduces a run
    exactly; a run stopped by the wall-clock cap stopped at a step count
    (``RunInfo.steps``) that ``events=`` reproduces."""
    T = math.inf if t_end is None else float(t_end)
    N = np.iinfo(np.int64).max if events is None else int(events)
    top = chunk_steps(int(engine.alive.sum()) or 1)
    # chunks start small and double while quick: an event may cost O(tokens) in a long
    # queue, and the wall clock is only read between chunks (powers of two, so chunk ends
    # still fall on the same step counts, and a lane's run does not depend on them)
    grid = min(FIRST_CHUNK, top)
    t0 = time.perf_counter()
    budget = Budget(wall_cap, getattr(engine, "threads", 1) or 1)
    next_check = max(int(first_check), 1) if sequential is not None else None
    partial = False
    stopped = "time" if t_end is not None else ("events" if events is not None else "precision")
    bar = _Progress(quiet, T, N, stopped, wall_cap)
    try:
        while engine.alive.any():
            g = engine.gstep
            goal = min((g // grid + 1) * grid, engine.epoch_end, N)
            if next_check is not None:
                goal = min(goal, next_check)
            tc = time.perf_counter()
            engine.advance(goal, T)
            took = time.perf_counter() - tc
            if took < QUICK_CHUNK and grid < top:
                grid *= 2
            elif took > SLOW_CHUNK and grid > 1:
                grid //= 2
            if getattr(engine, "burst", None) is not None or getattr(engine, "capped", None):
                break
            # an epoch ends only while lanes go on: where the last chunk ended is not a
            # property of the run (chunk sizes follow the wall clock)
            if engine.gstep >= engine.epoch_end and engine.alive.any():
                engine.close_epoch()
            if engine.gstep >= N:
                break
            if next_check is not None and engine.gstep >= next_check:
                if sequential():
                    stopped = "precision"
                    break
                growth = getattr(sequential, "growth", check_growth)
                next_check = max(next_check + 1, int(engine.gstep * growth))
            now = time.perf_counter()
            if budget.over(now):
                stopped = "wall-clock cap"
                break
            bar.show(lambda: (engine.t, engine.steps))
    except KeyboardInterrupt:
        partial = True
        stopped = "interrupted"
    finally:
        bar.close()
    if getattr(engine, "burst", None) is not None or getattr(engine, "capped", None):
        stopped = "wall-clock cap"
    engine.flush()
    return RunInfo(engine.gstep, time.perf_counter() - t0, partial, stopped, int(engine.steps.sum()))
