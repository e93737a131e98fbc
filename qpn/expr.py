"""Expressions: parameters, arc multiplicities, guards, distribution arguments.

A tiny immutable AST that keeps what the user wrote (``5 ms`` stays a number
with a unit), evaluates numerically against an environment, converts to sympy
for symbolic solution, and prints back canonically.

>>> from qpn.expr import Num, Ref, BinOp, evaluate, fmt
>>> e = BinOp('*', Num(2), Ref('think'))
>>> fmt(e), evaluate(e, {'think': 0.5})
('2 * think', 1.0)
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from .errors import Loc, ModelError, suggest

#: Time units of the language; internally everything is in seconds.
UNITS: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9,
                           "min": 60.0, "h": 3600.0}
# Exact factors for symbolic work (sympy Rational numerator, denominator).
_UNIT_RATIONAL = {"s": (1, 1), "ms": (1, 1000), "us": (1, 10**6), "ns": (1, 10**9),
                  "min": (60, 1), "h": (3600, 1)}


@dataclass(frozen=True, slots=True)
class Num:
    """A number, with the time unit the user wrote (``5 ms``: value 5, unit 'ms')."""
    value: int | float
    unit: str | None = None
    loc: Loc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Ref:
    """A name: parameter, color constant, binding variable, or ``x.field``."""
    name: str
    loc: Loc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BinOp:
    """``left op right``: arithmetic, comparison or boolean."""
    op: str
    left: "Expr"
    right: "Expr"
    loc: Loc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Unary:
    """``-x`` or ``not x``."""
    op: str  # '-' or 'not'
    operand: "Expr"
    loc: Loc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a built-in function (``min``, ``max``, ``ceil`` ...)."""
    func: str
    args: tuple["Expr", ...]
    loc: Loc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TupleExpr:
    """A record color literal such as ``(a, 3)``."""
    items: tuple["Expr", ...]
    loc: Loc | None = field(default=None, compare=False, repr=False)


Expr = Union[Num, Ref, BinOp, Unary, Call, TupleExpr]

FUNCTIONS: dict[str, tuple[int, int, Callable[..., Any]]] = {
    # name: (min args, max args, implementation)
    "min": (1, 99, min), "max": (1, 99, max), "sqrt": (1, 1, math.sqrt),
    "log": (1, 1, math.log), "ceil": (1, 1, math.ceil), "floor": (1, 1, math.floor),
    "abs": (1, 1, abs), "round": (1, 1, round),
}

_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "^": lambda a, b: _power(a, b),
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}

def _power(a: Any, b: Any) -> Any:
    """``a ^ b``; whole numbers whose power would exceed 1024 bits are raised as floats (an
    exact ``10 ^ 10 ^ 10`` would take minutes and gigabytes; as a float it overflows at once)."""
    if type(a) is int and type(b) is int and b > 0 and abs(a) > 1 and \
            b * math.log2(abs(a)) > 1024:
        try:
            return float(a) ** b
        except OverflowError:
            raise OverflowError("the result is beyond the largest float (1.8e308)") from None
    return a ** b


# Printing precedence (higher binds tighter).
PREC = {"or": 1, "and": 2, "not": 3, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4,
        ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "neg": 7, "^": 8}
_ATOM = 9


def num(x: int | float) -> Num:
    """Shorthand used by programmatic model builders."""
    return Num(x)


def as_expr(x: "Expr | int | float | str") -> Expr:
    """Coerce Python values to expressions (str -> name reference)."""
    if isinstance(x, (Num, Ref, BinOp, Unary, Call, TupleExpr)):
        return x
    if isinstance(x, bool):
        raise TypeError("booleans are not expressions")
    if isinstance(x, (int, float)):
        return Num(x)
    if isinstance(x, str):
        return Ref(x)
    if isinstance(x, tuple):
        return TupleExpr(tuple(as_expr(i) for i in x))
    raise TypeError(f"cannot make an expression of {x!r}")


# ----------------------------------------------------------------- evaluation

