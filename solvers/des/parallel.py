"""Lanes of one run sharded over local processes, then merged as if run together.

A lane's statistics depend on its own random stream only (see
:mod:`.stats`), so cutting the lanes into contiguous shards, running each in a
process and concatenating the per-lane arrays gives exactly the numbers of a
single-process run; histogram epochs line up because their bounds depend on
the step count alone.  Used for fixed-time or fixed-event runs with many
lanes (sequential stopping decides per point, so it shards whole points).

>>> import qpn
>>> from qpn.solvers.des.options import DESOptions
>>> from qpn.solvers.des.solver import lane_keys
>>> net = qpn.parse("net n\\nplace q queue ps service exp(1)\\ntransition a : -> q delay exp(2)\\n"
...                 "transition b : q ->\\n")
>>> o = DESOptions.of({"time": 50.0, "quiet": True, "replications": 4})
>>> engine, info = run_sharded([qpn.compile_net(net)], 4, lane_keys(1, 4, False), o, workers=2)
>>> engine.processes, engine.L, info.stopped_by
(2, 4, 'time')
"""
from __future__ import annotations

import mmap
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from .group import make_engine, run_group
from .options import DESOptions, usable_cores
from .run import RunInfo
from .stats import Stats

SMALL = ("area", "last", "fires", "res", "t_start", "nb_l", "width_l", "open", "point")
BIG = ("bk_time", "bk_area", "bk_fires", "bk_res")    # (buckets, ..., lanes): shared memory
_SHARED: dict = {}        # set in the parent before the workers fork; they write their lanes there


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
        """The number of lanes."""
        return len(self.t)


def default_workers(o: DESOptions, lanes: int) -> int:
    """Processes for a run: all cores for long fixed-length runs with many lanes."""
    w = o.workers
    if w not in (None, "auto"):
        return max(int(w), 1)
    if (o.time is None and o.events is None) or lanes < 1024:
        return 1
    return usable_cores()


def _to_shared(engine, a: int, b: int) -> None:
    """Copy a shard's bucket arrays (lanes a..b) into the shared ones: the bulk of the
    statistics goes back through shared memory, never pickled."""
    st = engine.stats
    for name in BIG:
        _SHARED[name][..., a:b] = getattr(st, name)
        setattr(st, name, None)
    for shared, mine in zip(_SHARED["bk_busy"], st.bk_busy):
        shared[..., a:b] = mine
    st.bk_busy = None


def _shard(points: list, R: int, lanes: np.ndarray, keys: np.ndarray, o: DESOptions, show: bool):
    a, b = int(lanes[0]), int(lanes[-1]) + 1          # shards are contiguous
    # one thread per process: the processes already take every core
    engine, runinfo = run_group(points, R, keys, o.replace(quiet=o.quiet or not show, threads=1),
                                 lanes=lanes)
    _to_shared(engine, a, b)
    return (engine.stats, engine.t, engine.steps, list(engine.notes), type(engine).__name__, runinfo)


def _allocate(points: list, R: int, keys: np.ndarray, o: DESOptions, L: int) -> dict:
    """Shared arrays for the bucket statistics of all L lanes, shaped like a 1-lane engine's."""
    from .lanes import build_lanes
    probe = make_engine(build_lanes(points, R, np.arange(1)), keys[:1], o.replace(quiet=True)).stats

    def shared(like: np.ndarray) -> np.ndarray:
        shape = like.shape[:-1] + (L,)
        n = int(np.prod(shape))
        buf = mmap.mmap(-1, max(n * 8, 8))             # anonymous, shared with forked children
        return np.frombuffer(buf, dtype=np.float64, count=n).reshape(shape)
    out = {name: shared(getattr(probe, name)) for name in BIG}
    out["bk_busy"] = [shared(b) for b in probe.bk_busy]
    return out


def merge(parts: list, c, units) -> MergedRun:
    """Concatenate shards' per-lane statistics; add their histogram epochs."""
    stats = [p[0] for p in parts]
    st = stats[0]
    for name in SMALL:
        setattr(st, name, np.concatenate([getattr(s, name) for s in stats], axis=-1))
    for name in BIG:
        setattr(st, name, _SHARED[name])
    st.bk_busy = _SHARED["bk_busy"]
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


def run_sharded(points: list, R: int, keys: np.ndarray, o: DESOptions, workers: int):
    """Run the lanes of ``points`` x ``R`` in ``workers`` processes; merged engine and run info."""
    from .flat import residence_units
    L = len(points) * R
    # sequential stopping decides per point: keep a point's lanes together then
    unit = R if (o.time is None and o.events is None) else 1
    bounds = (np.linspace(0, L // unit, workers + 1).round().astype(int)) * unit
    shards = [np.arange(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    _SHARED.clear()
    _SHARED.update(_allocate(points, R, keys, o, L))
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
    _SHARED.clear()                      # the merged statistics keep their arrays alive
    wall = max(i.wall for i in infos)
    info = RunInfo(max(i.steps for i in infos), wall, any(i.partial for i in infos),
                   infos[0].stopped_by, sum(i.events for i in infos))
    engine.processes = len(shards)
    return engine, info
