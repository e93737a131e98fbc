"""The compiled net as flat arrays for the event engine (:mod:`.events`).

Three groups of arrays, each a named tuple that the jitted event loop reads
by attribute:

* :class:`NetArrays` — the structure, the same in every lane: arcs in CSR
  form, which modes each slot's change may enable or disable (so a firing
  re-checks only those), inhibitor and capacity groups, queues and their
  classes, the clock kind of every timed mode, where each token is stored;
* :class:`LaneParams` — values that a sweep may change, lane first: weights,
  servers, capacities, thresholds, initial marking, and the parameters of
  every distribution (see :data:`SAMPLER_KINDS`);
* the layout of the growable token stores (rings of entry times, per-token
  queue tables, per-firing clocks): a capacity and an offset per store, so
  that one large store does not make every store large.

>>> import qpn
>>> from qpn.solvers.des.lanes import build_lanes
>>> c = qpn.compile_net(qpn.load("models/mutex.qpn"))
>>> net = build_net_arrays(build_lanes([c], 2))
>>> int(net.nslots), int(net.nmodes), [int(k) for k in net.q_kind]
(6, 3, [0, 0])
"""
from __future__ import annotations

from collections import Counter, namedtuple

import numpy as np

from qpn.model import IN_ORDER, ONE_AT_A_TIME
from qpn import disciplines
from qpn.distributions import Det, Empirical, Erlang, Exp, Gamma, HyperExp, Lognormal, Normal, Uniform

from .lanes import LaneNet, csr_rows

# --------------------------------------------------------------- codes
#: queue kinds: exponential IS / PS / FCFS by rates, or per-token remaining work
Q_RATE_IS, Q_RATE_PS, Q_RATE_FCFS, Q_WORK = 0, 1, 2, 3
#: the per-token path's vocabulary (a discipline's :class:`~qpn.disciplines.Scheduling`):
#: who is served, and in which order when there are more tokens than servers
SERVE_ALL, SERVE_SHARED, SERVE_FIRST, SERVE_CORES = 0, 1, 2, 3
SERVE_CODE = {"all": SERVE_ALL, "shared": SERVE_SHARED, "first": SERVE_FIRST, "cores": SERVE_CORES}
O_ARRIVAL, O_LAST, O_READY, O_PRIORITY, O_REMAINING, O_RANDOM = range(6)
ORDER_CODE = {"arrival": O_ARRIVAL, "last": O_LAST, "ready": O_READY, "priority": O_PRIORITY,
              "remaining": O_REMAINING, "random": O_RANDOM}
#: clocks of timed modes
C_EXP, C_SINGLE, C_MULTI = 0, 1, 2
#: distribution kinds of a sampler
S_EXP, S_DET, S_UNIFORM, S_ERLANG, S_HYPER, S_GAMMA, S_LOGNORMAL, S_NORMAL, S_EMPIRICAL, S_REPLAY = range(10)
SAMPLER_KINDS = {Exp: S_EXP, Det: S_DET, Uniform: S_UNIFORM, Erlang: S_ERLANG, HyperExp: S_HYPER,
                 Gamma: S_GAMMA, Lognormal: S_LOGNORMAL, Normal: S_NORMAL, Empirical: S_EMPIRICAL}

NetArrays = namedtuple("NetArrays", [
    "nslots", "nmodes", "nqueues", "ntimed",
    # slots
    "slot_queue", "slot_class", "slot_ring", "slot_unit",
    "simm_ptr", "simm_idx", "stim_ptr", "stim_idx", "sinh_ptr", "sinh_idx", "scap_ptr", "scap_idx",
    # modes
    "mode_timed", "in_ptr", "in_slot", "in_cnt", "out_ptr", "out_slot", "out_cnt",
    "minh_ptr", "minh_grp", "mcap_ptr", "mcap_grp", "mcap_add", "prio",
    "timed_modes", "mode_col", "clock_kind", "mode_sampler", "mode_multi",
    # queues and their classes (classes of all queues in one numbering)
    "q_kind", "q_serves", "q_order", "q_hold", "q_sliced", "q_kptr", "q_store", "q_fifo",
    "cls_qslot", "cls_dslot", "cls_sampler", "cls_prio", "cls_place", "cls_fifo",
    "nunits", "nrings", "nwork", "nmulti", "ninh", "ncap", "q_dring_ptr", "q_dring", "q_spd_ptr",
    # places that offer one token at a time: offer slots (see .jit.layout)
    "slot_ord", "ord_real", "ord_ring", "ord_place", "ord_random", "nord",
    # per output arc: the tokens the mode puts into the arc's store, and its order ring
    "out_room", "out_oroom",
])

