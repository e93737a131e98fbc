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


def color_count(cs, colorsets: Mapping[str, Any], env: Mapping[str, Any]) -> int:
    """``len(color_values(cs, ...))`` without listing the values (a record's count is the
    product of its fields'); the same errors for a bad bound or a set past MAX_COLORS.

    >>> from qpn.model import EnumColors, RangeColors, RecordColors
    >>> from qpn.expr import Num
    >>> sets = {'job': EnumColors('job', ('a', 'b')), 'n': RangeColors('n', Num(1), Num(500))}
    >>> color_count(RecordColors('r', (('k', 'job'), ('i', 'n'))), sets, {})
    1000
    """
    if isinstance(cs, RecordColors):
        size = 1
        for _f, sub in cs.fields:
            size *= color_count(colorsets[sub], colorsets, env)
        if size > MAX_COLORS:
            color_values(cs, colorsets, env)      # its error, with the fields' sizes and hint
        return size
    if isinstance(cs, RangeColors):
        lo, hi = evaluate(cs.lo, env), evaluate(cs.hi, env)
        if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool) \
                and not isinstance(hi, bool) and lo <= hi and hi - lo + 1 <= MAX_COLORS:
            return hi - lo + 1
    return len(color_values(cs, colorsets, env))  # an enum, or a range with an error to say


class ColorIndex:
    """A color's position in :func:`color_values`' order, computed rather than looked up in
    a table of every color (a table of 10^6 loop contexts took 0.6 s to build): a range's
    offset, a record's mixed-radix number of its fields' positions (the last field varies
    fastest, as in ``itertools.product``).  ``v in index`` and ``index[v]`` (KeyError when
    absent) compare as a dict would: 2.0 is the color 2.

    >>> from qpn.model import EnumColors, RangeColors, RecordColors
    >>> from qpn.expr import Num
    >>> sets = {'job': EnumColors('job', ('a', 'b')), 'n': RangeColors('n', Num(1), Num(3))}
    >>> ix = ColorIndex(RecordColors('r', (('k', 'job'), ('i', 'n'))), sets, {})
    >>> ix[('b', 2)], ('c', 1) in ix, ('a', 4) in ix
    (4, False, False)
    """

    def __init__(self, cs, colorsets: Mapping[str, Any], env: Mapping[str, Any]):
        self.table = self.fields = None
        if isinstance(cs, RecordColors):
            self.fields = [ColorIndex(colorsets[sub], colorsets, env) for _f, sub in cs.fields]
            self.strides, stride = [], 1
            for f in reversed(self.fields):
                self.strides.append(stride)
                stride *= f.size
            self.strides.reverse()
            self.size = stride
        elif isinstance(cs, RangeColors):
            vals = color_values(cs, colorsets, env)     # the bounds' checks (a list of ints)
            self.lo, self.size = vals[0], len(vals)
        else:
            vals = color_values(cs, colorsets, env)
            self.table = {v: i for i, v in enumerate(vals)}
            self.size = len(vals)

    def get(self, v) -> int | None:
        if self.table is not None:
            return self.table.get(v)
        if self.fields is None:            # a range: an int, or a float equal to one
            if isinstance(v, (int, float)) and (isinstance(v, int) or v.is_integer()):
                i = int(v) - self.lo
                return i if 0 <= i < self.size else None
            return None
        if not isinstance(v, tuple) or len(v) != len(self.fields):
            return None
        at = 0
        for f, stride, x in zip(self.fields, self.strides, v):
            i = f.get(x)
            if i is None:
                return None
            at += i * stride
        return at

    def __contains__(self, v) -> bool:
        return self.get(v) is not None

    def __getitem__(self, v) -> int:
        i = self.get(v)
        if i is None:
            raise KeyError(v)
        return i


def color_label(c: Any) -> str:
    """Text of a color value for tables ('' for plain tokens)."""
    if c is None:
        return ""
    if isinstance(c, tuple):
        return "(" + ", ".join(color_label(x) for x in c) + ")"
    return str(c)
