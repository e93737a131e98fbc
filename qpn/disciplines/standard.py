"""The standard queueing disciplines (the keywords of the language since its first version).

>>> from qpn.disciplines import get
>>> get("lcfs-pr").scheduling
Scheduling(serves='first', order='last', holds=False)
"""
from __future__ import annotations

import math

from . import Discipline, Scheduling, register

register(Discipline("is", "infinite server: every token is served at once, with no wait",
                    default_servers=math.inf, shares_service=True, product_form="any", qpme="IS",
                    ctmc_fifo_departure=True, scheduling=Scheduling("all")))
register(Discipline("fcfs", "first come, first served", product_form="exponential", qpme="FCFS",
                    ctmc_fifo_departure=True, scheduling=Scheduling("first", "arrival")))
register(Discipline("ps", "processor sharing: the servers' capacity is shared by every token",
                    shares_service=True, product_form="any", qpme="PS", ctmc_fifo_departure=True,
                    scheduling=Scheduling("shared")))
register(Discipline("random", "a server that frees takes a waiting token at random",
                    product_form="exponential", qpme="RANDOM",
                    scheduling=Scheduling("first", "random", holds=True)))
register(Discipline("prio", "by priority level, then first come; preemptive unless said",
                    takes_priority=True, qpme="PRIO", scheduling=Scheduling("first", "priority", holds=None)))
register(Discipline("lcfs-pr", "last come, first served, preemptive resume", product_form="any",
                    scheduling=Scheduling("first", "last", holds=False)))
register(Discipline("rr", "round robin: time slices of 'quantum', a context switch between them",
                    takes_quantum=True, ctmc="ps", scheduling=Scheduling("first", "ready", holds=False)))