LaneParams = namedtuple("LaneParams", [
    "m0", "weight", "tservers", "cap_limit", "inh_thr", "qservers", "quantum", "switch", "qspeed",
    "mu", "smp_kind", "smp_par", "smp_off", "smp_n", "smp_tab", "point",
])


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    idx = np.array([x for r in rows for x in r], dtype=np.int64)
    return ptr, idx


def _check_sentinels(slot_queue, slot_class, slot_ring, outs, timed, stim_idx, mode_col,
                     mode_sampler, clock_kind, mode_multi) -> None:
    """The -1 entries of the index arrays sit only where the kernels never read them.

    The kernels index flat regions (``ni[ni[MODE_COL] + j]``) without bounds checks, and
    numba, like numpy, wraps a -1 around: a stray sentinel would silently read the last
    entry of the region before, a wrong number rather than an IndexError (issue 15)."""
    queue = slot_queue >= 0
    bad = []
    if (slot_class[queue] < 0).any() or (slot_ring[~queue] < 0).any():
        bad.append("a slot without its queue class or token ring")
    out_slots = np.array([sl for a in outs for sl, _ in a], dtype=np.int64)
    if len(out_slots) and ((out_slots < 0) | (out_slots >= len(slot_queue))).any():
        bad.append("an output slot out of range")
    t = np.asarray(timed, dtype=np.int64)
    if len(t) and ((mode_col[t] < 0) | (mode_sampler[t] < 0)).any():
        bad.append("a timed mode without its clock column or sampler")
    if len(stim_idx) and not np.isin(stim_idx, t).all():
        bad.append("an untimed mode among the timed modes to re-check")
    if (mode_multi[clock_kind == C_MULTI] < 0).any():
        bad.append("a multi-server clock without its clock group")
    if bad:
        raise AssertionError("internal: simulator index arrays: " + "; ".join(bad))


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.int64))


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64))


def residence_units(c) -> tuple[dict, np.ndarray]:
    """One residence-time unit per place-color (a queue and its depository share it)."""
    unit = np.zeros(c.nslots, dtype=np.int64)
    units: dict = {}
    for s in range(c.nslots):
        key = (int(c.slot_place[s]), repr(c.slot_color[s]))
        unit[s] = units.setdefault(key, len(units))
    return units, unit


def queue_kind(q, services, fifo: bool) -> int:
    """Rates where exponential service makes the next completion a function of the classes
    and the arrival order (IS, PS, FCFS: redrawn at every change), else per-token work."""
    d = disciplines.get(q.discipline)
    memoryless = d.scheduling.memoryless_kind(d.takes_quantum)
    if not fifo and memoryless is not None and all(s.kind is Exp for s in services):
        return {"is": Q_RATE_IS, "ps": Q_RATE_PS, "fcfs": Q_RATE_FCFS}[memoryless]
    return Q_WORK


def scheduling_codes(q) -> tuple[int, int, int, int]:
    """(serves, order, holds, sliced) of a compiled queue, as the kernel's codes: what its
    discipline declares, with the queue's own option where the discipline leaves
    preemption to it."""
    d = disciplines.get(q.discipline)
    sc = d.scheduling
    holds = (not q.preemptive) if sc.holds is None else sc.holds
    return SERVE_CODE[sc.serves], ORDER_CODE[sc.order], int(bool(holds)), int(d.takes_quantum)


