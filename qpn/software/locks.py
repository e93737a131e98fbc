"""Mutexes, read-write locks, semaphores and OS resource limits.

``mutex m`` is the place ``m.free`` with one token and ``m.held`` (the holder).
``lock m`` puts the thread into its own place ``RUNNER.lock_m`` and a token into
``m.waiting``; it leaves when it gets ``m.free``.  So ``m.waiting`` measures the
contention of the lock (tokens: threads waiting; residence: waiting time),
``m.held`` its use (tokens: utilization; residence: hold time), and each lock
site has its own waiting place.  ``unlock m`` moves ``m.held`` back to ``m.free``.

``rwlock m`` uses inhibitor arcs: ``read lock`` enters ``m.readers`` unless
``m.writer`` is held (or, with ``prefer writers``, a writer waits);
``write lock`` enters ``m.writer`` unless anyone holds it.  Waiting threads are
counted in ``m.read_waiting`` / ``m.write_waiting``.

``semaphore s permits K`` is ``s.free`` with K tokens; ``acquire [n] s`` waits in
``RUNNER.acquire_s`` (and ``s.waiting``) for n permits.  If every thread releases
what it acquired, the permits in use are ``s.held``; if permits are released by
other threads (signalling), ``release`` just returns permits to ``s.free``.

``limit fds 1024`` is ``fds.free``; ``allocate fds else { ... }`` never waits:
it takes a unit (``RUNNER.allocate_fds.done``) or, when none is left, takes the
error route (``RUNNER.allocate_fds.error``, whose throughput is the error rate).

>>> import qpn
>>> net = qpn.parse('''software { mutex m
... pool w size 2 { sleep exp(1 s)
...   lock m
...   sleep exp(10 ms)
...   unlock m } }''')
>>> t = net.transition_map["w.lock_m.done"]
>>> [a.place for a in t.modes[0].inputs], [a.place for a in t.modes[0].outputs]
(['w.lock_m', 'm.free', 'm.waiting'], ['m.held', 'w.sleep2'])
"""
from __future__ import annotations

from . import ast as sw
from .cfg import Act, Alt, Exit, ExitMode
from .env import declaration, step
from ..expr import Num
from ..model import Mode
from .kit import arc


@declaration(sw.Mutex)
def mutex_decl(d: sw.Mutex, env) -> None:
    """``mutex m``: the places m.free (one token), m.held and m.waiting."""
    env.kit.place(f"{d.name}.free", init=1, loc=d.loc)
    env.kit.place(f"{d.name}.held", loc=d.loc, optional=True)
    if d.handover is not None:
        # an unlock puts the lock into m.released; kept at once if nobody waits, else on
        # its way to a waiting thread (m.handover), free again once that thread is awake
        n, kit = d.name, env.kit
        waiting = kit.counter(f"{n}.waiting", d.loc)
        kit.place(f"{n}.released", loc=d.loc)
        kit.delay_place(f"{n}.handover", d.handover, loc=d.loc)
        kit.transition(f"{n}.kept", [Mode(None, (arc(f"{n}.released"),), (arc(f"{n}.free"),),
                                          (arc(waiting),), loc=d.loc)],
                       priority=Num(1), loc=d.loc)
        kit.transition(f"{n}.handing", [Mode(None, (arc(f"{n}.released"),),
                                             (arc(f"{n}.handover"),), loc=d.loc)], loc=d.loc)
        kit.transition(f"{n}.handed", [Mode(None, (arc(f"{n}.handover"),), (arc(f"{n}.free"),),
                                            loc=d.loc)], loc=d.loc)


@declaration(sw.RwLock)
def rwlock_decl(d: sw.RwLock, env) -> None:
    """``rwlock m [prefer writers]``: the places of readers, the writer and their waiting threads."""
    env.kit.place(f"{d.name}.readers", loc=d.loc, optional=True)
    env.kit.place(f"{d.name}.writer", loc=d.loc, optional=True)


@declaration(sw.Semaphore)
def semaphore_decl(d: sw.Semaphore, env) -> None:
    """``semaphore s permits K``: s.free with K tokens, s.held and s.waiting."""
    env.kit.place(f"{d.name}.free", init=d.permits, loc=d.loc)
    if d.name not in env.unbalanced:
        env.kit.place(f"{d.name}.held", loc=d.loc, optional=True)


@declaration(sw.Limit)
def limit_decl(d: sw.Limit, env) -> None:
    """``limit fds N``: fds.free with N units."""
    env.kit.place(f"{d.name}.free", init=d.count, loc=d.loc)
    if d.name not in env.unbalanced:
        env.kit.place(f"{d.name}.used", loc=d.loc, optional=True)


