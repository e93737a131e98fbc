"""Cyclic barriers and condition variables.

``barrier b parties N``: ``await b`` puts the thread into ``RUNNER.await_b`` and a
token into ``b.waiting``.  When ``b.waiting`` holds N tokens, ``b.trip`` turns
them into N ``b.go`` tokens, and each waiting thread leaves with one
(``RUNNER.await_b.done``).  A thread enters only while ``b.go`` is empty (an
inhibitor arc): the releases of one trip are not interchangeable with the next
round's, so a thread that comes back in zero time cannot pass twice on one trip (it
waits in ``RUNNER.await_b.left`` for the round's other releases to be taken:
:func:`qpn.software.cfg.emit_exit`).  ``throughput b.trip`` is the rate of rounds and
``residence b.waiting`` the time a thread waits for the others.

``condition c [on m]``: ``wait c`` releases ``m`` (if the condition is on a
mutex), waits in ``RUNNER.wait_c`` (counted in ``c.waiting``) for a ``c.signal``
token and then takes ``m`` again (``RUNNER.wait_c.relock``).  ``notify c`` turns
one waiter into a signal (mode ``wake``) or does nothing when nobody waits
(mode ``none``: the notification is lost, as in Java).  ``notify all c`` starts
a broadcast: ``c.wake`` signals waiters one by one in zero time, ``c.end``
finishes it when no waiter is left.

>>> import qpn
>>> net = qpn.parse('''software { barrier b parties 3
... pool w size 3 { sleep exp(1 s)
...  await b } }''')
>>> from qpn.dsl.printer import fmt_mode_body
>>> fmt_mode_body(net.transition_map["b.trip"].modes[0])
'3 b.waiting -> 3 b.go'
"""
from __future__ import annotations

from ..model import Mode
from . import ast as sw
from .cfg import Act, Alt, Exit, ExitMode
from .env import declaration, step
from .kit import arc


@declaration(sw.Barrier)
def barrier_decl(d: sw.Barrier, env) -> None:
    """``barrier b parties N``: b.waiting, b.go, and the transition that trips with N waiting."""
    barrier_places(env.kit, d.name, d.parties, d.loc)


def barrier_places(kit, name: str, parties, loc) -> None:
    """NAME.waiting, NAME.go and NAME.trip (``parties`` waiting -> as many releases); also
    the synchronization of an MPI communicator (:mod:`qpn.software.mpi`)."""
    kit.place(f"{name}.waiting", loc=loc)
    kit.place(f"{name}.go", loc=loc)
    kit.transition(f"{name}.trip", [Mode(None, (arc(f"{name}.waiting", parties),),
                                         (arc(f"{name}.go", parties),), loc=loc)], loc=loc)


@declaration(sw.Condition)
def condition_decl(d: sw.Condition, env) -> None:
    """``condition c [on m]``: c.waiting (threads waiting) and c.signal (notifications)."""
    env.kit.place(f"{d.name}.waiting", loc=d.loc)
    env.kit.place(f"{d.name}.signal", loc=d.loc)


@step(sw.Await)
def await_(st: sw.Await, nxt, env):
    """``await b``: arrive at the barrier and wait until all parties have (``await`` on a
    communicator is :func:`qpn.software.mpi.await_`, which calls this for barriers)."""
    return barrier_station(env, env.path(st), st.target, st.loc, nxt)


def barrier_station(env, path: str, b: str, loc, nxt):
    """The station ``path`` where a thread waits for the trip of barrier places ``b.*``."""
    # a thread released by a trip that comes back in zero time must not take a release
    # meant for another: it enters only once every released thread has left
    s = env.station(path, loc, entry=[arc(f"{b}.waiting")], entry_inh=[arc(f"{b}.go")])
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=[arc(f"{b}.go")])], next=nxt, loc=loc))
    return s


@step(sw.Wait)
def wait(st: sw.Wait, nxt, env):
    """``wait c``: wait for a notification (releasing the condition's mutex, then
    taking it again)."""
    c = env.table.decls[st.target]
    path = env.path(st)
    after = nxt
    if c.mutex is not None:
        m = c.mutex
        waiting = env.kit.counter(f"{m}.waiting", env.table.decls[m].loc)
        relock = env.station(f"{path}.relock", st.loc, entry=[arc(waiting)])
        relock.exits.append(Exit(f"{relock.place}.done", next=nxt, loc=st.loc, modes=[ExitMode(
            ins=[arc(f"{m}.free"), arc(waiting)], outs=[arc(f"{m}.held")])]))
        after = relock
    s = env.station(path, st.loc, entry=[arc(f"{c.name}.waiting")])
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=[arc(f"{c.name}.signal")])],
                        next=after, loc=st.loc))
    if c.mutex is not None:
        m = c.mutex
        return Act([Alt(ins=[arc(f"{m}.held")], outs=[arc(f"{m}.free")], next=s)], st.loc)
    return s


@step(sw.Notify)
def notify(st: sw.Notify, nxt, env):
    """``notify c`` / ``notify all c``: wake one or every waiting thread."""
    c = st.target
    if not st.all:
        return Act([Alt("wake", ins=[arc(f"{c}.waiting")], outs=[arc(f"{c}.signal")], next=nxt),
                    Alt("none", inh=[arc(f"{c}.waiting")], next=nxt)], st.loc)
    kit = env.kit
    if not kit.has(f"{c}.broadcast"):
        loc = env.table.decls[c].loc
        kit.place(f"{c}.broadcast", loc=loc)
        kit.transition(f"{c}.wake", [Mode(None, (arc(f"{c}.broadcast"), arc(f"{c}.waiting")),
                                          (arc(f"{c}.broadcast"), arc(f"{c}.signal")), loc=loc)],
                       loc=loc)
        kit.transition(f"{c}.end", [Mode(None, (arc(f"{c}.broadcast"),), (),
                                         (arc(f"{c}.waiting"),), loc=loc)], loc=loc)
    return Act([Alt(outs=[arc(f"{c}.broadcast")], next=nxt)], st.loc)
