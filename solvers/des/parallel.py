"""Lanes of one run sharded over local processes, then merged as if run together.

A lane's statistics depend on its own random stream only (see
:mod:`.stats`), so cutting the lanes into contiguous shards, running each in a
process and concatenating the per-lane arrays gives exactly the numbers of a
single-process run; histogram epochs line up because their bounds depend on
the step count alone.  Used for fixed-time or fixed-event runs with many
lanes (sequential stopping decides per point, so it shards whole points).

>>> # doctest: +SKIP
>>> engine, info = run_sharded(points, R, keys, o, workers=2)
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from .run import RunInfo
from .stats import Stats

LANE_LAST = ("area", "last", "fires", "res", "t_start", "nb_l", "width_l", "open", "point",
             "bk_time", "bk_area", "bk_fires", "bk_res")


@dataclass
class MergedRun:
    """What the analysis reads from an engine: the net, the statistics, the lanes' clocks."""
    c: object
    units: dict
    stats: Stats
    t: np.ndarray
    steps: np.ndarray
    notes: list
    kernel: str
    processes: int = 1

    @property
    def L(self) -> int:
        return len(self.t)


def default_workers(o: dict, lanes: int) -> int:
    """Processes for a run: all cores for long fixed-length runs with many lanes."""
    w = o.get("workers", "auto")
    if w not in (None, "auto"):
        return max(int(w), 1)
    if (o["time"] is None and o["events"] is None) or lanes < 1024:
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), 8))


def _shard(points: list, R: int, lanes: np.ndarray, keys: np.ndarray, o: dict, show: bool):
    from .solver import _run_group
    engine, runinfo = _run_group(points, R, keys, dict(o, quiet=o["quiet"] or not show), lanes=lanes)
    return (engine.stats, engine.t, engine.steps, list(engine.notes), type(engine).__name__, runinfo)


def merge(parts: list, c, units) -> MergedRun:
    """Concatenate shards' per-lane statistics; add their histogram epochs."""
    stats = [p[0] for p in parts]
    st = stats[0]
    for name in LANE_LAST:
        setattr(st, name, np.concatenate([getattr(s, name) for s in stats], axis=-1))
    st.bk_busy = [np.concatenate([s.bk_busy[q] for s in stats], axis=-1) for q in range(len(st.bk_busy))]
    st.L = len(st.t_start)
    st.nb = max(s.nb for s in stats)
    if st.hist is not None:
        longest = max(stats, key=lambda s: len(s.epoch_start))
        starts = list(longest.epoch_start)
        epochs = [np.zeros_like(longest.hist, dtype=np.int64) for _ in starts]
        for s in stats:
            for e, h in enumerate(s.epochs):
                epochs[e] += h
            epochs[len(s.epoch_start) - 1] += s.hist            # its open epoch
        st.epochs, st.epoch_start = epochs[:-1], starts
        st.hist = epochs[-1]
    notes = parts[0][3]
    return MergedRun(c, units, st, np.concatenate([p[1] for p in parts]),
                     np.concatenate([p[2] for p in parts]), notes, parts[0][4])


def run_sharded(points: list, R: int, keys: np.ndarray, o: dict, workers: int):
    """Run the lanes of ``points`` x ``R`` in ``workers`` processes; merged engine and run info."""
    from .engine import residence_units
    L = len(points) * R
    # sequential stopping decides per point: keep a point's lanes together then
    unit = R if (o["time"] is None and o["events"] is None) else 1
    bounds = (np.linspace(0, L // unit, workers + 1).round().astype(int)) * unit
    shards = [np.arange(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=len(shards), mp_context=ctx) as pool:
        futures = [pool.submit(_shard, points, R, lanes, keys[lanes], o, i == 0)
                   for i, lanes in enumerate(shards)]
        try:
            parts = [f.result() for f in futures]
        except KeyboardInterrupt:        # the workers stop too and return what they have
            parts = [f.result() for f in futures]
    infos = [p[5] for p in parts]
    units, _ = residence_units(points[0])
    engine = merge(parts, points[0], units)
    wall = max(i.wall for i in infos)
    info = RunInfo(max(i.steps for i in infos), wall, any(i.partial for i in infos),
                   infos[0].stopped_by, sum(i.events for i in infos))
    engine.processes = len(shards)
    return engine, info
