"""Where a step is expanded: its thread's path, loop context and label scope.

Every runner (pool, population, source), forked child and called behavior
is a *scope*: its steps are named ``PREFIX.LABEL``.  A step's label is the
one written (``cpu exp(4 ms) as parse``) or an automatic one: the kind of
step and its target, numbered from the second occurrence on (``cpu``,
``cpu2``, ``lock_m``, ``take_requests``, ``allreduce_world``, ``loop``,
``fork``, ``parallel_for``, ``critical`` (``critical_NAME``), ``atomic``, ``single``,
or the called behavior's name).

>>> from qpn.software import ast as sw
>>> from qpn.distributions import Exp
>>> steps = (sw.Compute(Exp(1)), sw.Lock("m"), sw.Compute(Exp(1), label="parse"), sw.Compute(Exp(1)))
>>> sorted(assign_labels(steps).values())
['cpu', 'cpu2', 'lock_m', 'parse']
"""
from __future__ import annotations

from typing import Callable

from ..errors import Loc, ModelError
from . import ast as sw
from .cfg import Station
from .kit import Kit

RESERVED = ("start", "begin")  # a runner's own place and transition

#: step type -> builder(step, next_node, env) -> node
STEP_BUILDERS: dict[type, Callable] = {}
#: declaration type -> builder(decl, env)
DECL_BUILDERS: dict[type, Callable] = {}


def step(*types):
    """Register the decorated function as the builder of these step types (by type)."""
    def deco(fn):
        for t in types:
            STEP_BUILDERS[t] = fn
        return fn
    return deco


def declaration(*types):
    """Register the decorated function as the builder of these declaration types."""
    def deco(fn):
        for t in types:
            DECL_BUILDERS[t] = fn
        return fn
    return deco


def base_label(st) -> str | None:
    """The automatic label of a step (None: the step has no place of its own)."""
    t = type(st)
    if t is sw.Compute:
        return "cpu"
    if t is sw.Io:
        return "io"
    if t is sw.Sleep:
        return "sleep"
    if t is sw.Lock:
        return {"mutex": "lock", "read": "read_lock", "write": "write_lock"}[st.mode] + "_" + st.target
    if t in (sw.Acquire, sw.Await, sw.Wait, sw.Put, sw.Take, sw.Allocate):
        return f"{t.__name__.lower()}_{st.target}"
    if t is sw.Collective:
        return f"{st.op}_{st.comm}"
    if t is sw.Loop:
        return "loop"
    if t is sw.Fork:
        return "fork"
    if t is sw.ParallelFor:
        return "parallel_for"
    if t is sw.Critical:
        return "critical" if st.name is None else f"critical_{st.name}"
    if t in (sw.Atomic, sw.Single):
        return t.__name__.lower()
    if t is sw.Call:
        return st.target
    return None


def _scope_steps(steps):
    """Steps named in one scope: nested blocks, but not forked children (of ``fork`` and
    ``parallel for``) or callees."""
    for st in steps:
        yield st
        if isinstance(st, (sw.Fork, sw.ParallelFor)):
            continue
        for kid in sw.children(st):
            if isinstance(kid, sw.Alternative):
                yield from _scope_steps(kid.body)
            elif not isinstance(kid, sw.Block):
                yield from _scope_steps([kid])


def assign_labels(steps, reserved=RESERVED) -> dict[int, str]:
    """Labels of every step of a scope, by ``id(step)``; user labels are checked."""
    out: dict[int, str] = {}
    taken: dict[str, Loc | None] = {}
    flat = list(_scope_steps(steps))
    for st in flat:
        label = getattr(st, "label", None)
        if label is None:
            continue
        if "." in label:
            raise ModelError(f"step name '{label}' has a dot; names are simple names", st.loc)
        if label in reserved:
            raise ModelError(f"'{label}' cannot name a step here: the thread's own "
                             f"{label} element has that name", st.loc,
                             hint="choose another name after 'as'")
        if label in taken:
            first = taken[label]
            where = f" (first used at {first})" if first else ""
            raise ModelError(f"two steps are named '{label}'{where}", st.loc,
                             hint="step names must be unique within a pool, source or behavior")
        taken[label] = st.loc
        out[id(st)] = label
    counts: dict[str, int] = {}
    for st in flat:
        if id(st) in out:
            continue
        base = base_label(st)
        if base is None:
            continue
        n = counts.get(base, 0)
        while True:
            n += 1
            name = base if n == 1 else f"{base}{n}"
            if name not in taken and name not in reserved:
                break
        counts[base] = n
        taken[name] = st.loc
        out[id(st)] = name
    return out


