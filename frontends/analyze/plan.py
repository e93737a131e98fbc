"""Which runners the model has, and how they start: the sources of open workloads,
pools sized by parameters, divided work, event loops and their tasks (Writer.runners).

:func:`write_runners` decides, before any body is written: which threads keep a schedule
(a source instead of a runner), each pool's size parameter (tasks per request: sized well
above the traced maximum), which pools may divide their work, which queues are fed from
outside (sources), which threads are an asyncio loop's (left out, their work in the
tasks'), which serve whichever channel is ready (handlers); a body that takes no time is
left out.
"""
from __future__ import annotations

from qpn.software import ast as sw

from .assumptions import divided_work, open_loop
from .eventloop import handlers, is_event_loop
from .fit import fmt_time
from .naming import ident
from .reproduce import walk_steps
from .structure import Leaf, leaves
from .tasks import lanes, per_request
from .threads import stem

def write_runners(w) -> list:
    """The sources and runners of the model: pool sizes and divided work as parameters,
    schedule-keeping threads as open sources, then each runner."""
    an = w.an
    out: list = []
    live = [r for r in an.runners if r.mode != "omitted"]
    clients = {}
    for r in list(live):
        found = None if r.group.main else open_loop(w, r)
        if found:
            clients[r.name] = found[:2]
            if not found[2]:                 # (a client that works takes its plan)
                live.remove(r)
    for r in live:
        r.name = w.names.unique(r.name)
    for key in an.objects.by_type("sem"):
        children = set(an.objects.info(key).get("children") or ())
        pool = next((r for r in live if children & set(r.group.tids)), None)
        if pool is not None:
            w.forked[key] = pool
    for r in live:
        if r.group.main:
            continue
        base = ident(stem(r.name), "threads")
        pname = base if base.endswith("s") else base + "s"
        if per_request(an, r):           # asyncio tasks, one per request: as many as come
            w.size_param[r.name] = w.param(
                pname, lanes(r.size), f"asyncio tasks of '{r.name}' at once (one per "
                f"request; the traced run had at most {r.size} alive at a time): enough "
                "never to hold a request back")
        else:
            w.size_param[r.name] = w.param(
                pname, r.size, f"threads in pool '{r.name}' (the traced run had {r.size})")
        # a pool of several threads looping without taking items, or forked to compute:
        # it may divide its work
        if r.size > 1 and (r.mode == "forever" or r in w.forked.values()) and not any(
                lf.action == "take" for lf in leaves(r.items)):
            divided_work(w, r, base)
    if not w.an.gil:
        w.cores_param = w.param("cores", w.cores, "CPU cores (runtime.cpus)")
    relayed = {lf.token[1] for r in an.runners if r.name in clients
               for lf in leaves(r.items) if lf.action == "take"}   # plans a client relays
    relayed |= {key for key, _ in clients.values()}
    loop_threads = [r for r in live if any(lp[3] in r.group.tids
                                           for lp in w.loop_cost.values())]
    taken = {lf.token[1] for r in live if r not in loop_threads
             for lf in leaves(r.items) if lf.action in ("take", "acquire")}
    for key, times in sorted(an.external.items(), key=lambda kv: str(kv[0])):
        if key not in relayed and key in taken:      # (an event loop's accepts: its own)
            out += w.source(key, times)
    for name, (key, times) in clients.items():
        out += w.source(key, times, why=f"thread '{name}' keeps a schedule: its sleeps "
                                            "end at arrival times whatever the rest does")
        w.info["open_loop"][name] = w.obj(key)
    for r in live:
        take_first(r, an)
        if r in loop_threads:
            loop_thread(w, r)
            continue
        if is_event_loop(r, an.selecting):     # serves whichever channel is ready
            out += handlers(w, r)
        else:
            pool = w.runner(r)
            if takes_time(pool.body):
                out.append(pool)
            else:                          # nothing in its run takes time: left out
                r.mode, r.why = "omitted", "nothing it does in the model takes time"
                w.pools.pop(r.name, None)
                w.info["runners"].pop(r.name, None)
    return out

def loop_thread(w, r) -> None:
    """Leave the thread of an event loop out: its own work is in its tasks' steps."""
    f, own, tasks, _ = next(lp for lp in w.loop_cost.values() if lp[3] in r.group.tids)
    r.mode = "omitted"
    r.why = (f"an asyncio event loop's thread: its own work ({fmt_time(own)} of CPU in the "
             f"work phase: the selector, the streams' reads, callbacks and timers) is "
             f"{100 * (f - 1):.1f}% of its tasks' CPU, which their steps carry (tasks.py)")


def takes_time(steps) -> bool:
    """Whether a body has a step that can take time (a thread whose run has none would
    loop without time passing, which no model may)."""
    timed = (sw.Compute, sw.Io, sw.Sleep, sw.Take, sw.Acquire, sw.Lock, sw.Await, sw.Wait)
    for st in walk_steps(steps):
        if isinstance(st, timed):
            return True
    return False


def take_first(r, an) -> None:
    """Turn a steady-state loop whose body hands an item on before its first take, and
    whose thread took before it first handed on, so that it begins with that take.  A loop is a cycle, and its text begins at the header the
    trace showed first, but a model's thread runs its body from the top: a server thread
    written as 'reply; take the next request' would reply once before any request came
    (and its client would take that answer at once: no wait at all)."""
    if r.mode != "forever" or not r.items:
        return
    hands = [k for k, it in enumerate(r.items) if isinstance(it, Leaf)
             and it.action in ("put", "release")]
    if not hands:
        return
    first = hands[0]
    later = [k for k, it in enumerate(r.items) if k > first and isinstance(it, Leaf)
             and it.action == "take"]
    if not later or any(isinstance(it, Leaf) and it.action == "take" for it in r.items[:first]):
        return
    k = later[0]
    # only a thread that took before it handed on (a server's handler: it answers what it
    # took); a client hands its request on first and then takes the answer.  The loop's
    # steps start at its header, so the thread's whole life says which came first.
    put_site, take_site = r.items[first].token[2], r.items[k].token[2]
    by = an.trace.by_thread()
    votes = 0
    for t in r.group.tids:
        sites = [e.get("site") for e in by.get(t, ())]
        p = sites.index(put_site) if put_site in sites else None
        q = sites.index(take_site) if take_site in sites else None
        if p is not None and q is not None:
            votes += 1 if q < p else -1
    if votes <= 0:
        return
    r.items = r.items[k:] + r.items[:k]


__all__ = ["write_runners", "take_first", "takes_time"]
