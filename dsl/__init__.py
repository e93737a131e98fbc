"""The qpn modeling language: grammar (qpn.lark), parser and canonical printer.

The submodules are imported when first asked for (``dsl.parse`` ...), so importing one
of them (``dsl.grammar`` for an expression) does not import the rest.
"""
from __future__ import annotations

import importlib

_WHERE = {"parse": "qpn.dsl.parser", "load": "qpn.dsl.parser", "parse_expr": "qpn.dsl.grammar",
          "print_net": "qpn.dsl.printer"}

__all__ = ["parse", "load", "parse_expr", "print_net"]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'dsl' has no attribute {name!r}")
