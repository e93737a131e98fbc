"""OpenMP synchronization: ``critical``, ``atomic``, ``single`` and the ``reduction`` of a
``parallel for`` (the loop itself is :mod:`qpn.software.omp`).

* ``critical [NAME] { ... }`` is a mutex (:mod:`qpn.software.locks`) declared once per
  name, implicitly: ``critical`` for every unnamed critical section (OpenMP's unnamed
  criticals share one lock), ``critical_NAME`` for ``critical NAME``; the sections of one
  name exclude each other among all threads of the model, whatever team or pool they
  belong to.  A thread waits in ``RUNNER.LABEL`` (LABEL ``critical``, ``critical_NAME``
  or the name given with ``as``; counted in ``critical.waiting``), runs the body holding
  ``critical.held`` and gives the lock back after it, exactly like ``lock``/``unlock``.
* ``atomic D [on CPU]`` is a short critical section of its own (one lock per site, named
  after the site: ``RUNNER.LABEL.free``, ``.held``, ``.waiting``) whose body is
  ``cpu D [on CPU]`` (the station ``RUNNER.LABEL.update``): the updates of one site
  serialize, as hardware atomics on one variable (one cache line) do, and updates of
  different sites overlap.
* ``reduction D [on CPU]`` on a ``parallel for``: every thread of the team, after its last
  iteration, adds its partial result to the shared variable with one such update
  (``RUNNER.LABEL.thread.reduction``, lock per loop), as GCC lowers a single scalar
  ``reduction(+: x)``: a private copy per thread, merged with an ``omp atomic`` update at
  the end (several reductions, or ones without an atomic instruction, take one global
  lock, ``GOMP_atomic_start``: serialized as well).
* ``single [nowait] { ... }`` in the block of a parallel for whose threads all reach it
  equally often (checked): the first thread of a round runs the body, the others skip it,
  and without ``nowait`` every thread then waits at the implicit barrier: in
  ``RUNNER.LABEL`` until ``RUNNER.LABEL.trip`` moves the team's P threads to
  ``RUNNER.LABEL.go``, which each leaves with ``RUNNER.LABEL.done``.  ``RUNNER.LABEL.left``
  counts the arrivals still to come in the current round and ``RUNNER.LABEL.ready``
  (P - 1 tokens at first) the others: the first arrival of a round (mode ``run``, when
  all P - 1 are in ``ready``) moves them to ``left``, each other arrival (mode ``skip``)
  moves one back, so a round is P arrivals, the body runs once per round, and
  ``left + ready = P - 1`` is a P-invariant.

>>> import qpn
>>> net = qpn.parse('''software { cpu host cores 2
... pool w size 2 { cpu exp(1 ms)
...   critical { cpu exp(1 ms) as add } } }''')
>>> from qpn.dsl.printer import fmt_mode_body
>>> fmt_mode_body(net.transition_map["w.critical.done"].modes[0])
'w.critical, critical.free, critical.waiting -> critical.held, w.add'
>>> fmt_mode_body(net.transition_map["w.add.done"].modes[0])
'w.add, critical.held -> critical.free, w.start'
"""
from __future__ import annotations

from ..errors import ModelError
from ..expr import BinOp, Expr, Num
from ..model import Mode
from . import ast as sw
from .cfg import Act, Alt, Exit
from .env import step
from .kit import arc, ctx_color, ctx_vars
from .locks import mutex_decl, mutex_release, mutex_wait


def critical_lock(name: str | None) -> str:
    """The name of the implicit mutex of ``critical [NAME]``.

    >>> critical_lock(None), critical_lock("io")
    ('critical', 'critical_io')
    """
    return "critical" if name is None else f"critical_{name}"


def implicit_mutex(env, name: str, loc) -> sw.Mutex:
    """The mutex ``name``, declared (``name.free`` and its watchers) on first use."""
    m = sw.Mutex(name, loc=loc)
    if not env.kit.has(f"{name}.free"):
        mutex_decl(m, env)
    return m


@step(sw.Critical)
def critical(st: sw.Critical, nxt, env):
    """``critical [NAME] { ... }``: wait for the section's lock, run the body, give it back."""
    m = implicit_mutex(env, critical_lock(st.name), st.loc)
    body = env.build(st.body, mutex_release(m, st.loc, nxt))
    return mutex_wait(env, env.path(st), m, st.loc, body)


def update(env, path: str, dist, on: str | None, loc, nxt):
    """An atomic update at ``path``: wait for the site's own lock (the mutex ``path``),
    spend ``dist`` on the cpu in ``path.update``, give the lock back."""
    m = implicit_mutex(env, path, loc)
    cpu = env.table.get(on, (sw.Cpu,), loc) if on else env.table.default((sw.Cpu,), loc, "")
    work = env.station(f"{path}.update", loc, queue=cpu.name, service=dist)
    work.exits.append(Exit(f"{path}.update.done", next=mutex_release(m, loc, nxt), loc=loc))
    return mutex_wait(env, path, m, loc, work)


@step(sw.Atomic)
def atomic(st: sw.Atomic, nxt, env):
    """``atomic D [on CPU]``: an update serialized with the other updates of this site."""
    return update(env, env.path(st), st.dist, st.on, st.loc, nxt)


def _one(e: Expr) -> bool:
    return isinstance(e, Num) and e.unit is None and e.value == 1


@step(sw.Single)
def single(st: sw.Single, nxt, env):
    """``single [nowait] { ... }``: the first of each round of the team's arrivals runs the
    body, and (without ``nowait``) the team meets at the barrier after it."""
    team = env.team
    if team is None:  # pragma: no cover - the checks refuse it first
        raise ModelError("'single' needs a team whose threads all reach it", st.loc)
    if _one(team):
        return env.build(st.body, nxt)
    path = env.path(st)
    after = nxt if st.nowait else _team_barrier(env, path, team, st.loc, nxt)
    body = env.build(st.body, after)
    others = Num(team.value - 1) if isinstance(team, Num) else BinOp("-", team, Num(1))
    ready = env.kit.place(f"{path}.ready", init=others, loc=st.loc).name
    left = env.kit.place(f"{path}.left", loc=st.loc).name
    return Act([Alt("run", ins=[arc(ready, others)], outs=[arc(left, others)], next=body),
                Alt("skip", ins=[arc(left)], outs=[arc(ready)], next=after)], st.loc)


def _team_barrier(env, path: str, team: Expr, loc, nxt):
    """The station ``path`` where the team's threads wait for each other after a single:
    ``path.trip`` moves P of them (at the same point of their iterations: one color) to
    ``path.go``, which each leaves with ``path.done``.  A thread that comes back in zero
    time enters ``path`` again, apart from the released ones, so it waits for the next
    round (the inhibitor arc of :func:`qpn.software.sync.barrier_station` would make two
    such threads wait for each other's release forever)."""
    wait = env.station(path, loc)
    go = env.station(f"{path}.go", loc)
    go.exits.append(Exit(f"{path}.done", next=nxt, loc=loc))
    color = ctx_color(ctx_vars(len(env.ctx)))
    env.kit.transition(f"{path}.trip", [Mode(None, (arc(path, team, color),),
                                             (arc(go.place, team, color),), loc=loc)], loc=loc)
    return wait
