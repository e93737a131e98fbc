"""Comments on the model's nodes, and branch probabilities as exact fractions.

The model writer's comments (``# text`` lines) become a node's ``doc``, which the
software layer prints above it, as the parser keeps them.
"""
from __future__ import annotations

from dataclasses import replace

from .exprs import ratio


def probs(counts) -> list:
    """Branch probabilities as exact fractions of the counts (expressions)."""
    n_all = sum(counts)
    return [ratio(n, n_all) for n in counts]


def doc(lines) -> str:
    """Comment lines (``# text``) as a declaration's or a step's ``doc``, as the parser
    keeps them (the ``#`` and one space dropped)."""
    out = []
    for ln in lines:
        body = ln[1:] if ln.startswith("#") else ln
        out.append(body[1:] if body.startswith(" ") else body)
    return "\n".join(out)


def documented(nodes: list, lines) -> list:
    """``nodes`` with the comment ``lines`` above the first of them."""
    if not lines or not nodes:
        return nodes
    first = nodes[0]
    text = doc(lines) + ("\n" + first.doc if first.doc else "")
    return [replace(first, doc=text)] + nodes[1:]
