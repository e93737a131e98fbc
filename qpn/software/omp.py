"""OpenMP work-sharing loops: ``parallel for N [threads T] [schedule KIND [C]]
[reduction D [on CPU]] { ... }`` (``critical``, ``atomic``, ``single`` and the reduction's
combine are :mod:`qpn.software.omp_sync`, the arithmetic of the split
:mod:`qpn.software.omp_counts`).

The thread that reaches the step (the *encountering* thread) starts a team of T threads
that share the N iterations of the body, and waits in ``RUNNER.LABEL`` until all of them
are done (the implicit barrier at the end of an OpenMP loop); ``RUNNER.LABEL.done``
joins.  ``threads`` defaults to the cores of the only cpu.  LABEL is ``parallel_for``
(``parallel_for2``, ...) or the name given with ``as``; the team's steps are named
``RUNNER.LABEL.thread.STEP``, and the team's threads end in ``RUNNER.LABEL.thread.done``.

* ``schedule static`` (the default): the iterations are split into contiguous blocks,
  one per thread: with ``team = min(T, N)`` threads (threads without an iteration only
  pass the barrier) and ``most = ceil(N / team)``, the first ``N - team * (most - 1)``
  threads run the body ``most`` times and the others ``most - 1`` times (OpenMP gives
  the first N mod T threads one more).  The threads with ``most`` iterations start in
  ``RUNNER.LABEL.thread.start``, the others in ``RUNNER.LABEL.thread.short.start``;
  ``RUNNER.LABEL.thread.begin`` (``RUNNER.LABEL.thread.short.begin``) starts the body
  with the iteration counter (color set ``RUNNER.LABEL.thread.iteration = 1 .. most``)
  at 1 (at 2), and the last transition of the body has the modes ``again``/``exit`` of
  a counted loop.  With ``most`` = 1 (N <= T, both numbers, or N and T the same
  expression: a parallel region) there is no counter; when T divides N (both numbers)
  there is no ``short``.
* ``schedule dynamic [C]`` (C = 1 by default): the ``ceil(N / C)`` chunks are tokens;
  ``RUNNER.LABEL.chunks`` holds the full chunks (C iterations) and ``RUNNER.LABEL.last``
  the last one when it may be shorter (``N - C * (ceil(N / C) - 1)`` iterations: left out
  when C divides N, both numbers).  A thread in ``RUNNER.LABEL.thread.start`` takes a full
  chunk (``RUNNER.LABEL.thread.begin``), else the last one (``RUNNER.LABEL.thread.last``,
  only when no full chunk is left, as OpenMP hands out chunks in order), runs the body
  once per iteration of the chunk (its counter starts later for the short chunk), counts
  the chunk in ``RUNNER.LABEL.chunks.done`` and comes back for the next;
  ``RUNNER.LABEL.thread.end`` ends a thread that finds no chunk left.  The join takes
  the T threads and the ``ceil(N / C)`` finished chunks (so no cycle of immediate
  transitions can run without the body's time).  With C = 1 there is no counter.

* ``schedule guided [C]``: chunks that shrink, each ``ceil(left / T)`` and at least C
  (:func:`guided_chunks`); N, T and C must be numbers (checked).  ``RUNNER.LABEL.next``
  holds one token, the index of the next chunk (color set ``RUNNER.LABEL.chunk = 1 ..
  K+1``); ``RUNNER.LABEL.thread.size<s>`` (a mode ``chunk<i>`` per chunk of s
  iterations) takes it and runs the body s times; ``RUNNER.LABEL.thread.end`` ends a
  thread once the index is K+1, and the join takes the index back.

* ``reduction D [on CPU]``: a team thread with no iteration left combines its partial
  result before it ends: an atomic update of cpu time D at ``RUNNER.LABEL.thread.reduction``
  (:func:`qpn.software.omp_sync.update`; its lock is that path), so the T combines
  serialize.  Every thread of the team combines, also those without an iteration
  (static, N < T: they start at the combine).

With static and dynamic schedules every count may be an expression of parameters (``min``, ``ceil`` and the arithmetic
above stay in the net); when they are numbers the expansion is folded.  Threads are
tokens: the join is exact while one encountering thread at a time is in this step (a
pool or population of size 1, or a single thread reaching it), as for ``fork``; with
several, a thread of one team may take another team's chunk or release its parent.
The body runs in the team's threads: it may not ``return`` (checked), locks taken in it
are released in it (checked per thread, as for ``fork``).

>>> import qpn
>>> net = qpn.parse('''software { cpu host cores 4
... pool w size 1 { parallel for 10 threads 4 { cpu det(1 ms) } } }''')
>>> from qpn.dsl.printer import fmt_mode_body
>>> fmt_mode_body(net.transition_map["w.begin"].modes[0])
'w.start -> w.parallel_for, 2 w.parallel_for.thread.start, 2 w.parallel_for.thread.short.start'
>>> fmt_mode_body(net.transition_map["w.parallel_for.done"].modes[0])
'w.parallel_for, 4 w.parallel_for.thread.done -> w.start'
"""
from __future__ import annotations

