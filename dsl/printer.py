"""Canonical text of a net: ``parse(print_net(net)) == net``.

Comments attached to declarations (their ``doc``) are written back above
them, so formatting a file never loses what its author wrote.
"""
from __future__ import annotations

import math
from typing import Iterable

from qpn import disciplines
from qpn.expr import Expr, Num, Ref, TupleExpr, fmt
from qpn.model import (EnumColors, Include, Instance, Mode, NetLike, Param, Place, Port, Queue,
                       QueueingPlace, RangeColors, RecordColors, Subnet, Term, Transition)

from qpn.software.ast import Software

from .printing import INDENT, WIDTH, doc_lines, fmt_dist, wrap_option  # noqa: F401  (fmt_dist: this module's API)
from .software_printer import fmt_software


def _is_nat(e) -> bool:
    return type(e) is Num and e.unit is None and isinstance(e.value, int) and e.value >= 0


def fmt_count(e: Expr) -> str:
    """A count before a place or color: 3, n or (expr)."""
    if _is_nat(e) or (type(e) is Ref):
        return fmt(e)
    return f"({fmt(e)})"


def fmt_color(e: Expr) -> str:
    """A color in a term: a, 3, (a, 3) or (expr)."""
    if _is_nat(e) or type(e) is Ref or type(e) is TupleExpr:
        return fmt(e)
    return f"({fmt(e)})"


def fmt_term(t: Term) -> str:
    """A term of a marking or arc: ``a``, ``3 a``, ``n (a, 2)``."""
    if type(t.count) is Num and t.count.value == 1 and t.count.unit is None and isinstance(t.count.value, int):
        return fmt_color(t.color)
    return f"{fmt_count(t.count)} {fmt_color(t.color)}"


def fmt_marking(p: Place) -> str:
    """A place's initial marking as after ``init``."""
    if p.colors is None:
        return ", ".join(fmt_color(t.count) for t in p.init)
    return ", ".join(fmt_term(t) for t in p.init)


def fmt_arc(a) -> str:
    """An arc: ``cpu``, ``2 cpu``, ``cpu(x)``, ``cpu(2 a, b)``."""
    if len(a.terms) == 1 and a.terms[0].color is None:
        c = a.terms[0].count
        if type(c) is Num and c.value == 1 and isinstance(c.value, int) and c.unit is None:
            return a.place
        return f"{fmt_count(c)} {a.place}"
    return f"{a.place}({', '.join(fmt_term(t) for t in a.terms)})"


def fmt_qspec(q: Queue) -> str:
    """A queue's specification: discipline, then servers, quantum, ... when not default."""
    parts = [q.discipline]
    d = disciplines.find(q.discipline)
    default_servers = Num(math.inf) if d is not None and d.infinite_servers else Num(1)
    if q.servers != default_servers or type(q.servers) is not Num:
        parts.append(f"servers {fmt(q.servers)}")
    if q.quantum is not None:
        parts.append(f"quantum {fmt(q.quantum)}")
    if q.switch is not None:
        parts.append(f"switch {fmt(q.switch)}")
    if d is not None and d.takes_priority and not q.preemptive:
        parts.append("nonpreemptive")
    if isinstance(q.speed, tuple):
        parts.append(f"speed [{', '.join(fmt(e) for e in q.speed)}]")
    elif q.speed is not None:
        parts.append(f"speed {fmt(q.speed)}")
    return " ".join(parts)


def _place_opts(p: Place) -> list[str]:
    opts = []
    if isinstance(p, QueueingPlace):
        opts.append(f"on {p.queue}" if isinstance(p.queue, str) else f"queue {fmt_qspec(p.queue)}")
        if len(p.service) == 1 and p.service[0].color is None:
            opts.append(f"service {fmt_dist(p.service[0].dist)}")
        else:
            opts.append("service " + ", ".join(f"{fmt_color(s.color)}: {fmt_dist(s.dist)}"
                                               for s in p.service))
        if p.priority:
            if len(p.priority) == 1 and p.priority[0][0] is None:
                opts.append(f"priority {fmt(p.priority[0][1])}")
            else:
                opts.append("priority " + ", ".join(f"{fmt_color(c)}: {fmt(lv)}" for c, lv in p.priority))
    if p.departure != "normal":
        opts.append(f"departure {p.departure}")
    if p.capacity is not None:
        opts.append(f"capacity {fmt(p.capacity)}")
    if p.init:
        opts.append(f"init {fmt_marking(p)}")
    return opts


def fmt_place(p: Place, indent: str) -> list[str]:
    """The lines of a place or port declaration."""
    head = f"{p.direction} {p.name}" if isinstance(p, Port) else f"place {p.name}"
    if p.colors is not None:
        head += f" : {p.colors}"
    opts = _place_opts(p)
    one = " ".join([head] + opts)
    simple = not isinstance(p, QueueingPlace) or (len(opts) <= 2 and len(p.service) == 1)
    if simple and len(indent) + len(one) <= WIDTH:
        return [indent + one]
    lines = [indent + head]
    for o in opts:
        lines += wrap_option(o, indent + INDENT)
    return lines


