"""Structural validation of a net: names, colors, scopes, interfaces.

Every problem raises :class:`ModelError` with the location of the offending
element and a did-you-mean suggestion where one exists.  Numeric checks
(negative rates, capacities) happen when the flat net is compiled with actual
parameter values (:mod:`qpn.compile`), which ``validate`` also runs once with
the default values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import disciplines
from .errors import Loc, ModelError, suggest, undefined
from .expr import BinOp, Call, Expr, Num, Ref, TupleExpr, Unary, refs, walk
from .model import (Arc, EnumColors, Instance, Mode, Param, Place, Port, Queue,
                    QueueingPlace, RangeColors, RecordColors, Subnet, Transition,
                    DISCIPLINES, DEPARTURES, IN_ORDER)
from .net import Net


@dataclass
class _PlaceInfo:
    colors: str | None
    kind: str            # 'place' | 'queueing' | 'port' | 'instance-port'
    direction: str | None = None
    loc: Loc | None = None


@dataclass
class _Scope:
    what: str                                  # 'the net' or "subnet 'S'"
    numeric: dict[str, Any]                    # parameter names visible
    colorsets: dict[str, Any]
    color_values: dict[str, str]               # enum color -> color set name
    places: dict[str, _PlaceInfo] = field(default_factory=dict)
    queues: dict[str, Any] = field(default_factory=dict)
    subnets: dict[str, Subnet] = field(default_factory=dict)
    inside_subnet: bool = False


def _dup(kind: str, name: str, loc: Loc | None, first: Loc | None) -> ModelError:
    where = f" (first declared at {first.file}:{first.line}:{first.col})" if first else ""
    return ModelError(f"duplicate {kind} '{name}'{where}", loc,
                      hint=f"every {kind} needs its own name")


def validate(net: Net) -> None:
    """Check ``net`` and raise the first :class:`ModelError` found."""
    items = net.all_items
    # ---- global names
    params: dict[str, Param] = {}
    colorsets: dict[str, Any] = {}
    color_values: dict[str, str] = {}
    queues: dict[str, Queue] = {}
    subnets: dict[str, Subnet] = {}
    used: dict[str, tuple[str, Loc | None]] = {}  # places, transitions, instances share a namespace

    def claim(kind, name, loc):
        if name in used:
            k, first = used[name]
            if k == kind:
                raise _dup(kind, name, loc, first)
            raise ModelError(f"'{name}' is already the name of a {k}", loc,
                             hint="places, transitions and instances need distinct names")
        used[name] = (kind, loc)

    for it in items:
        if isinstance(it, Param):
            if it.name in params:
                raise _dup("parameter", it.name, it.loc, params[it.name].loc)
            params[it.name] = it
        elif isinstance(it, (EnumColors, RangeColors, RecordColors)):
            if it.name in colorsets:
                raise _dup("color set", it.name, it.loc, colorsets[it.name].loc)
            colorsets[it.name] = it
            if isinstance(it, EnumColors) and it.parent is None:
                if not it.values:
                    raise ModelError(f"color set '{it.name}' is empty", it.loc)
                for v in it.values:
                    if v in color_values:
                        raise ModelError(f"color '{v}' is already in color set '{color_values[v]}'",
                                         it.loc, hint="color names are global; rename one of them")
                    color_values[v] = it.name
        elif isinstance(it, Queue):
            if it.name in queues:
                raise _dup("queue", it.name, it.loc, queues[it.name].loc)
            queues[it.name] = it
        elif isinstance(it, Subnet):
            if it.name in subnets:
                raise _dup("subnet", it.name, it.loc, subnets[it.name].loc)
            subnets[it.name] = it
        elif isinstance(it, Place):
            if isinstance(it, Port):
                raise ModelError(f"port '{it.name}' outside a subnet", it.loc,
                                 hint="'input' and 'output' declare the interface of a subnet")
            claim("place", it.name, it.loc)
        elif isinstance(it, Transition):
            claim("transition", it.name, it.loc)
        elif isinstance(it, Instance):
            claim("instance", it.name, it.loc)

    for cs in colorsets.values():
        if isinstance(cs, EnumColors) and cs.parent is not None:
            _check_subset(cs, colorsets)

    for v, cs in color_values.items():
        if v in params:
            raise ModelError(f"'{v}' is both a color (of '{cs}') and a parameter", params[v].loc,
                             hint="rename the parameter")

    # ---- color sets
    record_depths: dict[str, int] = {}
    for cs in colorsets.values():
        if isinstance(cs, RangeColors):
            for e in (cs.lo, cs.hi):
                _check_numeric(e, params, f"the bounds of color set '{cs.name}'")
        elif isinstance(cs, RecordColors):
            for fname, sub in cs.fields:
                if sub not in colorsets:
                    raise undefined("color set", sub, cs.loc, colorsets)
        _record_cycle(cs, colorsets, record_depths)

    # ---- parameters: names only
    for p in params.values():
        for r in refs(p.value):
            if r.name not in params:
                hint = "parameters are numbers; colors cannot be parameter values" if r.name in color_values else None
                raise ModelError(f"undefined name '{r.name}' in parameter '{p.name}'", r.loc or p.loc,
                                 expected="a number or an expression of other parameters",
                                 did_you_mean=suggest(r.name, params), hint=hint)
        if isinstance(p.value, TupleExpr) or any(isinstance(x, TupleExpr) for x in walk(p.value)):
            raise ModelError(f"parameter '{p.name}' must be a number", p.loc)

    # ---- bodies
    top = _Scope("the net", dict(params), colorsets, color_values, queues=dict(queues),
                 subnets=subnets)
    _check_body(items, top)
    for sub in subnets.values():
        local = {p.name: p for p in sub.params}
        numeric = dict(params)
        numeric.update(local)
        for it in sub.items:
            if isinstance(it, Param):
                numeric[it.name] = it
        for sp in sub.params:
            if sp.default is not None:
                _check_numeric(sp.default, numeric, f"the default of parameter '{sp.name}'")
        scope = _Scope(f"subnet '{sub.name}'", numeric, colorsets, color_values,
                       queues=dict(queues), subnets=subnets, inside_subnet=True)
        _check_body(list(sub.items), scope)
    _check_recursion(subnets, [it for it in items if isinstance(it, Instance)])

    # ---- numbers, with the default parameter values
    from .compile import compile_net
    compile_net(net.flatten(), check_only=True)


#: Deepest nesting of record color sets (a record with a field of a record ...): their
#: values, names and printing recurse once per level.
MAX_RECORD_DEPTH = 100


def _record_cycle(cs, colorsets, depths: dict | None = None) -> None:
    """No record color set contains itself, and records nest at most MAX_RECORD_DEPTH deep
    (``depths``: the records already measured, shared between calls).  Iterative."""
    depths = {} if depths is None else depths
    if not isinstance(cs, RecordColors) or cs.name in depths:
        return

    def records(rec):
        return iter([colorsets[sub] for _f, sub in rec.fields
                     if isinstance(colorsets.get(sub), RecordColors)])

    path, on_path, todo = [cs], {cs.name}, [records(cs)]
    while todo:
        sub = next(todo[-1], None)
        if sub is None:
            rec = path.pop()
            on_path.discard(rec.name)
            todo.pop()
            depths[rec.name] = 1 + max((depths[c.name] for c in records(rec)), default=0)
            if depths[rec.name] > MAX_RECORD_DEPTH:
                raise ModelError(f"record color sets nested too deep: '{rec.name}' nests records "
                                 f"within records {depths[rec.name]} levels deep; the limit is "
                                 f"{MAX_RECORD_DEPTH}", rec.loc,
                                 hint="a record's fields may be records, but not to this depth")
            continue
        if sub.name in on_path:
            raise ModelError(f"color set '{sub.name}' contains itself", sub.loc)
        if sub.name in depths:
            continue
        path.append(sub)
        on_path.add(sub.name)
        todo.append(records(sub))


def _check_numeric(e: Expr | None, numeric, what: str, extra=()) -> None:
    if e is None:
        return
    for r in refs(e):
        if r.name not in numeric and r.name not in extra:
            raise ModelError(f"undefined name '{r.name}' in {what}", r.loc,
                             expected="a number or a parameter",
                             did_you_mean=suggest(r.name, list(numeric) + list(extra)))
    for x in walk(e):
        if isinstance(x, TupleExpr):
            raise ModelError(f"{what} must be a number, not a tuple", x.loc)


def _check_body(items, scope: _Scope) -> None:
    local_queues = {}
    for it in items:
        if isinstance(it, Queue):
            if scope.inside_subnet and it.name in local_queues:
                raise _dup("queue", it.name, it.loc, local_queues[it.name].loc)
            local_queues[it.name] = it
    scope.queues.update(local_queues)
    local_names: dict[str, Any] = {}
    for it in items:
        if isinstance(it, Place):
            if scope.inside_subnet:
                if it.name in local_names:
                    raise _dup("place", it.name, it.loc, local_names[it.name].loc)
                local_names[it.name] = it
            if isinstance(it, Port):
                if not scope.inside_subnet:
                    raise ModelError(f"port '{it.name}' outside a subnet", it.loc)
                scope.places[it.name] = _PlaceInfo(it.colors, "port", it.direction, it.loc)
            else:
                kind = "queueing" if isinstance(it, QueueingPlace) else "place"
                scope.places[it.name] = _PlaceInfo(it.colors, kind, None, it.loc)
        elif isinstance(it, Instance):
            if scope.inside_subnet:
                if it.name in local_names:
                    raise _dup("instance", it.name, it.loc, local_names[it.name].loc)
                local_names[it.name] = it
            sub = scope.subnets.get(it.subnet)
            if sub is None:
                raise undefined("subnet", it.subnet, it.loc, scope.subnets)
            _check_instance(it, sub, scope)
            for port in sub.ports.values():
                scope.places[f"{it.name}.{port.name}"] = _PlaceInfo(
                    port.colors, "instance-port", port.direction, port.loc)
        elif isinstance(it, Transition) and scope.inside_subnet:
            if it.name in local_names:
                raise _dup("transition", it.name, it.loc, local_names[it.name].loc)
            local_names[it.name] = it
        elif isinstance(it, Param) and scope.inside_subnet:
            _check_numeric(it.value, scope.numeric, f"parameter '{it.name}'")
    for it in items:
        if isinstance(it, Place):
            _check_place(it, scope)
        elif isinstance(it, Transition):
            _check_transition(it, scope)


def _check_instance(inst: Instance, sub: Subnet, scope: _Scope) -> None:
    known = {p.name: p for p in sub.params}
    given = set()
    for name, e in inst.args:
        if name not in known:
            raise ModelError(f"subnet '{sub.name}' has no parameter '{name}'", inst.loc,
                             expected="one of: " + (", ".join(known) or "(no parameters)"),
                             did_you_mean=suggest(name, known))
        _check_numeric(e, scope.numeric, f"argument '{name}' of instance '{inst.name}'")
        given.add(name)
    for p in sub.params:
        if p.default is None and p.name not in given:
            raise ModelError(f"instance '{inst.name}' needs a value for parameter '{p.name}' of "
                             f"subnet '{sub.name}'", inst.loc,
                             expected=f"{inst.name} = {sub.name}({p.name} = ...)")


#: Deepest nesting of subnet instances (an instance of a subnet that holds an instance of
#: another ...).  Flattening, printing and drawing a hierarchy recurse once per level; far
#: beyond any hand-written hierarchy, and well inside Python's recursion limit.
MAX_SUBNET_DEPTH = 256


def _check_recursion(subnets: dict[str, Subnet], top: list[Instance] = ()) -> None:
    """No subnet instantiates itself (directly or not), and the instances of ``top`` (the
    net's own) nest at most MAX_SUBNET_DEPTH deep.  Iterative, and each subnet is explored
    once: linear in the size of the hierarchy, at any depth."""
    children = {name: [it for it in sub.items if isinstance(it, Instance) and it.subnet in subnets]
                for name, sub in subnets.items()}
    height: dict[str, int] = {}      # levels of instances a subnet's instance stands for
    deepest: dict[str, Instance | None] = {}   # its instance on the deepest chain below
    for root in subnets:
        if root in height:
            continue
        path = [root]
        on_path = {root}
        stack = [iter(children[root])]
        while stack:
            it = next(stack[-1], None)
            if it is None:       # every child explored: the subnet's height is known
                name = path.pop()
                on_path.discard(name)
                stack.pop()
                best = max(children[name], key=lambda i: height[i.subnet], default=None)
                height[name] = 1 + (height[best.subnet] if best is not None else 0)
                deepest[name] = best
                continue
            if it.subnet in on_path:
                chain = " -> ".join(path[path.index(it.subnet):] + [it.subnet])
                raise ModelError(f"subnet instantiates itself: {chain}", it.loc,
                                 hint="a subnet cannot contain an instance of itself")
            if it.subnet in height:
                continue
            path.append(it.subnet)
            on_path.add(it.subnet)
            stack.append(iter(children[it.subnet]))
    for inst in top:
        if inst.subnet not in height or height[inst.subnet] <= MAX_SUBNET_DEPTH:
            continue
        chain = [inst]
        while len(chain) <= MAX_SUBNET_DEPTH:
            chain.append(deepest[chain[-1].subnet])
        where = chain[-1]
        names = [i.name for i in chain]
        shown = ".".join(names[:3]) + ". ... ." + ".".join(names[-2:])
        raise ModelError(f"subnet instances nested too deep: {shown} has more than "
                         f"{MAX_SUBNET_DEPTH} levels of instances within instances; instance "
                         f"'{where.name}' (of subnet '{where.subnet}') is level "
                         f"{MAX_SUBNET_DEPTH + 1}, beyond the limit of {MAX_SUBNET_DEPTH}",
                         where.loc,
                         expected=f"at most {MAX_SUBNET_DEPTH} levels of instances within instances",
                         hint="put several of the nested subnets' elements into one subnet, or "
                              "instantiate them side by side instead of one inside the other")


# ---------------------------------------------------------------- places
def _check_subset(cs: EnumColors, colorsets: dict[str, Any]) -> None:
    """``colors sub = parent {a, b}``: the parent is an enumeration holding a and b."""
    parent = colorsets.get(cs.parent)
    if parent is None:
        raise undefined("color set", cs.parent, cs.loc, colorsets)
    if not isinstance(parent, EnumColors):
        raise ModelError(f"color set '{cs.name}' is a subset of '{parent.name}', which is not an "
                         f"enumeration", cs.loc, hint="subsets take colors of a set written {a, b, ...}")
    if parent.parent is not None:
        raise ModelError(f"color set '{cs.name}' is a subset of '{parent.name}', itself a subset of "
                         f"'{parent.parent}'", cs.loc,
                         hint=f"write it as a subset of '{parent.parent}'")
    for v in cs.values:
        if v not in parent.values:
            raise ModelError(f"color '{v}' of '{cs.name}' is not in color set '{parent.name}'", cs.loc,
                             expected="one of " + ", ".join(parent.values),
                             did_you_mean=suggest(v, parent.values))


def _holds(inner, outer) -> bool:
    """Can every color of set ``inner`` live in a place of set ``outer``?"""
    if inner is outer:
        return True
    if not (isinstance(inner, EnumColors) and isinstance(outer, EnumColors)):
        return False
    root = (inner.parent or inner.name), (outer.parent or outer.name)
    return root[0] == root[1] and set(inner.values) <= set(outer.values)


def _colorset(scope: _Scope, name: str | None, loc):
    if name is None:
        return None
    cs = scope.colorsets.get(name)
    if cs is None:
        raise undefined("color set", name, loc, scope.colorsets)
    return cs


def _check_color_const(e: Expr, cs, scope: _Scope, where: str, loc) -> None:
    """A constant color written for a place of color set ``cs``."""
    if isinstance(cs, EnumColors):
        if not isinstance(e, Ref) or e.name in scope.numeric:
            if isinstance(e, Ref):
                raise ModelError(f"'{e.name}' is a parameter, not a color of '{cs.name}'", e.loc or loc,
                                 expected="one of " + ", ".join(cs.values))
            raise ModelError(f"{where}: expected a color of '{cs.name}'", getattr(e, "loc", None) or loc,
                             expected="one of " + ", ".join(cs.values))
        if e.name not in cs.values:
            other = scope.color_values.get(e.name)
            hint = f"'{e.name}' belongs to color set '{other}'" if other else None
            raise ModelError(f"color '{e.name}' is not in color set '{cs.name}'", e.loc or loc,
                             expected="one of " + ", ".join(cs.values),
                             did_you_mean=suggest(e.name, cs.values), hint=hint)
    elif isinstance(cs, RangeColors):
        if isinstance(e, TupleExpr):
            raise ModelError(f"{where}: color set '{cs.name}' holds numbers, not tuples", e.loc or loc)
        _check_numeric(e, scope.numeric, where)
    elif isinstance(cs, RecordColors):
        if not isinstance(e, TupleExpr) or len(e.items) != len(cs.fields):
            fields = ", ".join(f for f, _ in cs.fields)
            raise ModelError(f"{where}: color set '{cs.name}' holds records ({fields})",
                             getattr(e, "loc", None) or loc,
                             expected=f"a tuple of {len(cs.fields)} values, e.g. ({fields})")
        for item, (_f, sub) in zip(e.items, cs.fields):
            _check_color_const(item, scope.colorsets[sub], scope, where, loc)


def _check_place(p: Place, scope: _Scope) -> None:
    cs = _colorset(scope, p.colors, p.loc)
    _check_numeric(p.capacity, scope.numeric, f"the capacity of '{p.name}'")
    for t in p.init:
        _check_numeric(t.count, scope.numeric, f"the initial marking of '{p.name}'")
        if cs is None and t.color is not None:
            raise ModelError(f"place '{p.name}' holds plain tokens", p.loc)
        if cs is not None:
            if t.color is None:
                raise ModelError(f"place '{p.name}' holds colors of '{cs.name}'; say which", p.loc)
            _check_color_const(t.color, cs, scope, f"initial marking of '{p.name}'", p.loc)
    if p.departure not in DEPARTURES:
        raise ModelError(f"unknown departure discipline '{p.departure}'", p.loc,
                         expected=" or ".join(DEPARTURES))
    if not isinstance(p, QueueingPlace):
        if p.departure == IN_ORDER:
            raise ModelError(f"place '{p.name}': 'departure {IN_ORDER}' needs a queue", p.loc,
                             hint="'departure fifo' gives an ordinary place's tokens one at a time")
        return
    if isinstance(p.queue, str):
        if p.queue not in scope.queues:
            raise undefined("queue", p.queue, p.loc, scope.queues,
                            expected="a queue declared with 'queue <name> : <discipline>'")
        queue = scope.queues[p.queue]
    else:
        queue = p.queue
    _check_queue(queue, scope)
    seen: dict[Any, Any] = {}
    for s in p.service:
        key = s.color
        if key in seen:
            raise ModelError(f"service time of {'every color' if key is None else _cname(key)} "
                             f"given twice in '{p.name}'", s.dist.loc or p.loc)
        seen[key] = s
        if key is not None:
            if cs is None:
                raise ModelError(f"place '{p.name}' has no colors; write 'service <distribution>'",
                                 s.dist.loc or p.loc)
            _check_color_const(key, cs, scope, f"service of '{p.name}'", p.loc)
        _check_dist(s.dist, scope, f"service time in '{p.name}'")
    if not p.service:
        raise ModelError(f"queueing place '{p.name}' needs service times", p.loc)
    if None not in seen and isinstance(cs, EnumColors):
        missing = [v for v in cs.values if Ref(v) not in seen]
        if missing:
            raise ModelError(f"queueing place '{p.name}' has no service time for color '{missing[0]}'",
                             p.loc, expected=f"'service {missing[0]}: <distribution>' "
                                             "or one 'service <distribution>' for every color")
    disc = disciplines.find(queue.discipline)
    if p.priority and disc is not None and not disc.takes_priority:
        prio = disciplines.names_where(takes_priority=True)
        raise ModelError(f"priority levels apply to {'/'.join(prio)} queues, but '{p.name}' uses "
                         f"{queue.discipline}", p.loc, hint=f"use 'queue {prio[0]}' to serve by priority")
    pseen = set()
    for color, level in p.priority:
        if color in pseen:
            raise ModelError(f"priority of {_cname(color)} given twice in '{p.name}'", p.loc)
        pseen.add(color)
        if color is not None and cs is not None:
            _check_color_const(color, cs, scope, f"priority in '{p.name}'", p.loc)
        _check_numeric(level, scope.numeric, f"a priority level in '{p.name}'")


def _cname(e) -> str:
    from .expr import fmt
    return f"color '{fmt(e)}'"


def _check_queue(q: Queue, scope: _Scope) -> None:
    if q.discipline not in DISCIPLINES:
        raise ModelError(f"unknown queueing discipline '{q.discipline}'", q.loc,
                         expected=", ".join(DISCIPLINES), did_you_mean=suggest(q.discipline, DISCIPLINES))
    for what, e in (("servers", q.servers), ("quantum", q.quantum), ("switch", q.switch)):
        _check_numeric(e, scope.numeric, f"'{what}' of queue '{q.name}'")
    if q.speed is not None:
        if not disciplines.get(q.discipline).takes_speed:
            raise ModelError(f"'speed' applies to {'/'.join(disciplines.names_where(takes_speed=True))} "
                             f"queues, not {q.discipline} (queue '{q.name}')", q.loc)
        for e in (q.speed if isinstance(q.speed, tuple) else (q.speed,)):
            # n: the tokens in the queue (a table's entries are numbers)
            _check_numeric(e, scope.numeric, f"'speed' of queue '{q.name}'",
                           extra=() if isinstance(q.speed, tuple) else ("n",))
    sliced = disciplines.get(q.discipline).takes_quantum    # known: checked above
    if sliced and q.quantum is None:
        raise ModelError(f"{q.discipline} queue '{q.name}' needs 'quantum <time>'", q.loc)
    if not sliced and (q.quantum is not None or q.switch is not None):
        raise ModelError(f"'quantum'/'switch' apply to "
                         f"{'/'.join(disciplines.names_where(takes_quantum=True))} queues, not "
                         f"{q.discipline}", q.loc)


def _check_dist(d, scope: _Scope, what: str) -> None:
    for a in d.args():
        vals = a if isinstance(a, tuple) else (a,)
        for v in vals:
            if isinstance(v, (Num, Ref, BinOp, Unary, Call, TupleExpr)):
                _check_numeric(v, scope.numeric, what)


# ----------------------------------------------------------- transitions
def _place_for_arc(a: Arc, scope: _Scope, role: str, tname: str) -> _PlaceInfo:
    info = scope.places.get(a.place)
    if info is None:
        if "." in a.place:
            inst, port = a.place.split(".", 1)
            subname = None
            for key in scope.places:
                if key.startswith(inst + "."):
                    subname = key
                    break
            if subname is not None:
                ports = [k.split(".", 1)[1] for k in scope.places if k.startswith(inst + ".")]
                raise ModelError(f"'{port}' is not a port of instance '{inst}'", a.loc,
                                 expected="one of its ports: " + ", ".join(ports),
                                 did_you_mean=suggest(port, ports),
                                 hint="only input and output ports of a subnet are visible outside it")
        raise undefined("place", a.place, a.loc, scope.places,
                        expected=f"a place declared in {scope.what}")
    if info.kind == "instance-port":
        if role == "input" and info.direction != "output":
            raise ModelError(f"transition '{tname}' takes tokens from '{a.place}', which is an input "
                             "port of its subnet", a.loc,
                             hint="from outside, transitions put tokens into input ports and take "
                                  "tokens from output ports")
        if role == "output" and info.direction != "input":
            raise ModelError(f"transition '{tname}' puts tokens into '{a.place}', which is an output "
                             "port of its subnet", a.loc,
                             hint="from outside, transitions put tokens into input ports and take "
                                  "tokens from output ports")
    elif info.kind == "port":
        if role == "input" and info.direction == "output":
            raise ModelError(f"transition '{tname}' takes tokens from output port '{a.place}'", a.loc,
                             hint="inside a subnet, output ports only receive tokens")
        if role == "output" and info.direction == "input":
            raise ModelError(f"transition '{tname}' puts tokens into input port '{a.place}'", a.loc,
                             hint="inside a subnet, input ports only give tokens")
    return info


def _pattern_vars(e: Expr, cs, scope: _Scope, out: dict, loc) -> None:
    """Collect binding variables of an input pattern with their color sets."""
    if isinstance(e, Ref):
        if e.name in scope.color_values or e.name in scope.numeric:
            _check_color_const(e, cs, scope, "arc", loc)
            return
        if "." in e.name:
            return  # field access: checked as an expression
        prev = out.get(e.name)
        if prev is not None and prev[0] != cs.name:
            raise ModelError(f"variable '{e.name}' is bound to colors of '{prev[0]}' and of '{cs.name}'",
                             e.loc or loc, hint="use different variable names")
        out.setdefault(e.name, (cs.name, e.loc))
    elif isinstance(e, TupleExpr) and isinstance(cs, RecordColors):
        if len(e.items) != len(cs.fields):
            raise ModelError(f"color set '{cs.name}' holds records of {len(cs.fields)} fields",
                             e.loc or loc)
        for item, (_f, sub) in zip(e.items, cs.fields):
            _pattern_vars(item, scope.colorsets[sub], scope, out, loc)


def _check_color_expr(e: Expr, cs, variables: dict, scope: _Scope, loc, what: str) -> None:
    """An output color or guard: names must be bound variables, fields, colors or parameters."""
    for r in refs(e):
        name = r.name
        if name in variables or name in scope.color_values or name in scope.numeric:
            continue
        if "." in name:
            var, fieldname = name.split(".", 1)
            if var in variables:
                vcs = scope.colorsets.get(variables[var][0])
                if isinstance(vcs, RecordColors):
                    fields = [f for f, _ in vcs.fields]
                    if fieldname in fields:
                        continue
                    raise ModelError(f"color set '{vcs.name}' has no field '{fieldname}'", r.loc or loc,
                                     expected="one of " + ", ".join(fields),
                                     did_you_mean=suggest(fieldname, fields))
                raise ModelError(f"variable '{var}' holds colors of '{variables[var][0]}', which has no fields",
                                 r.loc or loc)
        raise ModelError(f"unbound variable '{name}' in {what}", r.loc or loc,
                         expected="a variable bound by an input arc, a color or a parameter",
                         did_you_mean=suggest(name, list(variables) + list(scope.color_values)),
                         hint="variables get their values from the tokens a transition consumes")
    if cs is not None and isinstance(e, Ref) and e.name in scope.color_values:
        _check_color_const(e, cs, scope, what, loc)
    if isinstance(e, Ref) and e.name in variables and cs is not None and variables[e.name][0] != cs.name \
            and not _holds(scope.colorsets.get(variables[e.name][0]), cs):
        raise ModelError(f"variable '{e.name}' holds colors of '{variables[e.name][0]}' but place "
                         f"holds '{cs.name}'", e.loc or loc,
                         hint="a variable may move into a place whose color set holds all its colors "
                              "(a subset of the same enumeration)")


def _check_transition(t: Transition, scope: _Scope) -> None:
    if t.kind not in ("immediate", "timed"):
        raise ModelError(f"transition '{t.name}' has unknown kind '{t.kind}'", t.loc,
                         expected="immediate or timed")
    _check_numeric(t.priority, scope.numeric, f"the priority of '{t.name}'")
    _check_numeric(t.servers, scope.numeric, f"'servers' of '{t.name}'")
    if t.kind == "immediate" and t.servers is not None:
        raise ModelError("'servers' applies to timed transitions only", t.loc)
    if t.kind == "timed" and t.priority is not None:
        raise ModelError("'priority' applies to immediate transitions only", t.loc)
    if not t.modes:
        raise ModelError(f"transition '{t.name}' has no modes", t.loc)
    names = set()
    for m in t.modes:
        if m.name is not None:
            if m.name in names:
                raise ModelError(f"mode '{m.name}' is declared twice in transition '{t.name}'", m.loc)
            names.add(m.name)
        if t.kind == "immediate" and m.delay is not None:
            raise ModelError(f"immediate transition '{t.name}' cannot have a delay", m.loc)
        if t.kind == "timed" and m.delay is None:
            raise ModelError(f"timed transition '{t.name}' needs a firing delay", m.loc,
                             expected="'delay <distribution>'")
        if t.kind == "timed" and m.weight is not None:
            raise ModelError(f"timed transition '{t.name}' cannot have a weight", m.loc)
        _check_mode(t, m, scope)


def _check_mode(t: Transition, m: Mode, scope: _Scope) -> None:
    variables: dict[str, tuple[str, Loc | None]] = {}
    for a in m.inputs:
        info = _place_for_arc(a, scope, "input", t.name)
        cs = _colorset(scope, info.colors, a.loc)
        if cs is not None:
            for term in a.terms:
                _pattern_vars(term.color, cs, scope, variables, a.loc)
    for a in m.inputs:
        _check_terms(a, _colorset(scope, scope.places[a.place].colors, a.loc), scope, variables)
    # complex input expressions may use variables bound elsewhere
    for a in m.inputs:
        cs = _colorset(scope, scope.places[a.place].colors, a.loc)
        for term in a.terms:
            if term.color is not None and not isinstance(term.color, (Ref, TupleExpr)):
                _check_color_expr(term.color, cs, variables, scope, a.loc, f"an input of '{t.name}'")
    for kind, arcs in (("output", m.outputs), ("inhibitor", m.inhibitors)):
        for a in arcs:
            info = _place_for_arc(a, scope, kind, t.name)
            cs = _colorset(scope, info.colors, a.loc)
            _check_terms(a, cs, scope, variables)
            if cs is not None:
                for term in a.terms:
                    _check_color_expr(term.color, cs, variables, scope, a.loc, f"an {kind} of '{t.name}'")
    if m.guard is not None:
        _check_color_expr(m.guard, None, variables, scope, m.loc, f"the guard of '{t.name}'")
    _check_numeric(m.weight, scope.numeric, f"the weight of '{t.name}'")
    if m.delay is not None:
        _check_dist(m.delay, scope, f"the delay of '{t.name}'")


def _check_terms(a: Arc, cs, scope: _Scope, variables=()) -> None:
    if not a.terms:
        raise ModelError(f"arc to '{a.place}' has no tokens", a.loc)
    for term in a.terms:
        _check_numeric(term.count, scope.numeric, f"the arc multiplicity of '{a.place}'", variables)
        if cs is None and term.color is not None:
            raise ModelError(f"place '{a.place}' holds plain tokens; it takes no '(...)'", a.loc,
                             hint=f"write '2 {a.place}' for two tokens")
        if cs is not None and term.color is None:
            raise ModelError(f"place '{a.place}' holds colors of '{cs.name}'; say which", a.loc,
                             hint=f"write '{a.place}(x)' to bind a variable")
