"""The software layer as written: declarations and thread steps (immutable).

A ``software { ... }`` block holds resources (cpu, disk, locks, queues, ...),
runners (pools, populations, sources) and behaviors.  These dataclasses are
what the parser builds and the printer writes back (``parse(print(m)) == m``);
:mod:`qpn.software.expand` turns them into core places and transitions.

>>> from qpn.expr import Num
>>> m = Mutex("cache")
>>> Software((m,)) == Software((Mutex("cache"),))
True
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from ..distributions import Distribution
from ..errors import Loc
from ..expr import Expr, Num
from ..model import Declaration

ONE = Num(1)
ZERO = Num(0)


# ------------------------------------------------------------------ resources
@dataclass(frozen=True)
class Cpu(Declaration):
    """``cpu host cores 4 rr quantum 10 ms``: a processor (a shared queue)."""
    name: str
    cores: Expr = ONE
    discipline: str = "ps"           # ps | fcfs | rr
    quantum: Expr | None = None
    switch: Expr | None = None


@dataclass(frozen=True)
class Disk(Declaration):
    """``disk ssd servers 2 fcfs service exp(2 ms)`` or ``service by load 1: ..., 2: ...``."""
    name: str
    servers: Expr = ONE
    discipline: str = "fcfs"
    service: Distribution | None = None
    load: tuple[tuple[int, Distribution], ...] = ()   # (concurrent requests, service time)


@dataclass(frozen=True)
class Mutex(Declaration):
    """``mutex m [handover D]``: with ``handover``, a thread waiting when the holder
    unlocks gets the lock D later (the time to wake it: a GIL's hand-over)."""
    name: str
    handover: Distribution | None = None


@dataclass(frozen=True)
class RwLock(Declaration):
    """Readers share, a writer excludes everyone; ``prefer writers`` blocks new readers
    while a writer waits."""
    name: str
    prefer_writers: bool = False


@dataclass(frozen=True)
class Semaphore(Declaration):
    """``semaphore s permits K``."""
    name: str
    permits: Expr = ONE


@dataclass(frozen=True)
class Barrier(Declaration):
    """A cyclic barrier: ``parties`` threads arrive, then all are released."""
    name: str
    parties: Expr = ONE


@dataclass(frozen=True)
class Comm(Declaration):
    """``comm world ranks R [latency L] [per_byte G] [on CPU]``: an MPI communicator of R
    ranks (the threads of a pool); messages cost L each and G per byte, paid by a core
    of ``on`` (shared-memory copying) or as a network delay (:mod:`qpn.software.mpi`)."""
    name: str
    ranks: Expr
    latency: Expr = ZERO
    per_byte: Expr = ZERO
    on: str | None = None


@dataclass(frozen=True)
class Condition(Declaration):
    """A condition variable, optionally tied to a mutex (``condition ready on m``)."""
    name: str
    mutex: str | None = None


@dataclass(frozen=True)
class BlockingQueue(Declaration):
    """``blocking queue q [capacity K] [fifo|lifo]``."""
    name: str
    capacity: Expr | None = None
    order: str = "fifo"              # fifo | lifo


@dataclass(frozen=True)
class Limit(Declaration):
    """An OS resource limit (file descriptors, sockets): ``limit fds 1024``."""
    name: str
    count: Expr = ONE


@dataclass(frozen=True)
class Timer(Declaration):
    """Measures a request's response time across threads (``timer start``/``stop``)."""
    name: str


@dataclass(frozen=True)
class Sink(Declaration):
    """Where finished requests leave (``put done``)."""
    name: str


# ------------------------------------------------------------------ runners
# ``body`` is a tuple of steps, or the name of a ``behavior`` (``runs NAME``).
@dataclass(frozen=True)
class Pool(Declaration):
    """``pool workers size 8 { ... }``: threads that run their body forever."""
    name: str
    size: Expr
    body: "tuple | str"


@dataclass(frozen=True)
class Population(Declaration):
    """``population users size 20 think exp(5 s) { ... }``: closed clients."""
    name: str
    size: Expr
    think: Distribution
    body: "tuple | str"


@dataclass(frozen=True)
class Source(Declaration):
    """``source clients every exp(25 ms) { ... }``: open arrivals; each runs the body once."""
    name: str
    every: Distribution
    body: "tuple | str"


@dataclass(frozen=True)
class Behavior(Declaration):
    """``behavior handle { ... }``: code shared by runners and ``call``."""
    name: str
    body: tuple


# -------------------------------------------------------------------- steps
@dataclass(frozen=True)
class Compute(Declaration):
    """``cpu exp(4 ms) [on host] [as parse]``."""
    dist: Distribution
    on: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Io(Declaration):
    """``io [exp(2 ms)] [on ssd] [as read]`` (no time: the disk's own service)."""
    dist: Distribution | None = None
    on: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Sleep(Declaration):
    """``sleep D [as NAME]``."""
    dist: Distribution
    label: str | None = None


@dataclass(frozen=True)
class Lock(Declaration):
    """``lock m`` / ``read lock m`` / ``write lock m`` (mode: mutex, read, write)."""
    target: str
    mode: str = "mutex"
    label: str | None = None


@dataclass(frozen=True)
class Unlock(Declaration):
    """``unlock m``, ``read unlock m`` or ``write unlock m`` (``mode``)."""
    target: str
    mode: str = "mutex"


@dataclass(frozen=True)
class Acquire(Declaration):
    """``acquire [2] sem``."""
    target: str
    count: Expr = ONE
    label: str | None = None


@dataclass(frozen=True)
class Release(Declaration):
    """``release [n] s``."""
    target: str
    count: Expr = ONE


@dataclass(frozen=True)
class Await(Declaration):
    """``await b``: wait at a cyclic barrier (or at a communicator: ``MPI_Barrier``)."""
    target: str
    label: str | None = None


@dataclass(frozen=True)
class Collective(Declaration):
    """``allreduce world [BYTES] [as NAME]`` and the other operations of
    :data:`COLLECTIVES` on a communicator."""
    op: str
    comm: str
    bytes: Expr = ZERO
    label: str | None = None


#: the operations of ``Collective`` (every one but ``sendrecv`` synchronizes all ranks)
COLLECTIVES = ("allreduce", "reduce", "bcast", "gather", "scatter", "allgather", "alltoall",
               "sendrecv")


@dataclass(frozen=True)
class Wait(Declaration):
    """``wait c``: wait on a condition (releasing and re-taking its mutex)."""
    target: str
    label: str | None = None


@dataclass(frozen=True)
class Notify(Declaration):
    """``notify c`` (one waiter) or ``notify all c``."""
    target: str
    all: bool = False


@dataclass(frozen=True)
class Put(Declaration):
    """``put q [as L] [timeout DIST] [else { ... }]``."""
    target: str
    label: str | None = None
    timeout: Distribution | None = None
    otherwise: tuple | None = None


@dataclass(frozen=True)
class Take(Declaration):
    """``take q [as L] [timeout DIST] [else { ... }]``."""
    target: str
    label: str | None = None
    timeout: Distribution | None = None
    otherwise: tuple | None = None


@dataclass(frozen=True)
class Allocate(Declaration):
    """``allocate [n] fds [as L] else { ... }``: take units of a limit or fail."""
    target: str
    count: Expr = ONE
    label: str | None = None
    otherwise: tuple = ()


@dataclass(frozen=True)
class Free(Declaration):
    """``free [n] fds``."""
    target: str
    count: Expr = ONE


@dataclass(frozen=True)
class TimerStep(Declaration):
    """``timer start t`` / ``timer stop t``."""
    target: str
    action: str                      # start | stop


@dataclass(frozen=True)
class Alternative(Declaration):
    """``0.3: { ... }`` inside ``branch``."""
    prob: Expr
    body: tuple


@dataclass(frozen=True)
class Branch(Declaration):
    """``branch { p: {...} q: {...} }``."""
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True)
class Loop(Declaration):
    """``loop 5 times { ... }`` (exactly) or ``loop about 5 times { ... }`` (geometric)."""
    count: Expr
    body: tuple
    geometric: bool = False
    label: str | None = None


