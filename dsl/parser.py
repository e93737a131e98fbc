"""Parse model text into a :class:`qpn.model.Net`.

>>> from dsl.parser import parse
>>> net = parse("place idle init 2\\nplace busy\\ntransition t : idle -> busy")
>>> net.places[0].init[0].count.value
2
"""
from __future__ import annotations

import math
import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from qpn.distributions import (DISTRIBUTIONS, Det, Empirical, Erlang, Exp, Gamma, HyperExp,
                               HyperExpFit, Lognormal, Normal, Uniform)
from qpn.errors import Loc, ModelError, QPNError, suggest
from qpn.expr import (FUNCTIONS, UNITS, BinOp, Call, Num, Ref, TupleExpr, Unary, evaluate)
from qpn.model import (EnumColors, Include, Instance, Mode, Net, Param, Place, Port, Queue,
                       QueueingPlace, RangeColors, RecordColors, Service, Subnet, SubnetParam,
                       Term, Transition)

from .comments import attach_comments
from .normalize import normalize
from .syntax_errors import syntax_error

GRAMMAR = Path(__file__).with_name("qpn.lark")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # cache=True keeps the LALR tables in a temp file: start-up drops from ~0.4 s
    return Lark(GRAMMAR.read_text(), parser="lalr", propagate_positions=True,
                maybe_placeholders=True, cache=True)


class _RawArc:
    """An arc before place colors are known (normalized by dsl.normalize)."""
    __slots__ = ("count", "place", "terms", "loc")

    def __init__(self, count, place, terms, loc):
        self.count, self.place, self.terms, self.loc = count, place, terms, loc


class _ModeBody:
    __slots__ = ("inputs", "outputs", "opts", "loc")

    def __init__(self, inputs, outputs, opts, loc):
        self.inputs, self.outputs, self.opts, self.loc = inputs, outputs, opts, loc


class _NetName:
    def __init__(self, name, loc):
        self.name, self.loc = name, loc


