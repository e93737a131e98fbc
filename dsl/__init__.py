"""The qpn modeling language: grammar (qpn.lark), parser and canonical printer."""
from .parser import load, parse, parse_expr
from .printer import print_net

__all__ = ["parse", "load", "parse_expr", "print_net"]
