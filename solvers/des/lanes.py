"""Lanes of one engine run: the shared structure and per-lane values.

All lanes simulate the same net structure (slots, modes, arcs, queues); a
parameter sweep gives lanes different values (rates, weights, initial
markings, servers, capacities).  This module gathers those values into
arrays with a leading lane axis and finds the immediate transitions that can
be *fused* into service completions: a token finishing service in a queue
whose depository is emptied at once by unconditional routing steps is routed
in the same event, without the general immediate-transition loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qpn.errors import SolverError

from .sampling import Sampler


def signature(c) -> tuple:
    """What must be equal for two compiled nets to share an engine run."""
    q = tuple((x.discipline, tuple(x.classes), tuple(x.dslots), tuple(x.places),
               tuple(type(d).__name__ for d in x.service),
               None if x.speed is None else len(x.speed)) for x in c.queues)
    m = tuple((x.transition, x.mode, x.kind, type(x.delay).__name__ if x.delay else None,
               x.servers == float("inf")) for x in c.modes)
    return (c.nslots, _sparse_key(c.pre), _sparse_key(c.post), _sparse_key(c.inh),
            tuple(c.inh_mode), _sparse_key(c.cap), q, m,
            tuple(p.departure for p in c.places))


def _sparse_key(a) -> tuple:
    """A sparse matrix as bytes, equal for equal matrices (canonical CSR): a dense copy of
    a colored net's incidence (10^5 x 10^5) would not fit in memory."""
    a = a.tocsr(copy=True)
    a.eliminate_zeros()
    a.sum_duplicates()
    a.sort_indices()
    return (a.shape, a.indptr.astype(np.int64).tobytes(), a.indices.astype(np.int64).tobytes(),
            a.data.astype(np.float64).tobytes())


@dataclass
class Route:
    """Fused routing out of one depository slot."""
    modes: np.ndarray               # compiled modes (routing choices)
    cum: np.ndarray                 # (L, len(modes)) cumulative choice probabilities
    target_queue: list[int | None]  # per choice: queue index (None = sink)
    target_class: list[int]         # per choice: class index in that queue


@dataclass
class LaneNet:
    """A compiled net as L lanes see it: one structure, per-lane values (initial
    marking, weights, servers, delays) where a sweep point changes them."""
    c: object                       # compiled net of lane 0 (structure)
    L: int
    m0: np.ndarray                  # (L, S)
    weight: np.ndarray              # (L, M)
    prio: np.ndarray                # (M,)
    tservers: np.ndarray            # (L, M) timed-mode servers
    cap_limit: np.ndarray           # (L, G)
    inh_thr: np.ndarray             # (L, Gi)
    qservers: list[np.ndarray]      # per queue (L,)
    quantum: list[np.ndarray | None]
    switch: list[np.ndarray | None]
    speed: list[np.ndarray | None]  # per queue (L, table) capacity by tokens, None: servers
    service: list[list[Sampler]]    # per queue, per class
    delay: dict[int, Sampler]       # timed mode -> sampler
    routes: dict[int, Route] = field(default_factory=dict)   # depository slot -> fused route
    notes: list[str] = field(default_factory=list)
    point: np.ndarray | None = None      # sweep point of every lane
    npoints: int = 1


