"""Frontends: turn traces of real programs into qpn models.

Importers produce the neutral trace format (JSON lines, see docs/trace-format.md);
the analyzer reads only that format and writes DSL text or qpn models, never
solver internals.

Modules: ``trace`` (read/write the format), ``trace_schema`` (event kinds and
fields), ``trace_query`` (fragments, queue hand-offs), ``pytrace`` (the Python
tracer behind ``qpn trace``), ``persik`` (PERSIK probe logs), ``pcg`` (code
fragments and probabilistic call graphs), ``pools`` (thread pools from stack
samples), ``cli`` (the commands).
"""
