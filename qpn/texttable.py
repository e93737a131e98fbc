"""Aligned text tables: the one layout every table qpn prints uses.

Columns are two spaces apart, each as wide as its widest cell; the first ``left``
columns are left-aligned (names), the others right-aligned (numbers); a rule of dashes
under the header unless ``rule=False``.

>>> print("\\n".join(aligned(["name", "value"], [["cpu", "0.8"], ["disk", "12.25"]], left=1)))
name  value
----  -----
cpu     0.8
disk  12.25
"""
from __future__ import annotations

from collections.abc import Sequence


def aligned(head: Sequence[str], body: Sequence[Sequence[str]], *, left: int = 0,
            rule: bool = True) -> list[str]:
    """The lines of a table: the header, a rule of dashes (``rule``), one line per row.

    Parameters
    ----------
    head : the column titles.
    body : the rows, each a sequence of cell texts (as many as ``head``).
    left : how many leading columns are left-aligned; the rest are right-aligned.
    rule : whether a line of dashes separates the header from the rows.

    Returns
    -------
    list of str, without trailing newlines.
    """
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h)
              for i, h in enumerate(head)]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(head)]
    if rule:
        out.append("  ".join("-" * w for w in widths))
    return out + [line(row) for row in body]


__all__ = ["aligned"]
