"""A thread's join of the pool it handed work to: the end of a batch.

A batch program puts N items into a queue, lets a pool of threads work them
off and joins the threads: its run ends when the last item is done.  The
model repeats the main thread's run, so without the join the next run would
start while the workers are still busy with this one, and "run time =
1 / throughput of main.begin" would be the time it takes to put N items.

The join becomes a semaphore without permits: a pool thread releases one
after each item's work, and the joining thread acquires one per item it put
(``acquire (n_tasks) worker_done``) where it joined.  This is exact in steady
state: each item is taken by one thread and released after its work, so the
permits a run acquires are those of its own items.  Two details keep it so:

* The pool's body is written from the take on.  The fragment the trace puts
  before a take is the work on the *previous* item (``item = get();
  work(item)``); written as ``cpu; release; take``, each thread's first pass
  would release a permit for work it never took: a phantom permit, and a run
  that ends before its last items are done.
* Stop markers are not items: the get that took one is the thread's exit
  (:func:`.phases.drop_short_exits`), and its put goes with it.

Only joins that matter are modelled: the joined pool takes from a queue the
joining thread puts into, the join waited for a good part of the work phase
(a batch, not a shutdown), and the joining thread collects no results from
the pool (taking the results already waits for the work).

>>> from qpn.frontends.analyze.structure import Leaf, Loop
>>> body = [Loop([Leaf(("put", "q", "p.py:3"))], [40], 0), Leaf(("put", "q", "p.py:5"))]
>>> put_count(body, "q", {40: "n_tasks"})
'n_tasks + 1'
"""
from __future__ import annotations

from dataclasses import dataclass

from qpn.expr import BinOp, Expr, Num
from qpn.software import ast as sw

from .exprs import atom, product, total
from .structure import Branch, Leaf, Loop, leaves

#: a join that waited less than this share of the work phase is a shutdown
WAITED = 0.1


@dataclass
class Join:
    """A runner (``waiter``, a whole run) that joins a steady-state ``pool``."""

    waiter: object            # Runner
    pool: object              # Runner
    queue: object             # key of the queue the waiter feeds and the pool takes from
    take: Leaf                # the pool's take from it (top level of its body)
    site: str | None          # where the waiter joined
    items: int                # items the waiter put into the queue in the traced run


def batch_joiners(walks: dict, joins: dict, phase) -> dict:
    """tid -> the join events by which it waited for threads it handed work to.

    ``joins``: tid -> its join events (:func:`.steps.thread_steps`).  A join
    counts when the joined thread takes from a queue the joining thread puts
    into, and the thread's joins waited for at least ``WAITED`` of the work
    phase: it waited for the work, not for a thread that was shutting down.
    The time without CPU between the thread's last step and its first join
    counts as waiting too: a main thread that wants the GIL to call join()
    while the workers run Python may get it only when they end.
    """
    if phase is None:
        return {}
    lo, hi = phase
    out = {}
    for tid, evs in joins.items():
        evs = [e for e in evs if e.get("target") in walks and e.get("target") != tid]
        if not evs:
            continue
        puts = {s.key for s in walks[tid] if s.action == "put"}
        fed = [e for e in evs if any(s.action == "take" and s.key in puts
                                     for s in walks[e["target"]])]
        if not fed:
            continue
        waited = sum(max(0, min(e["ts"] + e.get("dur", 0), hi) - max(e["ts"], lo)) for e in fed)
        waited += _idle_before(walks[tid], min(fed, key=lambda e: e["ts"]), lo, hi)
        if waited >= WAITED * (hi - lo):
            out[tid] = fed
    return out


def _idle_before(walk: list, join: dict, lo: float, hi: float) -> float:
    """Wall time without CPU, within [lo, hi], from the last step before ``join`` to it."""
    prev = None
    for s in walk:
        if s.ts >= join["ts"]:
            break
        prev = s
    if prev is None or "cpu" not in join or "cpu" not in prev.ev:
        return 0.0
    a, b = max(prev.end, lo), min(join["ts"], hi)
    gap = join["ts"] - prev.end
    if b <= a or gap <= 0:
        return 0.0
    idle = max(0.0, 1.0 - (join["cpu"] - prev.ev["cpu"] - prev.own_cpu) / gap)
    return (b - a) * idle


def find_joins(runners, joiners: dict) -> list[Join]:
    """The joins the model has: a whole-run runner joining a steady-state pool."""
    of = {t: r for r in runners for t in r.group.tids}
    out = []
    for r in runners:
        if r.mode != "counted":
            continue
        evs = [e for t in r.group.tids for e in joiners.get(t, ())]
        puts = [s for w in r.walks for s in w if s.action == "put"]
        if not evs or not puts:
            continue
        last = max(s.ts for w in r.walks for s in w)
        keys = {s.key for s in puts}
        mine = {lf.token[1] for lf in leaves(r.items) if lf.action == "take"}
        done = set()
        for e in evs:
            p = of.get(e["target"])
            if p is None or p.mode != "forever" or id(p) in done or e["ts"] < last:
                continue
            if any(lf.action == "put" and lf.token[1] in mine for lf in leaves(p.items)):
                continue                     # the waiter collects results: they mark the work
            take = next((it for it in p.items if isinstance(it, Leaf) and it.action == "take"
                         and it.token[1] in keys), None)
            if take is None:
                continue
            done.add(id(p))
            n = sum(1 for s in puts if s.key == take.token[1])
            out.append(Join(r, p, take.token[1], take, e.get("site"), n))
    return out


