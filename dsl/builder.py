"""The grammar's rules -> model items (a Lark transformer run inside the LALR parser).

Every rule of dsl/qpn.lark has a method here building the item, expression or
distribution it declares, with its location; errors found while building (an unknown
unit, a function's argument count, an expression nested too deep) are raised as
located :class:`~qpn.errors.ModelError`.  :mod:`dsl.grammar` runs it;
:mod:`dsl.parser` turns a file's items into a net.

>>> from qpn.dsl.grammar import parse_items
>>> items, _ = parse_items("place p init 2")
>>> type(items[0]).__name__, items[0].name
('Place', 'p')
"""
from __future__ import annotations

import math
import sys
from typing import Any

from lark import Token, Transformer

from qpn import disciplines
from qpn.distributions import DISTRIBUTIONS
from qpn.errors import Loc, ModelError, suggest
from qpn.expr import (FUNCTIONS, UNITS, BinOp, Call, Num, Ref, TupleExpr, Unary)
from qpn.model import (DEPARTURES, IN_ORDER, EnumColors, Include, Instance, Mode, Param, Place, Port, Queue,
                       QueueingPlace, RangeColors, RecordColors, Service, Subnet, SubnetParam,
                       Term, Transition)

from .distparse import build_distribution
from .software_builder import SoftwareBuilder

#: Deepest expression accepted.  Expressions are evaluated, printed and copied by
#: recursive functions; a machine-written '1 + 1 + ... + 1' of 10^4 terms would
#: exceed Python's recursion limit in them (a RecursionError, not a message).
MAX_EXPR_DEPTH = 100
#: the digits of the largest float (1.8e308): a whole number written with more is out of range
MAX_DIGITS = 309


class _RawArc:
    """An arc before place colors are known (normalized by dsl.normalize)."""
    __slots__ = ("count", "place", "terms", "loc")

    def __init__(self, count, place, terms, loc):
        self.count, self.place, self.terms, self.loc = count, place, terms, loc


class _ModeBody:
    __slots__ = ("inputs", "outputs", "opts", "loc")

    def __init__(self, inputs, outputs, opts, loc):
        self.inputs, self.outputs, self.opts, self.loc = inputs, outputs, opts, loc


class NetName:
    """The ``net NAME`` line (taken out of the items by :func:`dsl.parser.parse`)."""

    def __init__(self, name, loc):
        self.name, self.loc = name, loc


