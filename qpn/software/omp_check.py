"""Checks of the OpenMP constructs (``parallel for``, ``critical``, ``atomic``, ``single``),
called by :mod:`qpn.software.check`; every error is located.

* ``parallel for``: whole counts >= 1, numbers for ``schedule guided``, threads given or
  one cpu, no ``return`` out of the block, the cpu of ``reduction ... on CPU``;
* ``critical``: no ``return`` out of the block (OpenMP's blocks are structured), and its
  implicit lock's name (``critical``, ``critical_NAME``) free in the software block; a
  critical section inside one of the same name (directly, through calls, or in a team or
  forked thread started while holding it) waits for itself: refused by
  :class:`qpn.software.check.Discipline` with :func:`nested_critical`;
* ``single``: only in the block of a ``parallel for`` (:func:`check_singles`), reached by
  every thread of the team equally often: not in a branch, an ``else`` block, a
  ``loop about``, a critical section, another single or a forked thread; ``schedule
  static`` with every thread running as many iterations (numbers, or iterations and
  threads the same expression).

>>> import qpn
>>> try:
...     qpn.parse("software { cpu h\\n pool p size 1 { single { cpu det(1 ms) } } }")
... except qpn.ModelError as e:
...     print(e.message)
'single' belongs in the block of a parallel for: the first thread of its team to arrive runs it
"""
from __future__ import annotations

from ..errors import ModelError
from ..expr import Expr, fmt
from . import ast as sw
from .omp_counts import default_threads, static_split
from .omp_sync import critical_lock

#: the steps checked here
OMP_STEPS = (sw.ParallelFor, sw.Critical, sw.Atomic, sw.Single)


def check_step(st, table, nums, steps, target_loc) -> None:
    """Errors of one OpenMP step; ``steps(body, table, nums)`` checks nested steps and
    ``target_loc(step, name)`` locates a name in a step (:mod:`qpn.software.check`)."""
    t = type(st)
    if t is sw.ParallelFor:
        _parallel_for(st, table, nums)
        if st.reduction_on is not None:
            table.get(st.reduction_on, (sw.Cpu,), lambda: target_loc(st, st.reduction_on))
        elif st.reduction is not None:
            table.default((sw.Cpu,), st.loc, "a reduction")
        _no_return(st.body, "a parallel for: every iteration runs to its end",
                   "skip the rest of an iteration with a branch; a behavior called in the body "
                   "may return")
    elif t is sw.Critical:
        lock = critical_lock(st.name)
        d = table.decls.get(lock)
        if d is not None:
            whose = "every unnamed critical section" if st.name is None else \
                f"critical '{st.name}'"
            raise ModelError(f"{whose} needs the name '{lock}' for its lock, but the software "
                             f"block declares a {sw.KIND_NAMES[type(d)]} '{lock}'", st.loc,
                             hint=f"rename the {sw.KIND_NAMES[type(d)]}")
        _no_return(st.body, "a critical section: the lock is given back at its end",
                   "a behavior called in the critical section may return")
    elif t is sw.Atomic:
        if st.on is not None:
            table.get(st.on, (sw.Cpu,), lambda: target_loc(st, st.on))
        else:
            table.default((sw.Cpu,), st.loc, "an atomic update")
    if t is not sw.Atomic:
        steps(st.body, table, nums)


def _parallel_for(st: sw.ParallelFor, table, nums) -> None:
    nums.whole(st.count, "the iterations of a parallel for", st.loc)
    if st.threads is not None:
        nums.whole(st.threads, "the threads of a parallel for", st.loc)
    else:
        default_threads(table, st)
    if st.chunk is not None:
        nums.whole(st.chunk, "the chunk size of a parallel for", st.loc)
    if st.schedule == "guided":
        cpu = default_threads(table, st) if st.threads is None else None
        for e, what, of in ((st.count, "iterations", ""), (st.threads, "threads", ""),
                            (st.chunk, "chunk size", ""),
                            (cpu and cpu.cores, "threads",
                             cpu and f" (the cores of cpu '{cpu.name}')")):
            if e is not None and not _literal(e):
                raise ModelError(f"'schedule guided' needs the {what} as a number, got "
                                 f"{fmt(e)}{of}", st.loc if of else (e.loc or st.loc),
                                 hint="its chunks shrink with the iterations left, so their "
                                      "number and sizes are computed when the model is "
                                      "expanded; 'schedule dynamic' takes expressions")


def _no_return(body, what: str, hint: str) -> None:
    ret = _find_return(body)
    if ret is not None:
        raise ModelError(f"'return' cannot leave {what}", ret.loc, hint=hint)


