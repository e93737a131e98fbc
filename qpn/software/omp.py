"""OpenMP work-sharing loops: ``parallel for N [threads T] [schedule KIND [C]] { ... }``.

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
  a counted loop.  With ``most`` = 1 (N <= T, both numbers) there is no counter; when T
  divides N (both numbers) there is no ``short``.
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

import math

from ..expr import BinOp, Call, Expr, Num
from . import ast as sw
from .cfg import Act, Alt, End, Exit, ExitMode, LoopBack, LoopEnter, LoopInfo
from .check import default_threads
from .control import start_station
from .env import step
from .kit import arc

ONE = Num(1)
#: labels a step of the body cannot have: they name the team's own elements
RESERVED = ("done", "end", "last", "short")


# ------------------------------------------------------------- folded arithmetic
def _int(e: Expr) -> int | None:
    """The value of a whole-number literal (None: an expression)."""
    if isinstance(e, Num) and e.unit is None and isinstance(e.value, (int, float)) \
            and math.isfinite(e.value) and e.value == int(e.value):
        return int(e.value)
    return None


def _fold(op: str, a: Expr, b: Expr) -> Expr:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return Num({"+": x + y, "-": x - y, "*": x * y}[op])
    if op == "*" and (x == 1 or y == 1):
        return b if x == 1 else a
    if op in "+-" and y == 0:
        return a
    return BinOp(op, a, b)


def _min(a: Expr, b: Expr) -> Expr:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return Num(min(x, y))
    return Call("min", (a, b))


def _ceil_div(a: Expr, b: Expr) -> Expr:
    """``ceil(a / b)``.

    >>> [_ceil_div(Num(n), Num(4)).value for n in (1, 4, 5, 8, 10)]
    [1, 1, 2, 2, 3]
    """
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return Num(-(-x // y))
    if y == 1:
        return a
    return Call("ceil", (BinOp("/", a, b),))


def static_split(n: Expr, t: Expr) -> tuple[Expr, Expr, Expr, Expr]:
    """(team, most, full, fewer): ``team = min(T, N)`` threads, ``full`` of them run
    ``most = ceil(N / team)`` iterations and ``fewer = team - full`` run ``most - 1``.

    >>> [tuple(x.value for x in static_split(Num(n), Num(t))) for n, t in ((10, 4), (8, 4), (3, 4))]
    [(4, 3, 2, 2), (4, 2, 4, 0), (3, 1, 3, 0)]
    """
    team = _min(t, n)
    most = _ceil_div(n, team)
    full = _fold("-", n, _fold("*", team, _fold("-", most, ONE)))
    return team, most, full, _fold("-", team, full)


def dynamic_split(n: Expr, c: Expr) -> tuple[Expr, Expr]:
    """(chunks, last): ``ceil(N / C)`` chunks, the last of ``N - C * (chunks - 1)``
    iterations.

    >>> [tuple(x.value for x in dynamic_split(Num(10), Num(c))) for c in (1, 3, 5, 20)]
    [(10, 1), (4, 1), (2, 5), (1, 10)]
    """
    chunks = _ceil_div(n, c)
    if _int(c) == 1:
        return chunks, ONE
    return chunks, _fold("-", n, _fold("*", c, _fold("-", chunks, ONE)))


def guided_chunks(n: int, t: int, c: int = 1) -> list[int]:
    """The sizes of the chunks of ``schedule guided C``, in the order they are handed out:
    each is the iterations left divided by the threads, rounded up, at least C (the last
    may be smaller), as libgomp does.

    >>> guided_chunks(10, 4), guided_chunks(100, 4, 5), guided_chunks(3, 4)
    ([3, 2, 2, 1, 1, 1], [25, 19, 14, 11, 8, 6, 5, 5, 5, 2], [1, 1, 1])
    """
    sizes, left = [], n
    while left > 0:
        size = min(left, max(c, -(-left // t)))
        sizes.append(size)
        left -= size
    return sizes


# ------------------------------------------------------------------ expansion
@step(sw.ParallelFor)
def parallel_for(st: sw.ParallelFor, nxt, env):
    """``parallel for N [threads T] [schedule ...] { ... }``: a team of T threads shares the
    N iterations; the encountering thread waits until all of them are done."""
    threads = st.threads if st.threads is not None else default_threads(env.table, st).cores
    path = env.path(st)
    prefix = f"{path}.thread"
    done = env.kit.place(f"{prefix}.done", loc=st.loc).name
    finish = End([arc(done)])
    if st.schedule == "dynamic":
        entry, join = _dynamic(st, env, path, prefix, threads, finish)
    elif st.schedule == "guided":
        entry, join = _guided(st, env, path, prefix, threads, finish)
    else:
        entry, team = _static(st, env, prefix, threads, finish)
        join = [arc(done, team)]
    s = env.station(path, st.loc, entry=entry)
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=join)], next=nxt, loc=st.loc))
    return s


def _counter(env, prefix: str, count: Expr, st, after, finish: End):
    """The body in the team's scope inside a counted loop of ``count`` iterations (a
    LoopInfo and the LoopBack whose ``body`` is the body's entry)."""
    info = LoopInfo(env.kit.range_colors(f"{prefix}.iteration", count, st.loc), count)
    back = LoopBack(info, count, after=after, loc=st.loc)
    cenv = env.scope(prefix, st.body, ret=finish, ctx=(info,), reserved=RESERVED)
    back.body = cenv.build(st.body, back)
    return info, back


