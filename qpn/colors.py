"""Finite color sets: their values once parameters are known.

>>> from qpn.model import EnumColors, RangeColors, RecordColors
>>> from qpn.expr import Num
>>> sets = {'job': EnumColors('job', ('a', 'b')), 'n': RangeColors('n', Num(1), Num(2))}
>>> color_values(RecordColors('r', (('k', 'job'), ('i', 'n'))), sets, {})
[('a', 1), ('a', 2), ('b', 1), ('b', 2)]
"""
from __future__ import annotations

import itertools
from typing import Any, Mapping

from .errors import ModelError
from .expr import evaluate, fmt
from .model import EnumColors, RangeColors, RecordColors

MAX_COLORS = 1_000_000


def color_values(cs, colorsets: Mapping[str, Any], env: Mapping[str, Any]) -> list:
    """All values of a color set (enum: names, range: ints, record: tuples)."""
    if isinstance(cs, EnumColors):
        return list(cs.values)
    if isinstance(cs, RangeColors):
        lo, hi = evaluate(cs.lo, env), evaluate(cs.hi, env)
        for v, what in ((lo, "lower"), (hi, "upper")):
            if not isinstance(v, int) and not (isinstance(v, float) and v.is_integer()):
                raise ModelError(f"the {what} bound of color set '{cs.name}' must be a whole number, "
                                 f"got {v}", cs.loc)
        lo, hi = int(lo), int(hi)
        if hi < lo:
            raise ModelError(f"color set '{cs.name}' is empty: {fmt(cs.lo)} .. {fmt(cs.hi)} = "
                             f"{lo} .. {hi}", cs.loc, hint="the range is lo .. hi with lo <= hi")
        if hi - lo + 1 > MAX_COLORS:
            raise ModelError(f"color set '{cs.name}' has {hi - lo + 1} colors (limit {MAX_COLORS})", cs.loc)
        return list(range(lo, hi + 1))
    if isinstance(cs, RecordColors):
        parts = [color_values(colorsets[sub], colorsets, env) for _f, sub in cs.fields]
        size = 1
        for p in parts:
            size *= len(p)
        if size > MAX_COLORS:
            sizes = [str(len(p)) for p in parts]
            sizes = " x ".join(sizes if len(sizes) <= 8 else sizes[:3] + ["..."] + sizes[-2:]) + \
                ("" if len(sizes) <= 8 else f", {len(sizes)} fields")
            hint = "its colors are every combination of its fields' colors"
            if cs.name.endswith(".ctx"):   # the counters of the software layer's loops
                hint = ("a thread's token carries the counter of every counted loop around it: "
                        "write some of them 'loop about N times' (a geometric count, no counter)")
            raise ModelError(f"color set '{cs.name}' has {size:,} colors ({sizes}), more than "
                             f"the limit of {MAX_COLORS:,}", cs.loc, hint=hint)
        return [tuple(v) for v in itertools.product(*parts)]
    raise TypeError(f"not a color set: {cs!r}")


def color_label(c: Any) -> str:
    """Text of a color value for tables ('' for plain tokens)."""
    if c is None:
        return ""
    if isinstance(c, tuple):
        return "(" + ", ".join(color_label(x) for x in c) + ")"
    return str(c)