def evaluate(e: Expr, env: Mapping[str, Any]) -> Any:
    """Evaluate numerically; names are looked up in ``env``.

    Raises :class:`ModelError` (with the location of the offending name) on
    undefined names, division by zero and math domain errors.
    """
    t = type(e)
    if t is Num:
        return e.value * UNITS[e.unit] if e.unit else e.value
    if t is Ref:
        try:
            return env[e.name]
        except KeyError:
            raise ModelError(f"undefined name '{e.name}'", e.loc,
                             expected="a parameter, color or variable in scope",
                             did_you_mean=suggest(e.name, [k for k in env if isinstance(k, str)])) from None
    if t is BinOp:
        if e.op == "and":
            return bool(evaluate(e.left, env)) and bool(evaluate(e.right, env))
        if e.op == "or":
            return bool(evaluate(e.left, env)) or bool(evaluate(e.right, env))
        a = evaluate(e.left, env)
        b = evaluate(e.right, env)
        try:
            v = _ARITH[e.op](a, b)
        except ZeroDivisionError:
            raise ModelError("division by zero", e.loc or _first_loc(e),
                             hint=f"in '{fmt(e)}'") from None
        except (TypeError, OverflowError, ValueError) as exc:
            raise ModelError(f"cannot compute '{fmt(e)}': {exc}", e.loc or _first_loc(e)) from None
        if type(v) is int and not -_FLOAT_MAX <= v <= _FLOAT_MAX:
            raise _too_large(e, v)
        return v
    if t is Unary:
        v = evaluate(e.operand, env)
        if e.op == "not":
            return not v
        try:
            return -v
        except TypeError:
            raise ModelError(f"cannot negate '{fmt(e.operand)}'", e.loc or _first_loc(e)) from None
    if t is Call:
        lo, hi, fn = FUNCTIONS[e.func]
        args = [evaluate(a, env) for a in e.args]
        try:
            v = fn(*args)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ModelError(f"cannot compute '{fmt(e)}': {exc}", e.loc or _first_loc(e)) from None
        if type(v) is int and not -_FLOAT_MAX <= v <= _FLOAT_MAX:
            raise _too_large(e, v)
        return v
    if t is TupleExpr:
        return tuple(evaluate(i, env) for i in e.items)
    raise TypeError(f"not an expression: {e!r}")


#: the largest float: a whole number beyond it cannot be used as a number anywhere
#: (converting it to a float raises OverflowError), so exact integer arithmetic stops there
_FLOAT_MAX = sys.float_info.max


def _too_large(e: Expr, v: int) -> ModelError:
    """The located error for a whole-number result beyond the largest float."""
    return ModelError(f"the number is too large: '{_short(fmt(e))}' has {len(str(abs(v)))} digits, "
                      f"beyond the largest number (1.8e308)", e.loc or _first_loc(e),
                      hint="numbers must stay below 1.8e308; write 'inf' where an unlimited "
                           "value is meant")


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _first_loc(e: Expr) -> Loc | None:
    for sub in walk(e):
        if sub.loc is not None:
            return sub.loc
    return None


def walk(e: Expr):
    """Yield ``e`` and all sub-expressions (pre-order)."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        t = type(x)
        if t is BinOp:
            stack.append(x.right)
            stack.append(x.left)
        elif t is Unary:
            stack.append(x.operand)
        elif t is Call or t is TupleExpr:
            stack.extend(reversed(x.args if t is Call else x.items))


def refs(e: Expr) -> list[Ref]:
    """All name references in ``e`` (with their locations)."""
    return [x for x in walk(e) if type(x) is Ref]


def free_names(e: Expr) -> set[str]:
    """The names ``e`` refers to.

    >>> sorted(free_names(BinOp('*', Ref('n'), BinOp('+', Ref('think'), Num(1)))))
    ['n', 'think']
    """
    return {r.name for r in refs(e)}


def rename(e: Expr, mapping: Mapping[str, str]) -> Expr:
    """Rename references (used by flattening to prefix subnet paths)."""
    return substitute(e, {k: Ref(v) for k, v in mapping.items()})


def substitute(e: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace references by expressions; other nodes are rebuilt only if changed."""
    t = type(e)
    if t is Num:
        return e
    if t is Ref:
        r = mapping.get(e.name)
        if r is None:
            return e
        if type(r) is Ref and r.loc is None and e.loc is not None:
            return Ref(r.name, e.loc)
        return r
    if t is BinOp:
        a, b = substitute(e.left, mapping), substitute(e.right, mapping)
        return e if (a is e.left and b is e.right) else BinOp(e.op, a, b, e.loc)
    if t is Unary:
        a = substitute(e.operand, mapping)
        return e if a is e.operand else Unary(e.op, a, e.loc)
    if t is Call:
        args = tuple(substitute(a, mapping) for a in e.args)
        return Call(e.func, args, e.loc)
    if t is TupleExpr:
        return TupleExpr(tuple(substitute(a, mapping) for a in e.items), e.loc)
    raise TypeError(f"not an expression: {e!r}")


