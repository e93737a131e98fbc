"""Parameter values and overrides (the basis of sweeps).

>>> import qpn
>>> net = qpn.parse("param n = 4\\nparam twice = 2 * n\\nplace p init twice")
>>> net.param_values()['twice'], net.with_params(n=5).param_values()['twice']
(8, 10)
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Mapping

from .errors import ModelError, ParameterError, suggest
from .expr import Expr, Num, evaluate, fmt, free_names, is_constant
from .model import Include, Instance, NetLike, NetT, Param

#: the largest whole-number parameter (int64)
MAX_INT = 2 ** 63 - 1


def _as_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def param_values(net: NetLike, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate every parameter of ``net`` in dependency order.

    Raises :class:`ModelError` for cycles, undefined names and non-numbers.

    >>> import qpn
    >>> param_values(qpn.parse("param n = 2\\nparam m = 3 * n\\nplace p init m"), {"n": 5})
    {'n': 5, 'm': 15}
    """
    return values_of(net.params, extra)


def values_of(params: Iterable[Param], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate parameter declarations in dependency order (``extra``: values given first).

    >>> from qpn.expr import BinOp, Num, Ref
    >>> values_of([Param("n", Num(3)), Param("m", BinOp("*", Num(2), Ref("n")))])
    {'n': 3, 'm': 6}
    """
    defs: dict[str, Param] = {p.name: p for p in params}
    values: dict[str, Any] = dict(extra or {})
    state: dict[str, int] = {}

    def value(name: str, env: dict) -> Any:
        p = defs[name]
        v = evaluate(p.value, env)
        if not _as_number(v):
            raise ModelError(f"parameter '{name}' must be a number, got {v!r}", p.loc)
        if isinstance(v, float) and math.isnan(v):
            raise ModelError(f"parameter '{name}' is not a number (NaN)", p.loc)
        if isinstance(v, int) and not -MAX_INT <= v <= MAX_INT:
            # numpy holds whole numbers as int64: a larger one overflows wherever it is used
            raise ModelError(f"parameter '{name}' is out of range: whole numbers must be within "
                             f"+/-(2^63 - 1) = {MAX_INT:,}, got {v:.6g}", p.loc,
                             hint=f"if it is not a count, write it as a real number: {float(v):.6g}")
        return v

    # depth first over the dependencies, with an explicit stack: a chain of thousands of
    # parameters each defined by the next is no deeper for Python than one
    for root in defs:
        if root in values:
            continue
        state[root] = 1
        chain = [root]
        stack = [(root, iter(free_names(defs[root].value)), {})]
        while stack:
            name, deps, env = stack[-1]
            dep = next(deps, None)
            if dep is None:
                stack.pop()
                chain.pop()
                v = value(name, env)
                state[name] = 2
                values[name] = v
                if stack:
                    stack[-1][2][name] = v
                continue
            if dep not in defs and dep not in values:
                raise ModelError(f"undefined name '{dep}' in parameter '{name}'", defs[name].loc,
                                 did_you_mean=suggest(dep, defs))
            if dep in values:
                env[dep] = values[dep]
                continue
            if state.get(dep) == 1:
                cyc = " -> ".join(chain + [dep])
                raise ModelError(f"parameters depend on each other in a cycle: {cyc}", defs[dep].loc,
                                 hint="give one of them a number")
            state[dep] = 1
            chain.append(dep)
            stack.append((dep, iter(free_names(defs[dep].value)), {}))
    return values


def coerce_value(name: str, value: Any) -> Expr:
    """Turn an override (number, expression or text like '20 ms') into an expression.

    >>> coerce_value("think", "20 ms"), coerce_value("n", 8)
    (Num(value=20, unit='ms'), Num(value=8, unit=None))
    """
    if isinstance(value, bool):
        raise ParameterError(f"parameter '{name}' must be a number, got {value!r}")
    if _as_number(value):
        if isinstance(value, float) and (math.isnan(value)):
            raise ParameterError(f"parameter '{name}' must be a number, got NaN")
        return Num(value)
    if isinstance(value, str):
        from qpn.dsl.grammar import parse_expr
        try:
            e = parse_expr(value.strip(), f"--set {name}")
        except ModelError:
            raise ParameterError(f"parameter '{name}' must be a number or an expression, got '{value}'",
                                 hint="examples: --set threads=8, --set think=\"20 ms\"") from None
        return e
    if hasattr(value, "__class__") and value.__class__.__module__ == "qpn.expr":
        return value
    raise ParameterError(f"parameter '{name}' must be a number, got {value!r}")


def with_params(net: NetT, values: Mapping[str, Any]) -> NetT:
    """Override parameters (top-level names or ``instance.param``).

    >>> import qpn
    >>> net = with_params(qpn.parse("param n = 2\\nplace p init n"), {"n": 7})
    >>> net.params[0].value
    Num(value=7, unit=None)
    """
    if not values:
        return net
    top = {p.name for p in net.params}
    inst = {i.name: i for i in net.instances}
    pending: dict[str, Expr] = {}
    for name, value in values.items():
        e = coerce_value(name, value)
        if name not in top:
            head = name.split(".", 1)[0]
            if "." in name and head in inst:
                pending[name] = e
                continue
            cands = list(top) + [f"{i}.{p.name}" for i in inst for s in net.subnets
                                 if s.name == inst[i].subnet for p in s.params]
            raise ParameterError(f"unknown parameter '{name}'", None,
                                 expected="one of: " + (", ".join(sorted(cands)) or "(none)"),
                                 did_you_mean=suggest(name, cands))
        pending[name] = e
    for name, e in pending.items():
        if "." in name and name not in top:
            continue
        names = free_names(e)
        bad = [n for n in names if n not in top]
        if bad:
            raise ParameterError(f"parameter '{name}' must be a number or an expression of "
                                 f"parameters; '{bad[0]}' is neither", None,
                                 did_you_mean=suggest(bad[0], top))
    new = _replace_items(net, pending)
    param_values(new)  # fail early on non-numbers
    return new


def _replace_items(net: NetT, pending: dict[str, Expr]) -> NetT:
    items = []
    for it in net.items:
        if isinstance(it, Param) and it.name in pending:
            it = replace(it, value=pending[it.name])
        elif isinstance(it, Include) and it.net is not None:
            sub = {k: v for k, v in pending.items() if k in {p.name for p in it.net.params}}
            if sub:
                it = replace(it, net=_replace_items(it.net, sub))
        elif isinstance(it, Instance):
            args = dict(it.args)
            changed = False
            for key, e in pending.items():
                if key.startswith(it.name + "."):
                    pname = key[len(it.name) + 1:]
                    if "." in pname:
                        raise ParameterError(f"cannot override '{key}' on the hierarchical net",
                                             hint="flatten first: net.flatten().with_params(...)")
                    sub = next((s for s in net.subnets if s.name == it.subnet), None)
                    if sub is None or pname not in {p.name for p in sub.params}:
                        raise ParameterError(f"unknown parameter '{key}'", None,
                                             did_you_mean=suggest(pname, [p.name for p in sub.params] if sub else []))
                    args[pname] = e
                    changed = True
            if changed:
                order = [p.name for p in next(s for s in net.subnets if s.name == it.subnet).params]
                it = replace(it, args=tuple((k, args[k]) for k in order if k in args))
        items.append(it)
    return replace(net, items=tuple(items))


__all__ = ["param_values", "values_of", "with_params", "coerce_value", "fmt", "is_constant"]
