"""The hierarchical colored queueing Petri net model (immutable dataclasses).

Semantics follow Bause's QPNs as implemented by QPME, extended:

* A :class:`Place` holds colored tokens; a :class:`QueueingPlace` is a queue
  plus a depository.  Tokens fired into a queueing place enter its queue; after
  service they move to the depository, where output transitions can take them.
  Capacity and inhibitor arcs count all tokens of a place (queue + depository).
* A :class:`Transition` is immediate (weights, priorities) or timed (a firing
  delay per mode, single-, k- or infinite-server).  Each :class:`Mode` names the
  tokens it consumes, produces and is inhibited by, with an optional guard.
* :class:`Subnet` templates with parameters and ports (input/output places) are
  instantiated by :class:`Instance`; ``flatten()`` turns the hierarchy into a
  flat net whose names are paths (``web.cpu``).

A net keeps its declarations in source order (``items``) so the printer can
write it back canonically; typed views (``places``, ``transitions`` ...)
are derived.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Mapping, Union

from . import disciplines
from .distributions import Distribution
from .errors import Loc
from .expr import Expr, Num

DISCIPLINES = disciplines.names()     # declared in qpn.disciplines
DEPARTURES = ("normal", "fifo")


def _meta():
    return field(default=None, compare=False, repr=False)


def _doc():
    return field(default="", compare=False, repr=False)


# ------------------------------------------------------------------ colors
@dataclass(frozen=True)
class EnumColors:
    """``colors job = {a, b}``: a finite set of named colors.

    ``colors fast = job {a}`` is a subset of ``job`` (``parent``): its colors are
    those of ``job``, so a token keeps its color when it moves between places typed
    by the set and by the subset.
    """
    name: str
    values: tuple[str, ...]
    parent: str | None = None
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class RangeColors:
    """``colors slot = 1 .. n``: integers lo..hi (inclusive, parametric)."""
    name: str
    lo: Expr
    hi: Expr
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class RecordColors:
    """``colors req = (kind: job, slot: slot)``: product of color sets."""
    name: str
    fields: tuple[tuple[str, str], ...]  # (field name, color set name)
    doc: str = _doc()
    loc: Loc | None = _meta()


ColorSet = Union[EnumColors, RangeColors, RecordColors]


# ---------------------------------------------------------------- elements
@dataclass(frozen=True)
class Param:
    """``param threads = 4``; any parameter can be overridden when solving."""
    name: str
    value: Expr
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Term:
    """``count color`` in a marking or arc inscription; color None = uncolored token."""
    count: Expr
    color: Expr | None = None


@dataclass(frozen=True)
class Queue:
    """Queue of a queueing place: discipline and servers (shared when declared alone).

    ``servers`` is an expression; ``Num(inf)`` means infinitely many.
    ``quantum`` and ``switch`` (context-switch cost) apply to RR only;
    ``preemptive`` to PRIO only.
    """
    name: str
    discipline: str
    servers: Expr = Num(1)
    quantum: Expr | None = None
    switch: Expr | None = None
    preemptive: bool = True
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Service:
    """Service-time distribution of one color (None = every color)."""
    color: Expr | None
    dist: Distribution


@dataclass(frozen=True)
class Place:
    """An ordinary place: ``place buffer : job capacity 10 init 2 a``."""
    name: str
    colors: str | None = None      # color set name; None = plain tokens
    capacity: Expr | None = None
    init: tuple[Term, ...] = ()
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class QueueingPlace(Place):
    """A queue plus a depository. ``queue`` is an inline :class:`Queue` or the
    name of a shared queue."""
    queue: Queue | str = None  # type: ignore[assignment]
    service: tuple[Service, ...] = ()
    priority: tuple[tuple[Expr | None, Expr], ...] = ()  # (color or None, level)
    departure: str = "normal"

    @property
    def queue_name(self) -> str:
        """The name of the place's queue (inline or shared)."""
        return self.queue if isinstance(self.queue, str) else self.queue.name


