"""A software model of pools that hand requests over queues, in the LQN shape.

The trace analyzer writes a service as pools that loop on queues: a front ``take``s a
request from its accept queue, ``put``s one into a back end's queue and ``take``s the
answer from the back end's replies.  LQN says the same with tasks, entries and calls.
:func:`layered` rewrites the first into the second, so :mod:`dsl.lqn_export` can write
it:

* a *reply queue* R is one that a pool P takes after putting into a queue Q of pool P2,
  which puts R: P's ``put Q ... take R`` is a synchronous ``call P2``;
* a pool with a queue it takes that is no reply queue serves it: a task (a semaphore of
  the pool's size) and an entry named after the pool, its loop turned to begin at that
  ``take``; its ``put`` of a reply is where it answers, and the steps after it are the
  entry's phase 2;
* a pool that serves no queue is a reference task (the clients), and
  ``source S every D { put Q }`` an open arrival stream into the entry that serves Q
  (exponential, D's mean);
* ``lock``/``unlock`` of a mutex named ``gil`` or ``gil_*`` (CPython's GIL, which LQN
  cannot express) are left out: the cpu steps stay, on their cpu.

* a ``put Q`` whose answer nobody takes is an asynchronous request to the entry that
  serves Q: Q stays, taken by a pool of senders (``take Q; call ENTRY``, the shape
  :mod:`dsl.lqn_export` writes as ``z``), as many as the pools that put into Q have threads.

Anything else (other locks, disks) is refused by the exporter at its line.  The result
says what it approximated.

>>> import qpn
>>> net = qpn.parse('''net t
... software {
...   cpu host cores 2 ps
...   mutex gil
...   blocking queue requests
...   blocking queue work
...   blocking queue replies
...   source arrivals every exp(10 ms) { put requests }
...   pool front size 2 { lock gil
...     cpu exp(1 ms) on host
...     unlock gil
...     take requests
...     put work
...     take replies }
...   pool back size 1 { take work
...     cpu exp(2 ms) on host
...     put replies }
... }''')
>>> new, notes = layered(net)
>>> from qpn.dsl.lqn_export import qpn_to_lqn
>>> print(qpn_to_lqn(new)[0].split("T ", 1)[1])
2
  t front_task n front -1 host m 2
  t back_task n back -1 host
-1
E 2
  s front 0.001 -1
  f front 1 -1
  y front back 1 -1
  a front 100
  s back 0.002 -1
-1
<BLANKLINE>
>>> notes
["the GIL (mutex gil*) has no LQN form: left out, its holders' cpu steps stay on their cpu"]
"""
from __future__ import annotations

from dataclasses import replace

from qpn.distributions import exp
from qpn.errors import ModelError
from qpn.expr import BinOp
from qpn.software import ast as sw


def _is_gil(name: str) -> bool:
    return name == "gil" or name.startswith("gil_")


def layered(net, env: dict | None = None) -> tuple[object, list[str]]:
    """``net`` with its software block in the LQN shape (unchanged if it already has
    behaviors), and notes on what the rewrite approximated (``env``: the parameters'
    values, for the sources' mean interarrival times)."""
    decls = [d for block in net.software for d in block.decls]
    if any(isinstance(d, sw.Behavior) for d in decls):
        return net, []
    timed = any(isinstance(d, sw.Timer) for d in decls)
    decls = _without_timers(decls)
    pools = [d for d in decls if isinstance(d, sw.Pool) and isinstance(d.body, tuple)]
    takers = {st.target: p for p in pools for st in p.body if isinstance(st, sw.Take)}
    putters: dict = {}
    for p in pools:
        for st in p.body:
            if isinstance(st, sw.Put):
                putters.setdefault(st.target, set()).add(p.name)
    # R is a reply queue: its taker put into a queue of one of R's putters, before
    replies: dict = {}                        # R -> the pool that answers into it
    for p in pools:
        put_to: list = []
        for st in p.body:
            if isinstance(st, sw.Put):
                put_to.append(st.target)
            elif isinstance(st, sw.Take):
                for q in put_to:
                    callee = takers.get(q)
                    if callee is not None and callee.name in putters.get(st.target, ()):
                        replies[st.target] = callee.name
    serves = {}
    for p in pools:
        own = [st.target for st in p.body if isinstance(st, sw.Take) and st.target not in replies]
        if len(own) > 1:
            raise ModelError(f"pool '{p.name}' takes from {', '.join(own)}: an LQN entry serves "
                             "one queue", getattr(p, "loc", None))
        if own:
            serves[p.name] = own[0]
    notes: list[str] = []
    out: list = []
    gil_dropped = False
    asyncs: dict = {}                         # Q -> the pools putting into it unanswered
    for d in decls:
        if isinstance(d, sw.Mutex) and _is_gil(d.name):
            gil_dropped = True
        elif isinstance(d, sw.BlockingQueue) and (d.name in replies or d.name in takers):
            continue                           # calls now (or async requests: below)
        elif isinstance(d, sw.Pool) and d in pools:
            out += _task(d, serves.get(d.name), takers, replies, asyncs)
        elif isinstance(d, sw.Source) and isinstance(d.body, tuple) and len(d.body) == 1 \
                and isinstance(d.body[0], sw.Put) and d.body[0].target in takers:
            mean = d.every.bind(env or {}).mean()
            if not d.every.is_exponential():
                notes.append(f"source '{d.name}': its arrivals are written as a Poisson stream "
                             "of the same rate (LQN's open arrivals)")
            out.append(replace(d, every=exp(mean), body=(sw.Call(takers[d.body[0].target].name),)))
        else:
            out.append(d)
    for q, senders in asyncs.items():
        size = None
        for p in senders:
            size = p.size if size is None else BinOp("+", size, p.size)
        out += [sw.BlockingQueue(q), sw.Pool(f"{q}_senders", size, (sw.Take(q),
                                                                    sw.Call(takers[q].name)))]
        notes.append(f"{', '.join(sorted(p.name for p in senders))} put into '{q}' and take "
                     f"no answer: asynchronous requests to '{takers[q].name}'")
    if gil_dropped:
        notes.append("the GIL (mutex gil*) has no LQN form: left out, its holders' cpu steps "
                     "stay on their cpu")
    if timed:
        notes.append("response timers measure, they do not act: left out (LQN solvers give "
                     "each entry's response time)")
    items = [it for it in net.items if not isinstance(it, sw.Software)]
    return replace(net, items=tuple(items) + (sw.Software(tuple(out)),)), notes