@step(sw.Lock)
def lock(st: sw.Lock, nxt, env):
    """``lock m`` (also ``read lock`` / ``write lock``): wait for the lock, then hold it."""
    m = env.table.decls[st.target]
    kit, n = env.kit, m.name
    if st.mode == "mutex":
        return mutex_wait(env, env.path(st), m, st.loc, nxt)
    if st.mode == "read":
        waiting = kit.counter(f"{n}.read_waiting", m.loc)
        inh = [arc(f"{n}.writer")]
        if m.prefer_writers:
            inh.append(arc(kit.counter(f"{n}.write_waiting", m.loc)))
        mode = ExitMode(ins=[arc(waiting)], outs=[arc(f"{n}.readers")], inh=inh)
    else:
        waiting = kit.counter(f"{n}.write_waiting", m.loc)
        mode = ExitMode(ins=[arc(waiting)], outs=[arc(f"{n}.writer")],
                        inh=[arc(f"{n}.writer"), arc(f"{n}.readers")])
    s = env.station(env.path(st), st.loc, entry=[arc(waiting)])
    s.exits.append(Exit(f"{s.place}.done", modes=[mode], next=nxt, loc=st.loc))
    return s


def mutex_wait(env, path: str, m: sw.Mutex, loc, nxt):
    """The station ``path`` where a thread waits for mutex ``m`` (counted in ``m.waiting``)
    and leaves holding it (``path.done``); also the entry of OpenMP's critical sections
    (:mod:`qpn.software.omp_sync`)."""
    n = m.name
    waiting = env.kit.counter(f"{n}.waiting", m.loc)
    s = env.station(path, loc, entry=[arc(waiting)])
    s.exits.append(Exit(f"{path}.done", next=nxt, loc=loc, modes=[ExitMode(
        ins=[arc(f"{n}.free"), arc(waiting)], outs=[arc(f"{n}.held")])]))
    return s


def mutex_release(m: sw.Mutex, loc, nxt) -> Act:
    """Give mutex ``m`` back (to ``m.released`` if it is handed over with a delay)."""
    freed = f"{m.name}.free" if m.handover is None else f"{m.name}.released"
    return Act([Alt(ins=[arc(f"{m.name}.held")], outs=[arc(freed)], next=nxt)], loc)


@step(sw.Unlock)
def unlock(st: sw.Unlock, nxt, env):
    """``unlock m``: give the lock back."""
    n = st.target
    if st.mode == "mutex":
        return mutex_release(env.table.decls[n], st.loc, nxt)
    held = f"{n}.readers" if st.mode == "read" else f"{n}.writer"
    return Act([Alt(ins=[arc(held)], next=nxt)], st.loc)


@step(sw.Acquire)
def acquire(st: sw.Acquire, nxt, env):
    """``acquire [n] s``: wait for n permits."""
    s_ = env.table.decls[st.target]
    waiting = env.kit.counter(f"{s_.name}.waiting", s_.loc)
    outs = [] if s_.name in env.unbalanced else [arc(f"{s_.name}.held", st.count)]
    s = env.station(env.path(st), st.loc, entry=[arc(waiting)])
    s.exits.append(Exit(f"{s.place}.done", next=nxt, loc=st.loc, modes=[ExitMode(
        ins=[arc(f"{s_.name}.free", st.count), arc(waiting)], outs=outs)]))
    return s


@step(sw.Release)
def release(st: sw.Release, nxt, env):
    """``release [n] s``: return n permits."""
    return _give_back(st, nxt, env, "held")


@step(sw.Allocate)
def allocate(st: sw.Allocate, nxt, env):
    """``allocate [n] fds else { ... }``: take n units, or the error route when too few are left."""
    n = st.target
    outs = [] if n in env.unbalanced else [arc(f"{n}.used", st.count)]
    s = env.station(env.path(st), st.loc)
    s.exits.append(Exit(f"{s.place}.done", next=nxt, loc=st.loc, modes=[ExitMode(
        ins=[arc(f"{n}.free", st.count)], outs=outs)]))
    s.exits.append(Exit(f"{s.place}.error", next=env.build(st.otherwise, nxt), loc=st.loc,
                        modes=[ExitMode(inh=[arc(f"{n}.free", st.count)])]))
    return s


@step(sw.Free)
def free(st: sw.Free, nxt, env):
    """``free [n] fds``: return n units."""
    return _give_back(st, nxt, env, "used")


def _give_back(st, nxt, env, taken: str):
    """Return ``st.count`` units to the counter ``free`` of ``st.target``, from its
    counter ``taken`` (held permits, used units) unless the model never balances it."""
    n = st.target
    ins = [] if n in env.unbalanced else [arc(f"{n}.{taken}", st.count)]
    return Act([Alt(ins=ins, outs=[arc(f"{n}.free", st.count)], next=nxt)], st.loc)
