"""What both printers (:mod:`dsl.printer`, :mod:`dsl.software_printer`) write alike:
the line width, indentation, distributions and long option lines.

>>> from qpn.distributions import Exp
>>> from qpn.expr import Num
>>> fmt_dist(Exp(Num(20, "ms")))
'exp(20 ms)'
>>> wrap_option("service a: exp(1 s), b: exp(2 s)", " " * 70)[1].strip()
'b: exp(2 s)'
"""
from __future__ import annotations

from qpn.distributions import (Det, Distribution, Empirical, Erlang, Exp, Gamma, HyperExp,
                               HyperExpFit, Lognormal, Normal, Uniform)
from qpn.expr import as_expr, fmt

INDENT = "    "
WIDTH = 88


def _e(x) -> str:
    """An expression (or a number) as the language writes it."""
    return fmt(as_expr(x))


#: distribution type -> (keyword, the fields written as its arguments, in order); the
#: types whose text is not ``keyword(field, ...)`` are written by :func:`fmt_dist` itself
_ARGS: dict[type, tuple[str, tuple[str, ...]]] = {
    Exp: ("exp", ("mean_",)),
    Det: ("det", ("value",)),
    Uniform: ("uniform", ("lo", "hi")),
    Erlang: ("erlang", ("k", "mean_")),
    Gamma: ("gamma", ("mean_", "scv_")),
    Lognormal: ("lognormal", ("mean_", "scv_")),
    Normal: ("normal", ("mu", "sigma")),
}


def _empirical(d: Empirical) -> str:
    """``empirical``/``replay`` of a file or a list, with its options."""
    name = "replay" if d.replay else "empirical"
    if d.source is not None:
        args = [f'"{d.source}"']
    else:
        args = ["[" + ", ".join(_e(s) for s in d.samples) + "]"]
    if d.unit:
        args.append(f"unit = {d.unit}")
    if d.column is not None:
        args.append(f"column = {d.column}")
    return f"{name}({', '.join(args)})"


def fmt_dist(d: Distribution) -> str:
    """A distribution as the language writes it.

    >>> from qpn.expr import Num
    >>> fmt_dist(Erlang(4, Num(2, "ms")))
    'erlang(4, 2 ms)'
    """
    spec = next((_ARGS[c] for c in type(d).__mro__ if c in _ARGS), None)   # as isinstance would
    if spec is not None:
        keyword, fields = spec
        return f"{keyword}({', '.join(_e(getattr(d, f)) for f in fields)})"
    if isinstance(d, HyperExp):
        return "hyperexp(" + ", ".join(f"{_e(p)}: {_e(m)}" for p, m in zip(d.probs, d.means)) + ")"
    if isinstance(d, HyperExpFit):
        return f"hyperexp(mean = {_e(d.mean_)}, scv = {_e(d.scv_)})"
    if isinstance(d, Empirical):
        return _empirical(d)
    raise TypeError(f"cannot print distribution {d!r}")


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def wrap_option(option: str, indent: str) -> list[str]:
    """An option line; long comma lists continue aligned under their first item."""
    if len(indent) + len(option) <= WIDTH:
        return [indent + option]
    keyword, _, rest = option.partition(" ")
    items = _split_top(rest)
    pad = indent + " " * (len(keyword) + 1)
    lines = [f"{indent}{keyword} {items[0]}"]
    for it in items[1:]:
        lines[-1] += ","
        lines.append(pad + it)
    return lines


def doc_lines(doc: str, indent: str) -> list[str]:
    """A declaration's comment as ``#`` lines, each as the file had it: a line that
    started ``##`` keeps its second ``#`` unspaced (``## Section``, not ``# # Section``).

    >>> doc_lines("about p\\n\\n# Section", "  ")
    ['  # about p', '  #', '  ## Section']
    """
    if not doc:
        return []
    return [indent + ("#" + line if line.startswith("#") else "# " + line if line else "#")
            for line in doc.split("\n")]

