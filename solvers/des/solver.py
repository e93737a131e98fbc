"""The simulator as a solver: replications and sweep points as lanes of one run.

>>> import qpn
>>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="des",
...                 options={"time": 2000, "replications": 4, "seed": 1, "quiet": True})
>>> res.level, res.ci("utilization", "server") > 0
(0.95, True)
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from qpn.colors import color_label
from qpn.errors import QPNError

from ..measures import derive
from ..result import Result
from ..sweep_result import PointResult, SweepResult, sweep_points
from .flat import residence_units
from .lanes import build_lanes, signature
from .options import DESOptions
from .parallel import default_workers, run_sharded
from .precision import describe_miss, few_observations, imprecise, observations
from .run import run, run_chunked
from .stats import bin_edges, percentile_from_hist, student_t

PERCENTILES = (0.5, 0.9, 0.95, 0.99)
#: steps before the next sequential check, as a multiple of the steps so far (see _sequential_rule)
#: (measured on 10 models x 2 seeds: total events 197 M with these, 226 M with at most 4x and aim 1)
GROWTH_MIN, GROWTH_MAX, GROWTH_DEFAULT, GROWTH_AIM = 1.25, 2.0, 1.5, 0.8


def options_of(options: dict | DESOptions | None) -> DESOptions:
    """The simulator's options from a mapping (checked; see :class:`DESOptions`)."""
    return DESOptions.of(options)