def _as_written(mode, row: tuple) -> list[tuple[int, int]]:
    """(slot, count) of a mode's outputs (``row``: its columns and values) in the order its
    arcs are written: the order in which one firing's tokens enter their places (a FCFS
    queue lines them up so)."""
    at = {s: k for k, s in enumerate(mode.out_order)}
    return sorted(zip(*row), key=lambda a: at.get(a[0], len(at)))


def _room_counts(outs, slot_queue, slot_class, slot_ring, slot_ord, ord_ring, q_kind, q_store, kptr,
                 S) -> tuple[np.ndarray, np.ndarray]:
    """Per output arc: the tokens its mode puts into the arc's store in one firing (the
    classes of a FCFS rate queue share a ring, those of a work queue a table, so several
    arcs may fill one store), and into the arc's place's order ring (0: none)."""
    def store(s: int) -> tuple:
        q = int(slot_queue[s])
        if q < 0:
            return ("ring", int(slot_ring[s]))
        if q_kind[q] == Q_WORK:
            return ("work", int(q_store[q]))
        if q_kind[q] == Q_RATE_FCFS:
            return ("ring", int(q_store[q]))
        return ("ring", int(q_store[q]) + int(slot_class[s]) - kptr[q])
    def order_ring(s: int):
        return ord_ring[slot_ord[s] - S] if slot_ord[s] >= 0 else None
    room, oroom = [], []
    for arcs in outs:
        keys = [(store(s), order_ring(s), n) for s, n in arcs]
        by_store = Counter()
        by_order = Counter()
        for st, o, n in keys:
            by_store[st] += n
            if o is not None:
                by_order[o] += n
        room += [by_store[st] for st, _o, _n in keys]
        oroom += [by_order[o] if o is not None else 0 for _st, o, _n in keys]
    return _i64(room), _i64(oroom)


