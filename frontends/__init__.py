"""Frontends: turn traces of real programs into qpn models.

Importers produce the neutral trace format (JSON lines, see docs/trace-format.md);
the analyzer reads only that format and writes DSL text or qpn models, never
solver internals.
"""
