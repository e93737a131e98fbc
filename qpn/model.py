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

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

from . import disciplines
from .distributions import Distribution
from .errors import Loc
from .expr import Expr, Num

if TYPE_CHECKING:
    from .net import Net

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