class Env:
    """The expansion context of the steps of one scope."""

    def __init__(self, kit: Kit, table, unbalanced: set, prefix: str, ctx: tuple, ret,
                 labels: dict, stations: list, stack: tuple = (), team=None):
        self.kit, self.table, self.unbalanced = kit, table, unbalanced
        self.prefix, self.ctx, self.ret = prefix, ctx, ret
        self.labels, self.stations, self.stack = labels, stations, stack
        self.team = team    # the threads of the OpenMP team running these steps (None: no team)

    def scope(self, prefix: str, steps, *, ret, ctx: tuple | None = None,
              stack: tuple | None = None, reserved: tuple = (), team=None) -> "Env":
        """The environment of a nested body: its own name prefix, labels and return point
        (loop context and call stack kept unless given; in an OpenMP team only if ``team``
        is given)."""
        return Env(self.kit, self.table, self.unbalanced, prefix,
                   self.ctx if ctx is None else ctx, ret, assign_labels(steps, RESERVED + reserved),
                   self.stations, self.stack if stack is None else stack, team)

    def with_ctx(self, ctx: tuple) -> "Env":
        """This environment with another loop context (the enclosing loops' counters)."""
        return Env(self.kit, self.table, self.unbalanced, self.prefix, ctx, self.ret, self.labels,
                   self.stations, self.stack, self.team)

    # -- names -------------------------------------------------------------------
    def label(self, st) -> str:
        """The label of a step of this body (given with ``as``, or assigned)."""
        return self.labels[id(st)]

    def path(self, st_or_label) -> str:
        """The element name of a step or label here: ``prefix.label``."""
        label = st_or_label if isinstance(st_or_label, str) else self.label(st_or_label)
        return f"{self.prefix}.{label}"

    def colors(self) -> str | None:
        """Color set of a thread token here: its loop counters (None outside loops)."""
        if not self.ctx:
            return None
        if len(self.ctx) == 1:
            return self.ctx[0].colorset
        inner = self.ctx[-1]
        # located at the innermost loop: the one whose count makes the set too large
        return self.kit.record_colors(f"{inner.colorset}.ctx", tuple(l.colorset for l in self.ctx),
                                      self.kit.colorset_loc(inner.colorset))

    # -- stations ----------------------------------------------------------------
    def station(self, path: str, loc: Loc | None, *, entry=(), service=None, queue=None,
                delay: bool = False, colors: str | None = "ctx", init=None,
                cycle_error: str | None = None, ctx: tuple | None = None,
                entry_inh=()) -> Station:
        """A place for threads at ``path`` (plain, on a shared queue, or a delay)."""
        cs = self.colors() if colors == "ctx" else colors
        if queue is not None:
            self.kit.queueing_place(path, queue, service, colors=cs, loc=loc)
        elif delay:
            self.kit.delay_place(path, service, colors=cs, loc=loc)
        else:
            self.kit.place(path, colors=cs, init=init, loc=loc)
        st = Station(path, self.ctx if ctx is None else ctx, list(entry), loc,
                     cycle_error=cycle_error, entry_inh=list(entry_inh))
        self.stations.append(st)
        return st

    def build(self, steps, nxt):
        """The entry node of ``steps`` followed by ``nxt`` (built back to front)."""
        node = nxt
        for st in reversed(steps):
            node = STEP_BUILDERS[type(st)](st, node, self)
        return node
