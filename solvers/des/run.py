"""Run the engine over lanes until a stopping rule holds; report progress.

Stopping: fixed simulated time per lane, fixed number of events per lane, or
sequential (the default): stop when every watched measure's confidence
half-width is within ``rtol`` (relative) or ``atol`` (absolute), or at the
wall-clock cap.  Ctrl-C stops cleanly; the statistics so far come back
marked partial.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import numpy as np



@dataclass
class RunInfo:
    steps: int
    wall: float
    partial: bool
    stopped_by: str
    events: int


def _progress(frac: float, t0: float, out, last_len: list) -> None:
    el = time.perf_counter() - t0
    eta = el * (1 - frac) / frac if frac > 0 else math.inf
    msg = f"\rsimulating: {100 * frac:5.1f}%  elapsed {el:6.1f} s  ETA {eta:6.1f} s"
    out.write(msg + " " * max(0, last_len[0] - len(msg)))
    out.flush()
    last_len[0] = len(msg)


def run(engine, *, t_end: float | None, events: int | None, sequential=None,
        wall_cap: float = 60.0, quiet: bool = False, out=sys.stderr,
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
    last_report = t0
    next_check = max(int(first_check), 1)
    shown = [0]
    steps = 0
    partial = False
    stopped = "time" if t_end is not None else ("events" if events is not None else "precision")
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
            if now - last_report > 0.5 and not quiet and now - t0 > 1.0:
                if t_end is not None:
                    frac = float(np.mean(np.minimum(lanes_now("t") / T, 1.0)))
                elif events is not None:
                    frac = float(np.mean(np.minimum(lanes_now("steps") / N, 1.0)))
                else:
                    frac = min((now - t0) / wall_cap, 0.999)
                _progress(max(frac, 1e-6), t0, out, shown)
                last_report = now
            if sequential is not None and steps >= next_check:
                if sequential():
                    stopped = "precision"
                    break
                next_check = max(next_check + 1, int(steps * getattr(sequential, "growth", check_growth)))
            if now - t0 > wall_cap and (sequential is not None or (t_end is None and events is None)):
                stopped = "wall-clock cap"
                break
    except KeyboardInterrupt:
        partial = True
        stopped = "interrupted"
    engine.flush(regular=False)
    if narrow:
        engine.restore_lanes()
    if shown[0] and not quiet:
        out.write("\r" + " " * shown[0] + "\r")
        out.flush()
    return RunInfo(steps, time.perf_counter() - t0, partial, stopped, int(engine.steps.sum()))


def chunk_steps(lanes: int) -> int:
    """Steps per lane between two returns to Python: about 2^17 events per round over
    all lanes, at least 1024 per lane (a call costs microseconds); a power of two, so
    chunk ends fall on the same step counts in every run."""
    c = 1 << 17
    while c > 1024 and c * lanes > (1 << 17):
        c //= 2
    return c


def run_chunked(engine, *, t_end: float | None, events: int | None, sequential=None,
                wall_cap: float = 60.0, quiet: bool = False, out=sys.stderr,
                first_check: int = 20_000, check_growth: float = 1.5) -> RunInfo:
    """Drive an engine that advances lanes in chunks (:class:`.events.EventEngine`).

    Every lane still running advances to the same step count: the next chunk
    end, sequential check or histogram epoch, whichever comes first.  These
    step counts depend on the number of lanes only, so a seed reproduces a run
    exactly; a run stopped by the wall-clock cap stopped at a step count
    (``RunInfo.steps``) that ``events=`` reproduces."""
    T = math.inf if t_end is None else float(t_end)
    N = np.iinfo(np.int64).max if events is None else int(events)
    grid = chunk_steps(int(engine.alive.sum()) or 1)
    t0 = time.perf_counter()
    last_report = t0
    next_check = max(int(first_check), 1) if sequential is not None else None
    shown = [0]
    partial = False
    stopped = "time" if t_end is not None else ("events" if events is not None else "precision")
    capped = sequential is not None or (t_end is None and events is None)
    try:
        while engine.alive.any():
            g = engine.gstep
            goal = min((g // grid + 1) * grid, engine.epoch_end, N)
            if next_check is not None:
                goal = min(goal, next_check)
            engine.advance(goal, T)
            if engine.gstep >= engine.epoch_end:
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
            if capped and now - t0 > wall_cap:
                stopped = "wall-clock cap"
                break
            if now - last_report > 0.5 and not quiet and now - t0 > 1.0:
                if t_end is not None:
                    frac = float(np.mean(np.minimum(engine.t / T, 1.0)))
                elif events is not None:
                    frac = float(np.mean(np.minimum(engine.steps / N, 1.0)))
                else:
                    frac = min((now - t0) / wall_cap, 0.999)
                _progress(max(frac, 1e-6), t0, out, shown)
                last_report = now
    except KeyboardInterrupt:
        partial = True
        stopped = "interrupted"
    engine.flush()
    if shown[0] and not quiet:
        out.write("\r" + " " * shown[0] + "\r")
        out.flush()
    return RunInfo(engine.gstep, time.perf_counter() - t0, partial, stopped, int(engine.steps.sum()))
