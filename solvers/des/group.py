"""One group of lanes (points of one shape times their replications): the kernel chosen
for it, the engine built and run until the stopping rule, the precision or a cap says.

Shared by the in-process path (:mod:`solvers.des.solver`) and the worker processes of a
sharded run (:mod:`solvers.des.parallel`), which each run a shard of the lanes.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from .analysis import analyze, warmup_start
from .flat import residence_units
from .lanes import build_lanes
from .options import DESOptions
from .precision import imprecise
from .run import RunInfo, run, run_chunked

#: steps before the next sequential check, as a multiple of the steps so far (see _sequential_rule)
#: (measured on 10 models x 2 seeds: total events 197 M with these, 226 M with at most 4x and aim 1)
GROWTH_MIN, GROWTH_MAX, GROWTH_DEFAULT, GROWTH_AIM = 1.25, 2.0, 1.5, 0.8

#: lanes from which the lane-vectorized queueing-network kernel beats the event engine on
#: a net it applies to (benchmarks/test_bench_general.py measures the crossing: on
#: models/bench/closed3.qpn 3.5 M vs 3.5 M events/s at 1024 lanes, 6.4 M vs 3.4 M at 4096)
QN_MIN_LANES = 2048


#: lanes from which the Lindley kernel (one lane at a time, about 1 ms of Python each per
#: horizon, no wall-clock check between lanes) gives way: -R 100000 --wall 3 ran 150 s
LINDLEY_MAX_LANES = QN_MIN_LANES

#: bytes the Lindley kernel holds per customer of the lane it runs (arrival, service and
#: departure times, class, mode, masks and the statistics' temporaries)
LINDLEY_BYTES = 160


def _lindley_fits(net, plan: dict, o: DESOptions) -> bool:
    """Whether a fixed run (--events, --time) holds one lane's customers in memory at once
    (the kernel draws them all together): --events 1e30 took the address space, then
    reported an allocation failure.  The event engine, which streams, runs such a run
    to its wall-clock cap instead."""
    if o.events is not None:
        customers = float(o.events) / 2
    elif o.time is not None:
        rate = sum(1.0 / max(float(np.min(net.delay[j].mean)), 1e-300) for j, _ in plan["sources"])
        customers = float(o.time) * rate
    else:
        return True          # precision-driven: the horizon doubles within the wall cap
    from qpn import resources
    return resources.fits(customers * LINDLEY_BYTES)


def choose_kernel(net, o: DESOptions) -> tuple[str, object, str]:
    """(kernel name, plan, why): the Lindley kernel for a G/G/1 queue, the queueing-network
    kernel for a plain queueing network with many lanes, else the event engine."""
    from .lindley import lindley_plan
    from .qnplan import qn_plan
    kernel = o.kernel
    if kernel in ("auto", "lindley"):
        lp = lindley_plan(net)
        if not isinstance(lp, list) and (kernel == "lindley" or (
                net.L < LINDLEY_MAX_LANES and _lindley_fits(net, lp, o))):
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
    # imported here: the event engine's module imports numba, which a run of the other
    # kernels (and every other solver) does without
    from .events import EventEngine
    from .lindley import LindleyKernel
    from .qnkernel import QNKernel
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


def run_group(points: list, R: int, keys: np.ndarray, o: DESOptions, lanes: np.ndarray | None = None):
    """Build the lanes (all, or a shard) and run them; the engine and the run info."""
    t0 = time.perf_counter()
    net = build_lanes(points, R, lanes)
    engine = make_engine(net, keys, o)
    engine.setup_started, cap = t0, float(o.wall)
    # the cap counts the set-up too: 100,000 lanes' streams take seconds before the first event
    o = o.replace(wall=max(cap - (time.perf_counter() - t0), 0.05 * cap))
    if not o.quiet and getattr(engine, "kernel", "") == "EventEngine":
        from .jit import compiled_before
        if not compiled_before():
            print("compiling the event engine (once after installing or upgrading qpn: 1-2 minutes of CPU; "
                  "cached afterwards)", file=sys.stderr, flush=True)
    if hasattr(engine, "simulate"):
        return engine, _run_lindley(engine, o)
    # the cap holds inside the first settling too (a timeless loop filling a queue)
    engine.wall_cap = cap
    engine.start()
    setup = time.perf_counter() - t0 - getattr(engine, "jit_seconds", 0.0)
    o = o.replace(wall=max(cap - setup, 0.05 * cap))
    sequential = None
    if o.time is None and o.events is None:
        sequential = sequential_rule(engine, o)
    drive = run_chunked if hasattr(engine, "advance") else run
    runinfo = drive(engine, t_end=o.time, events=o.events, sequential=sequential,
                    first_check=int(o.min_events),
                    wall_cap=float(o.wall), quiet=bool(o.quiet))
    return engine, runinfo


def _run_lindley(engine, o: DESOptions):
    """Customer-by-customer kernel: a horizon, doubled until precise enough."""
    t0 = time.perf_counter()
    if o.time is not None or o.events is not None:
        engine.simulate(o.time, o.events)
        return RunInfo(0, time.perf_counter() - t0, False, "time" if o.time is not None else "events",
                       int(engine.steps.sum()))
    rule = sequential_rule(engine, o)
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


def sequential_rule(engine, o: DESOptions):
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
        rows, _ = analyze(engine, lanes, o, first, distribution=False, measures=frozenset(o.watch))
        miss = imprecise(rows, o)
        return max((m[4] / m[5] if m[4] is not None and np.isfinite(m[4]) else math.inf for m in miss),
                   default=0.0)

    def check() -> bool:
        first = warmup_start(engine, o)
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
