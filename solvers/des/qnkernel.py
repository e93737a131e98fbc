"""Fast kernel for nets that are queueing networks (see :mod:`.qnplan`).

(Gathers of rows use ``take(lanes, axis=1)``: several times faster than
``a[:, lanes]``, which goes through general advanced indexing.)

Each step advances every lane by one event.  Counts and clocks are updated
with whole-array masked operations (arrays are lane-last, so every row is
contiguous); only the per-token bookkeeping (FCFS order, entry times) works
on the subset of lanes concerned.  The next event is the earliest of the
sources' and queues' clocks; a completing token's class is drawn in
proportion to the classes' completion rates (IS, PS) or read from the arrival
order (FCFS); its route is drawn from its routing table; and the clock of
every queue whose content changed is redrawn (exponential service is
memoryless).  Each lane reads a fixed set of random numbers per step from its
own Generator (see :class:`.stream.LockstepStream`).
"""
from __future__ import annotations

import numpy as np

from .qnplan import QNPlan
from .compact import LaneWindow
from .stats import NBINS, Stats, bin_of
from .stream import LockstepStream

INF = np.inf
_BELOW_ONE = np.nextafter(1.0, 0.0)


def _rowsum(a: np.ndarray) -> np.ndarray:
    """Sum over the first axis; two rows added directly (same result, much faster)."""
    return a[0] + a[1] if a.shape[0] == 2 else a.sum(axis=0)


class _Q:
    def __init__(self, plan_q, L: int, track: bool, cap: int = 16):
        self.p = plan_q
        self.K = len(plan_q.classes)
        self.slots = np.array([c.slot for c in plan_q.classes])
        # the queue's rows of the counts: a slice (a view, no copy) when they are adjacent
        contiguous = bool(np.all(np.diff(self.slots) == 1))
        self.rows = slice(int(self.slots[0]), int(self.slots[-1]) + 1) if contiguous else self.slots
        self.mu = np.stack([c.mu for c in plan_q.classes])                 # (K, L)
        self.s = plan_q.servers.astype(float)
        # rates and server counts the same in every lane (no sweep over them): broadcast
        # one column instead of gathering the lanes' copies
        same = L > 0 and bool((self.mu == self.mu[:, :1]).all())
        self.mu_col = self.mu[:, :1].copy() if same else None
        self.s_one = float(self.s[0]) if L > 0 and bool((self.s == self.s[0]).all()) else None
        self.cum_row = [c.route_cum[:1].copy() if L > 0 and bool((c.route_cum == c.route_cum[:1]).all())
                        else None for c in plan_q.classes]
        self.disc = plan_q.disc
        self.fcfs = self.disc == "fcfs"
        self.smax = float(np.max(self.s))
        self.ordered = self.fcfs and (self.K > 1 or track)
        self.cap = cap
        if self.ordered:
            self.rc = np.zeros((cap, L), dtype=np.int64)
            self.rt = np.zeros((cap, L))
            self.head = np.zeros(L, dtype=np.int64)
        self.bag = np.zeros((self.K, cap, L)) if (track and not self.fcfs) else None
        self.serv = np.zeros((self.K, L)) if (self.fcfs and self.K > 1) else None
        self.busy = np.zeros((self.K, L))
        # random numbers this queue needs in a step
        self.need_class = (not self.fcfs and self.K > 1) or (self.fcfs and self.smax > 1 and self.ordered)
        self.need_route = any(len(c.route_modes) > 1 for c in plan_q.classes)
        self.need_token = self.bag is not None

    def mu_at(self, lanes: np.ndarray) -> np.ndarray:
        """Service rates (K, len(lanes)), or one broadcast column when all lanes agree."""
        return self.mu_col if self.mu_col is not None else self.mu.take(lanes, axis=1)

    def s_at(self, lanes: np.ndarray):
        """Servers per lane (one number when all lanes agree)."""
        return self.s_one if self.s_one is not None else self.s[lanes]

    def grow(self, L: int):
        """Double the token store of every lane (memory checked first)."""
        new = self.cap * 2
        from qpn import resources
        resources.require(f"the simulator's queue of {new:,} places x {L:,} lanes",
                          8.0 * new * L * (2 + (self.K if self.bag is not None else 0)),
                          hint="the queue grows without bound: is the net stable?")
        if self.ordered:
            idx = (self.head[None, :] + np.arange(self.cap)[:, None]) % self.cap
            rc = np.zeros((new, L), dtype=np.int64)
            rt = np.zeros((new, L))
            rc[:self.cap] = np.take_along_axis(self.rc, idx, axis=0)
            rt[:self.cap] = np.take_along_axis(self.rt, idx, axis=0)
            self.rc, self.rt, self.head = rc, rt, np.zeros(L, dtype=np.int64)
        if self.bag is not None:
            bag = np.zeros((self.K, new, L))
            bag[:, :self.cap] = self.bag
            self.bag = bag
        self.cap = new


