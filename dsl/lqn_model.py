"""The plain data of an LQN model: processors, tasks, entries, activity graphs.

:mod:`dsl.lqn` reads LQN text into these; :mod:`dsl.lqn_translate` writes them as a
qpn software block, :mod:`dsl.lqn_export` reads a software block back into LQN text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from qpn.errors import Loc


def number_text(x: float) -> str:
    """Shortest text that reads back as ``x`` (1.0 prints as 1)."""
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r

#: processor scheduling flags and their meaning
PROC_SCHED = {"f": "fcfs", "r": "random", "s": "ps", "c": "ps", "p": "priority preemptive",
              "h": "priority non-preemptive", "i": "infinite"}
#: task scheduling flags (the first letter after the task name)
TASK_SCHED = {"r": "reference", "n": "fcfs", "f": "fcfs", "h": "priority", "i": "infinite",
              "p": "polled", "S": "semaphore", "W": "read-write lock", "b": "burst", "w": "lock"}
MAX_PHASES = 3


@dataclass
class LqnProcessor:
    """An LQN processor (``p`` line): scheduling, multiplicity, quantum, speed."""
    name: str
    sched: str                       # a letter of PROC_SCHED
    multiplicity: int | None         # None: infinite
    quantum: float = 0.0
    rate: float = 1.0                # speed: demands are divided by it
    loc: Loc | None = None


@dataclass
class LqnCall:
    """A call from a phase of an entry to another entry: synchronous, asynchronous or
    forwarding, with its mean count."""
    kind: str                        # 'y' synchronous, 'z' asynchronous, 'F' forwarding
    target: str
    phase: int
    mean: float                      # mean number of calls (F: a probability)
    loc: Loc | None = field(default=None, repr=False, compare=False)


@dataclass
class LqnEntry:
    """An entry (``s``, ``c``, ``y``... lines): demand, scv and think time per phase, its
    calls, and an open arrival rate."""
    name: str
    task: str = ""
    demand: list[float] = field(default_factory=lambda: [0.0] * MAX_PHASES)
    scv: list[float] = field(default_factory=lambda: [1.0] * MAX_PHASES)
    deterministic: list[bool] = field(default_factory=lambda: [False] * MAX_PHASES)
    think: list[float] = field(default_factory=lambda: [0.0] * MAX_PHASES)
    calls: list[LqnCall] = field(default_factory=list)
    open_rate: float = 0.0
    phases: int = 0                  # the highest phase given a value
    start: str | None = None         # the first activity, for an entry defined by activities
    loc: Loc | None = None
    start_loc: Loc | None = field(default=None, repr=False, compare=False)


@dataclass
class LqnConnection:
    """``joins -> forks``: how activities follow each other.

    ``join`` is ("one" | "and" | "or", [activities]); ``fork`` is None (the graph
    ends), ("seq", [a]), ("and", [a, b, ...]), ("or", [(p, a), ...]) or
    ("loop", [(n, a), ...], end activity or None)."""
    join: tuple
    fork: tuple | None
    loc: Loc | None = None


@dataclass
class LqnActivities:
    """The activity graph of one task: each activity is a one-phase :class:`LqnEntry`."""
    task: str
    acts: dict[str, LqnEntry] = field(default_factory=dict)
    connections: list[LqnConnection] = field(default_factory=list)
    replies: dict[str, list[str]] = field(default_factory=dict)   # activity -> entries
    loc: Loc | None = None


@dataclass
class LqnTask:
    """A task (``t`` line): reference or server, its entries, processor, multiplicity."""
    name: str
    ref: bool
    sched: str                       # a letter of TASK_SCHED
    entries: list[str]
    processor: str
    multiplicity: int | None = 1     # None: infinite
    think: float = 0.0
    priority: int = 0
    loc: Loc | None = None


@dataclass
class LqnModel:
    """A whole LQN model, as read from the LQN text format (:func:`dsl.lqn.read_lqn`)."""
    name: str
    comment: str = ""
    processors: dict[str, LqnProcessor] = field(default_factory=dict)
    tasks: dict[str, LqnTask] = field(default_factory=dict)
    entries: dict[str, LqnEntry] = field(default_factory=dict)
    activities: dict[str, LqnActivities] = field(default_factory=dict)   # by task



def reachable(g: LqnActivities, start: str) -> list[str]:
    """The activities of ``g`` that follow ``start`` (itself included), in order found."""
    after: dict[str, list[str]] = {}
    for conn in g.connections:
        if conn.fork is None:
            continue
        kind, items = conn.fork[0], conn.fork[1]
        nxt = [str(x) for x in items] if kind in ("seq", "and") else [str(n) for _, n in items]
        if kind == "loop" and conn.fork[2] is not None:
            nxt.append(str(conn.fork[2]))
        for name, _ in conn.join[1]:
            after.setdefault(str(name), []).extend(nxt)
    seen, todo = [], [start]
    while todo:
        a = todo.pop()
        if a not in seen:
            seen.append(a)
            todo.extend(after.get(a, []))
    return seen
