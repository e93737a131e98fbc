"""What part of each thread's life the model describes.

* **Work phase** (thesis §5.4.2, bloat removal): the program's work runs from
  the first to the last hand-over of an item (a queue put or take, a
  connection, a reply) or barrier round; start-up before it and shut-down
  after it are dropped.  Without any such operation, the work is what happens while
  the threads the main thread started run; without those, the whole trace.
* **Steady-state loop**: a thread whose work is one loop (its other steps use
  less than ``slack`` of its CPU and file I/O time) is a server-style thread -- a pool thread
  repeats the loop body forever, which is exactly what a model pool does.
  Its loop iterations become the pool's body; what comes before and after the
  loop, and a last iteration that is shorter than the others (the one that
  took the stop marker and left), are dropped.  Other threads (several
  loops in sequence, e.g. a main thread that puts N tasks and then takes N
  results) keep their whole life as the body, with counted loops.
* **Hand-overs follow drops**: an item whose taking was dropped (a stop marker
  taken by the exiting iteration, a work item taken at start-up) is dropped at
  the put as well, so every queue stays balanced.

>>> from qpn.frontends.analyze.steps import Step
>>> from qpn.frontends.analyze.structure import Tokens
>>> def walk(text, t0=0):
...     w = [Step(1, a, "q", None, {"ts": t0 + 10 * i}, 0, 5, 5, 0, 0)
...          for i, a in enumerate(text.split())]
...     Tokens().assign(w)
...     return w
>>> w = walk("take put take put take put take")
>>> d = steady_loop(w, slack=0.05)
>>> d.header is not None, d.iterations, d.exits, len(d.steps)
(True, 3, 1, 6)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .condqueue import ITEMS_BASE
from .structure import Loop, structure

#: actions that hand an item over between threads, or synchronize rounds
WORK_ACTIONS = frozenset({"take", "put", "await"})


def _items(s) -> bool:
    """An acquisition or release of an items semaphore (condqueue.py): a hand-over."""
    return (s.action == "acquire" or s.action == "release") and s.key[0] >= ITEMS_BASE


def threads_phase(walks: dict, main: int | None) -> tuple[int, int] | None:
    """The work phase of a program without hand-overs: while the threads other than
    ``main`` ran, from the start of the first one's first fragment to the end of the last
    one's last step (a batcher's producers hand records over in a list under a condition,
    and the main thread checks the output after they ended); None without such threads or
    without steps of ``main`` to leave out."""
    others = [w for t, w in walks.items() if t != main and w]
    if not others or not walks.get(main):
        return None
    return min(w[0].start for w in others), max(w[-1].end for w in others)


def work_phase(walks: dict) -> tuple[int, int] | None:
    """(first, last) ts of a hand-over or barrier wait in any thread, or None.

    Walks are sorted by ts, so each is searched from both ends.
    """
    lo, hi = None, None
    for w in walks.values():
        for s in w:
            if s.action in WORK_ACTIONS or _items(s):
                # an item is taken when the acquisition or take ends (a worker waits from
                # start-up on, and a launcher may still be starting the program's processes)
                t = s.end if s.action in ("acquire", "take") else s.ts
                if lo is None or t < lo:
                    lo = t
                break
        for s in reversed(w):
            if s.action in WORK_ACTIONS or _items(s):
                if hi is None or s.end > hi:
                    hi = s.end
                break
    return None if lo is None else (lo, hi)


@dataclass
class SteadyLoop:
    """A thread's steady-state loop: header token and the steps of its kept iterations."""

    header: int | None
    steps: list = field(default_factory=list)
    iterations: int = 0
    exits: int = 0                    # dropped last iterations (left the loop)
    share: float = 0.0                # loop CPU / thread CPU
    span: tuple | None = None         # (first, end): the kept steps are walk[first:end]
    latch: int | None = None          # iterations end after this token (an outer loop's)


def _cpu(steps) -> float:
    return float(sum(s.cpu for s in steps if s.cpu is not None))


def _work(steps) -> float:
    """CPU plus file I/O time: what the model spends on the steps.

    File I/O counts with its own duration, so that a loop iteration that
    ends in a disk read (a cache miss) is not taken for CPU-free glue
    between the iterations of an inner loop and dropped with it.
    """
    return float(sum((s.cpu or 0) + (s.dur if s.action == "io" else 0) for s in steps))


def _awaits_outside(level: list, loop) -> bool:
    """Whether a barrier is awaited in ``level``'s walks outside ``loop``'s iterations."""
    inside = {id(s) for entry in loop.iterations for it in entry for s in it}
    return any(s.action == "await" and id(s) not in inside for w in level for s in w)