def build_net_arrays(ln: LaneNet) -> NetArrays:
    """The structure of ``ln``'s net as flat arrays (see the module docstring)."""
    c = ln.c
    S, M = c.nslots, len(c.modes)
    pre, post = c.pre.tocsr(), c.post.tocsr()
    inh = c.inh.tocsr()
    cap = c.cap.tocsr()
    _, unit = residence_units(c)
    # --- slots: queue slots belong to a queue class; token slots to a ring
    slot_queue = np.full(S, -1, dtype=np.int64)
    slot_class = np.full(S, -1, dtype=np.int64)
    kptr = [0]
    for qi, q in enumerate(c.queues):
        for k, s in enumerate(q.classes):
            slot_queue[s] = qi
            slot_class[s] = kptr[-1] + k
        kptr.append(kptr[-1] + len(q.classes))
    slot_ring = np.full(S, -1, dtype=np.int64)
    nrings = 0
    for s in range(S):
        if slot_queue[s] < 0:
            slot_ring[s] = nrings
            nrings += 1
    # --- queues: rate queues keep their tokens in rings too (a bag per class, or one FIFO)
    Q = len(c.queues)
    q_kind = np.zeros(Q, dtype=np.int64)
    q_sched = np.zeros((4, Q), dtype=np.int64)          # serves, order, holds, sliced
    q_store = np.zeros(Q, dtype=np.int64)
    q_fifo = np.zeros(Q, dtype=np.int64)
    nwork = 0
    for qi, q in enumerate(c.queues):
        fifo = any(c.places[p].departure == IN_ORDER for p in q.places)
        kind = queue_kind(q, ln.service[qi], fifo)
        q_kind[qi] = kind
        q_fifo[qi] = int(fifo)
        q_sched[:, qi] = scheduling_codes(q)
        if kind in (Q_RATE_IS, Q_RATE_PS):
            q_store[qi] = nrings
            nrings += len(q.classes)
        elif kind == Q_RATE_FCFS:
            q_store[qi] = nrings
            nrings += 1
        else:
            q_store[qi] = nwork
            nwork += 1
    # --- places that offer one token at a time: an offer slot per color, an order ring
    slot_ord = np.full(S, -1, dtype=np.int64)
    ord_real, ord_ring, ord_place, ord_random = [], [], [], []
    ordered = [p for p in c.places if p.departure in ONE_AT_A_TIME]
    for o, p in enumerate(ordered):
        for s in p.slots:
            slot_ord[s] = S + len(ord_real)
            ord_real.append(s)
            ord_ring.append(nrings)
            ord_place.append(o)
            ord_random.append(int(p.departure == "random"))
        nrings += 1
    # --- samplers: one per queue class, one per timed mode
    cls_sampler = np.arange(kptr[-1], dtype=np.int64)
    mode_sampler = np.full(M, -1, dtype=np.int64)
    nsamplers = kptr[-1]
    timed = [j for j, m in enumerate(c.modes) if m.kind == "timed"]
    for j in timed:
        mode_sampler[j] = nsamplers
        nsamplers += 1
    # --- modes
    # input arcs from such a place read (and take from) its offer slots
    # rows read off the CSR arrays: a sparse row slice costs 0.1 ms, and a colored net
    # has thousands of modes
    pre_rows, post_rows = csr_rows(pre), csr_rows(post)
    ins = [[(int(slot_ord[s]) if slot_ord[s] >= 0 else s, n) for s, n in zip(*pre_rows(j))]
           for j in range(M)]
    outs = [_as_written(c.modes[j], post_rows(j)) for j in range(M)]
    in_ptr, _ = _csr([[s for s, _ in a] for a in ins])
    out_ptr, _ = _csr([[s for s, _ in a] for a in outs])
    minh = [[] for _ in range(M)]
    dep = [set(s for s, _ in ins[j]) for j in range(M)]
    for g in range(inh.shape[0]):
        j = int(c.inh_mode[g])
        minh[j].append(g)
        dep[j] |= set(inh[g].indices.tolist())
    # sparse: a colored net's M x S incidence would not fit dense (10^5 x 10^5)
    delta = (c.post - c.pre).tocsc()
    mcap: list[list[tuple[int, int]]] = [[] for _ in range(M)]
    for g in range(cap.shape[0]):
        slots = cap[g].indices
        gain = np.asarray(delta[:, slots].sum(axis=1)).ravel() if M else np.zeros(0)
        for j in np.flatnonzero(gain > 0):
            mcap[j].append((g, int(gain[j])))
            dep[j] |= set(slots.tolist())
    SV = S + len(ord_real)
    simm = [[] for _ in range(SV)]
    stim = [[] for _ in range(SV)]
    for j in range(M):
        for s in sorted(dep[j]):
            (stim if c.modes[j].kind == "timed" else simm)[s].append(j)
    sinh = [[] for _ in range(SV)]
    for g in range(inh.shape[0]):
        for s in inh[g].indices.tolist():
            sinh[s].append(g)
    scap = [[] for _ in range(SV)]
    for g in range(cap.shape[0]):
        for s in cap[g].indices.tolist():
            scap[s].append(g)
    # --- clocks
    mode_col = np.full(M, -1, dtype=np.int64)
    clock_kind = np.zeros(M, dtype=np.int64)
    mode_multi = np.full(M, -1, dtype=np.int64)
    nmulti = 0
    for col, j in enumerate(timed):
        mode_col[j] = col
        smp = ln.delay[j]
        if smp.exponential:
            clock_kind[j] = C_EXP
        elif np.all(ln.tservers[:, j] == 1):
            clock_kind[j] = C_SINGLE
        else:
            clock_kind[j] = C_MULTI
            mode_multi[j] = nmulti
            nmulti += 1
    # the depository rings a queue's completions may fill (checked for room before an event)
    q_dring_ptr, q_dring = _csr([sorted({int(slot_ring[d]) for d in q.dslots} |
                                        {ord_ring[slot_ord[d] - S] for d in q.dslots if slot_ord[d] >= 0})
                                 for q in c.queues])
    out_room, out_oroom = _room_counts(outs, slot_queue, slot_class, slot_ring, slot_ord, ord_ring,
                                       q_kind, q_store, kptr, S)
    simm_ptr, simm_idx = _csr(simm)
    stim_ptr, stim_idx = _csr(stim)
    _check_sentinels(slot_queue, slot_class, slot_ring, outs, timed, stim_idx, mode_col,
                     mode_sampler, clock_kind, mode_multi)
    sinh_ptr, sinh_idx = _csr(sinh)
    scap_ptr, scap_idx = _csr(scap)
    minh_ptr, minh_grp = _csr(minh)
    mcap_ptr, mcap_grp = _csr([[g for g, _ in x] for x in mcap])
    return NetArrays(
        nslots=S, nmodes=M, nqueues=Q, ntimed=len(timed),
        slot_queue=slot_queue, slot_class=slot_class, slot_ring=slot_ring, slot_unit=_i64(unit),
        simm_ptr=simm_ptr, simm_idx=simm_idx, stim_ptr=stim_ptr, stim_idx=stim_idx,
        sinh_ptr=sinh_ptr, sinh_idx=sinh_idx, scap_ptr=scap_ptr, scap_idx=scap_idx,
        mode_timed=_i64([m.kind == "timed" for m in c.modes]),
        in_ptr=in_ptr, in_slot=_i64([s for a in ins for s, _ in a]), in_cnt=_i64([n for a in ins for _, n in a]),
        out_ptr=out_ptr, out_slot=_i64([s for a in outs for s, _ in a]),
        out_cnt=_i64([n for a in outs for _, n in a]),
        minh_ptr=minh_ptr, minh_grp=minh_grp, mcap_ptr=mcap_ptr, mcap_grp=mcap_grp,
        mcap_add=_i64([d for x in mcap for _, d in x]), prio=_f64(ln.prio),
        timed_modes=_i64(timed), mode_col=mode_col, clock_kind=clock_kind, mode_sampler=mode_sampler,
        mode_multi=mode_multi,
        q_kind=q_kind, q_serves=q_sched[0].copy(), q_order=q_sched[1].copy(), q_hold=q_sched[2].copy(),
        q_sliced=q_sched[3].copy(), q_kptr=_i64(kptr), q_store=q_store, q_fifo=q_fifo,
        cls_qslot=_i64([s for q in c.queues for s in q.classes]),
        cls_dslot=_i64([s for q in c.queues for s in q.dslots]),
        cls_sampler=cls_sampler,
        cls_prio=_f64([p for q in c.queues for p in q.priority]),
        cls_place=_i64([p for q in c.queues for p in q.places]),
        cls_fifo=_i64([c.places[p].departure == IN_ORDER for q in c.queues for p in q.places]),
        nunits=int(unit.max()) + 1 if S else 0, nrings=nrings, nwork=nwork, nmulti=nmulti,
        ninh=int(inh.shape[0]), ncap=int(cap.shape[0]), q_dring_ptr=q_dring_ptr, q_dring=q_dring,
        q_spd_ptr=_i64(np.cumsum([0] + [0 if x is None else x.shape[1] for x in ln.speed])),
        slot_ord=slot_ord, ord_real=_i64(ord_real), ord_ring=_i64(ord_ring), ord_place=_i64(ord_place),
        ord_random=_i64(ord_random), nord=len(ordered), out_room=out_room, out_oroom=out_oroom,
    )


