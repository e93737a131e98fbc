"""Expressions of the model the analyzer builds: names, counts, sums and fractions.

They are :mod:`qpn.expr` trees, built as the language's parser would read the
written form (sums and products left to right), so the printed model reads back
as the same net.

>>> from qpn.expr import fmt
>>> fmt(total(["workers", "1"])), fmt(ratio(120, 123)), fmt(product(["n_a", total(["n_b", "2"])]))
('workers + 1', '120 / 123', 'n_a * (n_b + 2)')
"""
from __future__ import annotations

from qpn.expr import BinOp, Expr, Num, Ref


def atom(term: str | int | Expr) -> Expr:
    """A parameter name, a whole number (given as digits or an int), or an expression."""
    if isinstance(term, (Num, Ref, BinOp)):
        return term
    if isinstance(term, int):
        return Num(term)
    return Num(int(term)) if term.isdigit() else Ref(term)


def _fold(op: str, terms) -> Expr:
    out = atom(terms[0])
    for t in terms[1:]:
        out = BinOp(op, out, atom(t))
    return out


def total(terms) -> Expr:
    """``a + b + ...`` (at least one term)."""
    return _fold("+", list(terms))


def product(factors) -> Expr:
    """``a * b * ...`` (at least one factor)."""
    return _fold("*", list(factors))


def ratio(num: int, den: int) -> Expr:
    """``num / den``: a branch probability as an exact fraction of counts."""
    return BinOp("/", Num(num), Num(den))


__all__ = ["atom", "total", "product", "ratio"]