# ----------------------------------------------------------------- points
def _ci(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Student-t half-width over the first axis (NaN-aware)."""
    n = np.sum(np.isfinite(values), axis=0)
    import warnings
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # empty or single-value columns: NaN
        mean = np.nanmean(values, axis=0)
        sd = np.nanstd(values, axis=0, ddof=1) if values.shape[0] > 1 else np.full(mean.shape, np.nan)
    half = student_t(level, n - 1) * sd / np.sqrt(np.maximum(n, 1))
    return mean, np.where(n > 1, half, np.nan)


def _per_bucket(st, lane: int, first: int):
    nb = int(st.nb_l[lane])
    b = slice(first, nb)
    t = np.maximum(st.bk_time[b, lane], 1e-300)
    tokens = st.bk_area[b, :, lane] / t[:, None]
    rates = st.bk_fires[b, :, lane] / t[:, None]
    busy = [bb[b, :, lane] / t[:, None] for bb in st.bk_busy]
    return tokens, rates, busy


def analyze(engine, lanes: np.ndarray, o: DESOptions, first: np.ndarray,
            distribution: bool = True) -> tuple[list, dict]:
    """Rows (measure, element, color, mean, half-width) for one point's lanes."""
    c = engine.c
    st = engine.stats
    time_, area, fires, busy, res = st.totals(first)
    lt = np.maximum(time_[lanes], 1e-300)
    tokens = area[lanes] / lt[:, None]
    rates = fires[lanes] / lt[:, None]
    qbusy = [b[lanes] / lt[:, None] for b in busy]
    rows = derive(c, tokens, rates, qbusy)
    out = []
    if len(lanes) >= 2:
        for m, e, col, v in rows:
            mean, half = _ci(np.asarray(v, float), o.level)
            out.append((m, e, col, float(mean), float(half)))
    else:  # one long replication: batch means over the buckets after the warm-up
        lane = int(lanes[0])
        bt, br, bb = _per_bucket(st, lane, int(first[lane]))
        brows = derive(c, bt, br, bb)
        for (m, e, col, v), (_, _, _, bv) in zip(rows, brows):
            _, half = _ci(np.asarray(bv, float), o.level)
            out.append((m, e, col, float(np.asarray(v).ravel()[0]), float(half)))
    info = {}
    if distribution:
        out += _residence_distribution(engine, lanes, res, first, o, info)
    return out, info


def _residence_distribution(engine, lanes, res, first, o, info):
    """Variance and percentiles of residence times, from the tokens themselves."""
    c = engine.c
    out = []
    groups: dict[int, list[tuple[str, int]]] = {}
    for (p, col), u in engine.units.items():
        groups.setdefault(p, []).append((col, u))
    st = engine.stats
    point_hist = None
    if st.hist is not None and len(lanes):
        point_hist = st.point_hist(int(st.point[lanes[0]]), lanes, first)
    for p, members in groups.items():
        place = c.places[p]
        cols = [(color_label(c.slot_color[c.places[p].slots[i]]), u) for i, (_, u) in
                enumerate(sorted(members, key=lambda x: x[1]))]
        entries = [("", [u for _, u in cols])] + ([(lab, [u]) for lab, u in cols] if len(cols) > 1 or cols[0][0] else [])
        for lab, us in entries:
            r = res[lanes][:, us].sum(axis=1)          # (lanes, 3)
            n, s1, s2 = r[:, 0].sum(), r[:, 1].sum(), r[:, 2].sum()
            if n < 2:
                continue
            mean = s1 / n
            var = max(s2 / n - mean * mean, 0.0) * n / (n - 1)
            out.append(("residence_var", place.name, lab, var, None))
            if point_hist is not None:
                h = point_hist[us].sum(axis=0)
                for q in PERCENTILES:
                    out.append((f"residence_p{int(round(q * 100))}", place.name, lab,
                                percentile_from_hist(h, q), None))
                nz = np.flatnonzero(h)             # the histogram itself: non-empty bins only
                edges = bin_edges()
                info.setdefault("histograms", {})[place.name + (f"({lab})" if lab else "")] = {
                    "lower": edges[nz].tolist(), "upper": edges[nz + 1].tolist(), "count": h[nz].tolist()}
    return out


# --------------------------------------------------------------- solving
def simulate(net, *, sweep: dict | None = None, options: dict | None = None, params: dict | None = None):
    """Simulate ``net``; with ``sweep`` a SweepResult, else a Result."""
    from qpn.compile import compile_net
    o = options_of(options)
    if o.scheduler:
        from .distributed import simulate_distributed
        return simulate_distributed(net, sweep=sweep, options=o, params=params)
    points = sweep_points(sweep)
    compiled = [compile_net(net, {**(params or {}), **pt}) for pt in points]
    return _simulate_compiled(compiled, points, o, sweep is not None)


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
            engine, runinfo = _run_group(cs, R, keys, o)
        first = _warmup(engine, o)
        for j, i in enumerate(members):
            lanes = np.arange(j * R, (j + 1) * R)
            results[i] = _result(engine, lanes, o, runinfo, first, compiled[i])
    if not as_sweep:
        return results[0]
    sw = SweepResult([PointResult(points[i], results[i]) for i in range(len(points))], info)
    return sw


#: lanes from which the lane-vectorized queueing-network kernel beats the event engine on
#: a net it applies to (benchmarks/test_bench_general.py measures the crossing: on
#: models/bench/closed3.qpn 3.5 M vs 3.5 M events/s at 1024 lanes, 6.4 M vs 3.4 M at 4096)
QN_MIN_LANES = 2048


def choose_kernel(net, o: DESOptions) -> tuple[str, object, str]:
    """(kernel name, plan, why): the Lindley kernel for a G/G/1 queue, the queueing-network
    kernel for a plain queueing network with many lanes, else the event engine."""
    from .lindley import lindley_plan
    from .qnplan import qn_plan
    kernel = o.kernel
    if kernel in ("auto", "lindley"):
        lp = lindley_plan(net)
        if not isinstance(lp, list):
            return "lindley", lp, "a single-server FCFS queue fed by renewal sources: customers by recursion"
    if kernel in ("auto", "qn"):
        plan = qn_plan(net, residence_units(net.c)[1])
        if not isinstance(plan, list) and (kernel == "qn" or net.L >= QN_MIN_LANES):
            return "qn", plan, (f"a queueing network with {net.L} lanes (>= {QN_MIN_LANES}): "
                                "every lane advanced together")
        why = ("; ".join(plan[:2]) if isinstance(plan, list)
               else f"a queueing network, but {net.L} lanes (< {QN_MIN_LANES}): one lane at a time is faster")
        return "general", None, f"compiled event loop, one lane at a time ({why})"
    return "general", None, "compiled event loop, one lane at a time (requested)"


def make_engine(net, keys, o: DESOptions):
    """The engine for ``net``'s lanes (see :func:`choose_kernel`); its ``why`` says why."""
    from .lindley import LindleyKernel
    from .qnkernel import QNKernel
    from .events import EventEngine
    units, unit = residence_units(net.c)
    name, plan, why = choose_kernel(net, o)
    h, b = bool(o.histograms), int(o.buckets)
    if name == "lindley":
        engine = LindleyKernel(net, plan, keys, o.seed, units, unit, histograms=h, buckets=b)
    elif name == "qn":
        engine = QNKernel(net, plan, keys, o.seed, units, unit, histograms=h, buckets=b)
    else:
        threads = o.threads
        engine = EventEngine(net, keys, o.seed, histograms=h, buckets=b,
                             threads=None if threads in (None, "auto") else int(threads))
    engine.why = why
    return engine


def _run_group(points: list, R: int, keys: np.ndarray, o: DESOptions, lanes: np.ndarray | None = None):
    """Build the lanes (all, or a shard) and run them; the engine and the run info."""
    net = build_lanes(points, R, lanes)
    engine = make_engine(net, keys, o)
    if not o.quiet and getattr(engine, "kernel", "") == "EventEngine":
        from .jit import compiled_before
        if not compiled_before():
            print("compiling the event engine (once after installing or upgrading qpn: about 30 s; "
                  "cached afterwards)", file=sys.stderr, flush=True)
    if hasattr(engine, "simulate"):
        return engine, _run_lindley(engine, o)
    # the cap holds inside the first settling too (a timeless loop filling a queue)
    engine.wall_cap = float(o.wall)
    engine.start()
    sequential = None
    if o.time is None and o.events is None:
        sequential = _sequential_rule(engine, o)
    drive = run_chunked if hasattr(engine, "advance") else run
    runinfo = drive(engine, t_end=o.time, events=o.events, sequential=sequential,
                    first_check=int(o.min_events),
                    wall_cap=float(o.wall), quiet=bool(o.quiet))
    return engine, runinfo


def _run_lindley(engine, o: DESOptions):
    """Customer-by-customer kernel: a horizon, doubled until precise enough."""
    from .run import RunInfo
    t0 = time.perf_counter()
    if o.time is not None or o.events is not None:
        engine.simulate(o.time, o.events)
        return RunInfo(0, time.perf_counter() - t0, False, "time" if o.time is not None else "events",
                       int(engine.steps.sum()))
    rule = _sequential_rule(engine, o)
    R = int(o.replications)
    # about min_events events per lane first, then each point doubles its own
    # horizon until its measures are precise (so a point's result never
    # depends on the other points run with it)
    engine.simulate(None, int(o.min_events))
    horizon = np.array([float(engine.t[p * R:(p + 1) * R].min()) for p in range(engine.L // R)])
    while True:
        if rule():
            return RunInfo(0, time.perf_counter() - t0, False, "precision", int(engine.steps.sum()))
        wall = time.perf_counter() - t0
        if wall * 2 > float(o.wall):
            return RunInfo(0, wall, False, "wall-clock cap", int(engine.steps.sum()))
        for p in np.flatnonzero(~rule.done):
            horizon[p] *= 2
            engine.simulate(float(horizon[p]), None, lanes=np.arange(p * R, (p + 1) * R))


def _warmup(engine, o: DESOptions) -> np.ndarray:
    st = engine.stats
    w = o.warmup
    if w == "mser":
        return st.truncation()
    if not w:
        return np.zeros(engine.L, dtype=np.int64)
    cum = np.cumsum(st.bk_time, axis=0)                    # zeros past each lane's buckets
    return np.minimum(np.argmax(cum >= float(w), axis=0) + 1, np.maximum(st.nb_l - 2, 0)).astype(np.int64)


def _sequential_rule(engine, o: DESOptions):
    """A check that stops each point whose watched measures are all precise enough.

    Called at step counts that depend on nothing but the schedule, it stops a
    point's lanes (the engine's ``alive``) as soon as that point is precise, so
    a point's result does not depend on the other points of the run.  Returns
    True when every point is done; ``check.done`` flags the points and
    ``check.growth`` says how much longer the run should go before the next
    check: half-widths shrink as 1/sqrt(steps), so the worst miss ratio r asks
    for r^2 times the steps.  The worst of many noisy ratios overstates r, so
    the growth aims at GROWTH_AIM r^2, kept within [GROWTH_MIN, GROWTH_MAX]
    (early half-widths rest on few buckets).  It is computed from the
    statistics alone, so a seed still reproduces the run."""
    R = int(o.replications)
    done = np.zeros(engine.L // R, dtype=bool)

    def worst(lanes: np.ndarray, first: np.ndarray) -> float:
        """The largest half-width / target ratio of a point (inf: no estimate yet)."""
        if engine.steps[lanes].min() < int(o.min_events) or engine.stats.nb_l[lanes].min() < 8:
            return math.inf
        rows, _ = analyze(engine, lanes, o, first, distribution=False)
        miss = imprecise(rows, o)
        return max((m[4] / m[5] if m[4] is not None and np.isfinite(m[4]) else math.inf for m in miss),
                   default=0.0)

    def check() -> bool:
        first = _warmup(engine, o)
        ratio = 0.0
        for p in np.flatnonzero(~done):
            lanes = np.arange(p * R, (p + 1) * R)
            r = worst(lanes, first)
            if r <= 1.0:
                done[p] = True
                if hasattr(engine, "alive"):
                    engine.alive[lanes] = False
            ratio = max(ratio, r)
        check.growth = (GROWTH_DEFAULT if not math.isfinite(ratio)
                        else min(max(GROWTH_AIM * ratio * ratio, GROWTH_MIN), GROWTH_MAX))
        return bool(done.all())
    check.done = done
    check.growth = GROWTH_DEFAULT
    return check


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
    thirds = []
    for lane in np.asarray(lanes, dtype=np.int64):
        b1 = int(st.nb_l[lane])
        n = b1 // 3
        if n < 2:
            return []
        t = st.bk_time[:, lane]
        a = st.bk_area[:, :, lane]
        thirds.append([a[k * n:(k + 1) * n].sum(axis=0) / max(t[k * n:(k + 1) * n].sum(), 1e-300)
                       for k in (0, 1)] + [a[b1 - n:b1].sum(axis=0) / max(t[b1 - n:b1].sum(), 1e-300)])
    th = np.array(thirds)                     # (lanes, 3, slots)
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


class DESSolver:
    """``des``: discrete-event simulation with confidence intervals (every construct)."""
    name = "des"
    Options = DESOptions

    def problems(self, compiled, options: dict) -> list[str]:
        """None: the simulator runs every construct of the language."""
        return []

    def solve(self, compiled, options: dict) -> Result:
        """Simulate independent replications (in threads, processes or on a Dask
        scheduler) until the relative half-width of every chosen measure's confidence
        interval reaches ``precision``, or a cap stops them (said on the result)."""
        o = options_of(options)
        if o.scheduler:
            from .distributed import simulate_distributed
            return simulate_distributed(compiled.net, sweep=None, options=o, params=dict(compiled.params))
        return _simulate_compiled([compiled], [{}], o, False)


__all__ = ["simulate", "DESSolver", "SweepResult", "PointResult", "sweep_points"]