# ------------------------------------------------------------ samplers
def _sampler_rows(smp, L: int):
    """(kind, par (L, 4), per-lane tables or None, shared table or None) of one Sampler."""
    k = smp.kind
    kind = SAMPLER_KINDS.get(k, S_HYPER if k.__name__ == "HyperExpFit" else None)
    if kind is None:
        raise ValueError(f"cannot sample {k.__name__}")
    par = np.zeros((L, 4))
    par[:, 0] = smp.mean
    tables = None
    if kind == S_UNIFORM:
        par[:, 1], par[:, 2] = smp.lo, smp.hi
    elif kind == S_ERLANG:
        par[:, 1] = smp.k
    elif kind == S_GAMMA:
        par[:, 1], par[:, 2] = smp.shape, smp.scale
    elif kind == S_LOGNORMAL:
        par[:, 1], par[:, 2] = smp.mu, smp.sigma
    elif kind == S_NORMAL:
        from scipy.special import ndtr
        par[:, 1], par[:, 2] = smp.nmu, smp.nsig
        par[:, 3] = ndtr(-smp.nmu / smp.nsig)            # the mass below 0, cut off
    elif kind == S_HYPER:
        tables = [np.concatenate([smp.cum[i], smp.bmean[i]]) for i in range(L)]
    elif kind == S_EMPIRICAL:
        if smp.replay:
            kind = S_REPLAY
        tables = [smp.values[i, :smp.count[i]] for i in range(L)]
    return kind, par, tables


