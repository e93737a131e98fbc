"""The qpn modeling language: grammar (qpn.lark), parser and canonical printer.

The submodules are imported when first asked for (``dsl.parse`` ...), so importing one
of them (``dsl.grammar`` for an expression) does not import the rest.
"""
from __future__ import annotations

import importlib

_WHERE = {"parse": "dsl.parser", "load": "dsl.parser", "parse_expr": "dsl.grammar",
          "print_net": "dsl.printer"}

__all__ = ["parse", "load", "parse_expr", "print_net"]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'dsl' has no attribute {name!r}")