from ..expr import Expr, Num
from . import ast as sw
from .cfg import Act, Alt, End, Exit, ExitMode, LoopBack, LoopEnter, LoopInfo
from .control import start_station
from .env import step
from .kit import arc
from .omp_counts import (ONE, _fold, _int, _min, default_threads, dynamic_split, guided_chunks,
                         static_split)
from .omp_sync import update

#: labels a step of the body cannot have: they name the team's own elements
RESERVED = ("done", "end", "last", "short", "reduction")


# ------------------------------------------------------------------ expansion
@step(sw.ParallelFor)
def parallel_for(st: sw.ParallelFor, nxt, env):
    """``parallel for N [threads T] [schedule ...] [reduction D] { ... }``: a team of T
    threads shares the N iterations; the encountering thread waits until all of them are
    done."""
    threads = st.threads if st.threads is not None else default_threads(env.table, st).cores
    path = env.path(st)
    prefix = f"{path}.thread"
    done = env.kit.place(f"{prefix}.done", loc=st.loc).name
    finish = End([arc(done)])
    leave = finish          # where a team thread goes once it has no more iterations
    if st.reduction is not None:
        leave = update(env.with_ctx(()), f"{prefix}.reduction", st.reduction, st.reduction_on,
                       st.loc, finish)
    if st.schedule == "dynamic":
        entry, join = _dynamic(st, env, path, prefix, threads, leave, done)
    elif st.schedule == "guided":
        entry, join = _guided(st, env, path, prefix, threads, leave, done)
    else:
        entry, team = _static(st, env, prefix, threads, leave)
        idle = _fold("-", threads, team)
        if st.reduction is not None and _int(idle) != 0:
            # threads without an iteration still combine their (empty) partial result
            entry += [arc(leave.place, idle)] + [arc(a.place, idle) for a in leave.entry]
            team = threads
        join = [arc(done, team)]
    s = env.station(path, st.loc, entry=entry)
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=join)], next=nxt, loc=st.loc))
    return s


def _counter(env, prefix: str, count: Expr, st, after, leave, team=None):
    """The body in the team's scope inside a counted loop of ``count`` iterations (a
    LoopInfo and the LoopBack whose ``body`` is the body's entry)."""
    info = LoopInfo(env.kit.range_colors(f"{prefix}.iteration", count, st.loc), count)
    back = LoopBack(info, count, after=after, loc=st.loc)
    cenv = env.scope(prefix, st.body, ret=leave, ctx=(info,), reserved=RESERVED, team=team)
    back.body = cenv.build(st.body, back)
    return info, back


def _static(st, env, prefix: str, threads: Expr, leave):
    team, most, full, fewer = static_split(st.count, threads)
    what = f"a thread of {env.path(st)}"
    # every thread of the team runs as many iterations: they can meet at a 'single'
    equal = team if _int(fewer) == 0 else None
    if _int(most) == 1:
        start = start_station(env, prefix, st.loc, what)
        cenv = env.scope(prefix, st.body, ret=leave, ctx=(), reserved=RESERVED, team=equal)
        start.exits.append(Exit(f"{prefix}.begin", next=cenv.build(st.body, leave), loc=st.loc))
        return [arc(start.place, team)], team
    info, back = _counter(env, prefix, most, st, leave, leave, equal)
    start = start_station(env, prefix, st.loc, what)
    start.exits.append(Exit(f"{prefix}.begin", next=LoopEnter(info, back.body), loc=st.loc))
    spawn = [arc(start.place, full)]
    if _int(fewer) != 0:
        short = start_station(env, f"{prefix}.short", st.loc, what)
        short.exits.append(Exit(f"{prefix}.short.begin", loc=st.loc,
                                next=LoopEnter(info, back.body, start=_min(Num(2), most))))
        spawn.append(arc(short.place, fewer))
    return spawn, team


