"""The tracers that run any program and import what they recorded, by name.

``qpn trace --NAME`` and a suite's ``[build] tracer = "NAME"`` both look them up here.
Each runs a command (keyword options ``timeout``, ``prefix``: what runs the tracer itself,
``cwd``) and returns ``(trace, exit status)``, the trace with ``header``, ``events`` and
``warnings``.  The Python tracer (``qpn trace`` without a name) writes its trace itself
and is not one of them.

>>> sorted(TRACERS)
['jfr', 'perf', 'strace']
"""
from __future__ import annotations

from importlib import import_module

#: name -> (module of this package, function); imported when used
TRACERS = {"strace": ("strace_import", "trace_with_strace"),
           "perf": ("perf_import", "trace_with_perf"),
           "jfr": ("jfr_import", "trace_with_jfr")}


def tracer(name: str):
    """The function that runs a command under tracer ``name`` (a key of :data:`TRACERS`)."""
    module, function = TRACERS[name]
    return getattr(import_module(f".{module}", __package__), function)