class Builder(SoftwareBuilder, Transformer):
    """Builds model items from the grammar's rules as the parser reduces them (no parse
    tree); ``ctx`` is the per-parse state (file, source, line of the last token).

    Each public method is called for the rule or alias of dsl/qpn.lark of its name, with
    the values of its parts; its docstring is that rule's syntax."""

    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx

    # -- locations (from tokens: no parse tree is built) ---------------------
    def tloc(self, tok: Token) -> Loc:
        """Location of a token (one line)."""
        return Loc(self.ctx.file, tok.line, tok.column, tok.line, tok.end_column, self.ctx.source)

    def cloc(self, children) -> Loc | None:
        """Location of the first located child (token or model element)."""
        for ch in children:
            if ch is None:
                continue
            if isinstance(ch, Token):
                return self.tloc(ch)
            loc = getattr(ch, "loc", None)
            if loc is not None:
                return loc
            if isinstance(ch, (list, tuple)):
                loc = self.cloc(ch)
                if loc is not None:
                    return loc
        return None

    def iloc(self, children) -> Loc | None:
        """Location of a declaration, spanning to its last line (for comments)."""
        loc = self.cloc(children)
        return loc.with_end(max(self.ctx.prev_line, loc.line)) if loc is not None else None

    def err(self, msg, where, **kw) -> ModelError:
        """A located error at a token, a list of children (the first located) or a Loc."""
        if isinstance(where, Token):
            where = self.tloc(where)
        elif isinstance(where, list):
            where = self.cloc(where)
        return ModelError(msg, where, **kw)

    # -- top level -----------------------------------------------------------
    def start(self, items):
        """``item*``"""
        return items

    def expr_start(self, c):
        """``expr``"""
        return c[0]

    def net_decl(self, c):
        """``"net" NAME``"""
        return NetName(str(c[0]), self.iloc(c))

    def include(self, c):
        """``"include" STRING``"""
        return Include(path=str(c[0])[1:-1], loc=self.iloc(c))

    def param(self, c):
        """``"param" NAME "=" sum``"""
        return Param(str(c[0]), c[1], loc=self.iloc(c))

    # -- colors ----------------------------------------------------------------
    def colors(self, c):
        """``"colors" NAME "=" colorset_def``"""
        name, (kind, data) = str(c[0]), c[1]
        loc = self.iloc(c)
        parent = None
        if kind == "subset":
            kind, parent, data = "enum", str(data[0]), data[1:]
        if kind == "enum":
            seen = set()
            for tok in data:
                if str(tok) in seen:
                    raise self.err(f"color '{tok}' is listed twice in '{name}'", tok)
                seen.add(str(tok))
            return EnumColors(name, tuple(str(t) for t in data), parent, loc=loc)
        if kind == "range":
            return RangeColors(name, data[0], data[1], loc=loc)
        return RecordColors(name, tuple((str(f), str(s)) for f, s in data), loc=loc)

    def enum_colors(self, c):
        """``"{" NAME ("," NAME)* "}"``"""
        return ("enum", c)

    def subset_colors(self, c):
        """``NAME "{" NAME ("," NAME)* "}"``"""
        return ("subset", c)

    def range_colors(self, c):
        """``sum ".." sum``"""
        return ("range", c)

    def record_colors(self, c):
        """``"(" field ("," field)* ")"``"""
        seen = set()
        for f, _ in c:
            if str(f) in seen:  # located at the second occurrence
                raise self.err(f"record field '{f}' is given twice", f)
            seen.add(str(f))
        return ("record", c)

    def field(self, c):
        """``NAME ":" NAME``"""
        return (c[0], c[1])

    # -- queues ------------------------------------------------------------------
    def queue_decl(self, c):
        """``"shared" "queue" NAME ":" qspec``"""
        name, spec = str(c[0]), c[1]
        return spec(name, self.iloc(c))

    def qspec(self, c):
        """``DISCIPLINE qopt*``"""
        disc_tok, opts = c[0], c[1:]
        disc = str(disc_tok)
        kw: dict[str, Any] = {}
        for key, value, where in opts:
            if key in kw:
                raise self.err(f"'{key}' given twice", where)
            kw[key] = value
        d = disciplines.get(disc)
        sliced = "/".join(disciplines.names_where(takes_quantum=True))
        if "quantum" in kw and not d.takes_quantum:
            raise self.err(f"'quantum' applies to {sliced} queues only, not {disc}", opts[[o[0] for o in opts].index("quantum")][2],
                           hint="time-sliced CPUs are 'queue rr quantum 10 ms'")
        if "switch" in kw and not d.takes_quantum:
            raise self.err(f"'switch' (context-switch cost) applies to {sliced} queues only",
                           opts[[o[0] for o in opts].index("switch")][2])
        if d.takes_quantum and "quantum" not in kw:
            raise self.err(f"an {disc} queue needs a time slice: '{disc} quantum 10 ms'", disc_tok,
                           expected=f"'quantum <time>' after '{disc}'")
        if "preemptive" in kw and not d.takes_priority:
            raise self.err(f"'preemptive'/'nonpreemptive' apply to "
                           f"{'/'.join(disciplines.names_where(takes_priority=True))} queues only",
                           opts[[o[0] for o in opts].index("preemptive")][2])
        if d.infinite_servers and "servers" in kw:
            raise self.err(f"an '{disc}' queue has infinitely many servers; do not give 'servers'",
                           opts[[o[0] for o in opts].index("servers")][2])
        if "speed" in kw:
            where = opts[[o[0] for o in opts].index("speed")][2]
            if not d.takes_speed:
                raise self.err(f"'speed' (a load-dependent capacity) applies to "
                               f"{'/'.join(disciplines.names_where(takes_speed=True))} queues, not {disc}", where,
                               hint="a flow-equivalent server is 'queue ps speed [1.2, 1.9, 2.3]'")
            if "servers" in kw:
                raise self.err("give 'servers' or 'speed', not both: 'speed' is the capacity "
                               "with n tokens ('servers k' is 'speed [1, 2, .., k]')", where)
        servers = kw.get("servers", Num(d.default_servers) if d.infinite_servers else Num(1))
        disc_loc = self.tloc(disc_tok)

        def build(name, loc):
            return Queue(name, disc, servers=servers, quantum=kw.get("quantum"),
                         switch=kw.get("switch"), preemptive=kw.get("preemptive", True),
                         speed=kw.get("speed"), loc=loc or disc_loc)
        return build

    # Options are (key, value, location of the option's keyword): errors about an
    # option (given twice, not applicable) point at its keyword.
    def q_servers(self, c):
        """``SERVERS sum``"""
        return ("servers", c[1], self.tloc(c[0]))

    def q_quantum(self, c):
        """``QUANTUM sum``"""
        return ("quantum", c[1], self.tloc(c[0]))

    def q_switch(self, c):
        """``SWITCH sum``"""
        return ("switch", c[1], self.tloc(c[0]))

    def q_speed_table(self, c):
        """``SPEED "[" sum ("," sum)* "]"``: the capacity with 1, 2, ... tokens"""
        return ("speed", tuple(c[1:]), self.tloc(c[0]))

    def q_speed(self, c):
        """``SPEED sum``: the capacity as an expression in ``n``, the tokens present"""
        return ("speed", c[1], self.tloc(c[0]))

    def q_preemptive(self, c):
        """``PREEMPTIVE``"""
        return ("preemptive", True, self.tloc(c[0]))

    def q_nonpreemptive(self, c):
        """``NONPREEMPTIVE``"""
        return ("preemptive", False, self.tloc(c[0]))

    # -- places --------------------------------------------------------------------
    def _place_opts(self, opts):
        kw: dict[str, Any] = {}
        for key, value, where in opts:
            if key in kw:
                raise self.err(f"'{key}' given twice", where)
            if key in ("queue", "on") and ("queue" in kw or "on" in kw):
                raise self.err("a place has its own queue ('queue ...') or a shared one "
                               "('on ...'), not both", where)
            kw[key] = (value, where)
        return kw

    def place(self, c):
        """``"place" NAME [":" NAME] place_opt*``"""
        name_tok, cs, opts = c[0], c[1], c[2:]
        name = str(name_tok)
        loc = self.iloc(c)
        kw = self._place_opts(opts)
        common = dict(name=name, colors=str(cs) if cs is not None else None,
                      capacity=kw.get("capacity", (None,))[0],
                      init=tuple(kw.get("init", ((),))[0]), loc=loc)
        is_queue = "queue" in kw or "on" in kw
        if not is_queue:
            if kw.get("departure", ("normal",))[0] == IN_ORDER:
                raise self.err(f"'departure {IN_ORDER}' orders the tokens a queue serves, but "
                               f"'{name}' has no queue", kw["departure"][1],
                               hint="'departure fifo' makes an ordinary place give its tokens "
                                    "one at a time, oldest first")
            for key in ("service", "priority"):
                if key in kw:
                    raise self.err(f"'{key}' needs a queueing place, but '{name}' has no queue",
                                   kw[key][1], hint=f"add 'queue fcfs' (or another discipline) or "
                                                    f"'on <shared queue>' to place '{name}'")
            return Place(**common, departure=str(kw.get("departure", ("normal",))[0]))
        # a place's own queue is located at its discipline (where its errors point)
        queue = kw["queue"][0](name, None) if "queue" in kw else str(kw["on"][0])
        service = kw.get("service", ((),))[0]
        if not service:
            raise self.err(f"queueing place '{name}' needs service times", name_tok,
                           expected="'service <distribution>' or 'service a: exp(1 ms), b: ...'")
        return QueueingPlace(**common, queue=queue, service=tuple(service),
                             priority=tuple(kw.get("priority", ((),))[0]),
                             departure=str(kw.get("departure", ("normal",))[0]))

    def port(self, c):
        """``PORT_DIR NAME [":" NAME] place_opt*``"""
        dir_tok, name_tok, cs, opts = c[0], c[1], c[2], c[3:]
        kw = self._place_opts(opts)
        for key in kw:
            if key not in ("capacity", "init"):
                raise self.err(f"ports are plain places; '{key}' is not allowed on port '{name_tok}'",
                               kw[key][1], hint="put the queueing place inside the subnet and connect it to the port")
        return Port(name=str(name_tok), colors=str(cs) if cs is not None else None,
                    capacity=kw.get("capacity", (None,))[0], init=tuple(kw.get("init", ((),))[0]),
                    direction=str(dir_tok), loc=self.iloc(c))

    def o_queue(self, c):
        """``QUEUE qspec``"""
        return ("queue", c[1], self.tloc(c[0]))

    def o_on(self, c):
        """``ON NAME``"""
        return ("on", c[1], self.tloc(c[0]))

    def o_capacity(self, c):
        """``CAPACITY sum``"""
        return ("capacity", c[1], self.tloc(c[0]))

    def o_departure(self, c):
        """``DEPARTURE (FIFO | DISCIPLINE | IN_ORDER)``"""
        kind = str(c[1])
        if kind not in DEPARTURES or kind == "normal":
            raise self.err(f"unknown departure discipline '{kind}'", c[1],
                           expected="fifo, random or in-order",
                           hint="fifo and random: the place offers one token at a time (QPME's "
                                "departure disciplines); in-order: a queue's tokens leave in the "
                                "order they came")
        return ("departure", kind, self.tloc(c[0]))

    def o_init(self, c):
        """``INIT terms``"""
        return ("init", c[1], self.tloc(c[0]))

    def o_service(self, c):
        """``SERVICE service_spec``"""
        return ("service", c[1], self.tloc(c[0]))

    def o_priority(self, c):
        """``PRIORITY prio_spec``"""
        return ("priority", c[1], self.tloc(c[0]))

    def service_all(self, c):
        """``dist``"""
        return [Service(None, c[0])]

    def service_colors(self, c):
        """``svc ("," svc)*``"""
        return list(c)

    def svc(self, c):
        """``color ":" dist``"""
        return Service(c[0], c[1])

    def prio_all(self, c):
        """``sum``"""
        return [(None, c[0])]

    def prio_colors(self, c):
        """``pri ("," pri)*``"""
        return list(c)

    def pri(self, c):
        """``color ":" sum``"""
        return (c[0], c[1])

    # -- terms ------------------------------------------------------------------------
    def terms(self, c):
        """``term ("," term)*``"""
        return list(c)

    def term(self, c):
        """``[count] color``"""
        return Term(c[0], c[1])  # count may be None until normalized

    def _whole(self, tok, what):
        text = str(tok)
        if not text.isdigit():
            raise self.err(f"{what} must be a whole number, got {text}", tok,
                           hint="write a computed value in parentheses: (2 * n)")
        if len(text) > MAX_DIGITS:
            raise self.err(f"{what} has {len(text)} digits: far beyond any count (at most 2^53)", tok)
        return Num(int(text), loc=self.tloc(tok))

    def count_int(self, c):
        """``NUMBER``"""
        return self._whole(c[0], "a token count")

    def count_name(self, c):
        """``NAME``"""
        return Ref(str(c[0]), self.tloc(c[0]))

    def count_expr(self, c):
        """``"(" sum ")"``"""
        return c[0]

    def color_name(self, c):
        """``NAME``"""
        return Ref(str(c[0]), self.tloc(c[0]))

    def color_int(self, c):
        """``NUMBER``"""
        return self._whole(c[0], "a number color (or count of plain tokens)")

    def color_expr(self, c):
        """``"(" sum ("," sum)* ")"``"""
        return c[0] if len(c) == 1 else TupleExpr(tuple(c), self.cloc(c))

    # -- transitions ---------------------------------------------------------------------
    def transition(self, c):
        """``"transition" NAME [KIND] topt* (":" mode_body | "{" mode+ "}")``"""
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
                          loc=self.iloc(c))

    def t_priority(self, c):
        """``PRIORITY sum``"""
        return ("priority", c[1], self.tloc(c[0]))

    def t_servers(self, c):
        """``SERVERS sum``"""
        return ("servers", c[1], self.tloc(c[0]))

    def mode(self, c):
        """``"mode" [NAME] ":" mode_body``"""
        name = str(c[0]) if c[0] is not None else None
        return self._mode(name, c[1], self.iloc(c))

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

    def mode_body(self, c):
        """``[arcs] "->" [arcs] mopt*``"""
        return _ModeBody(c[0], c[1], c[2:], self.cloc(c))

    def arcs(self, c):
        """``arc ("," arc)*``"""
        return list(c)

    def arc(self, c):
        """``[count] NAME ["(" terms ")"]``"""
        return _RawArc(c[0], str(c[1]), c[2], self.cloc(c))

    def m_when(self, c):
        """``WHEN expr``"""
        return ("when", c[1], self.tloc(c[0]))

    def m_unless(self, c):
        """``UNLESS arcs``"""
        return ("unless", c[1], self.tloc(c[0]))

    def m_weight(self, c):
        """``WEIGHT sum``"""
        return ("weight", c[1], self.tloc(c[0]))

    def m_delay(self, c):
        """``DELAY dist``"""
        return ("delay", c[1], self.tloc(c[0]))

    # -- distributions -------------------------------------------------------------------
    def dist(self, c):
        """``NAME "(" [darg ("," darg)*] ")"``"""
        name_tok = c[0]
        args = [a for a in c[1:] if a is not None]
        return build_distribution(str(name_tok), args, self.cloc(c), self.tloc(name_tok),
                                  self.ctx.base_dir)

    def d_pos(self, c):
        """``sum``"""
        return ("pos", None, c[0], self.cloc(c))

    def d_named(self, c):
        """``NAME "=" sum``"""
        return ("named", str(c[0]), c[1], self.cloc(c))

    def d_pair(self, c):
        """``sum ":" sum``"""
        return ("pair", c[0], c[1], self.cloc(c))

    def d_list(self, c):
        """``"[" [sum ("," sum)*] "]"``"""
        return ("list", None, [x for x in c if x is not None], self.cloc(c))

    def d_string(self, c):
        """``STRING``"""
        return ("string", None, str(c[0])[1:-1], self.cloc(c))

    # -- hierarchy -----------------------------------------------------------------------
    def subnet(self, c):
        """``"subnet" NAME "(" [sparam ("," sparam)*] ")" "{" sub_item* "}"``"""
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
        return Subnet(name, tuple(params), tuple(items), loc=self.iloc(c))

    def sparam(self, c):
        """``NAME ["=" sum]``"""
        return SubnetParam(str(c[0]), c[1], loc=self.cloc(c))

    def instance(self, c):
        """``"instance" NAME "=" NAME "(" [iarg ("," iarg)*] ")"``"""
        args = [a for a in c[2:] if a is not None]
        names = [a[0] for a in args]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise self.err(f"argument '{n}' is given twice", args[i][2])
        return Instance(str(c[0]), str(c[1]), tuple((n, e) for n, e, _ in args), loc=self.iloc(c))

    def iarg(self, c):
        """``NAME "=" sum``"""
        return (str(c[0]), c[1], self.cloc(c))

    # -- expressions ---------------------------------------------------------------------
    def number(self, c):
        """``NUMBER [NAME]``"""
        tok, unit = c
        text = str(tok)
        # a whole number of more digits than the largest float has is as far out of range
        value: int | float = (int(text) if len(text) <= MAX_DIGITS else math.inf) if text.isdigit() else float(text)
        if value == math.inf or value > sys.float_info.max:
            shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} digits)"
            raise self.err(f"the number {shown} is beyond the largest float (1.8e308)", tok,
                           hint="write 'inf' where an unlimited value is meant")
        if unit is not None and str(unit) not in UNITS:
            u = str(unit)
            raise self.err(f"unknown unit '{u}'", unit, expected="a time unit: " + ", ".join(UNITS),
                           did_you_mean=suggest(u, UNITS),
                           hint=f"to multiply write '{text} * {u}'")
        return Num(value, str(unit) if unit is not None else None, loc=self.cloc(c))

    def inf(self, c):
        """``"inf"``"""
        return Num(math.inf, loc=self.cloc(c))

    def ref(self, c):
        """``NAME``"""
        return Ref(str(c[0]), self.tloc(c[0]))

    def call(self, c):
        """``NAME "(" [sum ("," sum)*] ")"``"""
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
                           f"got {len(args)}", c)
        return self._nest(Call(fname, tuple(args), self.cloc(c)), args)

    def tuple(self, c):
        """``"(" sum ("," sum)+ ")"``"""
        return self._nest(TupleExpr(tuple(c), self.cloc(c)), c)

    def _nest(self, node, children):
        """``node`` after checking that its nesting depth stays <= MAX_EXPR_DEPTH."""
        depths = self.ctx.depths
        depth = 1 + max((depths[id(ch)][1] for ch in children if id(ch) in depths), default=1)
        if depth > MAX_EXPR_DEPTH:
            raise self.err(f"expression nested more than {MAX_EXPR_DEPTH} levels deep", node.loc,
                           hint="compute it in steps with parameters: 'param s1 = ...'")
        depths[id(node)] = (node, depth)  # the node is kept alive: its id is not reused
        return node

    def neg(self, c):
        """``MINUS unary``"""
        x = c[-1]
        if type(x) is Num and x.value >= 0 and math.copysign(1, x.value) > 0:
            return Num(-x.value, x.unit, loc=self.cloc(c))
        return self._nest(Unary("-", x, self.cloc(c)), (x,))

    def not_(self, c):
        """``"not" not_expr``"""
        return self._nest(Unary("not", c[0], self.cloc(c)), c)

    def _fold(self, c, op=None):
        acc = c[0]
        loc = self.cloc(c)
        if op is not None:  # 'and'/'or': operands only
            for x in c[1:]:
                acc = self._nest(BinOp(op, acc, x, loc), (acc, x))
            return acc
        for i in range(1, len(c), 2):
            acc = self._nest(BinOp(str(c[i]), acc, c[i + 1], loc), (acc, c[i + 1]))
        return acc

    def or_expr(self, c):
        """``and_expr ("or" and_expr)*``"""
        return self._fold(c, "or")

    def and_expr(self, c):
        """``not_expr ("and" not_expr)*``"""
        return self._fold(c, "and")

    def sum(self, c):
        """``product ((PLUS | MINUS) product)*``"""
        return self._fold(c)

    def product(self, c):
        """``unary (MUL_OP unary)*``"""
        return self._fold(c)

    def comparison(self, c):
        """``sum (COMP_OP sum)?``"""
        return self._fold(c)

    def power(self, c):
        """``atom ("^" unary)?``"""
        return self._nest(BinOp("^", c[0], c[1], self.cloc(c)), c)