def is_constant(e: Expr) -> bool:
    """Whether ``e`` refers to no name (a number without evaluation)."""
    return not free_names(e)


# ------------------------------------------------------------------- printing

def _fmt_number(v: int | float) -> str:
    if isinstance(v, bool):
        raise TypeError("booleans are not numbers")
    if isinstance(v, int):
        return str(v)
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"      # '-inf' parses back to the literal -inf
    if math.isnan(v):
        raise ValueError(f"cannot print {v} as a number literal")
    return repr(float(v))


def _prec(e: Expr) -> int:
    t = type(e)
    if t is BinOp:
        return PREC[e.op]
    if t is Unary:
        return PREC["neg"] if e.op == "-" else PREC["not"]
    if t is Num and (e.value < 0 or (e.value == 0 and math.copysign(1, e.value) < 0)):
        return PREC["neg"]
    return _ATOM


def fmt(e: Expr) -> str:
    """Canonical text of an expression; ``parse_expr(fmt(e)) == e``."""
    t = type(e)
    if t is Num:
        s = _fmt_number(e.value)
        return f"{s} {e.unit}" if e.unit else s
    if t is Ref:
        return e.name
    if t is Call:
        return f"{e.func}({', '.join(fmt(a) for a in e.args)})"
    if t is TupleExpr:
        return f"({', '.join(fmt(a) for a in e.items)})"
    if t is Unary:
        p = _prec(e)
        inner = fmt(e.operand)
        if _prec(e.operand) < p:
            inner = f"({inner})"
        return f"-{inner}" if e.op == "-" else f"not {inner}"
    if t is BinOp:
        p = PREC[e.op]
        left, right = fmt(e.left), fmt(e.right)
        lp, rp = _prec(e.left), _prec(e.right)
        if p == 4:  # comparisons do not chain
            lneed, rneed = lp <= p, rp <= p
        elif e.op == "^":  # right associative
            lneed, rneed = lp <= p, rp < p
        else:
            lneed, rneed = lp < p, rp <= p
        if lneed:
            left = f"({left})"
        if rneed:
            right = f"({right})"
        return f"{left} {e.op} {right}"
    raise TypeError(f"not an expression: {e!r}")


# -------------------------------------------------------------------- sympy

def to_sympy(e: Expr, symbols: Mapping[str, Any]) -> Any:
    """Convert to a sympy expression; names map through ``symbols``.

    Decimal literals become exact rationals, so ``0.05`` is ``1/20``.
    """
    import sympy as sp

    t = type(e)
    if t is Num:
        v = sp.Integer(e.value) if isinstance(e.value, int) else sp.Rational(repr(e.value))
        if e.unit:
            n, d = _UNIT_RATIONAL[e.unit]
            v = v * sp.Rational(n, d)
        return v
    if t is Ref:
        if e.name not in symbols:
            raise ModelError(f"undefined name '{e.name}'", e.loc,
                             did_you_mean=suggest(e.name, symbols))
        return symbols[e.name]
    if t is BinOp:
        a, b = to_sympy(e.left, symbols), to_sympy(e.right, symbols)
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
               "/": lambda: a / b, "^": lambda: a ** b,
               "==": lambda: sp.Eq(a, b), "!=": lambda: sp.Ne(a, b),
               "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b,
               ">=": lambda: a >= b, "and": lambda: sp.And(a, b), "or": lambda: sp.Or(a, b)}
        return ops[e.op]()
    if t is Unary:
        a = to_sympy(e.operand, symbols)
        return -a if e.op == "-" else sp.Not(a)
    if t is Call:
        args = [to_sympy(a, symbols) for a in e.args]
        fns = {"min": sp.Min, "max": sp.Max, "sqrt": sp.sqrt, "log": sp.log,
               "ceil": sp.ceiling, "floor": sp.floor, "abs": sp.Abs,
               "round": lambda x: sp.floor(x + sp.Rational(1, 2))}
        return fns[e.func](*args)
    raise ModelError(f"'{fmt(e)}' has no symbolic form", e.loc)