def fmt_mode_body(m: Mode) -> str:
    """``inputs -> outputs`` with inhibitors, guard, weight and delay."""
    s = ", ".join(fmt_arc(a) for a in m.inputs)
    s = (s + " -> " if s else "-> ") + ", ".join(fmt_arc(a) for a in m.outputs)
    s = s.rstrip()
    if m.guard is not None:
        s += f" when {fmt(m.guard)}"
    if m.inhibitors:
        s += " unless " + ", ".join(fmt_arc(a) for a in m.inhibitors)
    if m.weight is not None:
        s += f" weight {fmt(m.weight)}"
    if m.delay is not None:
        s += f" delay {fmt_dist(m.delay)}"
    return s


def fmt_transition(t: Transition, indent: str) -> list[str]:
    """The lines of a transition declaration (one line, or a block of modes)."""
    head = f"transition {t.name}"
    if t.kind == "timed" and not any(m.delay is not None for m in t.modes):
        head += " timed"
    if t.priority is not None:
        head += f" priority {fmt(t.priority)}"
    if t.servers is not None:
        head += f" servers {fmt(t.servers)}"
    if len(t.modes) == 1 and t.modes[0].name is None and not t.modes[0].doc:
        return [f"{indent}{head} : {fmt_mode_body(t.modes[0])}"]
    out = [f"{indent}{head} {{"]
    for m in t.modes:
        out += doc_lines(m.doc, indent + INDENT)
        name = f" {m.name}" if m.name else ""
        out.append(f"{indent}{INDENT}mode{name} : {fmt_mode_body(m)}")
    out.append(f"{indent}}}")
    return out


def fmt_item(it, indent: str = "") -> list[str]:
    """The lines of any declaration (its doc comment above it)."""
    if isinstance(it, Param):
        lines = [f"{indent}param {it.name} = {fmt(it.value)}"]
    elif isinstance(it, EnumColors):
        of = f"{it.parent} " if it.parent else ""
        lines = [f"{indent}colors {it.name} = {of}{{{', '.join(it.values)}}}"]
    elif isinstance(it, RangeColors):
        lines = [f"{indent}colors {it.name} = {fmt(it.lo)} .. {fmt(it.hi)}"]
    elif isinstance(it, RecordColors):
        lines = [f"{indent}colors {it.name} = ({', '.join(f'{f}: {c}' for f, c in it.fields)})"]
    elif isinstance(it, Queue):
        lines = [f"{indent}shared queue {it.name} : {fmt_qspec(it)}"]
    elif isinstance(it, Place):
        lines = fmt_place(it, indent)
    elif isinstance(it, Transition):
        lines = fmt_transition(it, indent)
    elif isinstance(it, Instance):
        args = ", ".join(f"{n} = {fmt(e)}" for n, e in it.args)
        lines = [f"{indent}instance {it.name} = {it.subnet}({args})"]
    elif isinstance(it, Include):
        lines = [f'{indent}include "{it.path}"']
    elif isinstance(it, Software):
        lines = fmt_software(it, indent)
    elif isinstance(it, Subnet):
        ps = ", ".join(p.name if p.default is None else f"{p.name} = {fmt(p.default)}" for p in it.params)
        lines = [f"{indent}subnet {it.name}({ps}) {{"]
        lines += _items(it.items, indent + INDENT)
        lines.append(f"{indent}}}")
    else:
        raise TypeError(f"cannot print {it!r}")
    return doc_lines(getattr(it, "doc", ""), indent) + lines


def _group(it) -> str:
    if isinstance(it, (EnumColors, RangeColors, RecordColors)):
        return "colors"
    if isinstance(it, Port):
        return "port"
    return type(it).__name__ if not isinstance(it, Place) else "place"


def _items(items: Iterable, indent: str) -> list[str]:
    out: list[str] = []
    prev = None
    for it in items:
        block = fmt_item(it, indent)
        doc = bool(getattr(it, "doc", ""))
        multi = len(block) - len(doc_lines(getattr(it, "doc", ""), indent)) > 1
        if out and (prev is None or prev[0] != _group(it) or multi or doc or prev[1]):
            out.append("")
        out.extend(block)
        prev = (_group(it), multi)
    return out


def print_net(net: NetLike) -> str:
    """Canonical model text, ending with a newline.

    >>> import qpn
    >>> print(print_net(qpn.parse("place  idle init 2 place busy transition t:idle->busy")), end="")
    net model
    <BLANKLINE>
    place idle init 2
    place busy
    <BLANKLINE>
    transition t : idle -> busy
    """
    lines = doc_lines(net.doc, "")
    if lines:
        lines.append("")
    lines.append(f"net {net.name}")
    body = _items(net.items, "")
    if body:
        lines.append("")
        lines += body
    if net.trailer:
        lines.append("")
        lines += doc_lines(net.trailer, "")
    return "\n".join(lines) + "\n"