def build_params(ln: LaneNet, net: NetArrays) -> LaneParams:
    """Per-lane values of ``ln`` (a sweep gives lanes their own)."""
    c = ln.c
    L, M = ln.L, len(c.modes)
    Q = len(c.queues)
    samplers = [ln.service[qi][k] for qi in range(Q) for k in range(len(c.queues[qi].classes))]
    samplers += [ln.delay[int(j)] for j in net.timed_modes]
    NS = len(samplers)
    kinds = np.zeros(NS, dtype=np.int64)
    par = np.zeros((L, max(NS, 1), 4))
    off = np.zeros((L, max(NS, 1)), dtype=np.int64)
    cnt = np.zeros((L, max(NS, 1)), dtype=np.int64)
    tab: list[np.ndarray] = []
    size = 0
    for i, smp in enumerate(samplers):
        kind, p, tables = _sampler_rows(smp, L)
        kinds[i] = kind
        par[:, i] = p
        if tables is None:
            continue
        # measured samples the same in every lane (replications) are stored once
        shared = kind in (S_EMPIRICAL, S_REPLAY) and bool(getattr(smp, "shared", False))
        for lane, t in enumerate(tables):
            if shared and lane > 0:
                off[lane, i] = off[0, i]
            else:
                off[lane, i] = size
                tab.append(np.asarray(t, float))
                size += len(t)
            cnt[lane, i] = len(t) if kind in (S_EMPIRICAL, S_REPLAY) else len(t) // 2
    mu = np.zeros((L, max(int(net.q_kptr[-1]), 1)))
    for qi in range(Q):
        for k in range(len(c.queues[qi].classes)):
            m = np.asarray(ln.service[qi][k].mean, dtype=float)
            # a zero service time (det(0)) has an infinite rate: no numpy divide warning
            with np.errstate(over="ignore"):          # det(1e-320): a rate beyond float range
                mu[:, int(net.q_kptr[qi]) + k] = np.divide(1.0, m, out=np.full(m.shape, np.inf), where=m > 0)
    quantum = np.zeros((L, max(Q, 1)))
    switch = np.zeros((L, max(Q, 1)))
    qservers = np.ones((L, max(Q, 1)))
    for qi in range(Q):
        qservers[:, qi] = ln.qservers[qi]
        if ln.quantum[qi] is not None:
            quantum[:, qi] = ln.quantum[qi]
        if ln.switch[qi] is not None:
            switch[:, qi] = ln.switch[qi]
    # each load-dependent queue's capacity by tokens present: a stretch of one row per lane
    speeds = [x for x in ln.speed if x is not None]
    qspeed = np.concatenate(speeds, axis=1) if speeds else np.zeros((L, 0))
    return LaneParams(
        m0=_i64(ln.m0), weight=_f64(ln.weight.reshape(L, M)), tservers=_f64(ln.tservers.reshape(L, M)),
        cap_limit=_i64(np.asarray(ln.cap_limit).reshape(L, -1)),
        inh_thr=_i64(np.asarray(ln.inh_thr).reshape(L, -1)),
        qservers=_f64(qservers), quantum=_f64(quantum), switch=_f64(switch), qspeed=_f64(qspeed), mu=_f64(mu),
        smp_kind=kinds, smp_par=_f64(par), smp_off=off, smp_n=cnt,
        smp_tab=_f64(np.concatenate(tab) if tab else np.zeros(1)),
        point=_i64(ln.point if ln.point is not None else np.zeros(L)),
    )


__all__ = ["NetArrays", "LaneParams", "build_net_arrays", "build_params", "residence_units",
           "Q_RATE_IS", "Q_RATE_PS", "Q_RATE_FCFS", "Q_WORK", "C_EXP", "C_SINGLE", "C_MULTI"]
