"""The analysis pipeline: trace -> runners with structured bodies.

1. steps per thread (:mod:`.steps`), socket channels (:mod:`.sockets`);
2. the work phase, thread pools (:mod:`.threads`), each pool's steady-state
   loop or whole life (:mod:`.phases`, :mod:`.decide`);
3. hand-overs follow drops; queues with one side left in the model are
   dropped (no consumer) or fed by a source (no producer: an open workload);
4. the structure of each runner's body (:mod:`.structure`) and the GIL-free
   share of each code fragment (:mod:`.gil`).

:func:`analyze` runs the passes of :mod:`.passes` in order over one state and
returns an :class:`Analysis` (:mod:`.runners`); :mod:`.model` writes it as a
model.  A trace and options in, plain data out, with three reads outside them: whether the program's source directory exists (elements are named after its
files), this machine's core count when the trace recorded none, and the clock
(the stages' seconds, for the benchmark).  The garbage collector is paused
while it runs (:func:`no_gc`).
"""
from __future__ import annotations

import contextlib
import gc

from . import passes
from .runners import CPU_POLICIES, Analysis, Options   # noqa: F401  (CPU_POLICIES re-exported)


@contextlib.contextmanager
def no_gc():
    """Pause the cyclic garbage collector: the analysis makes millions of small,
    acyclic objects, and collections triggered by their allocation would
    rescan them all again and again (half the run time on 10^6 events)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def analyze(trace, options: Options | None = None) -> Analysis:
    """Analyze a :class:`frontends.trace.Trace` into runners with structured bodies."""
    with no_gc():
        return _analyze(trace, options)


def _analyze(trace, options: Options | None) -> Analysis:
    p = passes.start(trace, options or Options())
    for step in (passes.read_threads, passes.walk_threads, passes.link_threads,
                 passes.work_phase_of, passes.find_runners, passes.decide_runners,
                 passes.finish_runners, passes.gil_of):
        step(p)
    sources, traced = passes.sources_and_sites(p)
    return Analysis(trace, p.opt, p.objects, p.tokens, p.runners, p.links, sources,
                    bool(p.gil), p.shares, passes._queue_flow(p.pairs), p.external, p.phase,
                    p.warnings, traced, passes._tick(p.timings, "rest"), p.joins, p.probe,
                    p.notes, p.phase_by, p.wakeups, p.selecting)