@dataclass(frozen=True)
class Port(Place):
    """Interface place of a subnet: ``input`` receives tokens from outside,
    ``output`` gives tokens to the outside."""
    direction: str = "input"


@dataclass(frozen=True)
class Arc:
    """Tokens of one place in a mode: ``cpu(2 x, a)``; inhibitor threshold for ``unless``."""
    place: str
    terms: tuple[Term, ...]
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Mode:
    """One way a transition can fire."""
    name: str | None
    inputs: tuple[Arc, ...] = ()
    outputs: tuple[Arc, ...] = ()
    inhibitors: tuple[Arc, ...] = ()
    guard: Expr | None = None
    weight: Expr | None = None          # immediate
    delay: Distribution | None = None   # timed
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Transition:
    """``kind`` is 'immediate' or 'timed'. ``servers`` (timed): Num(1) single,
    k, or Num(inf) infinite-server semantics; ``priority`` (immediate)."""
    name: str
    kind: str
    modes: tuple[Mode, ...]
    priority: Expr | None = None
    servers: Expr | None = None
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class SubnetParam:
    """A parameter of a subnet, with its default (None: the instance must give it)."""
    name: str
    default: Expr | None = None
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Subnet:
    """A net template: parameters, ports and a body, instantiated by name."""
    name: str
    params: tuple[SubnetParam, ...]
    items: tuple[Any, ...]
    doc: str = _doc()
    loc: Loc | None = _meta()

    @cached_property
    def ports(self) -> dict[str, Port]:
        """The subnet's ports by name."""
        return {i.name: i for i in self.items if isinstance(i, Port)}


@dataclass(frozen=True)
class Instance:
    """``instance web = Server(threads = 8)``."""
    name: str
    subnet: str
    args: tuple[tuple[str, Expr], ...] = ()
    doc: str = _doc()
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Include:
    """``include "lib.qpn"``: declarations of another file, by reference."""
    path: str
    net: "Net | None" = field(default=None, compare=False, repr=False)
    doc: str = _doc()
    loc: Loc | None = _meta()


Item = Union[Param, EnumColors, RangeColors, RecordColors, Queue, Place, QueueingPlace,
             Port, Transition, Subnet, Instance, Include]  # and qpn.software.ast.Software


