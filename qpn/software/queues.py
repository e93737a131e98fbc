"""Blocking queues, sinks and timers.

``blocking queue q [capacity K] [fifo | lifo]``: the items are tokens of the
place ``q.items`` (with capacity K).  ``put q`` adds an item; when the queue is
bounded the thread waits in ``RUNNER.put_q`` (counted in ``q.putters``) while it
is full.  ``take q`` waits in ``RUNNER.take_q`` (counted in ``q.takers``) for an
item.  So ``q.items`` measures the queue (tokens: length; residence: time an
item waits) and ``q.takers`` idle consumers.

* ``take q timeout DIST else { ... }``: the timed transition
  ``RUNNER.take_q.timeout`` (one clock per waiting thread) runs the else block
  when no item came in time; the same for ``put`` on a full bounded queue.
* ``take q else { ... }`` (no timeout) never waits: ``RUNNER.take_q.done`` takes
  an item, ``RUNNER.take_q.empty`` the else block; ``put q else`` likewise with
  ``RUNNER.put_q.full``.
* Items are indistinguishable tokens, so fifo and lifo give the same mean
  values; the order is kept in the model for documentation and future use.

``sink done``: a place ``done`` emptied at once by ``done.leave``; ``put done``
ends a request there (``throughput done.leave`` counts them).

``timer t``: ``timer start t`` adds a token to ``t.running``, ``timer stop t``
removes one, in whatever threads; by Little's law ``residence t.running`` is
the mean time between start and stop: a request's response time across
threads.

>>> import qpn
>>> net = qpn.parse('''software { blocking queue q capacity 2
... pool p size 1 { sleep exp(1 s)
...  put q }
... pool c size 1 { take q
...  sleep exp(1 s) } }''')
>>> net.place_map["q.items"].capacity, sorted(n for n in net.place_map if n.startswith("q."))
(Num(value=2, unit=None), ['q.items', 'q.putters', 'q.takers'])
"""
from __future__ import annotations

from ..model import Mode
from . import ast as sw
from .cfg import Act, Alt, Exit, ExitMode
from .env import declaration, step
from .kit import arc


@declaration(sw.BlockingQueue)
def queue_decl(d: sw.BlockingQueue, env) -> None:
    """``blocking queue q [capacity K] [fifo|lifo]``: the places of its items and of the
    threads taking."""
    env.kit.place(f"{d.name}.items", capacity=d.capacity, loc=d.loc)


@declaration(sw.Sink)
def sink_decl(d: sw.Sink, env) -> None:
    """``sink s``: a place that only counts what is put in it."""
    env.kit.place(d.name, loc=d.loc)
    env.kit.transition(f"{d.name}.leave", [Mode(None, (arc(d.name),), (), loc=d.loc)], loc=d.loc)


@declaration(sw.Timer)
def timer_decl(d: sw.Timer, env) -> None:
    """``timer t``: the place whose residence time is the timed span."""
    env.kit.place(f"{d.name}.running", loc=d.loc)


@step(sw.TimerStep)
def timer(st: sw.TimerStep, nxt, env):
    """``timer start t`` / ``timer stop t``: a token enters or leaves the timer's place."""
    place = arc(f"{st.target}.running")
    if st.action == "start":
        return Act([Alt(outs=[place], next=nxt)], st.loc)
    return Act([Alt(ins=[place], next=nxt)], st.loc)


@step(sw.Put)
def put(st: sw.Put, nxt, env):
    """``put q [timeout D] [else { ... }]``: add an item (to a sink: count it), waiting for
    room in a bounded queue; ``else`` alone does not wait (its route when the queue is
    full), with a timeout it is the route when the time passes."""
    q = env.table.decls[st.target]
    if isinstance(q, sw.Sink):
        return Act([Alt(outs=[arc(q.name)], next=nxt)], st.loc)
    items = arc(f"{q.name}.items")
    if q.capacity is None:
        return Act([Alt(outs=[items], next=nxt)], st.loc)
    path = env.path(st)
    if st.otherwise is not None and st.timeout is None:
        s = env.station(path, st.loc)
        s.exits.append(Exit(f"{path}.done", modes=[ExitMode(outs=[items])], next=nxt, loc=st.loc))
        full = arc(f"{q.name}.items", q.capacity)
        s.exits.append(Exit(f"{path}.full", modes=[ExitMode(ins=[full], outs=[full])],
                            next=env.build(st.otherwise, nxt), loc=st.loc))
        return s
    putters = env.kit.counter(f"{q.name}.putters", q.loc)
    s = env.station(path, st.loc, entry=[arc(putters)])
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=[arc(putters)], outs=[items])],
                        next=nxt, loc=st.loc))
    if st.timeout is not None:
        s.exits.append(_timeout(path, putters, st, nxt, env))
    return s


@step(sw.Take)
def take(st: sw.Take, nxt, env):
    """``take q [timeout D] [else { ... }]``: wait for an item; ``else`` alone does not
    wait (its route when the queue is empty), with a timeout it is the route when the
    time passes."""
    q = env.table.decls[st.target]
    path = env.path(st)
    items = arc(f"{q.name}.items")
    if st.otherwise is not None and st.timeout is None:
        s = env.station(path, st.loc)
        s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=[items])], next=nxt, loc=st.loc))
        s.exits.append(Exit(f"{path}.empty", modes=[ExitMode(inh=[items])],
                            next=env.build(st.otherwise, nxt), loc=st.loc))
        return s
    takers = env.kit.counter(f"{q.name}.takers", q.loc)
    s = env.station(path, st.loc, entry=[arc(takers)])
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=[items, arc(takers)])], next=nxt,
                        loc=st.loc))
    if st.timeout is not None:
        s.exits.append(_timeout(path, takers, st, nxt, env))
    return s


def _timeout(path: str, counter: str, st, nxt, env) -> Exit:
    from ..expr import Num
    return Exit(f"{path}.timeout", modes=[ExitMode(ins=[arc(counter)])],
                next=env.build(st.otherwise, nxt), delay=st.timeout, servers=Num(float("inf")),
                loc=st.loc)
