"""MPI communicators and collectives, for SPMD programs whose ranks are the threads of a pool.

``comm world ranks P [latency L] [per_byte G] [on CPU]`` declares a communicator of P
ranks: every collective on it has P parties.  A message costs L (seconds per message)
plus G per byte.  With ``on CPU`` communication is shared-memory copying done by the
rank's own core: the cost is spent as ``cpu det(cost) on CPU`` and competes with the
computation for the cores; without ``on`` it is a network delay (``sleep det(cost)``).

Steps (m = BYTES, default 0), costed as LogGP-style models of the usual algorithms, with
``rounds = ceil(log(P) / log(2) - 1e-9)`` (0 for P = 1, exactly log2 P for powers of 2):

=======================================  ===========================================
``await world`` (MPI_Barrier)            rounds * L            (dissemination)
``bcast``, ``reduce``                    rounds * (L + m * G)  (binomial tree)
``allreduce``                            rounds * (L + m * G)  (recursive doubling)
``gather``, ``scatter``, ``allgather``   rounds * L + (P - 1) * m * G
``alltoall``                             (P - 1) * (L + m * G) (pairwise exchange)
``sendrecv``                             min(1, P - 1) * (L + m * G)
=======================================  ===========================================

Every collective but ``sendrecv`` first synchronizes all P ranks exactly as ``await`` on a
``barrier world parties P``: the rank waits in ``RUNNER.LABEL`` (counted in
``world.waiting``) until ``world.trip`` turns P waiting tokens into P ``world.go``
releases, so ``throughput world.trip`` is the rate of collectives.  Then it spends the
cost in ``RUNNER.LABEL.cost`` (left out when the cost is a literal 0).  LABEL is
``allreduce_world``, ``await_world``, ... or the name given with ``as``.  ``sendrecv``
does not synchronize: the ranks of a pool are indistinguishable tokens, so a rank has no
identity and no particular neighbour to wait for; it only spends its cost in
``RUNNER.LABEL`` (a collective in the same loop synchronizes all ranks anyway).  The
places ``world.waiting``/``world.go`` and ``world.trip`` exist once a step synchronizes.

Costs are deterministic and the same for every rank: the variability of an iteration
comes from the computation.  With ``on CPU`` and fewer cores than ranks the ranks share
the cpu's cores for the copying too, so the collective takes longer, as copying by
oversubscribed cores does.

>>> import qpn
>>> net = qpn.parse('''software {
...   comm world ranks 4 latency 5 us
...   pool solver size 4 { sleep exp(1 ms) as work
...                        allreduce world 8 } }''')
>>> from qpn.dsl.printer import fmt_mode_body
>>> fmt_mode_body(net.transition_map["world.trip"].modes[0])
'4 world.waiting -> 4 world.go'
>>> from qpn.expr import fmt
>>> fmt(net.place_map["solver.allreduce_world.cost"].service[0].dist.value)
'2 * 5 us'
"""
from __future__ import annotations

import math

from ..distributions import Det
from ..expr import BinOp, Call, Expr, Num
from . import ast as sw
from . import sync
from .cfg import Exit
from .env import step

ONE = Num(1)


# ------------------------------------------------------------------ costs
def _is(e: Expr, v) -> bool:
    return isinstance(e, Num) and e.value == v and (v == 0 or e.unit is None)


