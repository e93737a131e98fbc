"""Breadth-first generation of the tangible reachability graph, vectorized.

Whole frontiers are processed as arrays: every timed event and queue event
produces successor rows for all frontier states at once; vanishing rows
(immediate transitions enabled) are resolved into distributions over tangible
rows; rows are encoded as integer keys and deduplicated in bulk against a
sorted key index.  Python loops run per level (and per chunk of a wide level),
not per state: a chain of many narrow levels pays about 0.5 ms a level (a
mutex of 10^6 threads: 3,474 levels of two states in 2 s).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from qpn import progress, resources
from qpn.errors import SolverError

INT32_MAX = np.iinfo(np.int32).max

from .dynamics import Dynamics
from .spec import CTMCSpec, events_per_state

MAX_ROUNDS = 64
#: successor rows generated at once: a wider level is explored in chunks of the frontier
CHUNK_SUCCESSORS = 1 << 16
FIRST_CHUNK = 256          # frontier states in the first chunk of a level
#: a level (or a chunk of one, or a round of immediate firings) costs a probe's budget as
#: much as this many states: a Python round trip of about 0.5 ms, the time of 60 states of a
#: wide level (a thin chain of 6,667 vanishing markings took 8 s on a budget of 20,000 states)
LEVEL_WORK = 64


class Keyer:
    """Mixed-radix encoding of rows into int64 keys (one or several words)."""

    def __init__(self, bounds: np.ndarray):
        radix = (np.asarray(bounds, dtype=object) + 1)
        self.chunks: list[tuple[np.ndarray, np.ndarray]] = []
        start = 0
        n = len(radix)
        while start < n or not self.chunks:
            mult, prod, end = [], 1, start
            while end < n and prod * int(radix[end]) < 2 ** 62:
                mult.append(prod)
                prod *= int(radix[end])
                end += 1
            if end == start and start < n:
                raise SolverError("a state column has too large a range to encode")
            self.chunks.append((np.arange(start, end), np.asarray(mult, dtype=np.int64)))
            start = end
            if start >= n:
                break
        self.words = len(self.chunks)

    def __call__(self, R: np.ndarray) -> np.ndarray:
        if self.words == 1:
            cols, mult = self.chunks[0]
            return R[:, cols].astype(np.int64) @ mult if len(cols) else np.zeros(len(R), np.int64)
        W = np.empty((len(R), self.words), dtype=np.int64)
        for i, (cols, mult) in enumerate(self.chunks):
            W[:, i] = R[:, cols].astype(np.int64) @ mult
        return np.ascontiguousarray(W).view(np.dtype((np.void, 8 * self.words))).ravel()


class Registry:
    """Known states: sorted keys -> ids; rows stored in insertion order."""

    def __init__(self, keyer: Keyer, ncols: int, limit: int):
        self.keyer = keyer
        self.keys = None
        self.ids = np.zeros(0, dtype=np.int64)
        self.blocks: list[np.ndarray] = []
        self._block_bytes = 0
        self.size = 0
        self.limit = limit

    def lookup_or_add(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ids of rows (adding unknown ones) and the ids that are new."""
        keys = self.keyer(R)
        uk, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        if self.keys is None or len(self.keys) == 0:
            found = np.zeros(len(uk), dtype=bool)
            pos = np.zeros(len(uk), dtype=np.int64)
        else:
            pos = np.searchsorted(self.keys, uk)
            pos_c = np.minimum(pos, len(self.keys) - 1)
            found = self.keys[pos_c] == uk
        uid = np.empty(len(uk), dtype=np.int64)
        if self.keys is not None and len(self.keys):
            uid[found] = self.ids[np.minimum(pos, len(self.keys) - 1)[found]]
        new = ~found
        nnew = int(new.sum())
        if self.size + nnew > self.limit:
            raise SolverError(f"the state space exceeds the limit of {self.limit:,} states "
                              f"({self.size + nnew:,} generated so far; set --limit to raise it)",
                              construct="state-space size", methods=("des",))
        new_ids = np.arange(self.size, self.size + nnew, dtype=np.int64)
        uid[new] = new_ids
        if nnew:
            block = R[first[new]]
            # int32 halves the memory; a count beyond it (2^31 tokens) keeps int64
            small = block.size == 0 or (block.max() <= INT32_MAX and block.min() >= -INT32_MAX)
            self.blocks.append(block.astype(np.int32) if small else block)
            self._block_bytes += self.blocks[-1].nbytes
            if self.keys is None or len(self.keys) == 0:
                self.keys, self.ids = uk[new], new_ids
            else:
                at = pos[new]
                self.keys = np.insert(self.keys, at, uk[new])
                self.ids = np.insert(self.ids, at, new_ids)
            self.size += nnew
        return uid[inv.ravel()], new_ids

    def nbytes(self) -> int:
        """Bytes held: stored rows, keys and ids."""
        held = self._block_bytes
        return held + (self.keys.nbytes + self.ids.nbytes if self.keys is not None else 0)

    def rows(self) -> np.ndarray:
        """Every registered state's row, in id order."""
        return np.concatenate(self.blocks) if self.blocks else np.zeros((0, 0), dtype=np.int32)