def _literal(e: Expr) -> bool:
    """Whether ``e`` is written as a number without a unit."""
    return getattr(e, "unit", "x") is None and isinstance(getattr(e, "value", None), (int, float))


def _find_return(nodes):
    """The first ``return`` of a thread's steps (not in forked children), or None."""
    for n in nodes:
        if isinstance(n, sw.Return):
            return n
        if isinstance(n, (sw.Fork, sw.ParallelFor)):
            continue
        found = _find_return(sw.children(n))
        if found is not None:
            return found
    return None


def nested_critical(st: sw.Critical, outer) -> ModelError:
    """The error of a critical section reached while its own lock is held (at ``outer``)."""
    what = "this critical section" if st.name is None else f"critical '{st.name}'"
    where = f" (taken at {outer})" if outer is not None else ""
    return ModelError(f"{what} is reached while its lock is already held{where}: the thread "
                      "would wait for itself forever", st.loc,
                      hint="critical sections of one name cannot nest (every unnamed one "
                           "shares one lock); give the inner one another name")


# ------------------------------------------------------------------- single
def check_singles(table) -> None:
    """Every ``single`` is where a whole team reaches it equally often."""
    for d in table.decls.values():
        if isinstance(d, sw.RUNNERS) and isinstance(d.body, tuple):
            _walk(table, d.body, None, None)
        elif isinstance(d, sw.Behavior):
            _walk(table, d.body, None, "in a behavior")


def _walk(table, nodes, pf, why: str | None) -> None:
    """``pf``: the parallel for whose team runs these steps (None: none); ``why``: why a
    single cannot be here all the same (None: it can)."""
    for n in nodes:
        if isinstance(n, sw.Single):
            _single_here(table, n, pf, why)
            _walk(table, n.body, pf, "inside another single")
        elif isinstance(n, sw.ParallelFor):
            _walk(table, n.body, n, None)
        elif isinstance(n, sw.Fork):
            for b in n.blocks:
                _walk(table, b.body, pf, "in a forked thread" if pf is not None else why)
        elif isinstance(n, sw.Branch):
            for alt in n.alternatives:
                _walk(table, alt.body, pf, "in a branch")
        elif isinstance(n, sw.Loop):
            _walk(table, n.body, pf, "in a 'loop about N times'" if n.geometric else why)
        elif isinstance(n, sw.Critical):
            _walk(table, n.body, pf, "inside a critical section")
        else:
            _walk(table, sw.children(n), pf, "in an else block")


_ALL_OR_NONE = "OpenMP requires a single to be reached by all threads of the team or by none"
#: why a single cannot be where it is, and a hint, by where it is (else all must reach it)
_NOT_HERE = {
    "inside a critical section": ("one thread at a time is there, and the team meets at the "
                                  "single", "OpenMP forbids a single inside a critical section"),
    "inside another single": ("only one thread of the team runs the outer one",
                              "OpenMP forbids a single closely nested in another"),
    "in a forked thread": ("the forked thread is not a thread of the team",
                           "write it in the block of the parallel for itself"),
}


def _single_here(table, st: sw.Single, pf, why: str | None) -> None:
    region = "a parallel region of T threads is 'parallel for T threads T { ... }'"
    if why == "in a behavior":
        raise ModelError("'single' cannot be in a behavior: it needs the team of the parallel "
                         "for it is written in", st.loc,
                         hint="write it in the block of the parallel for")
    if pf is None:
        raise ModelError("'single' belongs in the block of a parallel for: the first thread "
                         "of its team to arrive runs it", st.loc, hint=region)
    if why is not None:
        reason, hint = _NOT_HERE.get(why, ("all threads of the team must reach it, equally "
                                           "often", _ALL_OR_NONE))
        raise ModelError(f"'single' cannot be {why}: {reason}", st.loc, hint=hint)
    if pf.schedule != "static":
        raise ModelError(f"'single' needs its parallel for scheduled static: with 'schedule "
                         f"{pf.schedule}' the threads run different numbers of iterations, so "
                         "they cannot meet at it", st.loc, hint=region)
    threads = pf.threads if pf.threads is not None else default_threads(table, pf).cores
    fewer = static_split(pf.count, threads)[3]
    if _literal(fewer) and fewer.value == 0:
        return
    if _literal(fewer):
        raise ModelError(f"'single' needs every thread of the team to run as many iterations, "
                         f"but {fmt(pf.count)} iterations on {fmt(threads)} threads are not "
                         "shared evenly, so the threads would not meet at it", st.loc,
                         hint="make the iterations a multiple of the threads")
    raise ModelError("'single' needs every thread of the team to run as many iterations: "
                     f"write the iterations ({fmt(pf.count)}) and the threads ({fmt(threads)}) "
                     "as numbers, or as the same expression", st.loc, hint=region)
