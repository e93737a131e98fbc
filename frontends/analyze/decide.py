"""Each runner's mode: a steady-state loop (its iterations) or its whole run.

:func:`decide` looks for a thread's steady-state loop (:func:`steady`, on a sample of a
long walk), votes over a pool's threads, drops the steps outside the loop, the last
iterations that left it and, for a runtime with a JIT, the first ones (warmup.py); a
thread that starts and joins threads around its loop is modelled over its whole run.
:func:`finish` folds the dropped steps away and structures the runner's body.  Runners
are :class:`pipeline.Runner` objects (attributes read and set here).
"""
from __future__ import annotations

import collections
import operator

from .forks import FORKS_BASE
from .phases import SteadyLoop, drop_short_exits, steady_loop
from .steps import fold
from .structure import round_end, round_starts, structure
from .warmup import warm_iterations

_TOK = operator.attrgetter("tok")


def cpu_of(steps) -> float:
    return float(sum(s.cpu for s in steps if s.cpu is not None and not s.drop))


def work_of(steps) -> float:
    """CPU and file I/O time (ns) of the steps kept: what a runner does itself (a
    disk-bound thread works though it uses little CPU)."""
    return cpu_of(steps) + float(sum(s.dur for s in steps if s.action == "io" and not s.drop))


#: a long walk's steady-state loop is found from its first and last steps
HEAD, TAIL = 5_000, 1_000


def steady(w: list, slack: float) -> SteadyLoop:
    """``phases.steady_loop``, on a sample of a long walk: its head and its tail.

    The loop and its header show in the first steps, and the iterations that
    leave it in the last ones; the steps in between are the same loop.
    """
    if len(w) <= HEAD + TAIL:
        return steady_loop(w, slack=slack)
    d = steady_loop(w[:HEAD] + w[-TAIL:], slack=slack)
    if d.header is None or not d.steps:
        return d
    toks = list(map(_TOK, w))
    first = toks.index(d.header)
    last = d.steps[-1]
    end = next((len(w) - k for k, s in enumerate(reversed(w[-TAIL:])) if s is last), len(w))
    d.steps = w[first:end]
    d.span = (first, end)
    d.iterations = toks[first:end].count(d.header if d.latch is None else d.latch)
    return d


def decide(r, walks: dict, slack: float, end_cpu: dict, jit: bool = False) -> bool:
    """Forever (steady-state loop) or counted (whole life); marks dropped steps.

    A thread's steady-state loop is looked for in its whole life first, then
    in its work phase only (start-up code may hide it, and a loop that runs mostly
    outside the work phase -- reading the results back after the workers ended --
    is not the thread's share of the work).  Returns whether the runner became a
    steady-state loop.
    """
    g = r.group
    kept = {t: [s for s in walks[t] if not s.drop] for t in g.tids}
    loops = {t: steady(w, slack) for t, w in kept.items() if w}
    for t, d in list(loops.items()):
        if d.header is None or 2 * sum(s.out for s in d.steps) > len(d.steps):
            inner = [s for s in kept[t] if not s.out]
            if inner and len(inner) < len(kept[t]):
                loops[t] = steady(inner, slack)
    votes: dict = collections.Counter()
    for t, d in loops.items():
        if d.header is not None:
            votes[d.header] += len(kept[t])
    total = sum(len(kept[t]) for t in loops) or 1
    if not votes:
        return False
    header, weight = votes.most_common(1)[0]
    if weight < 0.5 * total:
        return False
    for t, d in loops.items():
        # threads it started and joined around its loop (a fork round outside the loop):
        # the fork and the join are the run, the loop a part of it
        inside = {id(s) for s in d.steps}
        # (a loop that forks and joins in each iteration stays the steady state)
        if d.header == header and not any(_forked(s) for s in d.steps) and \
                any(_forked(s) and id(s) not in inside for s in walks[t]):
            for s in walks[t]:
                if _forked(s):
                    s.drop = False
            return False
    r.mode, r.header = "forever", header
    latches = {d.latch for d in loops.values() if d.header == header}
    r.latch = latches.pop() if len(latches) == 1 else None
    for t in g.tids:
        d = loops.get(t)
        if d is not None and d.header == header and d.span is not None:
            a, b = d.span                      # one stretch of the walk: drop around it
            for s in kept[t][:a]:
                s.drop = True
            for s in kept[t][b:]:
                s.drop = True
            r.exits += d.exits
            r.iterations += d.iterations
            continue
        for s in walks[t]:
            s.drop = True
        if d is not None and d.header is not None:
            steps = d.steps
            first = next((i for i, s in enumerate(steps) if s.tok == header), len(steps))
            for s in steps[first:]:
                s.drop = False
            r.exits += d.exits if d.header == header else 0
            ends = header if r.latch is None else r.latch
            r.iterations += sum(1 for s in steps[first:] if s.tok == ends)
    exits = drop_short_exits(r.group.tids, walks, header, end_cpu, latch=r.latch)
    r.exits += exits
    r.iterations -= exits
    if jit:
        _drop_warmup(r, walks, header)
    return True


def _drop_warmup(r, walks: dict, header: int) -> None:
    """A JIT runtime's warm-up: each thread's first iterations, until its CPU per
    iteration settles (warmup.py), are left out."""
    for t in r.group.tids:
        live = [s for s in walks[t] if not s.drop]
        cuts = _starts(list(map(_TOK, live)), header, r.latch)
        its = [live[a:b] for a, b in zip(cuts, cuts[1:] + [len(live)])]
        warm = warm_iterations([work_of(it) for it in its])
        for it in its[:warm]:
            for s in it:
                s.drop = True
        r.warm += warm
        r.iterations -= warm


def _starts(toks: list, header: int, latch: int | None) -> list[int]:
    """Where a thread's iterations begin: at each header, or after each latch (the rounds
    of an inner loop closed by a barrier)."""
    if latch is not None:
        return [0] + [i + 1 for i, x in enumerate(toks[:-1]) if x == latch]
    return [i for i, x in enumerate(toks) if x == header]


def _forked(s) -> bool:
    """Whether a step starts or joins threads (a fork semaphore of forks.py)."""
    return s.action in ("release", "acquire") and isinstance(s.key, tuple) and \
        isinstance(s.key[0], int) and s.key[0] >= FORKS_BASE


def finish(r, walks: dict) -> None:
    """Fold dropped steps away and structure the runner's body."""
    if r.mode == "omitted":
        return
    if r.mode == "forever":
        its = []
        folded = {t: fold(walks[t], lambda s: not s.drop) for t in r.group.tids}
        toks_of = {t: list(map(_TOK, w)) for t, w in folded.items()}
        groups: dict = {}
        for t, toks in toks_of.items():
            groups.setdefault(tuple(toks), []).append(folded[t])
        # rounds of runs (submit N, wait for N): an iteration is a round (structure.round_end)
        back = round_end(groups, r.header) if groups else None
        for t, w in folded.items():
            toks = toks_of[t]
            if r.latch is not None or back is None:
                cuts = _starts(toks, r.header, r.latch)
            else:
                cuts = [0] * (toks[:1] == [r.header]) + round_starts(toks, r.header, back)
            cuts = cuts + [len(w)]
            its.extend(w[a:b] for a, b in zip(cuts, cuts[1:]))
        if its:
            r.walks = its
            r.items = structure(its)
            return
        r.mode = "counted"
    r.walks = [fold(walks[t], lambda s: not s.drop) for t in r.group.tids]
    r.walks = [w for w in r.walks if w]
    r.items = structure(r.walks)
    if not r.items:
        r.mode, r.why = "omitted", "no operations left"
