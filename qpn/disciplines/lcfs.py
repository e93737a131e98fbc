"""LCFS: last come, first served, non-preemptive.

A server that frees takes the token that arrived last; a token in service keeps its
server.  Like a stack of waiting requests (a LIFO work queue, a thread pool that hands
the newest task to the next free worker).  Its mean waiting time equals FCFS's when the
order does not look at service times (the conservation law), its spread is larger.
The simulator and the CTMC both keep its order; it breaks product form.

>>> from qpn.disciplines import get
>>> get("lcfs").scheduling, get("lcfs").ctmc
(Scheduling(serves='first', order='last', holds=True), 'exact')
"""
from __future__ import annotations

from . import Discipline, Scheduling, register

register(Discipline("lcfs", "last come, first served, non-preemptive: a server that frees "
                            "takes the latest arrival",
                    scheduling=Scheduling("first", "last", holds=True)))
