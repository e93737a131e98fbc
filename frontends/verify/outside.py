"""The latency outside a traced server: what a server-only trace cannot see.

A load program's response time runs from its connect to the reply's last byte.  The
traced server sees a connection from its ``accept`` to its last send; the handshake,
the wait in the accept queue before the server's thread woke, the loopback transfer
and the client reading the rest of the reply are outside (on this VM 0.2 ms for the
connect alone).  A suite with ``[predict] outside = "ms"`` (the unit of its measured
response time) gets ``outside`` in its prediction expression: the load program's
response time in the traced runs less the server's connection spans in their traces,
averaged over the traces.  It is a constant: the prediction at another load or pool
size assumes this part does not change.

>>> evs = [{"kind": "io", "tid": 1, "ts": 0, "dur": 5_000, "op": "accept", "fd": 3, "conn": 7},
...        {"kind": "io", "tid": 2, "ts": 205_000, "dur": 100_000, "op": "send", "fd": 7}]
>>> outside_latency([(0.5, evs)], "ms")        # 0.5 ms seen by the client, 0.3 ms held
(0.2, [{'client': 0.5, 'server': 0.3, 'connections': 1}])
"""
from __future__ import annotations

import statistics

from qpn.errors import QPNError
from qpn.frontends.trace_query import connection_spans

#: the units a measured response time may have, in ns
UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3}


def outside_latency(runs: list, unit: str) -> tuple[float, list[dict]]:
    """(mean over the traced runs of client response - server span, each run's figures).

    Parameters
    ----------
    runs : list of (client's mean response time in ``unit``, the trace's events), or of
        (..., events, tid -> process) for a trace of several processes
    unit : ``"s"``, ``"ms"`` or ``"us"``
    """
    scale = UNITS[unit]
    detail = []
    for client, events, *processes in runs:
        spans = connection_spans(events, *processes)
        if not spans:
            raise QPNError("outside: the trace has no accepted connections with their fd "
                           "(traced before `conn` was recorded, or the server accepts none): "
                           "qpn verify --retrace")
        server = statistics.fmean(spans) / scale
        detail.append({"client": round(client, 6), "server": round(server, 6),
                       "connections": len(spans)})
    return round(statistics.fmean(d["client"] - d["server"] for d in detail), 6), detail


__all__ = ["outside_latency", "UNITS"]