@v_args(meta=True)
class _Builder(Transformer):
    def __init__(self, file: str, source: str, base_dir: str):
        super().__init__()
        self.file, self.source, self.base_dir = file, source, base_dir

    # -- locations ---------------------------------------------------------
    def loc(self, meta) -> Loc | None:
        if getattr(meta, "empty", True):
            return None
        return Loc(self.file, meta.line, meta.column, meta.end_line, meta.end_column, self.source)

    def tloc(self, tok: Token) -> Loc:
        return Loc(self.file, tok.line, tok.column, tok.end_line or tok.line,
                   tok.end_column or tok.column + len(tok), self.source)

    def err(self, msg, where, **kw) -> ModelError:
        loc = where if isinstance(where, Loc) or where is None else (
            self.tloc(where) if isinstance(where, Token) else self.loc(where))
        return ModelError(msg, loc, **kw)

    # -- top level -----------------------------------------------------------
    def start(self, meta, items):
        return items

    def net_decl(self, meta, c):
        return _NetName(str(c[0]), self.loc(meta))

    def include(self, meta, c):
        return Include(path=str(c[0])[1:-1], loc=self.loc(meta))

    def param(self, meta, c):
        return Param(str(c[0]), c[1], loc=self.loc(meta))

    # -- colors ----------------------------------------------------------------
    def colors(self, meta, c):
        name, (kind, data) = str(c[0]), c[1]
        loc = self.loc(meta)
        if kind == "enum":
            seen = set()
            for tok in data:
                if str(tok) in seen:
                    raise self.err(f"color '{tok}' is listed twice in '{name}'", tok)
                seen.add(str(tok))
            return EnumColors(name, tuple(str(t) for t in data), loc=loc)
        if kind == "range":
            return RangeColors(name, data[0], data[1], loc=loc)
        return RecordColors(name, tuple((str(f), str(s)) for f, s in data), loc=loc)

    def enum_colors(self, meta, c):
        return ("enum", c)

    def range_colors(self, meta, c):
        return ("range", c)

    def record_colors(self, meta, c):
        names = [str(f) for f, _ in c]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise self.err(f"record field '{dup.pop()}' is given twice", meta)
        return ("record", c)

    def field(self, meta, c):
        return (c[0], c[1])

    # -- queues ------------------------------------------------------------------
    def queue_decl(self, meta, c):
        name, spec = str(c[0]), c[1]
        return spec(name, self.loc(meta))

    def qspec(self, meta, c):
        disc_tok, opts = c[0], c[1:]
        disc = str(disc_tok)
        kw: dict[str, Any] = {}
        for key, value, where in opts:
            if key in kw:
                raise self.err(f"'{key}' given twice", where)
            kw[key] = value
        if "quantum" in kw and disc != "rr":
            raise self.err(f"'quantum' applies to rr queues only, not {disc}", opts[[o[0] for o in opts].index("quantum")][2],
                           hint="time-sliced CPUs are 'queue rr quantum 10 ms'")
        if "switch" in kw and disc != "rr":
            raise self.err("'switch' (context-switch cost) applies to rr queues only",
                           opts[[o[0] for o in opts].index("switch")][2])
        if disc == "rr" and "quantum" not in kw:
            raise self.err("an rr queue needs a time slice: 'rr quantum 10 ms'", disc_tok,
                           expected="'quantum <time>' after 'rr'")
        if "preemptive" in kw and disc != "prio":
            raise self.err("'preemptive'/'nonpreemptive' apply to prio queues only",
                           opts[[o[0] for o in opts].index("preemptive")][2])
        if disc == "is" and "servers" in kw:
            raise self.err("an 'is' queue has infinitely many servers; do not give 'servers'",
                           opts[[o[0] for o in opts].index("servers")][2])
        servers = kw.get("servers", Num(math.inf) if disc == "is" else Num(1))

        def build(name, loc):
            return Queue(name, disc, servers=servers, quantum=kw.get("quantum"),
                         switch=kw.get("switch"), preemptive=kw.get("preemptive", True), loc=loc)
        return build

    def q_servers(self, meta, c):
        return ("servers", c[0], self.loc(meta))

    def q_quantum(self, meta, c):
        return ("quantum", c[0], self.loc(meta))

    def q_switch(self, meta, c):
        return ("switch", c[0], self.loc(meta))

    def q_preemptive(self, meta, c):
        return ("preemptive", True, self.loc(meta))

    def q_nonpreemptive(self, meta, c):
        return ("preemptive", False, self.loc(meta))

    # -- places --------------------------------------------------------------------
    def _place_opts(self, opts):
        kw: dict[str, Any] = {}
        for key, value, where in opts:
            if key in kw or (key in ("queue", "on") and ("queue" in kw or "on" in kw)):
                raise self.err(f"'{key}' given twice", where)
            kw[key] = (value, where)
        return kw

    def place(self, meta, c):
        name_tok, cs, opts = c[0], c[1], c[2:]
        name = str(name_tok)
        loc = self.loc(meta)
        kw = self._place_opts(opts)
        common = dict(name=name, colors=str(cs) if cs is not None else None,
                      capacity=kw.get("capacity", (None,))[0],
                      init=tuple(kw.get("init", ((),))[0]), loc=loc)
        is_queue = "queue" in kw or "on" in kw
        if not is_queue:
            for key in ("service", "priority", "departure"):
                if key in kw:
                    raise self.err(f"'{key}' needs a queueing place, but '{name}' has no queue",
                                   kw[key][1], hint=f"add 'queue fcfs' (or another discipline) or "
                                                    f"'on <shared queue>' to place '{name}'")
            return Place(**common)
        queue = kw["queue"][0](name, kw["queue"][1]) if "queue" in kw else str(kw["on"][0])
        service = kw.get("service", ((),))[0]
        if not service:
            raise self.err(f"queueing place '{name}' needs service times", name_tok,
                           expected="'service <distribution>' or 'service a: exp(1 ms), b: ...'")
        return QueueingPlace(**common, queue=queue, service=tuple(service),
                             priority=tuple(kw.get("priority", ((),))[0]),
                             departure=str(kw.get("departure", ("normal",))[0]))

    def port(self, meta, c):
        dir_tok, name_tok, cs, opts = c[0], c[1], c[2], c[3:]
        kw = self._place_opts(opts)
        for key in kw:
            if key not in ("capacity", "init"):
                raise self.err(f"ports are plain places; '{key}' is not allowed on port '{name_tok}'",
                               kw[key][1], hint="put the queueing place inside the subnet and connect it to the port")
        return Port(name=str(name_tok), colors=str(cs) if cs is not None else None,
                    capacity=kw.get("capacity", (None,))[0], init=tuple(kw.get("init", ((),))[0]),
                    direction=str(dir_tok), loc=self.loc(meta))

    def o_queue(self, meta, c):
        return ("queue", c[0], self.loc(meta))

    def o_on(self, meta, c):
        return ("on", c[0], self.loc(meta))

    def o_capacity(self, meta, c):
        return ("capacity", c[0], self.loc(meta))

    def o_departure(self, meta, c):
        return ("departure", str(c[0]), self.loc(meta))

    def o_init(self, meta, c):
        return ("init", c[0], self.loc(meta))

    def o_service(self, meta, c):
        return ("service", c[0], self.loc(meta))

    def o_priority(self, meta, c):
        return ("priority", c[0], self.loc(meta))

    def service_all(self, meta, c):
        return [Service(None, c[0])]

    def service_colors(self, meta, c):
        return list(c)

    def svc(self, meta, c):
        return Service(c[0], c[1])

    def prio_all(self, meta, c):
        return [(None, c[0])]

    def prio_colors(self, meta, c):
        return list(c)

    def pri(self, meta, c):
        return (c[0], c[1])

    # -- terms ------------------------------------------------------------------------
    def terms(self, meta, c):
        return list(c)

    def term(self, meta, c):
        return Term(c[0], c[1])  # count may be None until normalized

    def count_int(self, meta, c):
        return Num(int(c[0]), loc=self.tloc(c[0]))

    def count_name(self, meta, c):
        return Ref(str(c[0]), self.tloc(c[0]))

    def count_expr(self, meta, c):
        return c[0]

    def color_name(self, meta, c):
        return Ref(str(c[0]), self.tloc(c[0]))

    def color_int(self, meta, c):
        return Num(int(c[0]), loc=self.tloc(c[0]))

    def color_expr(self, meta, c):
        return c[0] if len(c) == 1 else TupleExpr(tuple(c), self.loc(meta))

    # -- transitions ---------------------------------------------------------------------
    def transition(self, meta, c):
        name_tok, kind_tok, rest = c[0], c[1], c[2:]
        name = str(name_tok)
        topts: dict[str, Any] = {}
        modes: list[Mode] = []
        for r in rest:
            if isinstance(r, tuple):
                if r[0] in topts:
                    raise self.err(f"'{r[0]}' given twice", r[2])
                topts[r[0]] = r
            elif isinstance(r, _ModeBody):
                modes.append(self._mode(None, r, r.loc))
            else:
                modes.append(r)
        kind = str(kind_tok) if kind_tok is not None else (
            "timed" if any(m.delay is not None for m in modes) else "immediate")
        seen = set()
        for m in modes:
            if m.name is not None:
                if m.name in seen:
                    raise self.err(f"mode '{m.name}' is declared twice in transition '{name}'", m.loc)
                seen.add(m.name)
            if kind == "immediate" and m.delay is not None:
                raise self.err(f"immediate transition '{name}' cannot have a delay", m.loc,
                               hint=f"write 'transition {name} timed ...' or drop the delay")
            if kind == "timed" and m.weight is not None:
                raise self.err(f"timed transition '{name}' has weights only through delays; "
                               "'weight' is for immediate transitions", m.loc,
                               hint="timed modes race by their delays")
            if kind == "timed" and m.delay is None:
                mname = f" mode '{m.name}'" if m.name else ""
                raise self.err(f"timed transition '{name}'{mname} needs a firing delay", m.loc,
                               expected="'delay <distribution>', e.g. 'delay exp(10 ms)'")
        if kind == "immediate" and "servers" in topts:
            raise self.err("'servers' applies to timed transitions only", topts["servers"][2],
                           hint="immediate transitions fire in zero time")
        if kind == "timed" and "priority" in topts:
            raise self.err("'priority' applies to immediate transitions only", topts["priority"][2],
                           hint="timed transitions race by their delays")
        return Transition(name, kind, tuple(modes),
                          priority=topts["priority"][1] if "priority" in topts else None,
                          servers=topts["servers"][1] if "servers" in topts else None,
                          loc=self.loc(meta))

    def t_priority(self, meta, c):
        return ("priority", c[0], self.loc(meta))

    def t_servers(self, meta, c):
        return ("servers", c[0], self.loc(meta))

    def mode(self, meta, c):
        name = str(c[0]) if c[0] is not None else None
        return self._mode(name, c[1], self.loc(meta))

    def _mode(self, name, body: _ModeBody, loc) -> Mode:
        kw: dict[str, Any] = {}
        for key, value, where in body.opts:
            if key in kw:
                raise self.err(f"'{key}' given twice", where)
            kw[key] = value
        if "weight" in kw and "delay" in kw:
            raise self.err("a mode has a weight (immediate) or a delay (timed), not both", loc)
        return Mode(name, tuple(body.inputs or ()), tuple(body.outputs or ()),
                    tuple(kw.get("unless", ())), kw.get("when"), kw.get("weight"),
                    kw.get("delay"), loc=loc)

    def mode_body(self, meta, c):
        return _ModeBody(c[0], c[1], c[2:], self.loc(meta))

    def arcs(self, meta, c):
        return list(c)

    def arc(self, meta, c):
        return _RawArc(c[0], str(c[1]), c[2], self.loc(meta))

    def m_when(self, meta, c):
        return ("when", c[0], self.loc(meta))

    def m_unless(self, meta, c):
        return ("unless", c[0], self.loc(meta))

    def m_weight(self, meta, c):
        return ("weight", c[0], self.loc(meta))

    def m_delay(self, meta, c):
        return ("delay", c[0], self.loc(meta))

    # -- distributions -------------------------------------------------------------------
    def dist(self, meta, c):
        from .distparse import build_distribution
        name_tok = c[0]
        args = [a for a in c[1:] if a is not None]
        return build_distribution(str(name_tok), args, self.loc(meta), self.tloc(name_tok),
                                  self.base_dir)

    def d_pos(self, meta, c):
        return ("pos", None, c[0], self.loc(meta))

    def d_named(self, meta, c):
        return ("named", str(c[0]), c[1], self.loc(meta))

    def d_pair(self, meta, c):
        return ("pair", c[0], c[1], self.loc(meta))

    def d_list(self, meta, c):
        return ("list", None, [x for x in c if x is not None], self.loc(meta))

    def d_string(self, meta, c):
        return ("string", None, str(c[0])[1:-1], self.loc(meta))

    # -- hierarchy -----------------------------------------------------------------------
    def subnet(self, meta, c):
        name = str(c[0])
        params, items = [], []
        for x in c[1:]:
            if x is None:
                continue
            (params if isinstance(x, SubnetParam) else items).append(x)
        seen = set()
        for p in params:
            if p.name in seen:
                raise self.err(f"parameter '{p.name}' is declared twice in subnet '{name}'", p.loc)
            seen.add(p.name)
        return Subnet(name, tuple(params), tuple(items), loc=self.loc(meta))

    def sparam(self, meta, c):
        return SubnetParam(str(c[0]), c[1], loc=self.loc(meta))

    def instance(self, meta, c):
        args = [a for a in c[2:] if a is not None]
        names = [a[0] for a in args]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise self.err(f"argument '{n}' is given twice", args[i][2])
        return Instance(str(c[0]), str(c[1]), tuple((n, e) for n, e, _ in args), loc=self.loc(meta))

    def iarg(self, meta, c):
        return (str(c[0]), c[1], self.loc(meta))

    # -- expressions ---------------------------------------------------------------------
    def number(self, meta, c):
        tok, unit = c
        text = str(tok)
        value: int | float = int(text) if text.isdigit() else float(text)
        if unit is not None and str(unit) not in UNITS:
            u = str(unit)
            raise self.err(f"unknown unit '{u}'", unit, expected="a time unit: " + ", ".join(UNITS),
                           did_you_mean=suggest(u, UNITS),
                           hint=f"to multiply write '{text} * {u}'")
        return Num(value, str(unit) if unit is not None else None, loc=self.loc(meta))

    def inf(self, meta, c):
        return Num(math.inf, loc=self.loc(meta))

    def ref(self, meta, c):
        return Ref(str(c[0]), self.tloc(c[0]))

    def call(self, meta, c):
        name_tok, args = c[0], [a for a in c[1:] if a is not None]
        fname = str(name_tok)
        if fname not in FUNCTIONS:
            hint = None
            if fname in DISTRIBUTIONS:
                hint = f"'{fname}(...)' is a distribution; use it after 'service' or 'delay'"
            raise self.err(f"unknown function '{fname}'", name_tok,
                           expected="one of " + ", ".join(FUNCTIONS),
                           did_you_mean=suggest(fname, FUNCTIONS), hint=hint)
        lo, hi, _ = FUNCTIONS[fname]
        if not lo <= len(args) <= hi:
            raise self.err(f"{fname}() takes {lo if lo == hi else f'{lo} or more'} argument(s), "
                           f"got {len(args)}", meta)
        return Call(fname, tuple(args), self.loc(meta))

    def tuple(self, meta, c):
        return TupleExpr(tuple(c), self.loc(meta))

    def neg(self, meta, c):
        x = c[0]
        if type(x) is Num and x.value >= 0 and math.copysign(1, x.value) > 0:
            return Num(-x.value, x.unit, loc=self.loc(meta))
        return Unary("-", x, self.loc(meta))

    def not_(self, meta, c):
        return Unary("not", c[0], self.loc(meta))

    def _fold(self, meta, c, op=None):
        acc = c[0]
        if op is not None:  # 'and'/'or': operands only
            for x in c[1:]:
                acc = BinOp(op, acc, x, self.loc(meta))
            return acc
        for i in range(1, len(c), 2):
            acc = BinOp(str(c[i]), acc, c[i + 1], self.loc(meta))
        return acc

    def or_expr(self, meta, c):
        return self._fold(meta, c, "or")

    def and_expr(self, meta, c):
        return self._fold(meta, c, "and")

    def sum(self, meta, c):
        return self._fold(meta, c)

    def product(self, meta, c):
        return self._fold(meta, c)

    def comparison(self, meta, c):
        return self._fold(meta, c)

    def power(self, meta, c):
        return BinOp("^", c[0], c[1], self.loc(meta))


