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
from typing import Any, Iterable, Mapping, Protocol, TypeVar, Union

from . import disciplines
from .distributions import Distribution
from .errors import Loc
from .expr import Expr, Num

DISCIPLINES = disciplines.names()     # declared in qpn.disciplines
#: Departure disciplines: when a token that reached a place (a queueing place's depository)
#: may leave it.  ``normal``: at once, every token is available to the transitions.
#: ``fifo``: one token at a time, the oldest first; the others wait behind it (QPME's FIFO).
#: ``random``: one token at a time, a random one of those waiting (QPME's RANDOM).
#: ``in-order``: a queueing place's tokens enter its depository in the order they entered
#: its queue; a token served early waits for the earlier ones (a TCP stream).
DEPARTURES = ("normal", "fifo", "random", "in-order")
ONE_AT_A_TIME = ("fifo", "random")     # only one token of the place is available at a time
IN_ORDER = "in-order"


def _meta():
    return field(default=None, compare=False, repr=False)


def _doc():
    return field(default="", compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """What every declaration of the language carries besides its own fields: its doc
    comments (the ``# ...`` lines written above it) and where it was written.  Neither takes part
    in equality or repr (two models that differ only in comments are the same net),
    and both are keyword-only so that each declaration's own fields stay positional.

    >>> Param("n", Num(4), doc="threads") == Param("n", Num(4))
    True
    """
    doc: str = _doc()
    loc: Loc | None = _meta()


# ------------------------------------------------------------------ colors
@dataclass(frozen=True)
class EnumColors(Declaration):
    """``colors job = {a, b}``: a finite set of named colors.

    ``colors fast = job {a}`` is a subset of ``job`` (``parent``): its colors are
    those of ``job``, so a token keeps its color when it moves between places typed
    by the set and by the subset.

    >>> import qpn
    >>> qpn.parse("colors job = {a, b}\\ncolors fast = job {a}").colorsets
    [EnumColors(name='job', values=('a', 'b'), parent=None),
     EnumColors(name='fast', values=('a',), parent='job')]
    """
    name: str
    values: tuple[str, ...]
    parent: str | None = None


@dataclass(frozen=True)
class RangeColors(Declaration):
    """``colors slot = 1 .. n``: integers lo..hi (inclusive, parametric).

    >>> import qpn
    >>> qpn.parse("param n = 3\\ncolors slot = 1 .. n").colorsets[0]
    RangeColors(name='slot', lo=Num(value=1, unit=None), hi=Ref(name='n'))
    """
    name: str
    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class RecordColors(Declaration):
    """``colors req = (kind: job, slot: slot)``: product of color sets.

    >>> import qpn
    >>> net = qpn.parse("colors job = {get, put}\\ncolors slot = 1 .. 2\\n"
    ...                 "colors req = (kind: job, slot: slot)")
    >>> net.colorset_map["req"].fields
    (('kind', 'job'), ('slot', 'slot'))
    """
    name: str
    fields: tuple[tuple[str, str], ...]  # (field name, color set name)


ColorSet = Union[EnumColors, RangeColors, RecordColors]


# ---------------------------------------------------------------- elements
@dataclass(frozen=True)
class Param(Declaration):
    """``param threads = 4``; any parameter can be overridden when solving.

    >>> Param("threads", Num(4))
    Param(name='threads', value=Num(value=4, unit=None))
    >>> import qpn
    >>> qpn.parse("param think = 2 s").params[0].value
    Num(value=2, unit='s')
    """
    name: str
    value: Expr


@dataclass(frozen=True)
class Term:
    """``count color`` in a marking or arc inscription; color None = uncolored token.

    >>> import qpn
    >>> qpn.parse("colors job = {a, b}\\nplace idle : job init 2 a, b").places[0].init
    (Term(count=Num(value=2, unit=None), color=Ref(name='a')),
     Term(count=Num(value=1, unit=None), color=Ref(name='b')))
    """
    count: Expr
    color: Expr | None = None


@dataclass(frozen=True)
class Queue(Declaration):
    """Queue of a queueing place: discipline and servers (shared when declared alone).

    ``servers`` is an expression; ``Num(inf)`` means infinitely many.
    ``quantum`` and ``switch`` (context-switch cost) apply to RR only;
    ``preemptive`` to PRIO only.  ``speed`` (PS only) makes the queue load dependent:
    its total service capacity with ``n`` tokens present, a table (a tuple: entry n-1,
    the last one for more tokens) or one expression in ``n``; None: ``min(n, servers)``.
    A flow-equivalent server (a subnet replaced by its throughput by population) is a
    ``ps`` queue with exponential service of mean 1 and ``speed`` its throughputs.

    >>> import qpn
    >>> qpn.parse("shared queue cpu : ps servers 2\\nplace a on cpu service exp(1)").queues[0]
    Queue(name='cpu', discipline='ps', servers=Num(value=2, unit=None), quantum=None,
          switch=None, preemptive=True, speed=None)
    """
    name: str
    discipline: str
    servers: Expr = Num(1)
    quantum: Expr | None = None
    switch: Expr | None = None
    preemptive: bool = True
    speed: "tuple[Expr, ...] | Expr | None" = None


@dataclass(frozen=True)
class Service:
    """Service-time distribution of one color (None = every color).

    >>> import qpn
    >>> net = qpn.parse("colors req = {get, post}\\n"
    ...                 "place cpu : req queue ps service get: exp(5 ms), post: exp(10 ms)")
    >>> net.places[0].service[1]
    Service(color=Ref(name='post'), dist=Exp(mean_=Num(value=10, unit='ms')))
    """
    color: Expr | None
    dist: Distribution


@dataclass(frozen=True)
class Place(Declaration):
    """An ordinary place: ``place buffer : job capacity 10 init 2 a``.

    >>> import qpn
    >>> qpn.parse("colors job = {a, b}\\nplace buffer : job capacity 10 init 2 a").places[0]
    Place(name='buffer', colors='job', capacity=Num(value=10, unit=None),
          init=(Term(count=Num(value=2, unit=None), color=Ref(name='a')),), departure='normal')
    """
    name: str
    colors: str | None = None      # color set name; None = plain tokens
    capacity: Expr | None = None
    init: tuple[Term, ...] = ()
    departure: str = "normal"


@dataclass(frozen=True)
class QueueingPlace(Place):
    """A queue plus a depository. ``queue`` is an inline :class:`Queue` or the
    name of a shared queue.

    >>> import qpn
    >>> cpu = qpn.parse("place cpu queue ps servers 2 service exp(10 ms) init 3").places[0]
    >>> cpu.queue.discipline, cpu.queue.servers, cpu.service[0].dist
    ('ps', Num(value=2, unit=None), Exp(mean_=Num(value=10, unit='ms')))
    """
    queue: Queue | str = None  # type: ignore[assignment]
    service: tuple[Service, ...] = ()
    priority: tuple[tuple[Expr | None, Expr], ...] = ()  # (color or None, level)

    @property
    def queue_name(self) -> str:
        """The name of the place's queue (inline or shared).

        >>> import qpn
        >>> net = qpn.parse("shared queue cpu : ps\\nplace a on cpu service exp(1)\\n"
        ...                 "place b queue fcfs service exp(1)")
        >>> [p.queue_name for p in net.places]
        ['cpu', 'b']
        """
        return self.queue if isinstance(self.queue, str) else self.queue.name


@dataclass(frozen=True)
class Port(Place):
    """Interface place of a subnet: ``input`` receives tokens from outside,
    ``output`` gives tokens to the outside.

    >>> import qpn
    >>> qpn.load("models/subnets.qpn").subnets[0].items[0]
    Port(name='requests', colors='req', capacity=None, init=(), departure='normal', direction='input')
    """
    direction: str = "input"


@dataclass(frozen=True)
class Arc:
    """Tokens of one place in a mode: ``cpu(2 x, a)``; inhibitor threshold for ``unless``.

    >>> import qpn
    >>> net = qpn.parse("place a init 2\\nplace b\\ntransition t : 2 a -> b unless 3 b")
    >>> net.transitions[0].modes[0].inhibitors
    (Arc(place='b', terms=(Term(count=Num(value=3, unit=None), color=None),)),)
    """
    place: str
    terms: tuple[Term, ...]
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Mode(Declaration):
    """One way a transition can fire.

    >>> import qpn
    >>> net = qpn.parse("place a init 1\\nplace b\\nplace c\\ntransition t {\\n"
    ...                 "mode fast : a -> b weight 0.9\\nmode slow : a -> c weight 0.1\\n}")
    >>> [(m.name, m.outputs[0].place, m.weight) for m in net.transitions[0].modes]
    [('fast', 'b', Num(value=0.9, unit=None)), ('slow', 'c', Num(value=0.1, unit=None))]
    """
    name: str | None
    inputs: tuple[Arc, ...] = ()
    outputs: tuple[Arc, ...] = ()
    inhibitors: tuple[Arc, ...] = ()
    guard: Expr | None = None
    weight: Expr | None = None          # immediate
    delay: Distribution | None = None   # timed


@dataclass(frozen=True)
class Transition(Declaration):
    """``kind`` is 'immediate' or 'timed'. ``servers`` (timed): Num(1) single,
    k, or Num(inf) infinite-server semantics; ``priority`` (immediate).

    >>> import qpn
    >>> net = qpn.parse("place a init 1\\nplace b\\ntransition t servers 2 : a -> b delay exp(1)")
    >>> t = net.transitions[0]
    >>> t.kind, t.servers, t.modes[0].delay
    ('timed', Num(value=2, unit=None), Exp(mean_=Num(value=1, unit=None)))
    """
    name: str
    kind: str
    modes: tuple[Mode, ...]
    priority: Expr | None = None
    servers: Expr | None = None


@dataclass(frozen=True)
class SubnetParam:
    """A parameter of a subnet, with its default (None: the instance must give it).

    >>> import qpn
    >>> qpn.load("models/subnets.qpn").subnets[0].params
    (SubnetParam(name='threads', default=Num(value=2, unit=None)),
     SubnetParam(name='demand', default=Num(value=10, unit='ms')))
    """
    name: str
    default: Expr | None = None
    loc: Loc | None = _meta()


@dataclass(frozen=True)
class Subnet(Declaration):
    """A net template: parameters, ports and a body, instantiated by name.

    >>> import qpn
    >>> sub = qpn.load("models/subnets.qpn").subnets[0]
    >>> sub.name, [p.name for p in sub.params], [type(i).__name__ for i in sub.items][-2:]
    ('Server', ['threads', 'demand'], ['Transition', 'Transition'])
    """
    name: str
    params: tuple[SubnetParam, ...]
    items: tuple[Any, ...]

    @cached_property
    def ports(self) -> dict[str, Port]:
        """The subnet's ports by name.

        >>> import qpn
        >>> ports = qpn.load("models/subnets.qpn").subnets[0].ports
        >>> [(name, p.direction) for name, p in ports.items()]
        [('requests', 'input'), ('replies', 'output')]
        """
        return {i.name: i for i in self.items if isinstance(i, Port)}


@dataclass(frozen=True)
class Instance(Declaration):
    """``instance web = Server(threads = 8)``.

    >>> import qpn
    >>> qpn.load("models/subnets.qpn").instances[1]
    Instance(name='back', subnet='Server', args=(('demand', Num(value=20, unit='ms')),))
    """
    name: str
    subnet: str
    args: tuple[tuple[str, Expr], ...] = ()


@dataclass(frozen=True)
class Include(Declaration):
    """``include "lib.qpn"``: declarations of another file, by reference.

    >>> import qpn
    >>> inc = qpn.load("models/include_demo.qpn").items[0]
    >>> inc, inc.net.name, [c.name for c in inc.net.colorsets]
    (Include(path='lib/resources.qpn'), 'resources', ['req'])
    """
    path: str
    net: "NetLike | None" = field(default=None, compare=False, repr=False)


Item = Union[Param, EnumColors, RangeColors, RecordColors, Queue, Place, QueueingPlace,
             Port, Transition, Subnet, Instance, Include]  # and qpn.software.ast.Software


class NetLike(Protocol):
    """What an included file's item and the functions over a net (flattening, parameters,
    printing) read of a net.  :class:`qpn.net.Net` is its implementation; naming this
    protocol instead lets those modules, which ``Net`` itself uses, type a net without
    importing it (no import cycle, not even through annotations).

    >>> import qpn
    >>> net: NetLike = qpn.parse("param n = 1\\nplace p init n")   # a structural type
    >>> [type(i).__name__ for i in net.all_items], net.is_flat
    (['Param', 'Place'], True)
    """
    name: str
    items: tuple
    doc: str
    trailer: str

    @property
    def all_items(self) -> tuple: ...
    @property
    def params(self) -> list[Param]: ...
    @property
    def subnets(self) -> list[Subnet]: ...
    @property
    def instances(self) -> list[Instance]: ...
    @property
    def is_flat(self) -> bool: ...


#: a function that takes some net and returns another returns one of the same class
NetT = TypeVar("NetT", bound=NetLike)


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
