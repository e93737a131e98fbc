"""JSQ-PS: a machine's cores.  A token is placed on the least loaded server when it
arrives (join the shortest queue) and stays there until it is done; each server is
shared by the tokens placed on it.

This is how an operating system runs threads on per-core run queues: a thread that
wakes up goes to an idle core if there is one, else to a loaded one, and it is rarely
moved while it runs (Linux does not migrate a task that ran within the last 0.5 ms,
``sched_migration_cost``, and a core that idles only briefly does not pull work).  With
no more tokens than servers it is PS.  With more, a server can idle while another is
shared: three threads of equal work released together on two cores finish after 2/3 of
the work, not 1/2.  Measured on this VM (Linux 6.18), a barrier round of 48 hashes split
among 3 threads took 1.30 times as long as among 2 or 4 (2/3 / 1/2 = 1.33; PS: 1).  A
CTMC would need each server's tokens per class in its state; none is built, so the
simulator solves it.

>>> from qpn.disciplines import get
>>> get("jsq-ps").scheduling, get("jsq-ps").ctmc
(Scheduling(serves='cores', order='arrival', holds=False), None)
"""
from __future__ import annotations

from . import Discipline, Scheduling, register

register(Discipline("jsq-ps", "per-server processor sharing: a token is placed on the least "
                    "loaded server when it arrives and stays there (a machine's cores)",
                    scheduling=Scheduling("cores"), ctmc=None,
                    ctmc_note="which server each token was placed on is part of the state, "
                              "and no CTMC keeps it"))