# --------------------------------------------------------------------- Net
@dataclass(frozen=True)
class Net:
    """A (possibly hierarchical) colored queueing Petri net.

    >>> import qpn
    >>> net = qpn.parse('''
    ... place idle init 2
    ... place cpu queue ps service exp(10 ms)
    ... transition go : idle -> cpu
    ... transition back : cpu -> idle''')
    >>> [p.name for p in net.places], net.transitions[0].kind
    (['idle', 'cpu'], 'immediate')
    """
    name: str
    items: tuple[Item, ...] = ()
    doc: str = field(default="", compare=False, repr=False)
    trailer: str = field(default="", compare=False, repr=False)  # comments after the last item
    path: str | None = field(default=None, compare=False, repr=False)
    source: str | None = field(default=None, compare=False, repr=False)

    # -- typed views (own items + included files + the software layer) -----
    def _collect(self, core: list, software: list) -> None:
        from .software.ast import Software
        for it in self.items:
            if isinstance(it, Include) and it.net is not None:
                it.net._collect(core, software)
            elif isinstance(it, Software):
                software.append(it)
            else:
                core.append(it)

    @cached_property
    def software(self) -> tuple:
        """The ``software { ... }`` blocks (own and included)."""
        core: list = []
        software: list = []
        self._collect(core, software)
        return tuple(software)

    @cached_property
    def all_items(self) -> tuple[Item, ...]:
        """Every declaration: included files merged, software blocks expanded
        into places and transitions (:mod:`qpn.software`)."""
        core: list = []
        software: list = []
        self._collect(core, software)
        if software:
            from .software import expand
            core.extend(expand(software, core))
        return tuple(core)

    def _of(self, *types) -> list:
        return [i for i in self.all_items if isinstance(i, types)]

    @cached_property
    def params(self) -> list[Param]:
        """The net's parameters, in text order (includes merged, software expanded)."""
        return self._of(Param)

    @cached_property
    def colorsets(self) -> list[ColorSet]:
        """The net's color sets, in text order (includes merged, software expanded)."""
        return self._of(EnumColors, RangeColors, RecordColors)

    @cached_property
    def queues(self) -> list[Queue]:
        """The net's shared queues, in text order (includes merged, software expanded)."""
        return self._of(Queue)

    @cached_property
    def places(self) -> list[Place]:
        """The net's places (ordinary, queueing and ports), in text order (includes merged, software expanded)."""
        return self._of(Place)

    @cached_property
    def transitions(self) -> list[Transition]:
        """The net's transitions, in text order (includes merged, software expanded)."""
        return self._of(Transition)

    @cached_property
    def subnets(self) -> list[Subnet]:
        """The net's subnet templates, in text order (includes merged, software expanded)."""
        return self._of(Subnet)

    @cached_property
    def instances(self) -> list[Instance]:
        """The net's subnet instances, in text order (includes merged, software expanded)."""
        return self._of(Instance)

    @cached_property
    def place_map(self) -> dict[str, Place]:
        """Places by name."""
        return {p.name: p for p in self.places}

    @cached_property
    def transition_map(self) -> dict[str, Transition]:
        """Transitions by name."""
        return {t.name: t for t in self.transitions}

    @cached_property
    def colorset_map(self) -> dict[str, ColorSet]:
        """Color sets by name."""
        return {c.name: c for c in self.colorsets}

    @cached_property
    def queue_map(self) -> dict[str, Queue]:
        """Shared queues and the inline queues of queueing places, by name."""
        out = {q.name: q for q in self.queues}
        for p in self.places:
            if isinstance(p, QueueingPlace) and isinstance(p.queue, Queue):
                out.setdefault(p.queue.name, p.queue)
        return out

    @cached_property
    def is_flat(self) -> bool:
        """Whether the net has no subnets, instances or software blocks to expand."""
        return not self.instances and not self.subnets and not self.software

    # -- operations -----------------------------------------------------------
    def flatten(self) -> "Net":
        """The flat net solvers compile (element names become paths)."""
        from .flatten import flatten
        return flatten(self)

    def with_params(self, **values: Any) -> "Net":
        """A copy with parameters overridden: ``net.with_params(threads=8)``.

        Values are numbers, expressions, or text such as ``"20 ms"``.  Names
        may be top-level parameters or ``instance.param`` arguments.
        """
        from .params import with_params
        return with_params(self, values)

    def param_values(self, **overrides: Any) -> dict[str, Any]:
        """Numeric values of every parameter (after overrides)."""
        from .params import param_values
        net = self.with_params(**overrides) if overrides else self
        return param_values(net)

    def replace_items(self, items: Iterable[Item]) -> "Net":
        """A copy with other declarations (the net's name and source kept)."""
        return replace(self, items=tuple(items))

    def text(self) -> str:
        """Canonical DSL text of this net."""
        from dsl.printer import print_net
        return print_net(self)

    def __str__(self) -> str:
        n = lambda xs: len(xs)  # noqa: E731
        return (f"Net {self.name!r}: {n(self.places)} places, {n(self.transitions)} transitions, "
                f"{n(self.colorsets)} color sets, {n(self.params)} parameters, "
                f"{n(self.subnets)} subnets, {n(self.instances)} instances")


def place_kind(p: Place) -> str:
    """'place', 'queueing place', 'input port' or 'output port', for messages."""
    if isinstance(p, QueueingPlace):
        return "queueing place"
    if isinstance(p, Port):
        return f"{p.direction} port"
    return "place"


def name_table(items: Iterable[Item]) -> Mapping[str, Item]:
    """Declarations by name (those that have one)."""
    return {getattr(i, "name"): i for i in items if hasattr(i, "name")}
