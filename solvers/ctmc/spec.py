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
from typing import Callable

import numpy as np

from qpn.model import IN_ORDER
from qpn import disciplines, resources
from qpn.errors import SolverError
from qpn.structure.semiflows import TooManySemiflows, p_semiflows

from .estimate import count_states
from .phase import PhaseType, phase_type

FLAG_SERVING = 1   # in service (non-preemptive prio, random)
FLAG_DONE = 2      # finished, waiting for FIFO departure


@dataclass
class QueueSpec:
    """One queue as the chain sees it: discipline, servers, its classes' slots and phases."""
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
    capacity: Callable | None = None  # capacity by token count (CompiledQueue.capacity)

    def shared_factor(self, ntot: np.ndarray) -> np.ndarray:
        """Each token's share of a 'shared' queue's capacity with ``ntot`` tokens in
        service: capacity(ntot) / ntot (1 for no tokens)."""
        ntot = np.asarray(ntot)
        if self.capacity is None:
            if math.isinf(self.servers):
                return np.ones(ntot.shape)
            return np.where(ntot > self.servers, self.servers / np.maximum(ntot, 1), 1.0)
        return np.where(ntot > 0, self.capacity(ntot) / np.maximum(ntot, 1), 1.0)

    # -- how the queue serves (its discipline's Scheduling, preemption resolved) ------
    @property
    def serves(self) -> str:
        """'all' (IS), 'shared' (PS) or 'first' (the s first by :attr:`order`)."""
        return disciplines.get(self.discipline).scheduling.serves

    @property
    def order(self) -> str:
        """Who goes first: 'arrival', 'last', 'priority', 'random' (see qpn.disciplines)."""
        return disciplines.get(self.discipline).scheduling.order

    @property
    def holds(self) -> bool:
        """Whether a token keeps its server until done (non-preemptive)."""
        h = disciplines.get(self.discipline).scheduling.holds
        return (not self.preemptive) if h is None else h

    @property
    def own_phases(self) -> bool:
        """Every token keeps its own phase and the servers no state of their own: all
        served (IS, PS), or preempted in last-come order (LCFS-PR)."""
        return self.serves != "first" or (self.order == "last" and not self.holds)

    @property
    def exponential(self) -> bool:
        """Whether every class's service is one exponential phase."""
        return all(p.nphases == 1 for p in self.ph)

    @property
    def max_phases(self) -> int:
        """The most phases of any class's service (1 when all are exponential)."""
        return max((p.nphases for p in self.ph), default=1)    # a shared queue no place uses


@dataclass
class TimedSpec:
    """One timed mode: its delay as a rate or a phase-type, and its servers."""
    mode: int
    ph: PhaseType | None          # None = exponential (rate form)
    rate: float                   # 1/mean for exponential
    servers: float
    col: int = -1                 # phase column (non-exponential single-server)


@dataclass
class CTMCSpec:
    """What the chain is built from: the compiled net, the state's columns and their
    bounds, the queues and timed modes, and the estimated state count."""
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
    estimate_kind: str = "upper bound"   # or 'estimate' (see .estimate)
    estimate_how: str = ""
    bytes_per_state: float = 0.0

    def memory_bytes(self) -> float:
        """Estimated peak bytes of generating and solving the chain."""
        return self.estimate * self.bytes_per_state

    def estimate_phrase(self) -> str:
        """The state estimate in words ("at most 15,624 states (a proven upper bound ...)")."""
        from .estimate import StateEstimate
        return StateEstimate(self.estimate, self.estimate_kind, self.estimate_how).phrase()


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
    return unit_bound[unit_of], uncovered_units[unit_of], totals, unit_of, C


