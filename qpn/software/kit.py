"""Collects the core items a software block expands into.

A :class:`Kit` hands out places, shared queues, color sets and transitions
with checked, unique path names, and creates counter places on first use
(``m.waiting`` exists only if some thread can wait for ``m``).

>>> kit = Kit()
>>> kit.place("m.free", init=1).name, arc("m.free").terms[0].count
('m.free', Num(value=1, unit=None))
>>> [i.name for i in kit.items()]
['m.free']
"""
from __future__ import annotations

from typing import Iterable

from ..errors import Loc, ModelError
from ..expr import BinOp, Expr, Num, Ref, TupleExpr, as_expr
from ..model import (Arc, Mode, Place, Queue, QueueingPlace, RangeColors, RecordColors, Service,
                     Term, Transition)

ONE = Num(1)


def arc(place: str, count: Expr | int = 1, color: Expr | None = None, loc: Loc | None = None) -> Arc:
    """An arc of ``count`` tokens (of ``color``; None = plain) on ``place``."""
    return Arc(place, (Term(as_expr(count), color),), loc)


def mul(a: Expr, b: Expr) -> Expr:
    """``a * b``, folding ones."""
    if a == ONE:
        return b
    if b == ONE:
        return a
    return BinOp("*", a, b)


def conj(guards: Iterable[Expr]) -> Expr | None:
    """The guards joined by ``and`` (None for none)."""
    out = None
    for g in guards:
        out = g if out is None else BinOp("and", out, g)
    return out


def ctx_color(values: list[Expr]) -> Expr | None:
    """Color of a thread token from its loop counters (None: a plain token)."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return TupleExpr(tuple(values))


def ctx_vars(depth: int) -> list[Expr]:
    """Variables binding the loop counters of a thread token: _i1, _i2, ..."""
    return [Ref(f"_i{k + 1}") for k in range(depth)]


class Kit:
    """Unique names, counters on demand, items in a readable order."""

    def __init__(self) -> None:
        self._colors: dict[str, object] = {}
        self._queues: dict[str, Queue] = {}
        self._places: dict[str, Place] = {}
        self._transitions: dict[str, Transition] = {}
        self.taken: dict[str, Loc | None] = {}     # names used by core items (clashes)
        self.optional: set[str] = set()            # monitor places dropped if nothing uses them

    # -- names -------------------------------------------------------------------
    def _claim(self, name: str, loc: Loc | None, what: str) -> None:
        if name in self._places or name in self._transitions or name in self.taken:
            raise ModelError(f"the software layer needs the name '{name}' for a {what}, but it "
                             "is already used", loc,
                             hint="rename the step (as NAME) or the declaration")

    # -- items -------------------------------------------------------------------
    def colorset(self, cs) -> str:
        """Declare color set ``cs`` (once); its name."""
        if cs.name not in self._colors:
            self._colors[cs.name] = cs
        return cs.name

    def colorset_loc(self, name: str) -> Loc | None:
        """Where the color set ``name`` comes from (the step that declared it)."""
        cs = self._colors.get(name)
        return cs.loc if cs is not None else None

    def range_colors(self, name: str, hi: Expr, loc: Loc | None) -> str:
        """Declare the color set ``name = 1 .. hi``; its name."""
        return self.colorset(RangeColors(name, ONE, hi, loc=loc))

    def record_colors(self, name: str, fields: tuple[str, ...], loc: Loc | None) -> str:
        """Declare a record color set with one field per color set in ``fields``."""
        return self.colorset(RecordColors(name, tuple((f"i{k + 1}", f) for k, f in enumerate(fields)),
                                          loc=loc))

    def queue(self, name: str, discipline: str, servers: Expr, quantum=None, switch=None,
              loc: Loc | None = None) -> str:
        """Declare a shared queue (a ModelError if the name is taken); its name."""
        if name in self._queues:
            raise ModelError(f"duplicate queue '{name}'", loc)
        self._queues[name] = Queue(name, discipline, servers=servers, quantum=quantum,
                                   switch=switch, loc=loc)
        return name

    def place(self, name: str, *, colors: str | None = None, init: Expr | int | None = None,
              capacity: Expr | None = None, loc: Loc | None = None, doc: str = "",
              optional: bool = False) -> Place:
        """Declare an ordinary place (``optional``: dropped if nothing uses it)."""
        self._claim(name, loc, "place")
        if optional:
            self.optional.add(name)
        p = Place(name, colors=colors, capacity=capacity,
                  init=(Term(as_expr(init), None),) if init is not None else (), doc=doc, loc=loc)
        self._places[name] = p
        return p

    def queueing_place(self, name: str, queue: "Queue | str", service, *, colors: str | None = None,
                       loc: Loc | None = None, doc: str = "") -> Place:
        """Declare a queueing place on ``queue`` (inline, or a shared queue's name)."""
        self._claim(name, loc, "place")
        p = QueueingPlace(name, colors=colors, queue=queue, service=(Service(None, service),),
                          doc=doc, loc=loc)
        self._places[name] = p
        return p

    def delay_place(self, name: str, service, *, colors: str | None = None,
                    loc: Loc | None = None) -> Place:
        """An infinite-server place: every token waits out its own time."""
        return self.queueing_place(name, Queue(name, "is", servers=Num(float("inf")), loc=loc),
                                   service, colors=colors, loc=loc)

    def counter(self, name: str, loc: Loc | None = None, init: Expr | int | None = None) -> str:
        """A plain place created on first use (waiting threads, holders, ...)."""
        if name not in self._places:
            self.place(name, init=init, loc=loc)
        return name

    def has(self, name: str) -> bool:
        """Whether a place of that name was declared."""
        return name in self._places

    def transition(self, name: str, modes: list[Mode], *, kind: str = "immediate",
                   servers: Expr | None = None, priority: Expr | None = None,
                   loc: Loc | None = None) -> Transition:
        """Declare a transition with ``modes``."""
        self._claim(name, loc, "transition")
        t = Transition(name, kind, tuple(modes), priority=priority, servers=servers, loc=loc)
        self._transitions[name] = t
        return t

    def items(self) -> list:
        """Color sets, shared queues, places, transitions (each in source order)."""
        def order(xs):
            return sorted(xs, key=lambda x: (x.loc.line, x.loc.col) if x.loc is not None
                          else (float("inf"), 0))
        used = {a.place for t in self._transitions.values() for m in t.modes
                for a in m.inputs + m.outputs + m.inhibitors}
        places = [p for p in self._places.values() if p.name in used or p.name not in self.optional]
        return (order(self._colors.values()) + order(self._queues.values())
                + order(places) + order(self._transitions.values()))


__all__ = ["Kit", "arc", "mul", "conj", "ctx_color", "ctx_vars"]