def _static(st, env, prefix: str, threads: Expr, finish: End):
    team, most, full, fewer = static_split(st.count, threads)
    what = f"a thread of {env.path(st)}"
    if _int(most) == 1:
        start = start_station(env, prefix, st.loc, what)
        cenv = env.scope(prefix, st.body, ret=finish, ctx=(), reserved=RESERVED)
        start.exits.append(Exit(f"{prefix}.begin", next=cenv.build(st.body, finish), loc=st.loc))
        return [arc(start.place, team)], team
    info, back = _counter(env, prefix, most, st, finish, finish)
    start = start_station(env, prefix, st.loc, what)
    start.exits.append(Exit(f"{prefix}.begin", next=LoopEnter(info, back.body), loc=st.loc))
    spawn = [arc(start.place, full)]
    if _int(fewer) != 0:
        short = start_station(env, f"{prefix}.short", st.loc, what)
        short.exits.append(Exit(f"{prefix}.short.begin", loc=st.loc,
                                next=LoopEnter(info, back.body, start=_min(Num(2), most))))
        spawn.append(arc(short.place, fewer))
    return spawn, team


def _dynamic(st, env, path: str, prefix: str, threads: Expr, finish: End):
    kit = env.kit
    chunk = st.chunk if st.chunk is not None else ONE
    chunks, last = dynamic_split(st.count, chunk)
    even = _int(last) is not None and _int(last) == _int(chunk)
    start = start_station(env, prefix, st.loc, f"a thread of {path}")
    pool = kit.place(f"{path}.chunks", loc=st.loc).name
    ended = kit.place(f"{path}.chunks.done", loc=st.loc).name
    again = Act([Alt(outs=[arc(ended)], next=start)], st.loc)   # a chunk is done: the next
    if _int(chunk) == 1:
        cenv = env.scope(prefix, st.body, ret=finish, ctx=(), reserved=RESERVED)
        whole = cenv.build(st.body, again)
        rest = None
    else:
        info, back = _counter(env, prefix, chunk, st, again, finish)
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
    start.exits.append(Exit(f"{prefix}.end", modes=[ExitMode(inh=stop)], next=finish, loc=st.loc))
    done = finish.outs[0].place
    return entry, [arc(done, threads), arc(ended, chunks)]


def _guided(st, env, path: str, prefix: str, threads: Expr, finish: End):
    kit = env.kit
    sizes = guided_chunks(_int(st.count), _int(threads),
                          _int(st.chunk) if st.chunk is not None else 1)
    k = len(sizes)
    cursor = kit.place(f"{path}.next", colors=kit.range_colors(f"{path}.chunk", Num(k + 1), st.loc),
                       loc=st.loc).name
    start = start_station(env, prefix, st.loc, f"a thread of {path}")
    most = sizes[0]
    if most == 1:
        cenv = env.scope(prefix, st.body, ret=finish, ctx=(), reserved=RESERVED)
        entries = {1: cenv.build(st.body, start)}
    else:
        info, back = _counter(env, prefix, Num(most), st, start, finish)
        entries = {s: LoopEnter(info, back.body, start=Num(most - s + 1) if s < most else None)
                   for s in sorted(set(sizes), reverse=True)}
    for size, entry in entries.items():
        modes = [ExitMode(f"chunk{i}", ins=[arc(cursor, 1, Num(i))], outs=[arc(cursor, 1, Num(i + 1))])
                 for i, s in enumerate(sizes, 1) if s == size]
        start.exits.append(Exit(f"{prefix}.size{size}", modes=modes, next=entry, loc=st.loc))
    last = arc(cursor, 1, Num(k + 1))
    start.exits.append(Exit(f"{prefix}.end", modes=[ExitMode(ins=[last], outs=[last])], next=finish,
                            loc=st.loc))
    done = finish.outs[0].place
    return [arc(start.place, threads), arc(cursor, 1, Num(1))], [arc(done, threads), last]