@dataclass(frozen=True)
class Block(Declaration):
    """One child block of ``fork``."""
    body: tuple


@dataclass(frozen=True)
class Fork(Declaration):
    """``fork [n] [as L] { ... } [and { ... }]``: start threads, wait for all of them."""
    blocks: tuple[Block, ...]
    count: Expr = ONE
    label: str | None = None


@dataclass(frozen=True)
class ParallelFor(Declaration):
    """``parallel for N [threads T] [schedule static|dynamic|guided [C]] [as L] { ... }``:
    an OpenMP work-sharing loop: T threads share the N iterations of the body (``static``:
    contiguous blocks, ``dynamic``: chunks of C taken one at a time, ``guided``: chunks
    that shrink down to C) and the encountering thread waits until all are done
    (:mod:`qpn.software.omp`).  ``threads`` None: the cores of the only cpu; ``chunk``
    None: 1 (written only with ``dynamic`` and ``guided``); ``reduction`` (with
    ``reduction_on``, its cpu): the cpu time of each thread's combine at the end."""
    count: Expr
    body: tuple
    threads: Expr | None = None
    schedule: str = "static"         # static | dynamic | guided
    chunk: Expr | None = None
    label: str | None = None
    reduction: Distribution | None = None   # ``reduction D [on CPU]``: each thread's combine
    reduction_on: str | None = None


#: the schedules of ``ParallelFor``
SCHEDULES = ("static", "dynamic", "guided")


