"""SRPT: shortest remaining processing time first, preemptive resume.

The server works on the token with the least work left; an arrival with less work
than the one in service takes the server, and the other resumes later where it
stopped.  Among single-server disciplines it gives the least mean response time
(Schrage 1968).  The simulator keeps each token's remaining work, so it serves it; a
CTMC has no finite state for it (the order depends on continuous remaining work), and
it breaks product form.

>>> from qpn.disciplines import get
>>> get("srpt").scheduling, get("srpt").ctmc
(Scheduling(serves='first', order='remaining', holds=False), None)
"""
from __future__ import annotations

from . import Discipline, Scheduling, register

register(Discipline("srpt", "shortest remaining processing time first, preemptive resume",
                    scheduling=Scheduling("first", "remaining", holds=False), ctmc=None,
                    ctmc_note="the order depends on each token's remaining work, a continuous quantity"))
