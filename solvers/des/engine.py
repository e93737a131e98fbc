"""The vectorized event loop: every step advances every live lane by one event.

    while lanes are alive:
        next event per lane = min over timed-transition clocks and queue completions
        advance each lane's clock; process each event kind for the lanes that chose it
        fire enabled immediate transitions until none is enabled (vanishing markings)
        redraw the clocks of timed transitions whose enabling may have changed

Tokens carry the time they entered their place, so residence times are
measured per token; ordinary places and depositories hand out tokens in FIFO
order.
"""
from __future__ import annotations

import numpy as np

from qpn.errors import SolverError

from .lanes import LaneNet
from .ratequeue import RateQueue, usable
from .rings import Rings
from .rng import LaneRandom
from .stats import Stats
from .timed import make_clock
from .workqueue import WorkQueue

INF = np.inf
MAX_IMMEDIATE_ROUNDS = 100_000


def residence_units(c) -> tuple[dict, np.ndarray]:
    """One residence-time unit per place-color (a queue and its depository share it)."""
    unit = np.zeros(c.nslots, dtype=np.int64)
    units: dict = {}
    for s in range(c.nslots):
        key = (int(c.slot_place[s]), repr(c.slot_color[s]))
        unit[s] = units.setdefault(key, len(units))
    return units, unit


def rounds(lanes: np.ndarray):
    """Split indices into groups in which each lane appears once (for repeated lanes)."""
    if len(lanes) == len(np.unique(lanes)):
        yield np.arange(len(lanes))
        return
    order = np.argsort(lanes, kind="stable")
    sl = lanes[order]
    first = np.r_[True, sl[1:] != sl[:-1]]
    rank = np.arange(len(sl)) - np.maximum.accumulate(np.where(first, np.arange(len(sl)), 0))
    for r in range(int(rank.max()) + 1):
        yield order[rank == r]