@dataclass(frozen=True)
class Critical(Declaration):
    """``critical [NAME] [as L] { ... }``: OpenMP's critical section: one thread at a time
    runs the body among all threads of the model that reach a critical section of that
    name (every unnamed one shares one lock), :mod:`qpn.software.omp_sync`."""
    name: str | None
    body: tuple
    label: str | None = None


@dataclass(frozen=True)
class Atomic(Declaration):
    """``atomic DIST [on CPU] [as L]``: an OpenMP atomic update of that cpu time, serialized
    with the other updates of the same site."""
    dist: Distribution
    on: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Single(Declaration):
    """``single [nowait] [as L] { ... }`` in the block of a parallel for: the first thread
    of the team to arrive runs the body, the others skip it; without ``nowait`` all wait
    for each other at its end."""
    body: tuple
    nowait: bool = False
    label: str | None = None


@dataclass(frozen=True)
class Call(Declaration):
    """``call parse_request [as L]``: run a behavior here (a subroutine)."""
    target: str
    label: str | None = None


@dataclass(frozen=True)
class Return(Declaration):
    """``return``: end the current behavior (a pool thread starts over)."""


@dataclass(frozen=True)
class Software(Declaration):
    """A ``software { ... }`` block."""
    decls: tuple


RESOURCES = (Cpu, Disk, Mutex, RwLock, Semaphore, Barrier, Comm, Condition, BlockingQueue, Limit,
             Timer, Sink)
RUNNERS = (Pool, Population, Source)
Decl = Union[Cpu, Disk, Mutex, RwLock, Semaphore, Barrier, Comm, Condition, BlockingQueue, Limit,
             Timer, Sink, Pool, Population, Source, Behavior]
STEPS = (Compute, Io, Sleep, Lock, Unlock, Acquire, Release, Await, Collective, Wait, Notify, Put,
         Take, Allocate, Free, TimerStep, Branch, Loop, Fork, ParallelFor, Critical, Atomic, Single,
         Call, Return)

#: what each declaration is called in messages
KIND_NAMES = {Cpu: "cpu", Disk: "disk", Mutex: "mutex", RwLock: "rwlock", Semaphore: "semaphore",
              Barrier: "barrier", Comm: "comm", Condition: "condition",
              BlockingQueue: "blocking queue", Limit: "limit", Timer: "timer", Sink: "sink",
              Pool: "pool", Population: "population", Source: "source", Behavior: "behavior"}


# ------------------------------------------------- children (comments, walks)
def children(node) -> list:
    """Nested members of a node, in source order (for comments and checks)."""
    if isinstance(node, Software):
        return list(node.decls)
    if isinstance(node, (Pool, Population, Source)):
        return list(node.body) if isinstance(node.body, tuple) else []
    if isinstance(node, (Behavior, Alternative, Block, Loop, ParallelFor, Critical,
                         Single)):
        return list(node.body)
    if isinstance(node, Branch):
        return list(node.alternatives)
    if isinstance(node, Fork):
        return list(node.blocks)
    if isinstance(node, (Put, Take, Allocate)):
        return list(node.otherwise or ())
    return []


#: Deepest nesting of blocks in a thread's steps (a branch in a loop in a fork ...), a
#: behavior's blocks counting where it is called (behaviors are inlined).  Checking,
#: expanding and printing the steps recurse once or a few times per level.
MAX_BLOCK_DEPTH = 100


def bodies(step) -> list:
    """The blocks of steps directly inside a step (one level: a branch's alternatives, a
    fork's children, a put's else block, a loop's body ...)."""
    t = type(step)
    if t is Branch:
        return [a.body for a in step.alternatives]
    if t is Fork:
        return [b.body for b in step.blocks]
    if t in (Put, Take, Allocate):
        return [step.otherwise] if step.otherwise else []
    body = getattr(step, "body", None)
    return [body] if isinstance(body, tuple) else []


def with_children(node, kids: list):
    """``node`` with its nested members replaced (inverse of :func:`children`)."""
    kids = tuple(kids)
    if isinstance(node, Software):
        return replace(node, decls=kids)
    if isinstance(node, (Pool, Population, Source)):
        return replace(node, body=kids) if isinstance(node.body, tuple) else node
    if isinstance(node, (Behavior, Alternative, Block, Loop, ParallelFor, Critical,
                         Single)):
        return replace(node, body=kids)
    if isinstance(node, Branch):
        return replace(node, alternatives=kids)
    if isinstance(node, Fork):
        return replace(node, blocks=kids)
    if isinstance(node, (Put, Take)):
        return replace(node, otherwise=kids) if node.otherwise is not None else node
    if isinstance(node, Allocate):
        return replace(node, otherwise=kids)
    return node


def is_software_node(x) -> bool:
    """Whether ``x`` is a node of the software layer's syntax tree."""
    return isinstance(x, (Software,) + RESOURCES + RUNNERS + (Behavior,) + STEPS + (Alternative, Block))