@dataclass
class StateSpace:
    """An explored chain: its tangible states, the transitions between them, the mode
    firings behind them (for throughputs), the initial distribution and the states at
    the population cut-off."""
    states: np.ndarray                 # (n, ncols)
    src: np.ndarray                    # transitions: src -> dst with rate
    dst: np.ndarray
    rate: np.ndarray
    flow_state: np.ndarray             # mode firings: (state, mode, rate)
    flow_mode: np.ndarray
    flow_rate: np.ndarray
    init_ids: np.ndarray               # initial distribution over tangible states
    init_prob: np.ndarray
    blocked: np.ndarray                # states at the population cut-off
    seconds: float = 0.0
    levels: int = 0
    notes: list[str] = field(default_factory=list)


class Explorer:
    """Breadth-first generation of the tangible states of ``spec``, at most ``limit`` of
    them (and ``seconds`` of CPU time: a probe), vanishing markings resolved on the way."""

    def __init__(self, spec: CTMCSpec, limit: int = 2_000_000, seconds: float | None = None,
                 work: int | None = None):
        if len(spec.bounds) != spec.ncols:   # build_spec left a chain too large unlaid
            resources.require(f"the CTMC with {spec.estimate_phrase()}", spec.memory_bytes(),
                              hint="use --method des or smaller parameters")
        self.spec = spec
        self.dyn = Dynamics(spec)
        self.keyer = Keyer(spec.bounds)
        self.limit = limit
        # a probe's budget in CPU seconds of this process: the work it may do, the same on a
        # busy machine (a wall budget refused ispass03's 63,271 states under load)
        self.seconds = seconds
        self.t_start = time.process_time()
        # a probe's budget of work in states: each state and vanishing marking 1, each level
        # or round LEVEL_WORK (machine-independent: the same answer on a slow machine)
        self.work, self.work_done = work, 0
        self.imm = np.asarray(spec.immediate, dtype=np.int64)
        # immediate modes the population cut-off can disable (_cut_rows looks at these only)
        self.imm_cut = [int(m) for m in self.imm if self.dyn.unc_delta[m] > 0] \
            if spec.cutoff is not None else []
        self.flows: list[tuple[np.ndarray, int, np.ndarray]] = []
        self.cut_parents: list[np.ndarray] = []   # parents at the cut-off, found by resolve

    # ----------------------------------------------------- vanishing states
    def _immediate_choice(self, R: np.ndarray):
        """Per row: probabilities of each immediate mode firing (rows x nimm)."""
        dyn = self.dyn
        E = dyn.enabled_many(R, self.imm) if len(self.imm) else np.zeros((len(R), 0), dtype=bool)
        if not E.size:
            return E, np.zeros(E.shape)
        pr = np.where(E, dyn.prio[self.imm][None, :], -np.inf)
        top = pr.max(axis=1, keepdims=True)
        cand = E & (pr == top)
        wt = np.where(cand, dyn.weight[self.imm][None, :], 0.0)
        tot = wt.sum(axis=1, keepdims=True)
        P = np.divide(wt, tot, out=np.zeros_like(wt), where=tot > 0)
        return E, P

    def _cut_rows(self, R: np.ndarray, E: np.ndarray) -> np.ndarray:
        """Rows whose choice of immediate firing the population cut-off changed: a mode
        it disabled would have competed (priority at least the top enabled one).  Their
        parent states are at the cut-off like those of a timed firing it stops (else the
        truncation of an open part fed by immediate firings went unseen: 'probability at
        the cut-off 0' with every token at it)."""
        dyn = self.dyn
        out = np.zeros(len(R), dtype=bool)
        if not self.imm_cut or not len(R):
            return out
        top = np.where(E, dyn.prio[self.imm][None, :], -np.inf).max(axis=1) if E.size else \
            np.full(len(R), -np.inf)
        for m in self.imm_cut:
            out |= dyn.cut_only(R, m) & (dyn.prio[m] >= top)
        return out

    def resolve(self, R, w, par):
        """Replace vanishing rows by tangible rows (weights multiply), recording flows
        (and in ``cut_parents`` the parents whose immediate firings the cut-off changed)."""
        if not len(self.imm):
            return R, w, par
        out = []
        cur = (R, w, par)
        for rnd in range(MAX_ROUNDS):
            R, w, par = cur
            # a round may branch many rows (a probe's budget holds inside the resolution too)
            self.spend_round(len(R), f"round {rnd + 1} of immediate firings")
            E, P = self._immediate_choice(R)
            cut = self._cut_rows(R, E)
            if cut.any():
                self.cut_parents.append(par[cut])
            V = E.any(axis=1)
            if not V.all():
                out.append((R[~V], w[~V], par[~V]))
            if not V.any():
                break
            R, w, par, P = R[V], w[V], par[V], P[V]
            if rnd:  # after branching, equal rows of one parent are merged (no blow-up)
                R, w, par, P = self._merge(R, w, par, P)
            parts = []
            for j in range(len(self.imm)):
                sel = P[:, j] > 0
                if not sel.any():
                    continue
                wj = w[sel] * P[sel, j]
                self.flows.append((par[sel], int(self.imm[j]), wj))
                parts.append(self.dyn.fire(R[sel], wj, par[sel], np.full(int(sel.sum()), self.imm[j])))
            cur = tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
        else:
            return self._resolve_linear(cur, out)
        if not out:
            return R[:0], w[:0], par[:0]
        return tuple(np.concatenate([o[i] for o in out]) for i in range(3))

    def _merge(self, R, w, par, P):
        keys = self.keyer(R)
        if keys.dtype.kind == "V":
            # (parent, key words) as one void of bytes: numpy cannot sort a structured
            # array that has a void field
            words = keys.view(np.int64).reshape(len(R), -1)
            both = np.ascontiguousarray(np.column_stack([par.astype(np.int64), words]))
            combo = both.view(np.dtype((np.void, 8 * both.shape[1]))).ravel()
        else:
            combo = np.empty(len(R), dtype=[("p", np.int64), ("k", np.int64)])
            combo["p"], combo["k"] = par, keys
        u, first, inv = np.unique(combo, return_index=True, return_inverse=True)
        if len(u) == len(R):
            return R, w, par, P
        ws = np.bincount(inv.ravel(), weights=w, minlength=len(u))
        return R[first], ws, par[first], P[first]

    def _solve_vanishing(self, A, B, mode_prob):
        """``A^-1 B`` for the vanishing markings; a SolverError when rounding makes A singular.

        A loop of immediate firings whose way out has a probability below the rounding
        of 1 (weights 1e40 against 0.1: campaign 21) is a timeless trap in floating point:
        I - P is singular although the exact chain leaves the loop."""
        import warnings

        import scipy.sparse as sp
        from scipy.sparse.linalg import spsolve
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                X = spsolve(A, B)
            except RuntimeError:
                X = None
        data = X.data if sp.issparse(X) else X
        if X is None or not np.all(np.isfinite(data)):
            trans = sorted({self.spec.compiled.modes[m].transition for _v, m, _p in mode_prob})
            raise SolverError("timeless trap up to rounding: the immediate transitions "
                              f"{', '.join(repr(t) for t in trans)} leave a loop of immediate firings "
                              "with a probability below the precision of floating point (weights "
                              "more than 1e16 apart)", construct="timeless trap", methods=())
        return X

    def _key_list(self, R: np.ndarray) -> list:
        """Hashable keys of rows (ints, or bytes for keys of several words)."""
        keys = self.keyer(R) if len(R) else np.zeros(0, dtype=np.int64)
        return [k.tobytes() for k in keys] if self.keyer.words > 1 else keys.tolist()

    def _resolve_linear(self, cur, out):
        """Immediate transitions that can loop: the vanishing markings reachable from the
        rows ``cur`` absorbed exactly with (I - P_VV)^-1 (:mod:`.vanishing`)."""
        from . import vanishing
        R0, w0, par0 = cur
        E0, _ = self._immediate_choice(R0)
        cut0 = self._cut_rows(R0, E0)
        if cut0.any():
            self.cut_parents.append(par0[cut0])
        V0 = E0.any(axis=1)
        if not V0.all():
            out.append((R0[~V0], w0[~V0], par0[~V0]))
        R0, w0, par0 = R0[V0], w0[V0], par0[V0]
        g = vanishing.vanishing_graph(self, R0)
        at_cut = vanishing.entries_at_cutoff(g)
        if at_cut.any():
            self.cut_parents.append(par0[at_cut])
        modes = self.spec.compiled.modes
        vanishing.refuse_traps(g, modes)
        X, Nm = vanishing.absorb(g, len(modes), lambda A, B: self._solve_vanishing(A, B, g.mode_prob))
        T = np.stack(g.tangible)
        for i, e in enumerate(g.entries):
            row = X[e]
            out.append((T[row.indices], w0[i] * row.data, np.full(len(row.indices), par0[i])))
            frow = Nm[e]
            for m, val in zip(frow.indices, frow.data):
                self.flows.append((np.array([par0[i]]), int(m), np.array([w0[i] * val])))
        return tuple(np.concatenate([o[k] for o in out]) for k in range(3))

    # ----------------------------------------------------------------- BFS
    def _level(self, dyn, reg, frontier, frontier_rows, srcs, dsts, rates, blocked_parts):
        """Successors of one breadth-first level; the next frontier (ids, rows)."""
        S = frontier_rows.astype(np.int64)  # new ids are the rows of the last block
        dyn.blocked_by_cutoff = np.zeros(len(S), dtype=bool)
        branches = []
        for (br, mode) in dyn.timed_events(S):
            Rb, wb, pb = br
            if mode >= 0:
                self.flows.append((frontier[pb], mode, wb))
            branches.append((Rb, wb, pb))
        branches += dyn.queue_events(S)
        if dyn.blocked_by_cutoff.any():
            blocked_parts.append(frontier[dyn.blocked_by_cutoff])
        if not branches:
            return np.zeros(0, dtype=np.int64), None
        Rb = np.concatenate([b[0] for b in branches])
        wb = np.concatenate([b[1] for b in branches])
        pb = frontier[np.concatenate([b[2] for b in branches])]
        Rb, wb, pb = self.resolve(Rb, wb, pb)
        if self.cut_parents:
            blocked_parts.extend(self.cut_parents)
            self.cut_parents = []
        ids, new = reg.lookup_or_add(Rb)
        srcs.append(pb)
        dsts.append(ids)
        rates.append(wb)
        return new, (reg.blocks[-1] if len(new) else None)

    def spend_round(self, states: int, where: str) -> None:
        """Count a level's chunk or a round of immediate firings over ``states`` rows."""
        self._spend(LEVEL_WORK + states, where)

    def _spend(self, units: int, where: str) -> None:
        """Count ``units`` of a probe's work; SolverError once its budget (``work``) or
        its CPU time (``seconds``) is spent."""
        self.work_done += units
        if self.work is not None and self.work_done > self.work:
            raise SolverError(f"exploration stopped at its budget of {self.work:,} states' work "
                              f"at {where}", construct="state-space size")
        if self.seconds is not None and time.process_time() - self.t_start > self.seconds:
            raise SolverError(f"exploration stopped after {self.seconds:g} s of CPU time at {where}",
                              construct="state-space size")

    def _check_memory(self, reg, frontier: int, edges, flows, fan: int = 0) -> None:
        """Stop when what is held, the next level's successor rows and the generator
        to come would cross the memory limit (the same refusal as before exploring)."""
        # edges and flows only grow: add the bytes of the parts not counted yet (a sum over
        # all of them at every level made a long, thin exploration quadratic)
        counted = self._counted
        for k, part in enumerate(edges):
            counted[1] += sum(a.nbytes for a in part[counted[0][k]:])
            counted[0][k] = len(part)
        counted[3] += sum(f[0].nbytes + f[2].nbytes for f in flows[counted[2]:])
        counted[2] = len(flows)
        held = reg.nbytes() + counted[1] + counted[3]
        E = max(events_per_state(self.spec), fan)        # fan: successors per state seen so far
        level = 3 * 8 * frontier * E * self.spec.ncols     # successor rows and their copies
        after = held                                       # rows and edges concatenated, then Q
        need = held + max(level, after)
        if not resources.fits(need):
            resources.require(f"the CTMC exploration, at {reg.size:,} states so far (the estimate "
                              f"was {self.spec.estimate_phrase()})", need,
                              hint="use --method des or smaller parameters")

    def run(self) -> StateSpace:
        """Explore from the initial marking until no new state appears (a SolverError past
        the state, time or memory limits)."""
        t0 = time.perf_counter()
        self.t_start, self.work_done = time.process_time(), 0
        dyn = self.dyn
        reg = Registry(self.keyer, self.spec.ncols, self.limit)
        R, w, par = dyn.initial_rows()
        self.flows, self.cut_parents = [], []
        R, w, par = self.resolve(R, w, par)
        self.flows, self.cut_parents = [], []  # firings before time starts do not count as rates
        ids, new = reg.lookup_or_add(R)
        uid, inv = np.unique(ids, return_inverse=True)
        init_prob = np.bincount(inv.ravel(), weights=w, minlength=len(uid))
        srcs, dsts, rates = [], [], []
        self._counted = [[0, 0, 0], 0, 0, 0]   # parts of edges counted, their bytes; flows, bytes
        blocked_parts = []
        frontier = new
        frontier_rows = reg.blocks[-1] if len(new) else None
        levels = 0
        guess = self.spec.estimate
        total = guess if math.isfinite(guess) and guess <= self.limit else None
        with progress.progress("exploring the CTMC", total=total, unit="states") as bar:
            bar.update(reg.size)
            fan = max(events_per_state(self.spec), 1)     # successors per state, then as seen
            while len(frontier):
                levels += 1
                # a wide level goes in chunks: the clock, the memory check and the bar see
                # each (one level of a long FIFO sequence chain held 2 GB for 2 s)
                new_ids, new_rows = [], []
                a, step = 0, FIRST_CHUNK // 4
                while a < len(frontier):
                    # the fan-out may jump from one level to the next (20 -> 470 successors per
                    # state): each level starts small and grows its chunks 4x at most
                    step = max(1, min(CHUNK_SUCCESSORS // fan, 4 * step))
                    self.spend_round(min(step, len(frontier) - a), f"{reg.size:,} states")
                    self._check_memory(reg, min(step, len(frontier) - a), (srcs, dsts, rates),
                                       self.flows, fan)
                    n_edges = len(dsts)
                    ids_, rows_ = self._level(dyn, reg, frontier[a:a + step], frontier_rows[a:a + step],
                                              srcs, dsts, rates, blocked_parts)
                    if len(dsts) > n_edges:
                        fan = max(fan, -(-len(dsts[-1]) // len(frontier[a:a + step])))
                    a += step
                    if len(ids_):
                        new_ids.append(ids_)
                        new_rows.append(rows_)
                if len(new_ids) == 1:
                    frontier, frontier_rows = new_ids[0], new_rows[0]
                elif new_ids:
                    frontier, frontier_rows = np.concatenate(new_ids), np.concatenate(new_rows)
                else:
                    frontier, frontier_rows = np.zeros(0, dtype=np.int64), None
                if bar.total is not None and reg.size > bar.total:
                    bar.total = reg.size      # an estimate, not a bound, was too low
                bar.update(len(frontier))
        states = reg.rows()

        flows = self.flows
        fs = np.concatenate([f[0] for f in flows]) if flows else np.zeros(0, np.int64)
        fm = np.concatenate([np.full(len(f[0]), f[1]) for f in flows]) if flows else np.zeros(0, np.int64)
        fr = np.concatenate([f[2] for f in flows]) if flows else np.zeros(0)
        blocked = np.zeros(len(states), dtype=bool)
        for b in blocked_parts:
            blocked[b] = True
        cat = lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt)  # noqa: E731
        return StateSpace(states, cat(srcs, np.int64), cat(dsts, np.int64), cat(rates, float),
                          fs, fm, fr, uid, init_prob, blocked, time.perf_counter() - t0, levels)