def _without_timers(decls: list) -> list:
    """The declarations without timers and their start and stop steps."""
    def node(st):
        kids = sw.children(st)
        if not kids or isinstance(st, (sw.Put, sw.Take, sw.Allocate)):
            return st
        if isinstance(st, (sw.Branch, sw.Fork)):       # alternatives and blocks have bodies
            return sw.with_children(st, [replace(k, body=strip(k.body)) for k in kids])
        return sw.with_children(st, strip(kids))

    def strip(steps) -> tuple:
        return tuple(node(st) for st in steps if not isinstance(st, sw.TimerStep))

    return [replace(d, body=strip(d.body)) if isinstance(d, (sw.Pool, sw.Source))
            and isinstance(d.body, tuple) else d
            for d in decls if not isinstance(d, sw.Timer)]


def _task(p: sw.Pool, served: str | None, takers: dict, replies: dict, asyncs: dict) -> list:
    """A pool as a task (a semaphore and a behavior) or, serving no queue, a reference
    task (the pool with its calls); its puts that no take of a reply answers are added
    to ``asyncs``."""
    body = list(p.body)
    if served is not None:                     # turn the loop to begin at its take
        i = next(k for k, st in enumerate(body) if isinstance(st, sw.Take)
                 and st.target == served)
        body = body[i + 1:] + body[:i]
    steps: list = []
    pending: list = []                          # puts that a later take of a reply answers
    answered = None                             # steps before the reply
    for st in body:
        if isinstance(st, (sw.Lock, sw.Unlock)) and _is_gil(st.target):
            continue
        if isinstance(st, sw.Put) and st.target in replies:
            answered = len(steps)              # the reply: the rest counts before it
            continue
        if isinstance(st, sw.Put) and st.target in takers:
            pending.append(st)                 # a request: kept in place until answered
            steps.append(st)
            continue
        if isinstance(st, sw.Take) and st.target in replies:
            callee = replies[st.target]
            mine = [q for q in pending if takers[q.target].name == callee]
            if not mine:
                raise ModelError(f"pool '{p.name}' takes from '{st.target}' without a request "
                                 f"to '{callee}' before", getattr(st, "loc", None))
            pending = [q for q in pending if takers[q.target].name != callee]
            steps = [x for x in steps if not any(x is q for q in mine)]
            if answered is not None:
                answered = min(answered, len(steps))
            steps.append(sw.Call(callee))
            continue
        # a step between a request and the take of its answer (sending the rest of it)
        # runs before the call: the caller waits after it either way
        steps.append(st)
    for q in pending:                           # nobody waits for these: asynchronous
        senders = asyncs.setdefault(q.target, [])
        if p not in senders:
            senders.append(p)
    if served is None:
        return [replace(p, body=tuple(steps))]
    task = f"{p.name}_task"
    if answered is not None and len(steps) > answered:
        # the steps after the reply: the entry's phase 2, its thread still busy (a pool
        # that takes the rest of the request and releases the task)
        later = f"{p.name}_phase2"
        return [sw.Semaphore(task, p.size), sw.BlockingQueue(later),
                sw.Behavior(p.name, (sw.Acquire(task),) + tuple(steps[:answered])
                            + (sw.Put(later),)),
                sw.Pool(later, p.size, (sw.Take(later),) + tuple(steps[answered:])
                        + (sw.Release(task),))]
    return [sw.Semaphore(task, p.size),
            sw.Behavior(p.name, (sw.Acquire(task),) + tuple(steps) + (sw.Release(task),))]


__all__ = ["layered"]
