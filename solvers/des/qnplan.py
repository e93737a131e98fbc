"""Does a net reduce to a queueing network?  (The fast kernels' plan.)

After fusion a net is a queueing network when every queue is an exponential
IS, PS or FCFS queue without FIFO departure, every immediate transition is a
fused routing step out of a depository, and every timed transition is a
Poisson source (no inputs, exponential delay, one token into one queue), with
no capacities and no inhibitor arcs.  The plan lists, per queue and class, its
rate and where its tokens go, and per source its target.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qpn.model import IN_ORDER, ONE_AT_A_TIME
from qpn import disciplines

from .lanes import LaneNet


@dataclass
class QClass:
    """One token class of a queue: its service rate per lane and where it goes next."""
    slot: int                      # queue slot
    dslot: int
    mu: np.ndarray                 # (L,) service rate
    unit: int                      # residence unit
    route_modes: list[int]         # compiled modes (one per choice)
    route_cum: np.ndarray          # (L, choices)
    targets: list[tuple[int, int] | None]   # (queue, class) or None for a sink


@dataclass
class QQueue:
    """A queue of the plan: how exponential service completes ('is', 'ps' or 'fcfs': see
    :meth:`qpn.disciplines.Scheduling.memoryless_kind`), servers per lane, classes."""
    name: str
    disc: str
    servers: np.ndarray            # (L,)
    classes: list[QClass]


@dataclass
class QSource:
    """A Poisson source: the timed mode, its mean inter-arrival time per lane, its queue
    and class."""
    mode: int
    mean: np.ndarray               # (L,) mean inter-arrival time
    target: tuple[int, int]


@dataclass
class QNPlan:
    """A net read as a queueing network (queues, sources), or ``reasons`` why not."""
    queues: list[QQueue]
    sources: list[QSource]
    reasons: list[str] = field(default_factory=list)


def qn_plan(net: LaneNet, unit_of_slot) -> QNPlan | list[str]:
    """The plan, or why the net is not a plain queueing network."""
    c = net.c
    reasons = []
    if c.cap.nnz:
        reasons.append("capacities")
    if c.inh.nnz:
        reasons.append("inhibitor arcs")
    reasons += [f"place {p.name}: departure {p.departure}" for p in c.places if p.departure in ONE_AT_A_TIME]
    qpos = {s: (qi, k) for qi, q in enumerate(c.queues) for k, s in enumerate(q.classes)}
    fused = {int(m) for r in net.routes.values() for m in r.modes}
    sources = []
    pre, post = c.pre.tocsr(), c.post.tocsr()
    for j, md in enumerate(c.modes):
        if md.kind == "immediate":
            if j not in fused:
                reasons.append(f"transition {md.transition}: not a routing step")
            continue
        outs = post[j].indices
        if pre[j].nnz or len(outs) != 1 or post[j, outs[0]] != 1 or int(outs[0]) not in qpos \
                or not net.delay[j].exponential:
            reasons.append(f"transition {md.transition}: timed, but not a Poisson source into a queue")
            continue
        sources.append(QSource(j, net.delay[j].mean, qpos[int(outs[0])]))
    queues = []
    for qi, q in enumerate(c.queues):
        svc = net.service[qi]
        d = disciplines.get(q.discipline)
        kind = d.scheduling.memoryless_kind(d.takes_quantum)
        if kind is None or not all(s.exponential for s in svc):
            reasons.append(f"queue {q.name}: {q.discipline} with "
                           f"{'exponential' if all(s.exponential for s in svc) else 'general'} service")
            continue
        if any(c.places[p].departure == IN_ORDER for p in q.places):
            reasons.append(f"queue {q.name}: in-order departure")
            continue
        if q.speed is not None:
            reasons.append(f"queue {q.name}: a load-dependent speed")
            continue
        classes = []
        for k, (s, d) in enumerate(zip(q.classes, q.dslots)):
            r = net.routes.get(d)
            if r is None:
                reasons.append(f"place {c.places[q.places[k]].name}: its tokens do not leave by a routing step")
                continue
            modes, cum = [int(m) for m in r.modes], r.cum
            targets = [(tq, tk) if tq is not None else None
                       for tq, tk in zip(r.target_queue, r.target_class)]
            classes.append(QClass(s, d, 1.0 / svc[k].mean, int(unit_of_slot[s]), modes, cum, targets))
        queues.append(QQueue(q.name, kind, net.qservers[qi], classes))
    if reasons:
        return reasons
    return QNPlan(queues, sources)
