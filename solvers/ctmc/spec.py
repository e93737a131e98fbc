"""How a CTMC state is laid out, from a compiled net.

A state is an integer row: the marking (one column per slot, see
:mod:`qpn.compile`), then extra columns for queues whose discipline needs more
than counts, then the phases of non-exponential timed transitions.

Queue layouts:

* ``counts``: the queue slots of the marking, plus per-phase counts for
  phase-type service (IS, PS; any discipline when the queue serves a single
  exponential class);
* ``seq``: an ordered sequence of tokens (class, phase, flags) for FCFS,
  LCFS-PR, PRIO, RANDOM with several classes, and FIFO departure.

Bounds come from P-invariants (or capacities); places not covered by any
(open nets) are cut off at ``cutoff`` tokens in total.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from qpn.errors import SolverError
from qpn.structure.semiflows import TooManySemiflows, p_semiflows

from .phase import PhaseType, phase_type

SEQ_DISCIPLINES = ("fcfs", "lcfs-pr", "prio", "random", "is", "ps")
FLAG_SERVING = 1   # in service (non-preemptive prio, random)
FLAG_DONE = 2      # finished, waiting for FIFO departure


@dataclass
class QueueSpec:
    index: int
    name: str
    discipline: str
    servers: float
    preemptive: bool
    classes: list[int]            # queue slots
    dslots: list[int]             # depository slots
    places: list[int]
    ph: list[PhaseType]
    prio: list[float]
    fifo: list[bool]              # FIFO departure, per class (its place)
    layout: str = "counts"
    phase_cols: list[list[int]] = field(default_factory=list)   # counts: phases 1.. of class k
    L: int = 0                    # seq: positions
    cls_cols: np.ndarray | None = None
    ph_cols: np.ndarray | None = None
    flag_cols: np.ndarray | None = None

    @property
    def exponential(self) -> bool:
        return all(p.nphases == 1 for p in self.ph)

    @property
    def max_phases(self) -> int:
        return max(p.nphases for p in self.ph)


@dataclass
class TimedSpec:
    mode: int
    ph: PhaseType | None          # None = exponential (rate form)
    rate: float                   # 1/mean for exponential
    servers: float
    col: int = -1                 # phase column (non-exponential single-server)


@dataclass
class CTMCSpec:
    compiled: object
    ncols: int
    nslots: int
    queues: list[QueueSpec]
    timed: list[TimedSpec]
    immediate: list[int]          # compiled mode indices
    bounds: np.ndarray            # max value per column (inclusive)
    uncovered: np.ndarray         # slots not bounded by invariants or capacity
    cutoff: int | None
    notes: list[str]              # approximations made
    pre: np.ndarray
    post: np.ndarray
    estimate: float = 0.0


def _slot_bounds(c, cutoff: int | None):
    """Upper bound per slot (queue and depository share their place-color's bound)."""
    from qpn.structure.check import _merged
    C, m0, labels, _ = _merged(c)
    unit_of = np.empty(c.nslots, dtype=np.int64)
    u = 0
    for p in c.places:
        for k in range(len(p.colors)):
            unit_of[p.slots[k]] = u
            if p.qslots is not None:
                unit_of[p.qslots[k]] = u
            u += 1
    unit_bound = np.full(len(labels), -1, dtype=np.int64)
    try:
        flows = p_semiflows(C) if len(c.modes) else [[1] * len(labels)] if len(labels) else []
    except TooManySemiflows:
        flows = []
    totals = []
    for y in flows:
        y = np.asarray(y, dtype=np.int64)
        tokens = int(y @ m0)
        totals.append((y, tokens))
        for i in np.flatnonzero(y):
            b = tokens // y[i]
            unit_bound[i] = b if unit_bound[i] < 0 else min(unit_bound[i], b)
    # capacities
    for p in c.places:
        if p.capacity is not None:
            for k in range(len(p.colors)):
                i = unit_of[p.slots[k]]
                unit_bound[i] = p.capacity if unit_bound[i] < 0 else min(unit_bound[i], p.capacity)
    uncovered_units = unit_bound < 0
    if uncovered_units.any():
        if cutoff is None:
            raise SolverError("internal: cutoff needed")  # caller supplies one
        unit_bound[uncovered_units] = cutoff
    return unit_bound[unit_of], uncovered_units[unit_of], totals, unit_of


def build_spec(c, *, cutoff: int = 60, det_order: int = 20, rr: str | None = None) -> CTMCSpec:
    """Layout of the CTMC of compiled net ``c`` (raises SolverError if impossible)."""
    notes: list[str] = []
    slot_bound, uncovered, totals, unit_of = _slot_bounds(c, cutoff)
    pre = c.pre.toarray().astype(np.int64)
    post = c.post.toarray().astype(np.int64)
    cols = c.nslots
    queues: list[QueueSpec] = []
    for qi, q in enumerate(c.queues):
        disc = q.discipline
        if disc == "rr":
            if rr != "ps":
                raise SolverError(f"queue {q.name}: round robin with a quantum has no exact Markov "
                                  "model", construct=f"queue {q.name}: rr",
                                  methods=("des", "ctmc with option rr='ps'"))
            notes.append(f"queue {q.name}: round robin approximated as processor sharing")
            disc = "ps"
        phs = []
        for d in q.service:
            ph = phase_type(d, det_order)
            if not ph.exact and ph.note not in notes:
                notes.append(f"queue {q.name}: {ph.note}")
            phs.append(ph)
        fifo = [c.places[p].departure == "fifo" for p in q.places]
        spec = QueueSpec(qi, q.name, disc, q.servers, q.preemptive, list(q.classes), list(q.dslots),
                         list(q.places), phs, list(q.priority), fifo)
        single_exp = len(q.classes) == 1 and phs[0].nphases == 1
        if any(fifo):
            if disc not in ("fcfs", "is", "ps"):
                raise SolverError(f"queue {q.name}: FIFO departure with {disc} service",
                                  construct=f"queue {q.name}: departure fifo with {disc}",
                                  methods=("des",))
            if disc == "fcfs" and q.servers == 1:
                pass  # order is kept anyway
            spec.layout = "seq"
        elif disc in ("is", "ps") or single_exp:
            spec.layout = "counts"
        else:
            spec.layout = "seq"
        if spec.layout == "counts":
            for k, ph in enumerate(phs):
                spec.phase_cols.append(list(range(cols, cols + ph.nphases - 1)))
                cols += ph.nphases - 1
        else:
            L = int(sum(slot_bound[s] for s in q.classes))
            if all(uncovered[s] for s in q.classes):
                L = min(L, cutoff)  # the cut-off bounds the open part as a whole
            for y, tokens in totals:
                if all(y[unit_of[s]] > 0 for s in q.classes):
                    L = min(L, tokens // int(min(y[unit_of[s]] for s in q.classes)))
            if math.isinf(q.servers) and disc not in ("is", "ps"):
                raise SolverError(f"queue {q.name}: infinitely many servers with {disc}",
                                  construct=f"queue {q.name}", methods=("des",))
            spec.L = max(L, 1)
            spec.cls_cols = np.arange(cols, cols + spec.L)
            spec.ph_cols = np.arange(cols + spec.L, cols + 2 * spec.L)
            spec.flag_cols = np.arange(cols + 2 * spec.L, cols + 3 * spec.L)
            cols += 3 * spec.L
        queues.append(spec)
    timed: list[TimedSpec] = []
    immediate: list[int] = []
    for i, m in enumerate(c.modes):
        if m.kind == "immediate":
            immediate.append(i)
            continue
        if m.delay.is_exponential():
            timed.append(TimedSpec(i, None, 1.0 / m.delay.mean(), m.servers))
            continue
        if m.servers != 1:
            raise SolverError(f"transition {m.transition}: a non-exponential delay with "
                              f"{m.servers}-server semantics", construct=f"transition {m.transition}",
                              methods=("des",))
        ph = phase_type(m.delay, det_order)
        if not ph.exact:
            notes.append(f"transition {m.transition}: {ph.note}")
        timed.append(TimedSpec(i, ph, 0.0, 1, col=cols))
        cols += 1
    bounds = np.zeros(cols, dtype=np.int64)
    bounds[:c.nslots] = slot_bound
    for q in queues:
        if q.layout == "counts":
            for k, pcs in enumerate(q.phase_cols):
                bounds[pcs] = slot_bound[q.classes[k]]
        else:
            bounds[q.cls_cols] = len(q.classes)
            bounds[q.ph_cols] = q.max_phases
            bounds[q.flag_cols] = 3
    for t in timed:
        if t.col >= 0:
            bounds[t.col] = t.ph.nphases
    spec = CTMCSpec(c, cols, c.nslots, queues, timed, immediate, bounds, uncovered,
                    cutoff if uncovered.any() else None, notes, pre, post)
    spec.estimate = estimate_states(spec, totals, unit_of)
    return spec


def estimate_states(spec: CTMCSpec, totals, unit_of) -> float:
    """Number of tangible-state candidates, counted with generating functions.

    One variable per minimal P-invariant: a unit (place, color) holding n
    tokens adds n times its invariant weights to every invariant covering it,
    so the coefficient at the invariants' token counts counts the marking
    vectors that satisfy all invariants at once; a queue that keeps an order
    contributes the multinomial number of orderings of what it holds.  Exact
    for closed queueing networks, an upper bound otherwise (transitions may
    forbid some of these markings).
    """
    c = spec.compiled
    nunits = int(unit_of.max()) + 1 if len(unit_of) else 0
    if len(totals) > 16:  # counting under fewer invariants is still an upper bound
        totals = _covering(totals)
    Y = np.array([y for y, _ in totals], dtype=np.int64).reshape(len(totals), nunits)
    pops = [max(int(t), 0) for _, t in totals]
    covered = Y.sum(axis=0) > 0 if len(totals) else np.zeros(nunits, dtype=bool)
    extra = 1.0
    for p in c.places:  # bounded by a capacity, not by an invariant
        if p.capacity is not None:
            for k in range(len(p.colors)):
                u = int(unit_of[p.slots[k]])
                if not covered[u]:
                    covered[u] = True
                    extra *= p.capacity + 1
    open_units = [u for u in range(nunits) if not covered[u]]
    dirs = {u: Y[:, u] for u in range(nunits)}
    # an ordinary place emptied at once by an unconditional immediate transition
    # never holds tokens in a tangible state
    pre = spec.pre
    inhibited = set(c.inh_mode.tolist())
    for i in spec.immediate:
        ins = np.flatnonzero(pre[i])
        if len(ins) == 1 and pre[i, ins[0]] == 1 and i not in inhibited:
            s0 = int(ins[0])
            if not c.places[int(c.slot_place[s0])].queueing:
                dirs[int(unit_of[s0])] = np.zeros_like(dirs[int(unit_of[s0])])
    if open_units:  # tokens of open parts share one cut-off variable
        pops.append(spec.cutoff or 0)
        for u in range(nunits):
            dirs[u] = np.append(dirs[u], 1 if u in open_units else 0)
    shape = tuple(p + 1 for p in pops)
    size = float(np.prod(shape, dtype=float)) if shape else 1.0
    seq = [q for q in spec.queues if q.layout == "seq"]
    biggest_L = max((q.L for q in seq), default=0)
    if size * (biggest_L + 1) > 4_000_000 or len(pops) > 16 or biggest_L > 150:
        return _crude_estimate(spec, totals, unit_of)
    gf = np.zeros(shape)
    gf[(0,) * len(pops)] = 1.0
    seq_units = {int(unit_of[s]) for q in seq for s in q.classes}
    nphases = {}  # counts layout: n tokens spread over P phases in C(n+P-1, P-1) ways
    for q in spec.queues:
        if q.layout == "counts":
            for k, s_ in enumerate(q.classes):
                nphases[int(unit_of[s_])] = q.ph[k].nphases
    for u in range(nunits):
        if u not in seq_units and dirs[u].any():
            P = nphases.get(u, 1)
            kern = np.array([float(math.comb(n + P - 1, P - 1)) for n in range(max(shape))])
            gf = _conv_dir(gf, dirs[u], kern)
    from math import factorial
    for q in seq:
        for group in _order_groups(q):
            # extra leading axis: tokens of this group; exponential series per class,
            # then n! orders of n tokens (multinomial over the group's classes)
            local = np.zeros((q.L + 1,) + shape)
            local[(0,) * (len(pops) + 1)] = 1.0
            for k in group:
                d = np.concatenate([[1], dirs[int(unit_of[q.classes[k]])]])
                # LCFS-PR: every preempted token keeps its phase
                P = q.ph[k].nphases if q.discipline == "lcfs-pr" else 1
                local = _conv_dir(local, d, np.array([float(P) ** n / factorial(n) for n in range(q.L + 1)]))
            fact = np.array([factorial(n) for n in range(q.L + 1)], dtype=float)
            gf = _conv_full(gf, np.tensordot(fact, local, axes=(0, 0)))
    if open_units:
        est = float(gf[tuple(pops[:-1])].sum())
    else:
        est = float(gf[tuple(pops)]) if pops else 1.0
    est *= extra
    for q in seq:
        if q.discipline not in ("lcfs-pr", "is", "ps"):
            est *= q.max_phases ** min(q.servers, q.L, 12)
    for t in spec.timed:
        if t.ph is not None:
            est *= t.ph.nphases
    return max(est, 1.0)


def _order_groups(q: QueueSpec) -> list[list[int]]:
    """Classes whose relative order the queue's state keeps (one group = one order)."""
    K = len(q.classes)
    if any(q.fifo) or q.discipline in ("fcfs", "lcfs-pr", "is", "ps"):
        return [list(range(K))]
    if q.discipline == "random":
        return [[k] for k in range(K)]
    levels: dict[float, list[int]] = {}
    for k in range(K):
        levels.setdefault(q.prio[k], []).append(k)
    return list(levels.values())


def _conv_dir(a: np.ndarray, direction: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Multiply a truncated multivariate series by sum_n kernel[n] x^(n*direction)."""
    out = np.zeros_like(a)
    direction = np.asarray(direction, dtype=np.int64)
    for n, kv in enumerate(kernel):
        if kv == 0:
            continue
        off = n * direction
        if np.any(off >= np.array(a.shape)):
            break
        src = tuple(slice(0, dim - o) for dim, o in zip(a.shape, off))
        dst = tuple(slice(o, dim) for dim, o in zip(a.shape, off))
        out[dst] += kv * a[src]
        if not direction.any():
            break
    return out


def _conv_full(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncated product of two multivariate series of the same shape."""
    out = np.zeros_like(a)
    for idx in zip(*np.nonzero(b)):
        src = tuple(slice(0, n - i) for n, i in zip(a.shape, idx))
        dst = tuple(slice(i, n) for n, i in zip(a.shape, idx))
        out[dst] += b[idx] * a[src]
    return out


def _covering(totals) -> list:
    """Few invariants covering every unit that any of them covers (greedy: most new
    units first, then the smallest token count).  Nets with many counter places
    (e.g. expanded software layers) have hundreds of minimal invariants."""
    ys = [np.asarray(y) > 0 for y, _ in totals]
    covered = np.zeros(len(ys[0]), dtype=bool) if ys else np.zeros(0, dtype=bool)
    keep = []
    while True:
        gains = [int((y & ~covered).sum()) for y in ys]
        best = max(range(len(ys)), key=lambda i: (gains[i], -int(totals[i][1])), default=None)
        if best is None or gains[best] == 0:
            return keep
        keep.append(totals[best])
        covered |= ys[best]


def _crude_estimate(spec, totals, unit_of) -> float:
    """Product of independent distributions (a large upper bound)."""
    est = 1.0
    for y, tokens in totals:
        k = int(np.count_nonzero(y))
        est *= math.comb(int(tokens) + k - 1, k - 1) if k else 1
    for q in spec.queues:
        if q.layout == "seq" and len(q.classes) > 1:
            est *= len(q.classes) ** min(q.L, 40)
    return est
