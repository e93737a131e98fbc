"""The net: a model's declarations in source order, with typed views and operations.

:class:`Net` holds the items of :mod:`qpn.model` as written (``items``) so the
printer can write them back canonically; the typed views (``places``,
``transitions`` ...) merge included files and expand ``software`` blocks.  The
operations are the functions of their own modules, offered as methods for
convenience: :func:`qpn.flatten.flatten`, :func:`qpn.params.with_params`,
:func:`qpn.params.param_values` and :func:`dsl.printer.print_net`.  None of
those modules imports this one, so the model's modules form no import cycle.

>>> import qpn
>>> net = qpn.parse("param n = 2\\nplace idle init n\\nplace busy\\ntransition t : idle -> busy")
>>> net.with_params(n=3).param_values(), net.text().splitlines()[4]
({'n': 3}, 'place idle init n')
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable

from qpn.dsl.printer import print_net

from .flatten import flatten
from .model import (ColorSet, EnumColors, Include, Instance, Item, Param, Place, Queue, QueueingPlace,
                    RangeColors, RecordColors, Subnet, Transition)
from .params import param_values, with_params
from .software import expand
from .software.ast import Software


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
    def _collect(self, core: list, software: list, seen: set | None = None) -> None:
        # includes are a set: a file included twice (a diamond: a.qpn and b.qpn both
        # include lib.qpn) contributes its declarations once
        seen = set() if seen is None else seen
        for it in self.items:
            if isinstance(it, Include) and it.net is not None:
                key = os.path.realpath(it.net.path) if it.net.path else id(it.net)
                if key not in seen:
                    seen.add(key)
                    it.net._collect(core, software, seen)
            elif isinstance(it, Software):
                software.append(it)
            else:
                core.append(it)

    @cached_property
    def software(self) -> tuple:
        """The ``software { ... }`` blocks (own and included).

        >>> import qpn
        >>> net = qpn.load("models/sw_server.qpn")
        >>> len(net.software), net.is_flat
        (1, False)
        """
        core: list = []
        software: list = []
        self._collect(core, software)
        return tuple(software)

    @cached_property
    def all_items(self) -> tuple[Item, ...]:
        """Every declaration: included files merged, software blocks expanded
        into places and transitions (:mod:`qpn.software`).

        >>> import qpn
        >>> net = qpn.load("models/include_demo.qpn")
        >>> type(net.items[0]).__name__, [type(i).__name__ for i in net.all_items[:2]]
        ('Include', ['EnumColors', 'Subnet'])
        """
        core: list = []
        software: list = []
        self._collect(core, software)
        if software:
            core.extend(expand(software, core))
        return tuple(core)

    def _of(self, *types) -> list:
        return [i for i in self.all_items if isinstance(i, types)]

    @cached_property
    def params(self) -> list[Param]:
        """The net's parameters, in text order (includes merged, software expanded).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> [p.name for p in net.params]
        ['n']
        """
        return self._of(Param)

    @cached_property
    def colorsets(self) -> list[ColorSet]:
        """The net's color sets, in text order (includes merged, software expanded).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> [c.name for c in net.colorsets]
        ['job']
        """
        return self._of(EnumColors, RangeColors, RecordColors)

    @cached_property
    def queues(self) -> list[Queue]:
        """The net's shared queues, in text order (includes merged, software expanded).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> [q.name for q in net.queues]
        ['cpu']
        """
        return self._of(Queue)

    @cached_property
    def places(self) -> list[Place]:
        """The net's places (ordinary, queueing and ports), in text order (includes merged, software expanded).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> [p.name for p in net.places]
        ['idle', 'busy']
        """
        return self._of(Place)

    @cached_property
    def transitions(self) -> list[Transition]:
        """The net's transitions, in text order (includes merged, software expanded).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> [t.name for t in net.transitions]
        ['go', 'back']
        """
        return self._of(Transition)

    @cached_property
    def subnets(self) -> list[Subnet]:
        """The net's subnet templates, in text order (includes merged, software expanded).

        >>> import qpn
        >>> [s.name for s in qpn.load("models/include_demo.qpn").subnets]
        ['Disk']
        """
        return self._of(Subnet)

    @cached_property
    def instances(self) -> list[Instance]:
        """The net's subnet instances, in text order (includes merged, software expanded).

        >>> import qpn
        >>> [(i.name, i.subnet) for i in qpn.load("models/include_demo.qpn").instances]
        [('ssd', 'Disk'), ('hdd', 'Disk')]
        """
        return self._of(Instance)

    @cached_property
    def place_map(self) -> dict[str, Place]:
        """Places by name.

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> net.place_map["busy"].queue
        'cpu'
        """
        return {p.name: p for p in self.places}

    @cached_property
    def transition_map(self) -> dict[str, Transition]:
        """Transitions by name.

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> net.transition_map["go"].kind
        'immediate'
        """
        return {t.name: t for t in self.transitions}

    @cached_property
    def colorset_map(self) -> dict[str, ColorSet]:
        """Color sets by name.

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> net.colorset_map["job"].values
        ('a', 'b')
        """
        return {c.name: c for c in self.colorsets}

    @cached_property
    def queue_map(self) -> dict[str, Queue]:
        """Shared queues and the inline queues of queueing places, by name.

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> net.queue_map["cpu"].discipline
        'ps'
        """
        out = {q.name: q for q in self.queues}
        for p in self.places:
            if isinstance(p, QueueingPlace) and isinstance(p.queue, Queue):
                out.setdefault(p.queue.name, p.queue)
        return out

    @cached_property
    def is_flat(self) -> bool:
        """Whether the net has no subnets, instances or software blocks to expand.

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> net.is_flat
        True
        """
        return not self.instances and not self.subnets and not self.software

    # -- operations -----------------------------------------------------------
    def flatten(self) -> "Net":
        """The flat net solvers compile (element names become paths).

        >>> import qpn
        >>> flat = qpn.load("models/subnets.qpn").flatten()
        >>> [p.name for p in flat.places][:4], flat.is_flat
        (['front.requests', 'front.replies', 'front.idle', 'front.cpu'], True)
        """
        return flatten(self)

    def with_params(self, **values: Any) -> "Net":
        """A copy with parameters overridden: ``net.with_params(threads=8)``.

        Values are numbers, expressions, or text such as ``"20 ms"``.  Names
        may be top-level parameters or ``instance.param`` arguments.

        >>> import qpn
        >>> net = qpn.load("models/subnets.qpn")
        >>> new = net.with_params(users=20, think="500 ms", **{"front.threads": 8})
        >>> new.param_values(), new.instances[0].args[0]
        ({'users': 20, 'think': 0.5}, ('threads', Num(value=8, unit=None)))
        """
        return with_params(self, values)

    def param_values(self, **overrides: Any) -> dict[str, Any]:
        """Numeric values of every parameter (after overrides).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> net.param_values(), net.param_values(n=5)
        ({'n': 2}, {'n': 5})
        """
        net = self.with_params(**overrides) if overrides else self
        return param_values(net)

    def replace_items(self, items: Iterable[Item]) -> "Net":
        """A copy with other declarations (the net's name and source kept).

        >>> import qpn
        >>> net = qpn.parse("colors job = {a, b}\\nparam n = 2\\nshared queue cpu : ps\\nplace idle : job init n a, b\\nplace busy : job on cpu service exp(1)\\ntransition go : idle(x) -> busy(x)\\ntransition back : busy(x) -> idle(x)")
        >>> [p.name for p in net.replace_items(net.items[:2]).params]
        ['n']
        """
        return replace(self, items=tuple(items))

    def text(self) -> str:
        """Canonical DSL text of this net.

        >>> import qpn
        >>> net = qpn.parse("param n=2\\nplace p init n")
        >>> net.text().splitlines()[2:], qpn.parse(net.text()) == net     # it parses back
        (['param n = 2', '', 'place p init n'], True)
        """
        return print_net(self)

    def __str__(self) -> str:
        n = lambda xs: len(xs)  # noqa: E731
        return (f"Net {self.name!r}: {n(self.places)} places, {n(self.transitions)} transitions, "
                f"{n(self.colorsets)} color sets, {n(self.params)} parameters, "
                f"{n(self.subnets)} subnets, {n(self.instances)} instances")