def build_lanes(points: list, reps: int = 1, lanes: np.ndarray | None = None) -> LaneNet:
    """Lanes for compiled nets ``points``, each repeated ``reps`` times (replications);
    with ``lanes``, only those lanes of the full set (a shard)."""
    c = points[0]
    sig = signature(c)
    for other in points[1:]:
        if signature(other) != sig:
            raise SolverError("lanes of one engine run must share the net structure")
    M = len(c.modes)
    prio = np.array([m.priority for m in c.modes], dtype=float)
    for other in points[1:]:
        if not np.array_equal(prio, [m.priority for m in other.modes]):
            raise SolverError("a sweep may not change transition priorities")
    idx = np.repeat(np.arange(len(points)), reps)
    if lanes is not None:
        idx = idx[np.asarray(lanes)]
    compiled = [points[i] for i in idx]                   # references: cheap
    trivial = len(idx) == len(points) and np.array_equal(idx, np.arange(len(points)))
    rep = (lambda a: a) if trivial else (lambda a: np.asarray(a)[idx])  # noqa: E731
    L = len(idx)
    P = points
    ln = LaneNet(
        c=c, L=L,
        m0=rep(np.stack([x.m0 for x in P]).astype(np.int64)),
        weight=rep(np.array([[m.weight for m in x.modes] for x in P], dtype=float).reshape(len(P), M)),
        prio=prio,
        tservers=rep(np.array([[m.servers for m in x.modes] for x in P], dtype=float).reshape(len(P), M)),
        cap_limit=rep(np.stack([x.cap_limit for x in P]).reshape(len(P), -1)),
        inh_thr=rep(np.stack([x.inh_threshold for x in P]).reshape(len(P), -1)),
        qservers=[rep(np.array([x.queues[q].servers for x in P], float)) for q in range(len(c.queues))],
        quantum=[rep(np.array([x.queues[q].quantum for x in P], float)) if c.queues[q].quantum else None
                 for q in range(len(c.queues))],
        switch=[rep(np.array([x.queues[q].switch for x in P], float)) for q in range(len(c.queues))],
        speed=[rep(np.stack([x.queues[q].speed for x in P])) if c.queues[q].speed is not None else None
               for q in range(len(c.queues))],
        service=[[Sampler([x.queues[q].service[k] for x in compiled]) for k in range(len(c.queues[q].classes))]
                 for q in range(len(c.queues))],
        delay={i: Sampler([x.modes[i].delay for x in compiled]) for i, m in enumerate(c.modes)
               if m.kind == "timed"},
    )
    ln.routes = fusible_routes(ln)
    ln.point = idx
    ln.npoints = len(points)
    return ln


def csr_rows(m):
    """``row(j) -> (columns, values)`` of a CSR matrix's row j, as lists, read off its
    arrays (scipy's row slicing builds a matrix per row); of a CSC matrix, its column j
    (rows, values).

    >>> import scipy.sparse as sp
    >>> csr_rows(sp.csr_matrix([[0, 2, 0], [1, 0, 3]]))(1)
    ([0, 2], [1, 3])
    """
    ptr, idx, val = m.indptr.tolist(), m.indices.tolist(), m.data.tolist()
    return lambda j: (idx[ptr[j]:ptr[j + 1]], val[ptr[j]:ptr[j + 1]])


def fusible_routes(ln: LaneNet) -> dict[int, Route]:
    """Depository slots whose tokens can be routed inside the completion event."""
    c = ln.c
    takers = csr_rows(c.pre.tocsc())          # a column of pre: the modes taking from a slot
    ins, outs_of = csr_rows(c.pre.tocsr()), csr_rows(c.post.tocsr())
    queue_slot = {}
    for qi, q in enumerate(c.queues):
        for k, s in enumerate(q.classes):
            queue_slot[s] = (qi, k)
    inhibited_slots = set(c.inh.tocsr().indices.tolist())
    capped_slots = set(c.cap.tocsr().indices.tolist())
    inh_modes = set(int(x) for x in c.inh_mode)
    routes: dict[int, Route] = {}
    for q in c.queues:
        for d in q.dslots:
            consumers = [m for m, n in zip(*takers(d)) if n]
            if len(consumers) == 0 or d in inhibited_slots or d in capped_slots:
                continue
            ok = True
            targets_q, targets_k = [], []
            for m in consumers:
                mode = c.modes[m]
                outs, counts = outs_of(m)
                if mode.kind != "immediate" or ins(m) != ([d], [1]) or m in inh_modes \
                        or len(outs) > 1 or (len(outs) == 1 and counts[0] != 1):
                    ok = False
                    break
                if len(outs) == 1:
                    s = int(outs[0])
                    if s not in queue_slot or s in inhibited_slots or s in capped_slots:
                        ok = False
                        break
                    targets_q.append(queue_slot[s][0])
                    targets_k.append(queue_slot[s][1])
                else:
                    targets_q.append(None)
                    targets_k.append(-1)
            if not ok or len(set(ln.prio[consumers])) != 1:
                continue
            w = ln.weight[:, consumers]
            cum = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
            cum[:, -1] = 1.0
            routes[d] = Route(np.asarray(consumers), cum, targets_q, targets_k)
    return routes