def steady_loop(walk: list, *, slack: float) -> SteadyLoop:
    """The innermost loop that holds (nearly) all of a thread's CPU and file I/O time.

    Level by level: if the walks of this level are one loop (other steps below
    ``slack`` of the thread's CPU and file I/O time), keep its iterations -- without a last one
    that is shorter than the typical iteration, which left the loop -- and look
    inside them.  Nested loops (an executor's work loop around the program's
    own ``while True: get()``) end at the innermost one.
    """
    total = _work(walk)
    level = [walk] if walk else []
    found = SteadyLoop(None)
    while level:
        items = structure(level)
        loops = [it for it in items if isinstance(it, Loop)]
        if len(loops) != 1:
            break
        loop = loops[0]
        inside = sum(_work(it) for entry in loop.iterations for it in entry)
        if total > 0 and 1.0 - inside / total > slack:
            break
        if found.header is not None and _awaits_outside(level, loop):
            # the rounds of a barrier around an inner loop (a round's share of the work, a
            # task at a time): the barrier couples the threads, the round is the iteration
            break
        lengths = sorted(len(it) for entry in loop.iterations for it in entry)
        typical = lengths[len(lengths) // 2]
        kept, exits = [], 0
        for entry in loop.iterations:
            if len(entry) >= 2 and len(entry[-1]) < typical:
                entry = entry[:-1]
                exits += 1
            kept.extend(entry)
        if not kept:
            break
        kept.sort(key=lambda it: it[0].ts)
        found = SteadyLoop(loop.header, [s for it in kept for s in it], len(kept), exits,
                           inside / total if total > 0 else 1.0, latch=loop.latch)
        level = kept
    return found


def propagate_drops(pairs) -> int:
    """Drop the put of every hand-over whose take was dropped; returns how many."""
    n = 0
    for p, g in pairs:
        if g.drop and not p.drop:
            p.drop = True
            n += 1
    return n


def end_cpu_clock(by_thread: dict) -> dict:
    """Each ended thread's CPU clock at its end (``thread_end``): tid -> ns."""
    out = {}
    for tid, evs in by_thread.items():
        if evs and evs[-1]["kind"] == "thread_end" and "cpu" in evs[-1]:
            out[tid] = evs[-1]["cpu"]
    return out


def drop_short_exits(tids, walks: dict, header: int, end_cpu: dict, *,
                     latch: int | None = None) -> int:
    """Drop each thread's last iteration when it left the loop; returns how many.

    An iteration shorter than the pool's typical one took the stop marker and
    left: it is dropped even when it is the thread's only iteration (a thread
    that got no work).  When an iteration is a single step (``item = get();
    work(item)``: the work is the fragment before the *next* get), the exit
    looks as long as the others; it is the last get after which the thread
    used (almost) no CPU before it ended (``end_cpu``, from
    :func:`end_cpu_clock`).  Its item was a stop marker, whose put the model
    must not make either.  With a ``latch`` iterations end after it instead (an outer
    loop's rounds): what follows a thread's last latch, if anything, left the loop.
    """
    lengths, last = [], {}
    for t in tids:
        toks = [s.tok for s in walks[t] if not s.drop]
        if latch is not None:
            ends = [i + 1 for i, x in enumerate(toks) if x == latch]
            if not ends:
                continue
            lengths += [b - a for a, b in zip(ends, ends[1:])]
            if len(toks) > ends[-1]:
                last[t] = len(toks) - ends[-1]
            continue
        pos = [i for i, x in enumerate(toks) if x == header]
        if not pos:
            continue
        lengths += [b - a for a, b in zip(pos, pos[1:])] + [len(toks) - pos[-1]]
        last[t] = len(toks) - pos[-1]
    if not lengths:
        return 0
    typical = sorted(lengths)[len(lengths) // 2]
    work = sorted(s.cpu for t in tids for s in walks[t]
                  if not s.drop and s.tok == header and s.cpu is not None)
    exits = 0
    for t, n in last.items():
        kept = [s for s in walks[t] if not s.drop]
        if n == typical == 1:
            st = kept[-1]
            if not work or t not in end_cpu or "cpu" not in st.ev:
                continue                   # no CPU clock: the exit cannot be told
            if end_cpu[t] - (st.ev["cpu"] + st.own_cpu) < 0.25 * work[len(work) // 2]:
                st.drop = True
                exits += 1
        elif n < typical:
            for s in kept[len(kept) - n:]:
                s.drop = True
            exits += 1
    return exits
