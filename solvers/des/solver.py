"""The simulator as a solver: replications and sweep points as lanes of one run.

>>> import qpn
>>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="des",
...                 options={"time": 2000, "replications": 4, "seed": 1, "quiet": True})
>>> res.level, res.ci("utilization", "server") > 0
(0.95, True)
"""
from __future__ import annotations

import math

import numpy as np

from qpn.errors import QPNError

from ..result import Result
from ..sweep_result import PointResult, SweepResult, sweep_points
from .lanes import signature
from .analysis import analyze, warmup_start
from .group import run_group
from .options import DESOptions
from .parallel import default_workers, run_sharded
from .precision import describe_miss, few_observations, imprecise, observations



def options_of(options: dict | DESOptions | None) -> DESOptions:
    """The simulator's options from a mapping (checked; see :class:`DESOptions`)."""
    return DESOptions.of(options)


def lane_keys(npoints: int, R: int, crn: bool, point_offset: int = 0) -> np.ndarray:
    """Spawn key of every lane: by replication alone with common random numbers."""
    if crn:
        return np.tile(np.arange(R), npoints)
    return np.arange((point_offset) * R, (point_offset + npoints) * R)


def replications(compiled: list, o: DESOptions, npoints: int | None = None) -> int:
    """Replications per point: 10 by default (each point stops by its own precision
    rule, so more replications only add warm-up periods to simulate)."""
    if o.replications != "auto":
        R = int(o.replications)
        if R < 1:
            raise QPNError("replications must be at least 1")
        return R
    return 10


def _simulate_compiled(compiled: list, points: list[dict], o: DESOptions, as_sweep: bool,
                       point_offsets: list[int] | None = None):
    R = replications(compiled, o)
    o = o.replace(replications=R)
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(compiled):
        groups.setdefault(signature(c), []).append(i)
    results: dict[int, Result] = {}
    info = {"groups": len(groups), "lanes": len(compiled) * R}
    for members in groups.values():
        cs = [compiled[i] for i in members]
        keys = np.concatenate([lane_keys(1, R, bool(o.crn),
                                         (point_offsets or list(range(len(compiled))))[i]) for i in members])
        workers = default_workers(o, len(cs) * R)
        if workers > 1 and len(cs) * R > 1:
            engine, runinfo = run_sharded(cs, R, keys, o, workers)
        else:
            engine, runinfo = run_group(cs, R, keys, o)
        first = warmup_start(engine, o)
        for j, i in enumerate(members):
            lanes = np.arange(j * R, (j + 1) * R)
            results[i] = _result(engine, lanes, o, runinfo, first, compiled[i])
    if not as_sweep:
        return results[0]
    sw = SweepResult([PointResult(points[i], results[i]) for i in range(len(points))], info)
    return sw


