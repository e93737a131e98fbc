"""Vectorized dynamics of CTMC states: every operation acts on a batch of rows.

A *branch* is ``(rows, w, parent)``: successor rows, their weights (rates or
probabilities) and the index of the row each came from.  Operations that make
a random choice (initial phase of a service, a random-order pick) split a row
into several weighted rows.
"""
from __future__ import annotations

import math

import numpy as np

from .spec import FLAG_DONE, FLAG_SERVING, CTMCSpec, QueueSpec

Branch = tuple[np.ndarray, np.ndarray, np.ndarray]


#: rows one batch of tokens may split into when each picks a first phase of service
MAX_ENTRY_ROWS = 1_000_000


def _merge_rows(R, w, par, got):
    """Equal (row, parent, pending) triples as one, their weights summed."""
    key = np.hstack([R, par[:, None], got])
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    if len(uniq) == len(key):
        return R, w, par, got
    inv = inv.ravel()
    nr = R.shape[1]
    return (uniq[:, :nr].copy(), np.bincount(inv, weights=w, minlength=len(uniq)),
            uniq[:, nr].copy(), uniq[:, nr + 1:].copy())


def _take(rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return rows[idx].copy()


class Dynamics:
    """What can happen in a batch of states (rows of the layout of ``spec``): enabling,
    firing with its branches (phases, routing, service starts), queue events."""

    def __init__(self, spec: CTMCSpec):
        self.spec = spec
        c = spec.compiled
        self.pre, self.post = spec.pre, spec.post
        self.delta = (spec.post - spec.pre)
        nm = len(c.modes)
        # per mode and queue: the classes one firing puts into the queue, in the order the
        # mode's output arcs are written (the order in which they join a FCFS line)
        self.entry_order = [[[q.classes.index(s) for s in m.out_order if s in q.classes]
                             for q in spec.queues] for m in c.modes]
        self.inputs = [[(s, int(spec.pre[m, s])) for s in np.flatnonzero(spec.pre[m])] for m in range(nm)]
        inh = c.inh.tocsr()
        self.inhib: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(nm)]
        for g in range(inh.shape[0]):
            self.inhib[int(c.inh_mode[g])].append((inh[g].indices.copy(), int(c.inh_threshold[g])))
        cap = c.cap.tocsr()
        self.caps: list[list[tuple[np.ndarray, int, int]]] = [[] for _ in range(nm)]
        for g in range(cap.shape[0]):
            slots = cap[g].indices.copy()
            lim = int(c.cap_limit[g])
            for m in range(nm):
                d = int(self.delta[m, slots].sum())
                if d > 0:
                    self.caps[m].append((slots, lim, d))
        self.unc = np.flatnonzero(spec.uncovered[:spec.nslots]) if spec.cutoff is not None else np.zeros(0, int)
        self.unc_delta = self.delta[:, self.unc].sum(axis=1) if len(self.unc) else np.zeros(nm, int)
        # The cut-off holds back generators (modes that give back every input: a source).
        # A mode that turns an item a thread holds into an open token (take from one
        # unbounded queue, work, put into another) may pass it by one firing's worth:
        # held back, it left a dead state the net does not have (nothing to take, the
        # arrivals at the cut-off, the item never put), read as "unstable" at any load.
        # estimate.py's bound already counts that overshoot.
        self.generator = np.all(spec.pre <= spec.post, axis=1)
        self.cut_limit = np.zeros(nm, dtype=np.int64)
        if spec.cutoff is not None:
            over = max(int(self.unc_delta.max(initial=0)), 0)
            self.cut_limit[:] = np.where(self.generator, spec.cutoff, spec.cutoff + over)
        self.prio = np.array([m.priority for m in c.modes], dtype=float)
        self.weight = np.array([m.weight for m in c.modes], dtype=float)
        # queue tables
        self.qtab = []
        for q in spec.queues:
            P = q.max_phases
            K = len(q.classes)
            A = np.zeros((K, P))
            T = np.zeros((K, P, P))
            X = np.zeros((K, P))
            for k, ph in enumerate(q.ph):
                n = ph.nphases
                A[k, :n] = ph.alpha
                T[k, :n, :n] = ph.T
                X[k, :n] = ph.exit
            np.einsum("kii->ki", T)[:] = 0.0  # keep only off-diagonal moves
            arrive_into = {s: k for k, s in enumerate(q.classes)}
            self.qtab.append(dict(A=A, T=T, X=X, K=K, P=P, slot2class=arrive_into,
                                  prio=np.asarray(q.prio, float)))
        self.blocked_by_cutoff: np.ndarray | None = None
        # inhibitor groups as matrices for enabled_many
        G = inh.shape[0]
        self.inh_groups = inh.toarray().astype(np.int64) if G else None
        self.inh_thr = np.asarray(c.inh_threshold, dtype=np.int64)
        self.inh_of_mode = np.zeros((G, nm), dtype=np.int64)
        for g in range(G):
            self.inh_of_mode[g, int(c.inh_mode[g])] = 1
        # feeds[m, q]: mode m puts tokens into queue q (which then needs bookkeeping)
        self.feeds = np.zeros((nm, len(spec.queues)), dtype=bool)
        for qi, q in enumerate(spec.queues):
            if q.layout == "seq" or q.max_phases > 1:
                self.feeds[:, qi] = spec.post[:, q.classes].sum(axis=1) > 0
        self.has_timed_phases = any(t.col >= 0 for t in spec.timed)

    # ------------------------------------------------------------ enabling
    def cut_only(self, R: np.ndarray, m: int) -> np.ndarray:
        """Rows where mode m is enabled but for the population cut-off."""
        if not self.unc_delta[m] > 0:
            return np.zeros(len(R), dtype=bool)
        return ~self._below_cut(R, m) & self._enabled_uncut(R, m)

    def holds_back_a_step(self, R: np.ndarray) -> bool:
        """Whether in some of these states the cut-off alone holds back a mode that is not a
        generator (a step inside a thread, not an arrival)."""
        steps = np.flatnonzero(~self.generator & (self.unc_delta > 0))
        return any(self.cut_only(R, int(m)).any() for m in steps)

    def _below_cut(self, R: np.ndarray, m: int) -> np.ndarray:
        return R[:, self.unc].sum(axis=1) + self.unc_delta[m] <= self.cut_limit[m]

    def _enabled_uncut(self, R: np.ndarray, m: int) -> np.ndarray:
        ok = np.ones(len(R), dtype=bool)
        for s, cnt in self.inputs[m]:
            ok &= R[:, s] >= cnt
        for slots, thr in self.inhib[m]:
            ok &= R[:, slots].sum(axis=1) < thr
        for slots, lim, d in self.caps[m]:
            ok &= R[:, slots].sum(axis=1) + d <= lim
        return ok

    def enabled(self, R: np.ndarray, m: int, *, track_cutoff: bool = False) -> np.ndarray:
        """Rows where mode m is enabled (inputs, inhibitors, capacities, the cut-off); with
        ``track_cutoff``, rows the cut-off alone disabled are noted in blocked_by_cutoff."""
        ok = self._enabled_uncut(R, m)
        if self.unc_delta[m] > 0:
            cut = self._below_cut(R, m)
            if track_cutoff and self.blocked_by_cutoff is not None:
                self.blocked_by_cutoff |= ok & ~cut
            ok &= cut
        return ok

    def enabled_many(self, R: np.ndarray, modes: np.ndarray) -> np.ndarray:
        """Enabling of several modes at once (rows x modes); one broadcast for small batches."""
        modes = np.asarray(modes, dtype=np.int64)
        F, nm = len(R), len(modes)
        ns = self.spec.nslots
        if F * nm * ns > 4_000_000 or self.unc_delta[modes].any() or \
                any(self.caps[m] for m in modes):
            return np.stack([self.enabled(R, int(m)) for m in modes], axis=1) if nm else \
                np.zeros((F, 0), dtype=bool)
        ok = np.all(R[:, None, :ns] >= self.pre[modes][None, :, :], axis=2)
        if self.inh_groups is not None and self.inh_groups.shape[0]:
            counts = R[:, :ns] @ self.inh_groups.T
            blocked = counts >= self.inh_thr[None, :]
            ok &= ~((blocked.astype(np.int64) @ self.inh_of_mode[:, modes]) > 0)
        return ok

    def degree(self, R: np.ndarray, m: int) -> np.ndarray:
        """Enabling degree of mode m per row: how many times its inputs are there."""
        if not self.inputs[m]:
            return np.ones(len(R))
        return np.min(np.stack([R[:, s] // cnt for s, cnt in self.inputs[m]]), axis=0).astype(float)

    # --------------------------------------------------------------- firing
    def fire(self, R: np.ndarray, w: np.ndarray, par: np.ndarray, modes: np.ndarray) -> Branch:
        """Fire compiled mode ``modes[i]`` in row i (inputs already checked)."""
        R = R.copy()
        R[:, :self.spec.nslots] += self.delta[modes]
        hit = np.unique(modes)
        # rows split as tokens pick phases or servers: every slot's arrivals (G) travel with
        # their row, so that a later queue reads its own arrivals row by row (campaign 20:
        # a hyperexp IS queue fed with a PS queue by one firing, 2 rows of counts for 6 rows)
        # the mode rides as G's last column: a split row (phases, servers) keeps its mode, so
        # a later seq queue reads ``modes == m`` by row (campaign 50: a firing into a
        # hyperexp PS queue and an FCFS queue of colors split 6 rows into 12, and the
        # FCFS queue's mask of 6 rows failed)
        G = np.column_stack([self.post[modes], modes])
        for qi, q in enumerate(self.spec.queues):
            if not self.feeds[hit, qi].any():
                continue
            if q.layout == "seq":
                got = G[:, q.classes]
                for m in hit:
                    if not self.entry_order[m][qi]:
                        continue                 # the mode puts nothing into this queue
                    mine = modes == m
                    for k in self.entry_order[m][qi]:
                        for rep in range(int(got[mine, k].max())):
                            rows = np.flatnonzero(mine & (got[:, k] > rep))
                            R[rows] = self._seq_insert(q, qi, R[rows], k)
                # _settle carries its third argument by row: pass row numbers, then map back
                R, w, origin = self._settle(q, qi, R, w, np.arange(len(R)))
                par, G = par[origin], G[origin]
                modes = G[:, -1]
            elif q.max_phases > 1:
                for k in range(len(q.classes)):
                    R, w, par, G = self._enter_phases(q, qi, k, R, w, par, G, col=q.classes[k])
                modes = G[:, -1]
        return self.timed_update(R, w, par)

    def _enter_phases(self, q, qi, k, R, w, par, got, col=None):
        """Tokens of class ``k`` (``got[:, k]`` per row) take their first phase.  One start
        phase: added at once, whatever their number; several: one token at a time, equal
        rows merged, refused beyond MAX_ENTRY_ROWS (a count of 2^31 tokens must not loop)."""
        A = self.qtab[qi]["A"][k]
        starts = np.flatnonzero(A > 0)
        col = k if col is None else col      # the column of got holding class k's arrivals
        n = got[:, col]
        if len(starts) == 1:
            if starts[0] > 0:
                R = R.copy()
                R[:, q.phase_cols[k][starts[0] - 1]] += n
            return R, w, par, got
        top = int(n.max()) if len(n) else 0
        rows = len(R) * math.comb(top + len(starts) - 1, len(starts) - 1)
        if rows > MAX_ENTRY_ROWS:
            from qpn.errors import SolverError
            raise SolverError(f"{top} tokens starting service in '{q.name}' have {rows:.3g} ways to "
                              f"pick their first phases (more than {MAX_ENTRY_ROWS:,}): the CTMC is "
                              "too large; simulate it (--method des)", construct="state space",
                              methods=("des",))
        for rep in range(top):
            R, w, par, got = self._counts_initial_phase(q, qi, k, R, w, par, got, rep, col)
            if top > 1:     # one token splits a row into distinct rows: nothing to merge
                R, w, par, got = _merge_rows(R, w, par, got)
        return R, w, par, got

    def _counts_initial_phase(self, q, qi, k, R, w, par, got, rep, col):
        A = self.qtab[qi]["A"][k]
        sel = got[:, col] > rep
        outs = []
        for i in np.flatnonzero(A > 0):
            Ri = R[sel].copy()
            if i > 0:
                Ri[:, q.phase_cols[k][i - 1]] += 1
            outs.append((Ri, w[sel] * A[i], par[sel], got[sel]))
        keep = ~sel
        parts = [(R[keep], w[keep], par[keep], got[keep])] + outs
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts]))

    # ---------------------------------------------------------- sequences
    def _seq_insert(self, q: QueueSpec, qi: int, R: np.ndarray, k: int) -> np.ndarray:
        cls, fl = R[:, q.cls_cols], R[:, q.flag_cols]
        occ = cls > 0
        n = occ.sum(axis=1)
        if q.order == "priority" and not q.holds:
            pr = self.qtab[qi]["prio"]
            higher = occ & (pr[np.maximum(cls - 1, 0)] >= pr[k])
            pos = higher.sum(axis=1)
        elif q.order == "priority":
            pr = self.qtab[qi]["prio"]
            serving = (fl & FLAG_SERVING) > 0
            waiting_higher = occ & ~serving & (pr[np.maximum(cls - 1, 0)] >= pr[k])
            pos = serving.sum(axis=1) + waiting_higher.sum(axis=1)
        elif q.order == "random":
            serving = (fl & FLAG_SERVING) > 0
            before = occ & ~serving & (cls - 1 <= k)
            pos = serving.sum(axis=1) + before.sum(axis=1)
        elif q.order == "last" and q.holds:
            # waiting tokens latest first: an arrival goes ahead of every waiting one
            pos = ((fl & FLAG_SERVING) > 0).sum(axis=1)
        else:
            pos = n
        if (n >= q.L).any():
            from qpn.errors import SolverError
            raise SolverError(f"queue {q.name} holds more than {q.L} tokens in order, the CTMC's "
                              "bound for an ordered queue (its cut-off): raise --cutoff, or simulate",
                              construct="state space", methods=("des",))
        return self._shift_insert(q, R, pos, k + 1)

    @staticmethod
    def _shift_insert(q, R, pos, code):
        L = q.L
        j = np.arange(L)[None, :]
        src = np.where(j > pos[:, None], j - 1, j)
        for cols in (q.cls_cols, q.ph_cols, q.flag_cols):
            block = np.take_along_axis(R[:, cols], src, axis=1)
            R[:, cols] = block
        at = (j == pos[:, None])
        R[:, q.cls_cols] = np.where(at, code, R[:, q.cls_cols])
        R[:, q.ph_cols] = np.where(at, 0, R[:, q.ph_cols])
        R[:, q.flag_cols] = np.where(at, 0, R[:, q.flag_cols])
        return R

    @staticmethod
    def _shift_remove(q, R, pos):
        L = q.L
        j = np.arange(L)[None, :]
        src = np.where(j >= pos[:, None], np.minimum(j + 1, L - 1), j)
        last = j == L - 1
        for cols in (q.cls_cols, q.ph_cols, q.flag_cols):
            block = np.take_along_axis(R[:, cols], src, axis=1)
            block[:, -1] = 0
            R[:, cols] = np.where(last & (pos[:, None] == L - 1), 0, block)
        return R

    def served(self, q: QueueSpec, R: np.ndarray):
        """Mask of positions in service and the share of a server each gets."""
        cls, fl = R[:, q.cls_cols], R[:, q.flag_cols]
        occ = cls > 0
        active = occ & ((fl & FLAG_DONE) == 0)
        s = q.servers
        if q.serves != "first":
            served = active
        elif q.holds:
            served = (fl & FLAG_SERVING) > 0
        elif q.order == "last":
            rank_from_end = np.cumsum(active[:, ::-1], axis=1)[:, ::-1]
            served = active & (rank_from_end <= s)
        else:  # in arrival or (preemptive) priority order: first s active
            served = active & (np.cumsum(active, axis=1) <= s)
        share = np.ones(len(R))
        if q.serves == "shared":
            share = q.shared_factor(active.sum(axis=1))
        return served, share

    def _settle(self, q: QueueSpec, qi: int, R, w, par) -> Branch:
        """Start service where servers are free; draw initial phases; canonical order."""
        tab = self.qtab[qi]
        s = q.servers
        for _ in range(4 * q.L + 4):
            cls, ph, fl = R[:, q.cls_cols], R[:, q.ph_cols], R[:, q.flag_cols]
            occ = cls > 0
            if q.holds and q.serves == "first":
                serving = (fl & FLAG_SERVING) > 0
                ns = serving.sum(axis=1)
                waiting = occ & ~serving & ((fl & FLAG_DONE) == 0)
                need = (ns < s) & waiting.any(axis=1)
                if need.any():
                    R, w, par = self._start_waiting(q, R, w, par, need, waiting, ns, q.order == "random")
                    continue
            served, _ = self.served(q, R)
            unstarted = served & (ph == 0)
            rows = np.flatnonzero(unstarted.any(axis=1))
            if len(rows) == 0:
                break
            j = np.argmax(unstarted[rows], axis=1)
            k = cls[rows, j] - 1
            A = tab["A"]
            keep = np.ones(len(R), dtype=bool)
            keep[rows] = False
            parts = [(R[keep], w[keep], par[keep])]
            for i in range(tab["P"]):
                a = A[k, i]
                sel = a > 0
                if not sel.any():
                    continue
                Ri = R[rows[sel]].copy()
                Ri[np.arange(sel.sum()), q.ph_cols[j[sel]]] = i + 1
                parts.append((Ri, w[rows[sel]] * a[sel], par[rows[sel]]))
            R = np.concatenate([p[0] for p in parts])
            w = np.concatenate([p[1] for p in parts])
            par = np.concatenate([p[2] for p in parts])
        return self._canonical(q, R), w, par

    def _start_waiting(self, q, R, w, par, need, waiting, ns, random_pick):
        keep = ~need
        parts = [(R[keep], w[keep], par[keep])]
        rows = np.flatnonzero(need)
        if not random_pick:
            # non-preemptive priority: the first waiting entry (waiting is kept sorted)
            Rn = R[rows].copy()
            pos = ns[rows]
            Rn[np.arange(len(rows)), q.flag_cols[pos]] |= FLAG_SERVING
            parts.append((Rn, w[rows], par[rows]))
        else:
            # waiting entries of one class are interchangeable (the canonical order sorts
            # them): pick a class with probability (its waiting count) / (all waiting), and
            # its first entry -- one branch per class, not per position (O(L^2) per level)
            Wr = waiting[rows]
            W = Wr.sum(axis=1)
            cls_r = R[rows][:, q.cls_cols]
            for code in np.unique(cls_r[Wr]):
                mine = Wr & (cls_r == code)
                cnt = mine.sum(axis=1)
                sel = cnt > 0
                rr = rows[sel]
                jpos = np.argmax(mine[sel], axis=1)
                Rn = R[rr].copy()
                # move the chosen entry to the end of the serving group
                Rn = self._shift_remove(q, Rn, jpos)
                Rn = self._shift_insert(q, Rn, ns[rr], 0)
                Rn[np.arange(len(rr)), q.cls_cols[ns[rr]]] = code
                Rn[np.arange(len(rr)), q.flag_cols[ns[rr]]] = FLAG_SERVING
                parts.append((Rn, w[rr] * cnt[sel] / W[sel], par[rr]))
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                np.concatenate([p[2] for p in parts]))

    def _canonical(self, q: QueueSpec, R: np.ndarray) -> np.ndarray:
        """Sort interchangeable entries so equal states get equal rows."""
        if any(q.fifo) or q.own_phases or (q.order == "priority" and not q.holds):
            return R
        cls, ph, fl = R[:, q.cls_cols], R[:, q.ph_cols], R[:, q.flag_cols]
        L = q.L
        big = (q.max_phases + 1) * (len(q.classes) + 2)
        pos = np.arange(L)[None, :]
        code = cls * (q.max_phases + 1) + ph
        if not q.holds:                      # first come: the served ones sorted
            served, _ = self.served(q, R)
            key = np.where(served, code, big + pos)
        else:
            serving = (fl & FLAG_SERVING) > 0
            occ = cls > 0
            if q.order == "random":
                key = np.where(serving, code, np.where(occ, big + cls, 2 * big + pos))
            else:  # non-preemptive prio: waiting stays in priority/arrival order
                key = np.where(serving, code, big + pos)
        order = np.argsort(key, axis=1, kind="stable")
        for cols in (q.cls_cols, q.ph_cols, q.flag_cols):
            R[:, cols] = np.take_along_axis(R[:, cols], order, axis=1)
        return R

    # --------------------------------------------------------- timed phases
    def timed_update(self, R, w, par) -> Branch:
        """Enabling memory of non-exponential timed modes: start or reset phases."""
        if not self.has_timed_phases:
            return R, w, par
        for t in self.spec.timed:
            if t.col < 0:
                continue
            en = self.enabled(R, t.mode)
            cur = R[:, t.col]
            R[~en, t.col] = 0
            start = en & (cur == 0)
            if not start.any():
                continue
            keep = ~start
            parts = [(R[keep], w[keep], par[keep])]
            for i in np.flatnonzero(t.ph.alpha > 0):
                Ri = R[start].copy()
                Ri[:, t.col] = i + 1
                parts.append((Ri, w[start] * t.ph.alpha[i], par[start]))
            R = np.concatenate([p[0] for p in parts])
            w = np.concatenate([p[1] for p in parts])
            par = np.concatenate([p[2] for p in parts])
        return R, w, par

    # --------------------------------------------------------------- events
    def timed_events(self, S: np.ndarray) -> list[tuple[Branch, int]]:
        """Successors by timed transitions: [((rows, rate, parent), mode)]."""
        out = []
        idx = np.arange(len(S))
        for t in self.spec.timed:
            en = self.enabled(S, t.mode, track_cutoff=True)
            if t.ph is None:
                if not en.any():
                    continue
                rows = idx[en]
                deg = self.degree(S[rows], t.mode)
                rate = t.rate * np.minimum(deg, t.servers)
                br = self.fire(S[rows], rate, rows, np.full(len(rows), t.mode))
                out.append((br, t.mode))
                continue
            phase = S[:, t.col] - 1
            act = en & (phase >= 0)
            if not act.any():
                continue
            T, X = t.ph.T, t.ph.exit
            for i in range(t.ph.nphases):
                rows = idx[act & (phase == i)]
                if len(rows) == 0:
                    continue
                for j in range(t.ph.nphases):
                    if j != i and T[i, j] > 0:
                        R = S[rows].copy()
                        R[:, t.col] = j + 1
                        out.append(((R, np.full(len(rows), T[i, j]), rows), -1))
                if X[i] > 0:
                    R = S[rows].copy()
                    R[:, t.col] = 0
                    br = self.fire(R, np.full(len(rows), X[i]), rows, np.full(len(rows), t.mode))
                    out.append((br, t.mode))
        return out

    def queue_events(self, S: np.ndarray) -> list[Branch]:
        """Service events of every queue in states S: phase changes and completions
        (branches with their rates; a completion moves the token to its depository)."""
        out: list[Branch] = []
        idx = np.arange(len(S))
        for qi, q in enumerate(self.spec.queues):
            tab = self.qtab[qi]
            if q.layout == "counts":
                out += self._counts_events(q, tab, S, idx)
            else:
                out += self._seq_events(q, qi, tab, S, idx)
        return out

    def _counts_events(self, q, tab, S, idx) -> list[Branch]:
        out = []
        s = q.servers
        ntot = S[:, q.classes].sum(axis=1)
        for k, slot in enumerate(q.classes):
            n = S[:, slot]
            pcs = q.phase_cols[k]
            counts = [n - (S[:, pcs].sum(axis=1) if pcs else 0)] + [S[:, c] for c in pcs]
            if q.serves == "all":
                factor = np.ones(len(S))
            elif q.serves == "shared":
                factor = q.shared_factor(ntot)
            else:  # a single exponential class: min(n, s) busy servers
                factor = np.where(n > 0, np.minimum(n, s) / np.maximum(n, 1), 0.0)
            for i, cnt in enumerate(counts):
                live = cnt > 0
                if not live.any():
                    continue
                rows = idx[live]
                base = cnt[live] * factor[live]
                for j in range(tab["P"]):
                    rate_ij = tab["T"][k, i, j]
                    if j != i and rate_ij > 0:
                        R = S[rows].copy()
                        if i > 0:
                            R[:, pcs[i - 1]] -= 1
                        if j > 0:
                            R[:, pcs[j - 1]] += 1
                        out.append((R, base * rate_ij, rows))
                x = tab["X"][k, i]
                if x > 0:
                    R = S[rows].copy()
                    if i > 0:
                        R[:, pcs[i - 1]] -= 1
                    R[:, slot] -= 1
                    R[:, q.dslots[k]] += 1
                    out.append(self.timed_update(R, base * x, rows))
        return out

    def _seq_events(self, q, qi, tab, S, idx) -> list[Branch]:
        out = []
        served, share = self.served(q, S)
        cls, ph = S[:, q.cls_cols], S[:, q.ph_cols]
        for j in range(q.L):
            live = served[:, j]
            if not live.any():
                continue
            rows = idx[live]
            k = cls[rows, j] - 1
            i = ph[rows, j] - 1
            sh = share[rows]
            for j2 in range(tab["P"]):
                r = tab["T"][k, i, j2] * sh
                m = r > 0
                if m.any():
                    R = S[rows[m]].copy()
                    R[:, q.ph_cols[j]] = j2 + 1
                    out.append((R, r[m], rows[m]))
            x = tab["X"][k, i] * sh
            m = x > 0
            if not m.any():
                continue
            rr, kk = rows[m], k[m]
            R = S[rr].copy()
            fifo = np.asarray(q.fifo)[kk]
            pos = np.full(len(rr), j)
            R_nf = R[~fifo]
            if len(R_nf):
                R_nf = self._shift_remove(q, R_nf, pos[~fifo])
                R_nf[np.arange(len(R_nf)), np.asarray(q.classes)[kk[~fifo]]] -= 1
                R_nf[np.arange(len(R_nf)), np.asarray(q.dslots)[kk[~fifo]]] += 1
            R_f = R[fifo]
            if len(R_f):
                R_f[:, q.flag_cols[j]] = FLAG_DONE
                R_f[:, q.ph_cols[j]] = 0
                R_f = self._release_fifo(q, R_f)
            R = np.concatenate([R_nf, R_f])
            rate = np.concatenate([x[m][~fifo], x[m][fifo]])
            par = np.concatenate([rr[~fifo], rr[fifo]])
            R, rate, par = self._settle(q, qi, R, rate, par)
            out.append(self.timed_update(R, rate, par))
        return out

    def _release_fifo(self, q: QueueSpec, R: np.ndarray) -> np.ndarray:
        """Done tokens leave, in arrival order per place, once no earlier token is pending."""
        place_of = np.asarray([q.places[k] for k in range(len(q.classes))])
        for _ in range(q.L):
            cls, fl = R[:, q.cls_cols], R[:, q.flag_cols]
            occ = cls > 0
            pl = np.where(occ, place_of[np.maximum(cls - 1, 0)], -1)
            done = occ & ((fl & FLAG_DONE) > 0)
            pending = occ & ~done
            # a done entry is releasable if no pending entry of its place comes before it
            rel = np.zeros_like(done)
            for p in np.unique(place_of):
                earlier_pending = np.cumsum(pending & (pl == p), axis=1) - (pending & (pl == p))
                rel |= done & (pl == p) & (earlier_pending == 0)
            rows = np.flatnonzero(rel.any(axis=1))
            if len(rows) == 0:
                break
            j = np.argmax(rel[rows], axis=1)
            k = cls[rows, j] - 1
            Rr = R[rows]
            Rr = self._shift_remove(q, Rr, j)
            Rr[np.arange(len(rows)), np.asarray(q.classes)[k]] -= 1
            Rr[np.arange(len(rows)), np.asarray(q.dslots)[k]] += 1
            R[rows] = Rr
        return R

    def initial_rows(self) -> Branch:
        """The initial marking with queued tokens placed in their sequences."""
        c = self.spec.compiled
        R = np.zeros((1, self.spec.ncols), dtype=np.int64)
        R[0, :self.spec.nslots] = c.m0
        w = np.ones(1)
        par = np.zeros(1, dtype=np.int64)
        for qi, q in enumerate(self.spec.queues):
            if q.layout == "seq":
                for k, slot in enumerate(q.classes):
                    for _ in range(int(c.m0[slot])):
                        R = self._seq_insert(q, qi, R, k)
                R, w, par = self._settle(q, qi, R, w, par)
            elif q.max_phases > 1:
                for k, slot in enumerate(q.classes):
                    got = np.zeros((len(R), len(q.classes)), dtype=np.int64)
                    got[:, k] = c.m0[slot]
                    R, w, par, got = self._enter_phases(q, qi, k, R, w, par, got)
        return self.timed_update(R, w, par)