class Engine:
    def __init__(self, net: LaneNet, keys, seed, *, histograms: bool = True, buckets: int = 64,
                 width: int = 32):
        c = net.c
        self.net, self.c, self.L = net, c, net.L
        L = self.L
        self.rng = LaneRandom(seed, keys)
        self.t = np.zeros(L)
        self.steps = np.zeros(L, dtype=np.int64)
        self.m = net.m0.copy()
        self.alive = np.ones(L, dtype=bool)
        pre, post = c.pre.tocsr(), c.post.tocsr()
        M = len(c.modes)
        self.inputs = [list(zip(pre[j].indices.tolist(), pre[j].data.tolist())) for j in range(M)]
        self.outputs = [list(zip(post[j].indices.tolist(), post[j].data.tolist())) for j in range(M)]
        self.queue_of_slot = {s: (qi, k) for qi, q in enumerate(c.queues) for k, s in enumerate(q.classes)}
        self.units, self.unit = residence_units(c)
        units = self.units
        self.queues = []
        self.notes: list[str] = []
        for qi, q in enumerate(c.queues):
            fifo = np.array([c.places[p].departure == "fifo" for p in q.places])
            svc = net.service[qi]
            if usable(q.discipline, svc, bool(fifo.any())):
                mu = np.stack([1.0 / s.mean for s in svc], axis=1)
                self.queues.append(RateQueue(q.discipline, len(q.classes), L, mu, net.qservers[qi]))
            else:
                self.queues.append(WorkQueue(
                    q.discipline, len(q.classes), L, svc, net.qservers[qi], np.asarray(q.priority, float),
                    q.preemptive, fifo, np.asarray(q.places), net.quantum[qi], net.switch[qi]))
                why = q.discipline if q.discipline not in ("is", "ps", "fcfs") else \
                    ("FIFO departure" if fifo.any() else "non-exponential service")
                self.notes.append(f"queue {q.name}: general per-token path ({why})")
        self.timed = [j for j, md in enumerate(c.modes) if md.kind == "timed"]
        self.clocks = {j: make_clock(L, net.delay[j], net.tservers[:, j]) for j in self.timed}
        for j in self.timed:
            if type(self.clocks[j]).__name__ == "MultiClock":
                self.notes.append(f"transition {c.modes[j].transition}: one clock per concurrent firing "
                                  "(non-exponential delay with several servers)")
        self.col_of_timed = {j: i for i, j in enumerate(self.timed)}
        Q = len(self.queues)
        self.ev = np.full((L, len(self.timed) + Q), INF)
        fused = {int(m) for r in net.routes.values() for m in r.modes}
        self.generic_imm = np.array([j for j, md in enumerate(c.modes)
                                     if md.kind == "immediate" and j not in fused], dtype=np.int64)
        self._dependencies()
        token_slots = [s for s in range(c.nslots) if s not in self.queue_of_slot]
        self.rings = Rings(L, token_slots)
        self.stats = Stats(L, c.nslots, M, [len(q.classes) for q in c.queues], len(units),
                           buckets=buckets, width=width, histograms=histograms, point=net.point, npoints=net.npoints)

    # ---------------------------------------------------------- structure
    def _dependencies(self):
        """Which timed / immediate modes may change when a slot changes."""
        c = self.c
        inh = c.inh.tocsr()
        cap = c.cap.tocsr()
        M = len(c.modes)
        dep = [set(s for s, _ in self.inputs[j]) for j in range(M)]
        self.inhib = [[] for _ in range(M)]
        for g in range(inh.shape[0]):
            j = int(c.inh_mode[g])
            dep[j] |= set(inh[g].indices.tolist())
            self.inhib[j].append((inh[g].indices, g))
        self.caps = [[] for _ in range(M)]
        delta = (c.post - c.pre).toarray()
        for g in range(cap.shape[0]):
            slots = cap[g].indices
            for j in range(M):
                d = int(delta[j, slots].sum())
                if d > 0:
                    self.caps[j].append((slots, g, d))
                    dep[j] |= set(slots.tolist())
        self.timed_by_slot = [[] for _ in range(c.nslots)]
        self.imm_by_slot = [[] for _ in range(c.nslots)]
        generic = set(self.generic_imm.tolist())
        for j in range(M):
            for s in dep[j]:
                if c.modes[j].kind == "timed":
                    self.timed_by_slot[s].append(j)
                elif j in generic:
                    self.imm_by_slot[s].append(j)

    # ------------------------------------------------------------ enabling
    def degree(self, j: int, lanes: np.ndarray) -> np.ndarray:
        m = self.m
        if self.inputs[j]:
            deg = np.min(np.stack([m[lanes, s] // cnt for s, cnt in self.inputs[j]]), axis=0).astype(float)
        else:
            deg = np.ones(len(lanes))
        for slots, g in self.inhib[j]:
            deg[m[lanes][:, slots].sum(axis=1) >= self.net.inh_thr[lanes, g]] = 0
        for slots, g, d in self.caps[j]:
            deg[m[lanes][:, slots].sum(axis=1) + d > self.net.cap_limit[lanes, g]] = 0
        return deg

    def _imm_enabled(self, lanes: np.ndarray) -> np.ndarray:
        """Which generic immediate modes are enabled in ``lanes``: (lanes, modes), all at once.

        Input arcs, inhibitor groups and capacity groups are indicator matrices, so the
        cost is a few matrix products whatever the number of modes (unfolded colors
        of counted loops make hundreds)."""
        tab = self.__dict__.get("_imm_tab")
        if tab is None:
            Mi, S = len(self.generic_imm), self.c.nslots

            def table(entries):
                """(slot indicator (S, E), owner (E, Mi), group (E,), extra (E,))"""
                G = np.zeros((S, len(entries)))
                own = np.zeros((len(entries), Mi))
                grp = np.zeros(len(entries), dtype=np.int64)
                add = np.zeros(len(entries))
                for e, (i, slots, g, d) in enumerate(entries):
                    G[np.asarray(slots), e] = 1.0
                    own[e, i] = 1.0
                    grp[e], add[e] = g, d
                return G, own, grp, add
            arcs = [(i, s, cnt) for i, j in enumerate(self.generic_imm) for s, cnt in self.inputs[int(j)]]
            A = np.array(arcs, dtype=np.int64).reshape(-1, 3)
            owner = np.zeros((len(A), Mi))
            owner[np.arange(len(A)), A[:, 0]] = 1.0
            inh = table([(i, sl, g, 0) for i, j in enumerate(self.generic_imm) for sl, g in self.inhib[int(j)]])
            cap = table([(i, sl, g, d) for i, j in enumerate(self.generic_imm) for sl, g, d in self.caps[int(j)]])
            tab = self._imm_tab = (A[:, 1], A[:, 2], owner, inh, cap)
        slot, cnt, owner, inh, cap = tab
        m = self.m[lanes]
        bad = (m[:, slot] < cnt[None, :]).astype(float) @ owner      # arcs lacking tokens
        G, own, grp, _ = inh
        if len(grp):
            tot = m @ G
            bad += (tot >= self.net.inh_thr[lanes][:, grp]).astype(float) @ own
        G, own, grp, add = cap
        if len(grp):
            tot = m @ G
            bad += (tot + add[None, :] > self.net.cap_limit[lanes][:, grp]).astype(float) @ own
        return bad == 0

    # --------------------------------------------------------------- moves
    def _take(self, lanes, s, cnt, now):
        self.stats.touch(lanes, s, now, self.m)
        if self.rings is not None:
            for _ in range(cnt):
                t0 = self.rings.pop(lanes, s)
                self.stats.residence(lanes, self.unit[s], now - t0)
        self.m[lanes, s] -= cnt

    def _put(self, lanes, s, cnt, now, t0=None):
        self.stats.touch(lanes, s, now, self.m)
        self.m[lanes, s] += cnt
        q = self.queue_of_slot.get(s)
        if q is not None:
            qi, k = q
            for _ in range(cnt):
                self.queues[qi].arrive(lanes, k, now if t0 is None else t0, now, self.rng)
            self.ev[lanes, len(self.timed) + qi] = self.queues[qi].next_t[lanes]
        elif self.rings is not None:
            for _ in range(cnt):
                self.rings.push(lanes, s, now if t0 is None else t0)

    def fire(self, j: int, lanes: np.ndarray, now: np.ndarray, touched: dict) -> None:
        for s, cnt in self.inputs[j]:
            self._take(lanes, s, cnt, now)
        for s, cnt in self.outputs[j]:
            self._put(lanes, s, cnt, now)
        self.stats.fires[j, lanes] += 1
        touched.setdefault(("mode", j), []).append(lanes)

    def complete(self, qi: int, lanes: np.ndarray, now: np.ndarray, touched: dict) -> None:
        q = self.queues[qi]
        col = len(self.timed) + qi
        if q.fast:
            k, t0 = q.complete(lanes, now, self.rng)
            rel_l, rel_k, rel_t = lanes, k, t0
            rel_now = now
        else:
            rel_l, rel_k, rel_t = q.complete(lanes, now, self.rng)
            rel_now = self.t[rel_l]
        self.ev[lanes, col] = q.next_t[lanes]
        cq = self.c.queues[qi]
        for idx in ([np.arange(len(rel_l))] if q.fast else rounds(rel_l)):
            rk = rel_k[idx]
            for k in (np.flatnonzero(np.bincount(rk, minlength=len(cq.classes))) if len(cq.classes) > 1
                      else (0,)):
                sel = idx[rk == k] if len(cq.classes) > 1 else idx
                ln, t0s, nw = rel_l[sel], rel_t[sel], rel_now[sel]
                qslot, dslot = cq.classes[k], cq.dslots[k]
                self.stats.touch(ln, qslot, nw, self.m)
                self.m[ln, qslot] -= 1
                route = self.net.routes.get(dslot)
                if route is None:
                    self._put(ln, dslot, 1, nw, t0s)
                    touched.setdefault(("slot", dslot), []).append(ln)
                    continue
                self.stats.residence(ln, self.unit[dslot], nw - t0s)
                if len(route.modes) > 1:
                    u = self.rng.uniform(ln)
                    choice = np.minimum((u[:, None] >= route.cum[ln]).sum(axis=1), len(route.modes) - 1)
                else:
                    choice = np.zeros(len(ln), dtype=np.int64)
                for i in (np.flatnonzero(np.bincount(choice, minlength=len(route.modes)))
                          if len(route.modes) > 1 else (0,)):
                    sub = choice == i if len(route.modes) > 1 else slice(None)
                    li = ln[sub]
                    self.stats.fires[route.modes[i], li] += 1
                    tq = route.target_queue[i]
                    if tq is not None:
                        self._put(li, self.c.queues[tq].classes[route.target_class[i]], 1, nw[sub])
                    touched.setdefault(("route", dslot, i), []).append(li)
        touched.setdefault(("queue", qi), []).append(lanes)

    # ---------------------------------------------------- immediate modes
    def settle(self, lanes: np.ndarray, touched: dict) -> None:
        """Fire generic immediate transitions in ``lanes`` until none is enabled."""
        if not len(self.generic_imm) or not len(lanes):
            return
        prio = self.net.prio[self.generic_imm]
        for _ in range(MAX_IMMEDIATE_ROUNDS):
            E = self._imm_enabled(lanes)
            live = E.any(axis=1)
            if not live.any():
                return
            lanes = lanes[live]
            E = E[live]
            pr = np.where(E, prio[None, :], -np.inf)
            cand = E & (pr == pr.max(axis=1, keepdims=True))
            w = np.where(cand, self.net.weight[lanes][:, self.generic_imm], 0.0)
            many = cand.sum(axis=1) > 1
            pick = np.argmax(cand, axis=1)
            if many.any():
                cum = np.cumsum(w[many], axis=1)
                u = self.rng.uniform(lanes[many]) * cum[:, -1]
                pick[many] = np.minimum((u[:, None] >= cum).sum(axis=1), len(self.generic_imm) - 1)
            now = self.t[lanes]
            for i in np.unique(pick):
                sel = pick == i
                self.fire(int(self.generic_imm[i]), lanes[sel], now[sel], touched)
        raise SolverError("timeless trap: immediate transitions keep firing without time passing "
                          f"({', '.join(sorted({self.c.modes[j].transition for j in self.generic_imm}))})",
                          construct="timeless trap")

    def update_clocks(self, touched: dict) -> None:
        """Redraw clocks of timed modes whose enabling may have changed."""
        todo: dict[int, list] = {}
        fired: dict[int, list] = {}
        for key, parts in touched.items():
            ln = np.concatenate(parts)
            for s in self._slots_of(key):
                for j in self.timed_by_slot[s]:
                    todo.setdefault(j, []).append(ln)
            if key[0] == "mode" and key[1] in self.clocks:
                todo.setdefault(key[1], []).append(ln)
                fired.setdefault(key[1], []).append(ln)
        for j, parts in todo.items():
            ln = parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))
            f = None
            if j in fired:
                f = np.isin(ln, np.concatenate(fired[j]))
            self.clocks[j].update(ln, self.degree(j, ln), self.t[ln], self.rng, fired=f)
            self.ev[ln, self.col_of_timed[j]] = self.clocks[j].next_t[ln]

    def _slots_of(self, key) -> list[int]:
        cache = self.__dict__.setdefault("_slot_cache", {})
        if key not in cache:
            c = self.c
            if key[0] == "mode":
                j = key[1]
                out = {s for s, _ in self.inputs[j]} | {s for s, _ in self.outputs[j]}
            elif key[0] == "queue":
                q = c.queues[key[1]]
                out = set(q.classes)
            elif key[0] == "slot":
                out = {key[1]}
            else:  # fused route: the routing mode's target slot
                r = self.net.routes[key[1]]
                tq = r.target_queue[key[2]]
                out = {c.queues[tq].classes[r.target_class[key[2]]]} if tq is not None else set()
            cache[key] = sorted(out)
        return cache[key]

    def _imm_lanes(self, touched: dict) -> np.ndarray:
        parts = [np.concatenate(v) for k, v in touched.items()
                 if any(self.imm_by_slot[s] for s in self._slots_of(k))]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ run
    def start(self) -> None:
        """Place the initial tokens (queued tokens start service at time 0)."""
        L = self.L
        all_l = np.arange(L)
        touched: dict = {}
        for s in range(self.c.nslots):
            n0 = self.net.m0[:, s]
            if not n0.any():
                continue
            self.m[:, s] = 0
            for rep in range(int(n0.max())):
                ln = all_l[n0 > rep]
                self._put(ln, s, 1, self.t[ln])
            touched.setdefault(("slot", s), []).append(all_l)
        self.settle(all_l, touched)
        for j in self.timed:
            self.clocks[j].update(all_l, self.degree(j, all_l), self.t, self.rng)
            self.ev[:, self.col_of_timed[j]] = self.clocks[j].next_t

    def step(self, t_end: np.ndarray, max_steps: np.ndarray) -> int:
        """One event in every live lane; returns the number of live lanes."""
        alive = np.flatnonzero(self.alive)
        if not len(alive):
            return 0
        ev = self.ev[alive]
        k = np.argmin(ev, axis=1)
        tn = ev[np.arange(len(alive)), k]
        over = (tn > t_end[alive]) | (self.steps[alive] >= max_steps[alive])
        if over.any():
            done = alive[over]
            self.t[done] = np.where(np.isfinite(t_end[done]), np.maximum(t_end[done], self.t[done]),
                                    self.t[done])
            self.alive[done] = False
            alive, k, tn = alive[~over], k[~over], tn[~over]
            if not len(alive):
                return 0
        self.t[alive] = tn
        self.steps[alive] += 1
        touched: dict = {}
        nt = len(self.timed)
        for col in np.flatnonzero(np.bincount(k, minlength=self.ev.shape[1])):
            lanes = alive[k == col]
            now = self.t[lanes]
            if col < nt:
                self.fire(self.timed[col], lanes, now, touched)
            else:
                self.complete(int(col - nt), lanes, now, touched)
        if len(self.generic_imm):
            self.settle(self._imm_lanes(touched), touched)
        self.update_clocks(touched)
        return len(alive)

    def flush(self, regular: bool = True) -> None:
        self.stats.flush(self.t, self.m, self.busy(), self.alive, regular)

    def busy(self) -> list[np.ndarray]:
        """Cumulative busy-server time per queue, (classes, lanes)."""
        for q in self.queues:
            q.finish(self.t)
        return [q.busy_area.T.copy() for q in self.queues]