class QNKernel:
    """Same interface as :class:`.engine.Engine` for the run loop and the analysis."""

    def __init__(self, net, plan: QNPlan, keys, seed, units: dict, unit_of_slot: np.ndarray, *,
                 histograms: bool = True, buckets: int = 64, width: int = 32):
        c = net.c
        self.net, self.c, self.plan, self.L = net, c, plan, net.L
        L = self.L
        self.units, self.unit = units, unit_of_slot
        self.notes: list[str] = []
        self.track = bool(histograms)
        self.t = np.zeros(L)
        self.steps = np.zeros(L, dtype=np.int64)
        self.alive = np.ones(L, dtype=bool)
        self.cnt = np.zeros((c.nslots, L), dtype=np.int64)
        self.qs = [_Q(q, L, self.track) for q in plan.queues]
        self.S = len(plan.sources)
        self.ev = np.full((self.S + len(self.qs), L), INF)
        # per step and lane: the completing queue's next clock, the receiving queue's next
        # clock, a source's next arrival (exponential); one uniform for every choice of
        # the completing token (class, entry, route), rescaled from choice to choice
        self.X_DONE, self.X_INTO, self.X_SRC = 0, 1, 2
        self.stream = LockstepStream(seed, keys, 3 if self.S else 2,
                                     1 if any(q.need_class or q.need_route or q.need_token for q in self.qs)
                                     else 0)
        self.stats = Stats(L, c.nslots, len(c.modes), [q.K for q in self.qs], len(units),
                           buckets=buckets, width=width, histograms=histograms, point=net.point, npoints=net.npoints)
        self.stats.eager = True
        # busy servers and their time integral of every queue in one array each (views per
        # queue), so that the per-step accumulation is one operation
        off = np.cumsum([0] + [q.K for q in self.qs])
        self._busy = np.zeros((int(off[-1]), L))
        self._busy_area = np.zeros((int(off[-1]), L))
        self._off = off
        self._views()
        self.window = LaneWindow(self._lane_fields())

    def _views(self) -> None:
        """Per-queue views of the one-array busy counts, and the statistics' accumulators."""
        off, st = self._off, self.stats
        for i, q in enumerate(self.qs):
            q.busy = self._busy[off[i]:off[i + 1]]
        self.busy_area = [self._busy_area[off[i]:off[i + 1]] for i in range(len(self.qs))]
        self.area, self.fires, self.res = st.area, st.fires, st.res
        self.L = len(self.t)

    def _lane_fields(self) -> list:
        f = [(self, a, -1) for a in ("t", "steps", "alive", "cnt", "ev", "_busy", "_busy_area")]
        for q in self.qs:
            f += [(q, a, -1) for a in ("mu", "s", "rc", "rt", "head", "bag", "serv")
                  if getattr(q, a, None) is not None]
            f += [(pc, "route_cum", 0) for pc in q.p.classes]
        f += [(src, "mean", -1) for src in self.plan.sources]
        f += self.stream.lane_fields()
        return f + self.stats.lane_fields()

    # ------------------------------------------------ finished lanes dropped
    MIN_NARROW = 512        # below this many working lanes, per-step overhead dominates anyway

    def drop_finished(self) -> None:
        """Step only the live lanes from now on, when at most half the working lanes
        are live (call right after a flush, so no finished lane has an open bucket)."""
        live = np.flatnonzero(self.alive)
        if self.L < self.MIN_NARROW or 2 * len(live) > self.L:
            return
        self.window.narrow(live)
        self.stats.lmap = self.window.lmap
        self._views()

    def restore_lanes(self) -> None:
        """Back to all lanes (the end of a run)."""
        self.window.restore()
        self.stats.lmap = None
        self._views()

    def lanes_now(self, name: str) -> np.ndarray:
        """Full-size copy of the per-lane array ``name`` (t, steps, alive)."""
        return self.window.full_of(self, name)

    @property
    def m(self) -> np.ndarray:
        """The marking, lanes x slots."""
        return self.cnt.T

    # -------------------------------------------------------- queue state
    def _refresh(self, q: _Q) -> None:
        """Busy servers per class from the queue's content (cached until it changes)."""
        if q.K == 1:
            n = self.cnt[q.slots[0]].astype(float)
            q.busy[0] = n if q.disc == "is" else np.minimum(n, q.s)
            return
        if q.fcfs:
            q.busy[:] = q.serv
            return
        n = self.cnt[q.rows].astype(float)
        if q.disc == "is":
            q.busy[:] = n
        else:
            tot = n.sum(axis=0)
            q.busy[:] = n * np.where(tot > q.s, q.s / np.maximum(tot, 1.0), 1.0)

    def _refresh_lanes(self, q: _Q, lc: np.ndarray) -> np.ndarray:
        """:meth:`_refresh` and :meth:`_rate` for the lanes ``lc`` only; their total rates."""
        if q.K == 1:
            n = self.cnt[q.slots[0], lc].astype(float)
            b = n if q.disc == "is" else np.minimum(n, q.s_at(lc))
            q.busy[0, lc] = b
            return b * q.mu_at(lc)[0]
        if q.fcfs:
            b = q.serv.take(lc, axis=1)
        else:
            n = self.cnt[q.rows].take(lc, axis=1).astype(float)
            if q.disc == "is":
                b = n
            else:
                tot = _rowsum(n)
                s = q.s_at(lc)
                b = n * np.where(tot > s, s / np.maximum(tot, 1.0), 1.0)
        for k in range(q.K):                   # row by row: 1-d scatters are the fast kind
            q.busy[k, lc] = b[k]
        return _rowsum(b * q.mu_at(lc))

    def _rate(self, q: _Q) -> np.ndarray:
        return q.busy[0] * q.mu[0] if q.K == 1 else (q.busy * q.mu).sum(axis=0)

    def _push(self, q: _Q, lanes: np.ndarray, k: int, t: np.ndarray) -> None:
        """A token of class k entered q in ``lanes`` (counts already updated)."""
        if not len(lanes):
            return
        L = self.L
        if q.ordered:
            size = _rowsum(self.cnt[q.rows].take(lanes, axis=1)) - 1
            if (size >= q.cap).any():
                q.grow(L)
            flat = ((q.head[lanes] + size) % q.cap) * L + lanes
            q.rc.ravel()[flat] = k
            q.rt.ravel()[flat] = t[lanes]
            if q.serv is not None:
                q.serv[k, lanes] += size < q.s_at(lanes)          # straight into service
        elif q.bag is not None:
            n = self.cnt[q.slots[k], lanes] - 1
            if (n >= q.cap).any():
                q.grow(L)
            q.bag.ravel()[(k * q.cap + n) * L + lanes] = t[lanes]

    @staticmethod
    def _choose(w: np.ndarray, u: np.ndarray):
        """Index drawn in proportion to weights w (rows), and u rescaled inside the
        chosen interval (again uniform, independent of the choice)."""
        if w.shape[0] == 2:               # two classes: the same arithmetic, fewer operations
            w0, w1 = w[0], w[1]
            target = u * (w0 + w1)
            past = target >= w0
            lo = np.where(past, w0, 0.0)
            width = np.where(past, w1, w0)
            with np.errstate(invalid="ignore", divide="ignore"):
                rest = np.where(width > 0, (target - lo) / np.where(width > 0, width, 1.0), u)
            return past.astype(np.int64), np.minimum(np.maximum(rest, 0.0), _BELOW_ONE)
        total = w.sum(axis=0)
        target = u * total
        acc = np.zeros_like(total)
        idx = np.zeros(total.shape, dtype=np.int64)
        lo = np.zeros_like(total)
        for r in range(w.shape[0] - 1):
            acc = acc + w[r]
            past = target >= acc
            idx += past
            lo = np.where(past, acc, lo)
        width = np.take_along_axis(w, idx[None, :], axis=0)[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            rest = np.where(width > 0, (target - lo) / np.where(width > 0, width, 1.0), u)
        return idx, np.clip(rest, 0.0, np.nextafter(1.0, 0.0))

    def _pick(self, qi: int, q: _Q, mask: np.ndarray, u: np.ndarray):
        """Class (full length) and entry times (for the masked lanes) of the completing token."""
        L = self.L
        lanes = np.flatnonzero(mask)
        if q.ordered:
            head = q.head[lanes]
            cls = np.zeros(L, dtype=np.int64)
            if q.smax > 1:
                tot = _rowsum(self.cnt[q.rows].take(lanes, axis=1))
                s = q.s_at(lanes)
                served = np.minimum(tot, s).astype(np.int64)
                w = max(int(served.max()), 1)
                pos = (head[None, :] + np.arange(w)[:, None]) % q.cap
                ks = q.rc.ravel().take(pos * L + lanes[None, :])
                r = np.where(np.arange(w)[:, None] < served[None, :],
                             q.mu_col[ks, 0] if q.mu_col is not None else q.mu[ks, lanes[None, :]], 0.0)
                j, rest = self._choose(r, u[lanes])
                j = np.minimum(j, np.maximum(served - 1, 0))
                u[lanes] = rest
            else:
                j = np.zeros(len(lanes), dtype=np.int64)
            at = (head + j) % q.cap
            flat = at * L + lanes
            k = q.rc.ravel().take(flat)
            t0 = q.rt.ravel().take(flat)
            for step in range(int(j.max()) if len(j) else 0, 0, -1):   # tokens ahead of j move back
                sel = j >= step
                ls = lanes[sel]
                dst, src = (head[sel] + step) % q.cap, (head[sel] + step - 1) % q.cap
                q.rc[dst, ls] = q.rc[src, ls]
                q.rt[dst, ls] = q.rt[src, ls]
            newhead = (head + 1) % q.cap
            q.head[lanes] = newhead
            if q.serv is not None:
                q.serv[k, lanes] -= 1
                tot = _rowsum(self.cnt[q.rows].take(lanes, axis=1)) - 1
                s = q.s[lanes]
                nxt = tot >= s                                    # a waiting token starts
                if nxt.any():
                    l2 = lanes[nxt]
                    kn = q.rc[(newhead[nxt] + s[nxt].astype(np.int64) - 1) % q.cap, l2]
                    q.serv[kn, l2] += 1
            cls[lanes] = k
            return cls, t0
        if q.K == 1:
            cls = None
        else:
            w = q.busy.take(lanes, axis=1) * q.mu_at(lanes)
            c_l, rest = self._choose(w, u[lanes])
            cls = np.zeros(L, dtype=np.int64)
            cls[lanes] = np.minimum(c_l, q.K - 1)
            u[lanes] = rest
        if q.bag is None:
            return cls, None
        kk = cls[lanes] if cls is not None else np.zeros(len(lanes), dtype=np.int64)
        n = self.cnt[q.slots[kk], lanes]
        pos = u[lanes] * n
        j = np.minimum(pos.astype(np.int64), np.maximum(n - 1, 0))
        u[lanes] = np.clip(pos - j, 0.0, np.nextafter(1.0, 0.0))
        flat = (kk * q.cap + j) * L + lanes
        last = (kk * q.cap + np.maximum(n - 1, 0)) * L + lanes
        bag = q.bag.ravel()
        t0 = bag[flat]
        bag[flat] = bag[last]
        return cls, t0

    # ----------------------------------------------------------------- run
    def start(self) -> None:
        """Put the initial tokens in their queues and draw the first clocks."""
        m0 = self.net.m0
        for q in self.qs:
            for k, s in enumerate(q.slots):
                for rep in range(int(m0[:, s].max()) if len(m0) else 0):
                    lanes = np.flatnonzero(m0[:, s] > rep)
                    self.cnt[s, lanes] += 1
                    self._push(q, lanes, k, self.t)
        for e, src in enumerate(self.plan.sources):
            x, _ = self.stream.next()       # one step's numbers per initial clock
            self.ev[e] = x[0] * src.mean
        for qi, q in enumerate(self.qs):
            x, _ = self.stream.next()
            self._refresh(q)
            R = self._rate(q)
            self.ev[self.S + qi] = np.where(R > 0, x[0] / np.where(R > 0, R, 1), INF)

    def step(self, T: np.ndarray, N: np.ndarray) -> int:
        """One event in every live lane (stopping lanes past time T or N steps); the
        number of lanes still alive."""
        if not self.alive.any():
            return 0
        x, u0 = self.stream.next()
        u = u0[0].copy()
        ev = self.ev
        if self.window.lmap is not None:
            T, N = T[self.window.lmap], N[self.window.lmap]
        tn = ev.min(axis=0)
        k = np.full(self.L, len(ev) - 1, dtype=np.int64)   # the first row holding the minimum
        for r in range(len(ev) - 2, -1, -1):              # (argmin's choice, 3x faster here)
            np.copyto(k, r, where=ev[r] == tn)
        over = self.alive & ((tn > T) | (self.steps >= N))
        if over.any():
            # lanes past their end stop there, the others move to their next event: one
            # accumulation for both
            endt = np.where(np.isfinite(T), np.maximum(T, self.t), self.t)
            self.alive &= ~over
            act = self.alive
            tnew = np.where(over, endt, np.where(act, tn, self.t))
        else:
            act = self.alive
            tnew = np.where(act, tn, self.t)
        self._accumulate(tnew - self.t)
        self.t = t = tnew
        if not act.any():
            return 0
        self.steps += act
        done: list = [None] * len(self.qs)   # lanes where the queue completed a token
        into: list = [None] * len(self.qs)   # lanes where the queue received one
        for e, src in enumerate(self.plan.sources):
            mask = act & (k == e)
            tq, tk = src.target
            q = self.qs[tq]
            self.cnt[q.slots[tk]] += mask
            self._push(q, np.flatnonzero(mask), tk, t)
            into[tq] = mask if into[tq] is None else into[tq] | mask
            self.fires[src.mode] += mask
            ev[e] = np.where(mask, t + x[self.X_SRC] * src.mean, ev[e])
        L = self.L
        for qi, q in enumerate(self.qs):
            mask = act & (k == self.S + qi)
            lanes = np.flatnonzero(mask)
            if not len(lanes):
                continue
            cls, t0 = self._pick(qi, q, mask, u)
            done[qi] = mask
            cls_l = cls[lanes] if cls is not None else None
            # the completing tokens leave and are routed: work on the lanes concerned only
            for c, pc in enumerate(q.p.classes):
                if cls_l is None:
                    lc, t0c = lanes, t0
                else:
                    sel = cls_l == c
                    lc = lanes[sel]
                    t0c = t0[sel] if t0 is not None else None
                if not len(lc):
                    continue
                self.cnt[pc.slot, lc] -= 1
                if t0c is not None:
                    self._residence(lc, pc.unit, t[lc] - t0c)
                n = len(pc.route_modes)
                if n > 1:
                    cum = q.cum_row[c] if q.cum_row[c] is not None else pc.route_cum[lc]
                    choice = (u[lc][:, None] >= cum).sum(axis=1)
                else:
                    choice = None
                for i, mode in enumerate(pc.route_modes):
                    li = lc[choice == i] if choice is not None else lc
                    if not len(li):
                        continue
                    self.fires[mode, li] += 1
                    tgt = pc.targets[i]
                    if tgt is not None:
                        q2 = self.qs[tgt[0]]
                        self.cnt[q2.slots[tgt[1]], li] += 1
                        self._push(q2, li, tgt[1], t)
                        if into[tgt[0]] is None:
                            into[tgt[0]] = np.zeros(L, dtype=bool)
                        into[tgt[0]][li] = True
        for qi, q in enumerate(self.qs):
            d, i = done[qi], into[qi]
            if d is None and i is None:
                continue
            ch = d if i is None else (i if d is None else d | i)
            lc = np.flatnonzero(ch)            # only these lanes' content changed
            R = self._refresh_lanes(q, lc)
            # the completing queue uses X_DONE (also when the token came back to it)
            xq = x[self.X_INTO][lc] if d is None else np.where(d[lc], x[self.X_DONE][lc], x[self.X_INTO][lc])
            ev[self.S + qi, lc] = np.where(R > 0, t[lc] + xq / np.where(R > 0, R, 1.0), INF)
        return int(np.count_nonzero(act))

    def _accumulate(self, dt: np.ndarray) -> None:
        # slots outside the queues hold no tokens here, so all rows at once is the same sum
        self.area += self.cnt * dt
        self._busy_area += self._busy * dt

    def _residence(self, lanes, unit, x):
        r = self.res[unit]
        r[0, lanes] += 1
        r[1, lanes] += x
        r[2, lanes] += x * x
        self.stats.record_hist(lanes, unit, x)

    def busy(self) -> list[np.ndarray]:
        """Busy-server time per queue class and lane, so far."""
        return [b.copy() for b in self.busy_area]

    def flush(self, regular: bool = True) -> None:
        """Close the lanes' partial statistics buckets (at the end of the run)."""
        self.stats.flush(self.t, None, self.busy(), self.alive, regular)
