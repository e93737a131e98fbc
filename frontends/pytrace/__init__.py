"""Trace real Python programs into the neutral trace format.

``qpn trace -o run.jsonl -- python prog.py ARGS`` runs the program with the
recorder injected (:mod:`.runner`); the program itself may mark requests with
the optional, zero-cost-when-untraced API re-exported here::

    from qpn.frontends.pytrace import span, request_begin, request_end, mark, feature

This package is imported inside traced programs, so it uses only the standard
library (the runner, which imports qpn, is loaded lazily).
"""
from .api import feature, mark, request_begin, request_end, span, tracing

__all__ = ["span", "request_begin", "request_end", "mark", "feature", "tracing",
           "trace_command"]


def trace_command(*args, **kwargs):
    """See :func:`frontends.pytrace.runner.trace_command`."""
    from .runner import trace_command as run
    return run(*args, **kwargs)