# ------------------------------------------------------------------------- API
def parse_items(text: str, file: str = "<string>", base_dir: str = ".") -> list:
    parser = _lark()
    comments: list[Token] = []
    builder = _Builder(file, text, base_dir)
    try:
        tree = _parse_with_comments(parser, text, comments)
        items = builder.transform(tree)
    except UnexpectedInput as exc:
        raise syntax_error(exc, parser, file, text) from None
    except VisitError as exc:
        if isinstance(exc.orig_exc, QPNError):
            raise exc.orig_exc from None
        raise
    return items, comments


def _parse_with_comments(parser: Lark, text: str, comments: list):
    # Lark's lexer_callbacks are fixed at construction; collect comments with a
    # cheap regex pass instead (comments never appear inside strings here).
    import re
    for m in re.finditer(r'"[^"\n]*"|#[^\n]*', text):
        s = m.group(0)
        if s.startswith("#"):
            line = text.count("\n", 0, m.start()) + 1
            comments.append((line, s))
    return parser.parse(text)


def parse(text: str, path: str | os.PathLike | None = None, *,
          _include_stack: tuple[str, ...] = ()) -> Net:
    """Parse model text; ``path`` names the file for errors and includes."""
    file = str(path) if path is not None else "<string>"
    base_dir = os.path.dirname(os.path.abspath(file)) if path is not None else os.getcwd()
    items, comments = parse_items(text, file, base_dir)
    name = Path(file).stem if path is not None else "net"
    body = []
    net_line = None
    for it in items:
        if isinstance(it, _NetName):
            net_line = it.loc.line if it.loc else None
            if body or name != (Path(file).stem if path is not None else "net"):
                raise ModelError("'net <name>' must be the first declaration", it.loc)
            name = it.name
            continue
        body.append(it)
    # includes
    resolved = []
    for it in body:
        if isinstance(it, Include):
            resolved.append(_load_include(it, base_dir, _include_stack + (os.path.abspath(file),)))
        else:
            resolved.append(it)
    body = normalize(resolved)
    body, doc, trailer = attach_comments(body, comments, net_line)
    net = Net(name, tuple(body), doc=doc, trailer=trailer, path=file if path is not None else None,
              source=text)
    from qpn.validate import validate
    validate(net)
    return net


def _load_include(inc: Include, base_dir: str, stack: tuple[str, ...]) -> Include:
    target = os.path.normpath(os.path.join(base_dir, inc.path))
    if target in stack:
        chain = " -> ".join(os.path.basename(s) for s in stack + (target,))
        raise ModelError(f"include cycle: {chain}", inc.loc, hint="remove one of the includes")
    if not os.path.isfile(target):
        raise ModelError(f"cannot include '{inc.path}': no such file", inc.loc,
                         expected=f"a file relative to {base_dir}")
    with open(target, encoding="utf-8") as fh:
        text = fh.read()
    sub = parse(text, target, _include_stack=stack)
    return replace(inc, net=sub)


def load(path: str | os.PathLike) -> Net:
    """Read and parse a model file."""
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"no such model file: {p}", None,
                         hint="model files use the extension .qpn")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"{p} is not UTF-8 text ({exc.reason} at byte {exc.start})", None) from None
    return parse(text, str(path))


def parse_expr(text: str, file: str = "<expr>"):
    """Parse a single expression (used for ``--set name=value``)."""
    items, _ = parse_items(f"param _ = {text}", file)
    return items[0].value