def _growing(engine, lanes: np.ndarray, first: np.ndarray, c, *, factor: float = 1.5,
             least: float = 5.0) -> list[str]:
    """Places whose tokens keep growing through the run: an unstable model (arrivals
    above service) has no steady state, and its estimates grow with the simulated time
    (the warm-up detection then cuts most of the run away, and says only that).
    Compared per lane over the thirds of the run's buckets: warned when the last third's
    mean tokens are ``factor`` times the middle third's and ``least`` tokens more, and the
    middle third's above the first's, in most lanes (4 in 5).  A transient that settles
    within the first two thirds does not grow like that."""
    st = engine.stats
    lanes = np.asarray(lanes, dtype=np.int64)
    nb = st.nb_l[lanes].astype(np.int64)
    if len(lanes) == 0 or (nb // 3).min() < 2:
        return []
    th = np.empty((len(lanes), 3, st.bk_area.shape[1]))       # (lanes, thirds, slots)
    for b1 in np.unique(nb):               # lanes with as many buckets, together (100,000 lanes)
        sel = np.flatnonzero(nb == b1)
        ls, n = lanes[sel], int(b1) // 3
        for k, (lo, hi) in enumerate(((0, n), (n, 2 * n), (b1 - n, b1))):
            t = st.bk_time[lo:hi][:, ls].sum(axis=0)
            a = st.bk_area[lo:hi][:, :, ls].sum(axis=0)          # (slots, lanes)
            th[sel, k] = (a / np.maximum(t, 1e-300)).T
    out = []
    for place in c.places:
        f, m, l = (th[:, k, place.slots].sum(axis=1) for k in range(3))
        up = (l > factor * m) & (l - m > least) & (m > f)
        if up.mean() >= 0.8:
            out.append(f"tokens in {place.name} keep growing through the run ({m.mean():.4g} in "
                       f"the middle third of the run, {l.mean():.4g} in the last): the model may "
                       f"be unstable (arrivals above service), and its estimates then grow with "
                       f"the simulated time")
    return out


def _result(engine, lanes: np.ndarray, o: DESOptions, runinfo, first: np.ndarray, compiled) -> Result:
    rows, extra = analyze(engine, lanes, o, first)
    res = Result(method="des", model=compiled.net.name, level=float(o.level), partial=runinfo.partial)
    st = engine.stats
    _time, _area, fires, _busy, resid = st.totals(first)
    counts = observations(compiled, fires[lanes].sum(axis=0))
    for m, e, col, v, h in rows:
        res.add(m, e, v, color=col, ci=None if h is None or not np.isfinite(h) else h, n=counts.get((m, e, col)))
    sim_time = float(engine.t[lanes].mean())
    res.info.update(replications=len(lanes), events=int(engine.steps[lanes].sum()),
                    simulated_time=sim_time, stopped_by=runinfo.stopped_by, wall=runinfo.wall,
                    warmup_buckets=int(np.median(first[lanes])),
                    warmup_time=_warmup_time(st, lanes, first),
                    events_per_second=runinfo.events / max(runinfo.wall, 1e-9),
                    seed=o.seed)
    res.info.update(extra)
    res.explanation.append(f"simulation: {len(lanes)} replication(s), {res.info['events']:,} events, "
                           f"stopped by {runinfo.stopped_by}; warm-up by "
                           f"{'MSER' if o.warmup == 'mser' else o.warmup}")
    if getattr(engine, "why", None):
        procs, threads = getattr(engine, "processes", 1), getattr(engine, "threads", 1)
        where = ", ".join(x for x in (f"{procs} processes" if procs > 1 else "",
                                      f"{threads} threads" if threads > 1 else "") if x)
        res.explanation.append(f"kernel {getattr(engine, 'kernel', type(engine).__name__)}"
                               f"{f' ({where})' if where else ''}: {engine.why}")
    for note in engine.notes:
        res.warnings.append(f"slower path: {note}")
    _precision(res, rows, o, runinfo, engine, lanes)
    res.warnings += few_observations(compiled, engine.units, resid[lanes].sum(axis=0))
    c = compiled
    pre = c.pre.tocsr()                       # (modes, slots)
    is_open = any(m.kind == "timed" and pre[j].nnz == 0 for j, m in enumerate(c.modes))
    # an infinite-server station's "utilization" is its mean number busy: it never saturates
    finite = {q.name for q in c.queues if not math.isinf(q.servers)}
    saturated = sorted({e for m, e, _c, v, _h in rows
                        if m == "utilization" and _c == "" and e in finite and v > 0.995})
    if saturated and is_open:
        res.warnings.append(f"{', '.join(saturated)} saturated (utilization ~1) in an open net: it may be "
                            f"unstable, and its estimates then grow with the simulated time")
    nb = int(np.median(st.nb_l[lanes]))
    if o.warmup == "mser" and nb < 16:
        res.warnings.append(f"run too short to detect the warm-up: {nb} statistics bucket(s) per "
                            f"replication; the start state may bias the estimates (simulate longer)")
    elif o.warmup == "mser" and np.median(first[lanes]) >= nb // 2 - 1 and nb >= 16:
        res.warnings.append("the warm-up detected is half of the run or more: the estimates may still "
                            "carry the start state (simulate longer)")
    res.warnings += _few_firings(rows, res.info["simulated_time"] - res.info["warmup_time"])
    growing = _growing(engine, lanes, first, compiled)
    if growing:
        # a place a P-invariant bounds cannot grow for ever: the run ended inside the start
        # state's transient (a fuzzed mutex with 10^6 threads was called unstable)
        from qpn.structure.check import bounded_places
        bounded = bounded_places(compiled)
        rising = [g for g in growing if g.split(" ")[2] in bounded]
        growing = [g for g in growing if g.split(" ")[2] not in bounded]
        for g in rising:
            head = g.split(": the model may")[0].replace("keep growing", "kept rising")
            res.warnings.append(f"{head}, though a P-invariant bounds them: the run ended before the "
                                f"start state's transient did, so the estimates are not the steady "
                                f"state (simulate longer)")
        if rising and not res.imprecise:
            res.imprecise = (f"the run ended in the start state's transient: tokens in "
                             f"{rising[0].split(' ')[2]} kept rising")
    res.warnings += growing
    if growing and not res.degenerate:
        # the estimates are kept (they show what grows) but they answer nothing: exit status 5
        res.mark_degenerate("unstable", growing[0].split(": the model may")[0], keep_rows=True)
    res.info["kernel"] = getattr(engine, "kernel", type(engine).__name__)
    res.info["processes"] = getattr(engine, "processes", 1)
    res.info["threads"] = getattr(engine, "threads", 1)
    if runinfo.partial:
        res.warnings.append("interrupted: statistics so far (partial)")
    if o.series:
        res.info["series"] = _series(engine, lanes)
    return res


def _precision(res: Result, rows: list, o: DESOptions, runinfo, engine, lanes: np.ndarray) -> None:
    """Whether the run reached its precision target; says so loudly when not."""
    sequential = o.time is None and o.events is None
    missed = imprecise(rows, o)
    target = (f"half-width <= {o.atol:g}" if o.atol is not None else
              f"half-width <= {float(o.rtol):g} x max(|value|, {float(o.floor):g} x the largest "
              f"value of its measure) for {', '.join(o.watch)}")
    # the step count the run stopped at: --events reproduces a run the wall-clock cap stopped
    info = {"target": target, "requested": sequential, "missed": len(missed),
            "events_per_replication": int(runinfo.steps)}
    burst = getattr(engine, "burst", None)
    if burst is not None:
        info["immediate_burst"] = {"replication": burst[0], "firings": burst[1], "time": burst[2]}
        res.warnings.append(f"the wall-clock cap stopped a run of {burst[1]:,} immediate firings in a row "
                            f"without time passing (at t = {burst[2]:.6g} s): a timeless loop that "
                            "fills a queue looks like this")
    dead = getattr(engine, "deadlocks", lambda: None)()
    if dead is not None and np.isfinite(dead[lanes]).any():
        d = dead[lanes][np.isfinite(dead[lanes])]
        msg = (f"the net deadlocks: {len(d)} of {len(lanes)} replication(s) reached a marking where "
               f"nothing can fire (first at t = {d.min():.6g} s)")
        res.warnings.append(msg)
        info["deadlock"] = float(d.min())
        res.imprecise = "the net deadlocks"
        # what is left of the run describes the dead marking after a warm-up cut that may
        # remove all of it (tokens 0 where the dead marking holds 1): no numbers at all
        res.mark_degenerate("deadlock", f"the net reaches a marking where nothing can happen: "
                                        f"{len(d)} of {len(lanes)} replication(s) got stuck there "
                                        f"(first at t = {d.min():.6g} s)")
    elif sequential and missed and runinfo.stopped_by != "precision":
        why = {"wall-clock cap": "stopped by the wall-clock cap", "interrupted": "interrupted"}.get(
            runinfo.stopped_by, f"stopped by {runinfo.stopped_by}")
        res.imprecise = f"{why} at {runinfo.steps:,} events per replication"
        res.warnings.append(f"precision not reached ({why}): {len(missed)} estimate(s) miss the target "
                            f"({target}): {describe_miss(missed)}.  Rerun with --events {runinfo.steps} "
                            "and the same seed to reproduce this run, or raise --wall")
    elif not sequential and runinfo.stopped_by == "wall-clock cap":
        why = "stopped by the wall-clock cap"
        res.imprecise = f"{why} at {runinfo.steps:,} events per replication, before the requested horizon"
        res.warnings.append(f"the requested horizon was not reached ({why} at {runinfo.steps:,} events "
                            "per replication): raise --wall to run it to the end")
    elif not sequential and missed:
        info["note"] = f"fixed horizon: {len(missed)} estimate(s) would miss the default target"
    info["reached"] = res.imprecise is None if sequential else None
    res.info["precision"] = info


#: a throughput counted from fewer firings than this per replication may be off by
#: one firing's worth, which the CI does not show when the replications run in step
FEW_FIRINGS = 50


def _few_firings(rows: list, window: float) -> list[str]:
    """Warnings for throughputs counted from few firings per replication.

    A count over a window is off by up to one firing.  In a nearly
    deterministic net every replication is off alike, so the CI stays narrow
    around a biased value (45.81 +/- 0.17 where long runs give 51.6).  Warned
    when the count, throughput x the measured ``window`` (s), is below
    FEW_FIRINGS and one firing is more than twice the CI's relative half-width."""
    out = []
    for m, e, col, v, h in rows:
        if m != "throughput" or col != "" or not v > 0:
            continue
        n = v * window
        if 0 < n < FEW_FIRINGS and 1.0 / n > 2 * (h if np.isfinite(h) else 0) / v:
            out.append(f"throughput {e} rests on ~{n:.0f} firings per replication: the count can "
                       f"be off by one ({100 / n:.0f}%), more than its CI shows; simulate longer, "
                       f"or use a transition that fires more often")
    return out


def _warmup_time(st, lanes: np.ndarray, first: np.ndarray) -> float:
    """Median over ``lanes`` of the simulated time their warm-up cut removes."""
    n = max(int(first[lanes].max(initial=0)), 1)
    cut = np.arange(n)[:, None] < first[lanes][None, :]
    return float(np.median(np.where(cut, st.bk_time[:n][:, lanes], 0.0).sum(axis=0)))


def _series(engine, lanes: np.ndarray) -> dict:
    """Mean tokens per place per bucket (averaged over lanes), with bucket end times."""
    st = engine.stats
    nb = int(st.nb_l[lanes].min())
    t = np.maximum(st.bk_time[:nb][:, lanes], 1e-300)                 # (nb, lanes)
    ends = np.cumsum(st.bk_time[:nb][:, lanes], axis=0).mean(axis=1)
    out = {"time": ends.tolist()}
    for p in engine.c.places:
        slots = p.slots + (p.qslots or [])
        area = st.bk_area[:nb][:, slots][:, :, lanes].sum(axis=1)     # (nb, lanes)
        out[p.name] = (area / t).mean(axis=1).tolist()
    return out


__all__ = ["options_of", "lane_keys", "replications", "SweepResult", "PointResult", "sweep_points"]