def _add(a: Expr, b: Expr) -> Expr:
    if _is(a, 0):
        return b
    if _is(b, 0):
        return a
    return BinOp("+", a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    if _is(a, 0) or _is(b, 0):
        return sw.ZERO
    if _is(a, 1):
        return b
    if _is(b, 1):
        return a
    return BinOp("*", a, b)


def _ranks(p: Expr) -> int | None:
    """The number of ranks when it is written as a whole number."""
    if isinstance(p, Num) and p.unit is None and p.value == int(p.value) and p.value >= 1:
        return int(p.value)
    return None


def rounds(p: Expr) -> Expr:
    """``ceil(log(P) / log(2) - 1e-9)``: the rounds of a tree or of recursive doubling
    (0 for one rank; folded when P is a number).

    >>> [rounds(Num(n)).value for n in (1, 2, 3, 4, 5, 1024)]
    [0, 1, 2, 2, 3, 10]
    """
    n = _ranks(p)
    if n is not None:
        return Num(math.ceil(math.log(n) / math.log(2) - 1e-9))
    return Call("ceil", (BinOp("-", BinOp("/", Call("log", (p,)), Call("log", (Num(2),))),
                               Num(1e-9)),))


def _minus_one(p: Expr) -> Expr:
    n = _ranks(p)
    return Num(n - 1) if n is not None else BinOp("-", p, ONE)


def cost(op: str, comm: sw.Comm, size: Expr = sw.ZERO) -> Expr:
    """The time one rank spends in ``op`` ("barrier" for ``await``) with ``size`` bytes.

    >>> from qpn.expr import Ref, fmt
    >>> world = sw.Comm("world", Ref("P"), Ref("L"), Ref("G"))
    >>> fmt(cost("allreduce", world, Num(8)))
    'ceil(log(P) / log(2) - 1e-09) * (L + 8 * G)'
    >>> fmt(cost("alltoall", world, Num(8)))
    '(P - 1) * (L + 8 * G)'
    >>> fmt(cost("gather", sw.Comm("w", Num(4), Ref("L"), Ref("G")), Ref("m")))
    '2 * L + 3 * m * G'
    """
    p, lat, gap = comm.ranks, comm.latency, comm.per_byte
    msg = _add(lat, _mul(size, gap))
    if op == "barrier":
        return _mul(rounds(p), lat)
    if op in ("bcast", "reduce", "allreduce"):
        return _mul(rounds(p), msg)
    if op in ("gather", "scatter", "allgather"):
        return _add(_mul(rounds(p), lat), _mul(_mul(_minus_one(p), size), gap))
    if op == "alltoall":
        return _mul(_minus_one(p), msg)
    if op == "sendrecv":
        n = _ranks(p)
        partners = Num(min(1, n - 1)) if n is not None else Call("min", (ONE, BinOp("-", p, ONE)))
        return _mul(partners, msg)
    raise ValueError(f"unknown collective {op!r}")


# --------------------------------------------------------------- stations
def _spend(env, path: str, comm: sw.Comm, time: Expr, loc, nxt):
    """A station ``path`` where a rank spends ``time`` (on the comm's cpu or as a delay);
    ``nxt`` itself when the time is a literal 0."""
    if _is(time, 0):
        return nxt
    if comm.on is not None:
        s = env.station(path, loc, queue=comm.on, service=Det(time))
    else:
        s = env.station(path, loc, delay=True, service=Det(time))
    s.exits.append(Exit(f"{path}.done", next=nxt, loc=loc))
    return s


def _synchronized(env, path: str, comm: sw.Comm, time: Expr, loc, nxt):
    """Wait for all ranks at ``path`` (the comm's barrier), then spend ``time``."""
    kit = env.kit
    if not kit.has(f"{comm.name}.waiting"):
        sync.barrier_places(kit, comm.name, comm.ranks, comm.loc)
    s = sync.barrier_station(env, path, comm.name, loc, None)
    s.exits[-1].next = _spend(env, f"{path}.cost", comm, time, loc, nxt)
    return s


@step(sw.Collective)
def collective(st: sw.Collective, nxt, env):
    """``allreduce world [BYTES]`` and the others: synchronize all ranks (not for
    ``sendrecv``), then spend the operation's cost."""
    comm = env.table.decls[st.comm]
    time = cost(st.op, comm, st.bytes)
    if st.op == "sendrecv":
        return _spend(env, env.path(st), comm, time, st.loc, nxt)
    return _synchronized(env, env.path(st), comm, time, st.loc, nxt)


@step(sw.Await)
def await_(st: sw.Await, nxt, env):
    """``await b`` on a barrier (:func:`qpn.software.sync.await_`) or on a communicator
    (``MPI_Barrier``: synchronize, then rounds * latency)."""
    comm = env.table.decls[st.target]
    if not isinstance(comm, sw.Comm):
        return sync.await_(st, nxt, env)
    return _synchronized(env, env.path(st), comm, cost("barrier", comm), st.loc, nxt)
