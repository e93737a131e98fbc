"""The GIL-free share of each leaf (code fragment) of the runners' bodies, from the
CPU clocks of all threads' steps (:func:`.gil.gil_free_shares` over arrays), and for a
file I/O leaf the part of each wait the GIL explains."""
from __future__ import annotations

import numpy as np

from .gil import busy, gil_free_shares
from .handoff import first_holds
from .structure import leaves


#: an operation that waited this long (ns) released the GIL (see gil.py, ``fresh``)
BLOCKED = 10_000


def gil_shares(runners, walks, cores: int, interval: float) -> dict:
    """GIL-free share per leaf, from the CPU clocks of all threads."""
    leaf_id: dict = {}
    by_ev: dict = {}
    for r in runners:
        for lf in leaves(r.items):
            k = leaf_id.setdefault(id(lf), len(leaf_id))
            for s in lf.steps:
                by_ev[id(s.ev)] = k
    a, b, c, kl, fresh, hold = [], [], [], [], [], []
    ea, eb, ec = [], [], []
    holds = first_holds(walks)
    for w in walks.values():
        blocked = True                 # a thread starts without the GIL
        for s in w:
            if s.cpu is not None:
                a.append(s.start)
                b.append(s.ts)
                c.append(s.cpu)
                kl.append(by_ev.get(id(s.ev), -1))
                fresh.append(blocked)
                hold.append(holds.get(s, np.nan))
                if s.own_cpu and s.dur:
                    ea.append(s.ts)
                    eb.append(s.end)
                    ec.append(s.own_cpu)
            blocked = s.dur - s.own_cpu >= BLOCKED
    clock: list = []
    decided: list = []
    f = gil_free_shares(np.array(a, float), np.array(b, float), np.array(c, float),
                        np.array(kl, dtype=np.int64), len(leaf_id),
                        extra=(np.array(ea, float), np.array(eb, float), np.array(ec, float)),
                        cores=cores, interval=interval, fresh=np.array(fresh, bool),
                        hold=np.array(hold, float),
                        clock=clock, decided=decided)
    out = {}
    for r in runners:
        for lf in leaves(r.items):
            out[id(lf)] = float(f[leaf_id[id(lf)]])
            out[("gil_decided", id(lf))] = bool(decided[0][leaf_id[id(lf)]])
            if lf.action == "io":      # file I/O waits that the GIL explains are not device time
                st = lf.steps
                qa = np.array([s.ts for s in st], float)
                qb = np.array([s.end for s in st], float)
                held = busy(clock[0], qa, qb) - np.array([s.own_cpu for s in st], float)
                out[("gil_wait", id(lf))] = np.maximum(held, 0.0).tolist()
    return out