def build_spec(c, *, cutoff: int = 60, det_order: int = 20, rr: str | None = None) -> CTMCSpec:
    """Layout of the CTMC of compiled net ``c`` (raises SolverError if impossible)."""
    notes: list[str] = []
    slot_bound, uncovered, totals, unit_of, C = _slot_bounds(c, cutoff)
    # the dynamics work on dense incidence rows
    resources.require(f"the CTMC's incidence matrices ({len(c.modes):,} modes x {c.nslots:,} slots)",
                      2 * 8 * len(c.modes) * c.nslots, hint="use --method des")
    pre = c.pre.toarray().astype(np.int64)
    post = c.post.toarray().astype(np.int64)
    cols = c.nslots
    queues: list[QueueSpec] = []
    seq_start: dict[int, int] = {}
    for qi, q in enumerate(c.queues):
        disc = q.discipline
        decl = disciplines.get(disc)
        if decl.ctmc is None:
            raise SolverError(f"queue {q.name}: {decl.why_no_ctmc()}",
                              construct=f"queue {q.name}: {disc}", methods=("des",))
        if decl.ctmc == "ps":
            if rr != "ps":
                raise SolverError(f"queue {q.name}: round robin with a quantum has no exact Markov "
                                  "model", construct=f"queue {q.name}: {disc}",
                                  methods=("des", "ctmc with option rr='ps'"))
            notes.append(f"queue {q.name}: round robin approximated as processor sharing")
            disc = "ps"
            decl = disciplines.get(disc)
        if decl.scheduling.order in ("ready", "remaining"):
            raise SolverError(f"queue {q.name}: the CTMC keeps no {decl.scheduling.order} order "
                              f"({disc})", construct=f"queue {q.name}: {disc}", methods=("des",))
        shared = decl.shares_service
        phs = []
        for d in q.service:
            ph = phase_type(d, det_order)
            if not ph.exact and ph.note not in notes:
                notes.append(f"queue {q.name}: {ph.note}")
            phs.append(ph)
        fifo = [c.places[p].departure == IN_ORDER for p in q.places]
        spec = QueueSpec(qi, q.name, disc, q.servers, q.preemptive, list(q.classes), list(q.dslots),
                         list(q.places), phs, list(q.priority), fifo,
                         capacity=q.capacity if q.speed is not None else None)
        single_exp = len(q.classes) == 1 and phs[0].nphases == 1
        if any(fifo):
            if not decl.ctmc_fifo_departure:
                raise SolverError(f"queue {q.name}: FIFO departure with {disc} service",
                                  construct=f"queue {q.name}: departure fifo with {disc}",
                                  methods=("des",))
            spec.layout = "seq"
        elif shared or single_exp:
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
                if q.classes and all(y[unit_of[s]] > 0 for s in q.classes):
                    L = min(L, tokens // int(min(y[unit_of[s]] for s in q.classes)))
            if math.isinf(q.servers) and not shared:
                raise SolverError(f"queue {q.name}: infinitely many servers with {disc}",
                                  construct=f"queue {q.name}", methods=("des",))
            spec.L = max(L, 1)
            seq_start[qi] = cols  # class, phase and flags per position: arrays made below
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
    spec = CTMCSpec(c, cols, c.nslots, queues, timed, immediate, np.zeros(0, dtype=np.int64),
                    uncovered, cutoff if uncovered.any() else None, notes, pre, post)
    # count before laying out: a queue line of 2^31 positions is refused here
    est = count_states(spec, totals, unit_of, C)
    spec.estimate, spec.estimate_kind, spec.estimate_how = est.states, est.kind, est.how
    spec.bytes_per_state = bytes_per_state(spec)
    if not resources.fits(32.0 * cols):
        # not laid out (a queue line of 2^31 positions): ctmc.solver.build refuses it,
        # saying the estimate.  A layout that fits is made even when the bound's memory
        # does not, so that a bounded probe can count the chain exactly (a bound of 1.2e9
        # states for a chain of 1,730 was refused before anything was explored)
        return spec
    for qs in queues:
        if qs.index in seq_start:
            at = seq_start[qs.index]
            qs.cls_cols = np.arange(at, at + qs.L)
            qs.ph_cols = np.arange(at + qs.L, at + 2 * qs.L)
            qs.flag_cols = np.arange(at + 2 * qs.L, at + 3 * qs.L)
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
    spec.bounds = bounds
    return spec


def events_per_state(spec: CTMCSpec) -> int:
    """Events a state can have (timed modes, queue classes), capped at a typical
    fan-out: the mean out-degree of generated chains is 2 to 7."""
    return max(1, min(len(spec.timed) + sum(len(q.classes) for q in spec.queues), 8))


def bytes_per_state(spec: CTMCSpec) -> float:
    """Peak bytes per tangible state of generating and solving the chain.

    Measured with tracemalloc on chains of 2e4 to 6e5 states and 10 to 510
    columns: stored rows (int32) and keys, the frontier's successor rows (int64,
    one per event), the transitions and the generator, the solver's copies of it.
    The formula is 1 to 2.5 times the measured peak."""
    E = events_per_state(spec)
    return 300.0 + 8.0 * spec.ncols + 5.0 * spec.ncols * E + 50.0 * E