def _dynamic(st, env, path: str, prefix: str, threads: Expr, leave, done: str):
    kit = env.kit
    chunk = st.chunk if st.chunk is not None else ONE
    chunks, last = dynamic_split(st.count, chunk)
    even = _int(last) is not None and _int(last) == _int(chunk)
    start = start_station(env, prefix, st.loc, f"a thread of {path}")
    pool = kit.place(f"{path}.chunks", loc=st.loc).name
    ended = kit.place(f"{path}.chunks.done", loc=st.loc).name
    again = Act([Alt(outs=[arc(ended)], next=start)], st.loc)   # a chunk is done: the next
    if _int(chunk) == 1:
        cenv = env.scope(prefix, st.body, ret=leave, ctx=(), reserved=RESERVED)
        whole = cenv.build(st.body, again)
        rest = None
    else:
        info, back = _counter(env, prefix, chunk, st, again, leave)
        whole = LoopEnter(info, back.body)
        rest = LoopEnter(info, back.body, start=_fold("+", _fold("-", chunk, last), ONE))
    start.exits.append(Exit(f"{prefix}.begin", modes=[ExitMode(ins=[arc(pool)])], next=whole,
                            loc=st.loc))
    entry = [arc(start.place, threads)]
    full = chunks if even else _fold("-", chunks, ONE)
    if _int(full) != 0:
        entry.append(arc(pool, full))
    stop = [arc(pool)]
    if not even:
        lastp = kit.place(f"{path}.last", loc=st.loc).name
        take_last = ExitMode(ins=[arc(lastp)], inh=[arc(pool)])    # after the full chunks
        start.exits.append(Exit(f"{prefix}.last", modes=[take_last], next=rest, loc=st.loc))
        entry.append(arc(lastp))
        stop.append(arc(lastp))
    start.exits.append(Exit(f"{prefix}.end", modes=[ExitMode(inh=stop)], next=leave, loc=st.loc))
    return entry, [arc(done, threads), arc(ended, chunks)]


def _guided(st, env, path: str, prefix: str, threads: Expr, leave, done: str):
    kit = env.kit
    sizes = guided_chunks(_int(st.count), _int(threads),
                          _int(st.chunk) if st.chunk is not None else 1)
    k = len(sizes)
    cursor = kit.place(f"{path}.next", colors=kit.range_colors(f"{path}.chunk", Num(k + 1), st.loc),
                       loc=st.loc).name
    start = start_station(env, prefix, st.loc, f"a thread of {path}")
    most = sizes[0]
    if most == 1:
        cenv = env.scope(prefix, st.body, ret=leave, ctx=(), reserved=RESERVED)
        entries = {1: cenv.build(st.body, start)}
    else:
        info, back = _counter(env, prefix, Num(most), st, start, leave)
        entries = {s: LoopEnter(info, back.body, start=Num(most - s + 1) if s < most else None)
                   for s in sorted(set(sizes), reverse=True)}
    for size, entry in entries.items():
        modes = [ExitMode(f"chunk{i}", ins=[arc(cursor, 1, Num(i))], outs=[arc(cursor, 1, Num(i + 1))])
                 for i, s in enumerate(sizes, 1) if s == size]
        start.exits.append(Exit(f"{prefix}.size{size}", modes=modes, next=entry, loc=st.loc))
    last = arc(cursor, 1, Num(k + 1))
    start.exits.append(Exit(f"{prefix}.end", modes=[ExitMode(ins=[last], outs=[last])], next=leave,
                            loc=st.loc))
    return [arc(start.place, threads), arc(cursor, 1, Num(1))], [arc(done, threads), last]