@dataclass
class _Count:
    """A count as written (``text``) and as read back: its top-level summands, and the
    factors of its one summand (left to right, as the parser groups them)."""

    text: str
    summands: list
    factors: list


def _name(p: str) -> _Count:
    e = atom(p)
    return _Count(p, [e], [e])


def _puts(items, key, loop_params: dict) -> _Count | None:
    terms = []
    for it in items:
        if isinstance(it, Leaf):
            if it.action == "put" and it.token[1] == key:
                terms.append(_name("1"))
        elif isinstance(it, Loop):
            inner = _puts(it.body, key, loop_params)
            if inner is None:
                return None
            if inner.text == "0":
                continue
            if len(set(it.counts)) != 1:
                return None
            n = it.counts[0]
            p = "1" if n == 1 else loop_params.get(n)
            if p is None:
                return None
            if inner.text == "1":
                terms.append(_name(p))
            elif p == "1":
                terms.append(inner)
            elif "+" in inner.text:
                e = BinOp("*", atom(p), total(inner.summands))
                terms.append(_Count(f"{p} * ({inner.text})", [e], [atom(p), total(inner.summands)]))
            else:
                fs = [atom(p)] + inner.factors
                terms.append(_Count(f"{p} * {inner.text}", [product(fs)], fs))
        elif isinstance(it, Branch):
            if any(lf.action == "put" and lf.token[1] == key
                   for _, alt in it.alts for lf in leaves(alt)):
                return None
    if not terms:
        return _name("0")
    ones = sum(1 for t in terms if t.text == "1")
    parts = [t for t in terms if t.text != "1"] + ([_name(str(ones))] if ones else [])
    summands = [e for t in parts for e in t.summands]
    return _Count(" + ".join(t.text for t in parts), summands,
                  parts[0].factors if len(summands) == 1 else [total(summands)])


def put_count(items, key, loop_params: dict) -> str | None:
    """How many puts into ``key`` one pass of ``items`` makes, as an expression
    of the loop-count parameters (None: it varies, e.g. in a branch)."""
    c = _puts(items, key, loop_params)
    return None if c is None else c.text


def put_count_expr(items, key, loop_params: dict) -> Expr | None:
    """:func:`put_count` as an expression of the model (None: it varies)."""
    c = _puts(items, key, loop_params)
    return None if c is None else total(c.summands)


# ------------------------------------------------------------------ model text
def semaphore(w, j: Join) -> str:
    """The join's semaphore in writer ``w`` (declared on first use)."""
    key = ("join", id(j.pool))
    if key in w.objnames:
        return w.objnames[key]
    name = w.names.unique(f"{j.pool.name}_done")
    w.objnames[key] = name
    w.decls[key] = (len(w.decls), sw.Semaphore(name, Num(0), doc=(
        f"the join of the '{j.pool.name}' threads" + (f" at {j.site}" if j.site else "")
        + " (not an object of the program):\n"
        f"a thread releases a permit after each item's work, '{j.waiter.name}' acquires "
        "one per item it put")))
    w.info["objects"][name] = {"kind": "semaphore", "type": "join", "site": j.site, "permits": 0}
    return name


def pool_body(w, r, j: Join, ctx) -> list:
    """The pool's body from the take on, its item done (released) at the end."""
    k = next(i for i, it in enumerate(r.items) if it is j.take)
    out = w.leaf(j.take, ctx, part="op")
    ctx.last_site = j.take.token[2]
    out += w.items(r.items[k + 1:] + r.items[:k], ctx, plan=set())
    out += w.leaf(j.take, ctx, part="cpu")
    return out + [sw.Release(semaphore(w, j))]


def waiter_steps(w, j: Join) -> list:
    """The joining thread's wait: one permit per item it put."""
    sem = semaphore(w, j)
    q = w.obj(j.queue)
    expr = put_count(j.waiter.items, j.queue, w.loop_params)
    count = put_count_expr(j.waiter.items, j.queue, w.loop_params)
    if expr is None or expr == "0":
        expr = str(j.items)
        count = Num(j.items)
    w.info.setdefault("joins", []).append({
        "waiter": j.waiter.name, "pool": j.pool.name, "queue": q, "semaphore": sem,
        "count": expr, "items": j.items, "site": j.site})
    return [sw.Acquire(sem, count, doc="join" + (f" at {j.site}" if j.site else "")
                       + f": wait until the '{j.pool.name}' threads have done the items put "
                       f"into '{q}' ({j.items} in the traced run)")]
