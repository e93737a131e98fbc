"""Canonical arcs and markings, once the colors of every place are known.

The surface syntax allows ``2 forks`` (plain tokens), ``cpu(x, 2 a)`` and
``2 cpu(x)`` (colored); the model stores one form: an :class:`Arc` with a
tuple of :class:`Term` (count, color), color ``None`` for plain tokens.
"""
from __future__ import annotations

from dataclasses import replace

from qpn.errors import ModelError
from qpn.expr import BinOp, Num
from qpn.model import (Arc, Include, Instance, Place, Subnet, Term, Transition)

_UNKNOWN = object()


def _mul(a, b):
    if type(a) is Num and type(b) is Num and a.unit is None and b.unit is None \
            and isinstance(a.value, int) and isinstance(b.value, int):
        return Num(a.value * b.value)
    if type(a) is Num and a.value == 1 and a.unit is None:
        return b
    if type(b) is Num and b.value == 1 and b.unit is None:
        return a
    return BinOp("*", a, b)


def norm_terms(terms, colors, place: str, where, *, arc_count=None, what="arc"):
    """Normalize raw terms for a place holding ``colors`` (None = plain tokens)."""
    if colors is None:
        if not terms:
            return (Term(arc_count if arc_count is not None else Num(1), None),)
        out = []
        for t in terms:
            if t.count is not None and t.color is not None:
                raise ModelError(f"place '{place}' holds plain tokens (no colors)", where,
                                 hint=f"write '3 {place}' for three tokens" if what == "arc"
                                 else "write 'init 3' for three tokens")
            if what == "arc":
                raise ModelError(f"place '{place}' holds plain tokens; it takes no '(...)'", where,
                                 hint=f"write '2 {place}' for two tokens")
            out.append(Term(t.color if t.color is not None else t.count, None))
        if len(out) > 1:
            raise ModelError(f"place '{place}' holds plain tokens; give one count", where)
        return tuple(out)
    if not terms:
        cs = "" if colors is _UNKNOWN else f" of color set '{colors}'"
        raise ModelError(f"place '{place}' holds colored tokens{cs}; say which", where,
                         hint=f"write '{place}(x)' to bind a variable or '{place}(a)' for color a")
    out = []
    for t in terms:
        count = t.count if t.count is not None else Num(1)
        if arc_count is not None:
            count = _mul(arc_count, count)
        out.append(Term(count, t.color))
    return tuple(out)


def _norm_arc(raw, scope):
    colors = scope.get(raw.place, _UNKNOWN)
    if colors is _UNKNOWN and not raw.terms:
        colors = None  # undefined place: validation reports it
    return Arc(raw.place, norm_terms(raw.terms or (), colors, raw.place, raw.loc,
                                     arc_count=raw.count), raw.loc)


def _norm_transition(t: Transition, scope) -> Transition:
    modes = []
    for m in t.modes:
        modes.append(replace(
            m,
            inputs=tuple(_norm_arc(a, scope) for a in m.inputs),
            outputs=tuple(_norm_arc(a, scope) for a in m.outputs),
            inhibitors=tuple(_norm_arc(a, scope) for a in m.inhibitors)))
    return replace(t, modes=tuple(modes))


def _norm_place(p: Place, colorsets) -> Place:
    if not p.init:
        return p
    colors = p.colors
    return replace(p, init=norm_terms(p.init, colors, p.name, p.loc, what="init"))


def _scope(items, subnets) -> dict:
    scope = {}
    for it in items:
        if isinstance(it, Include) and it.net is not None:
            scope.update(_scope(it.net.items, subnets))
        elif isinstance(it, Place):
            scope[it.name] = it.colors
        elif isinstance(it, Instance):
            sub = subnets.get(it.subnet)
            if sub is not None:
                for port in sub.ports.values():
                    scope[f"{it.name}.{port.name}"] = port.colors
    return scope


def _subnets(items) -> dict:
    out = {}
    for it in items:
        if isinstance(it, Include) and it.net is not None:
            out.update(_subnets(it.net.items))
        elif isinstance(it, Subnet):
            out[it.name] = it
    return out


def normalize(items: list) -> list:
    """The parsed items in their normal forms (arcs resolved against place colors, in
    subnets too)."""
    subnets = _subnets(items)
    return _normalize(items, subnets)


def _normalize(items, subnets):
    scope = _scope(items, subnets)
    out = []
    for it in items:
        if isinstance(it, Transition):
            out.append(_norm_transition(it, scope))
        elif isinstance(it, Place):
            out.append(_norm_place(it, None))
        elif isinstance(it, Subnet):
            out.append(replace(it, items=tuple(_normalize(list(it.items), subnets))))
        else:
            out.append(it)
    return out
