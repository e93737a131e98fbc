"""Small text helpers for drawings and summaries."""
from __future__ import annotations

from .expr import Num, fmt
from .model import Arc


def arc_label(a: Arc) -> str:
    """Inscription of an arc for a drawing: '' for one plain token."""
    parts = []
    for t in a.terms:
        one = type(t.count) is Num and t.count.value == 1
        if t.color is None:
            if not one:
                parts.append(fmt(t.count))
        else:
            parts.append(("" if one else fmt(t.count) + " ") + fmt(t.color))
    return ", ".join(parts).replace('"', "'")
