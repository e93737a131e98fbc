"""The event engine: the full net semantics, one lane at a time, compiled.

Each lane (a replication, or a sweep point's replication) runs its own
event loop (:mod:`.jit.loop`) over the flat net (:mod:`.flat`), so the cost
of an event does not depend on how many lanes run.  The loop releases the
GIL, so the lanes are shared among threads (every core by default): a lane
writes only its own rows and statistics columns, and each thread counts
residence times in a histogram of its own, added up at every epoch; the
numbers do not depend on the number of threads.  Lanes advance in chunks of
steps, all to the same step counts, so that statistics buckets, histogram
epochs and the sequential stopping checks fall on step counts that depend on
nothing but the schedule: a seed reproduces a run exactly, whatever the
machine's speed, whichever lanes run beside it.

The statistics are those of :class:`.stats.Stats` (buckets per lane,
lane-last arrays), written in place by the loop; the analysis is shared with
the other kernels.

>>> import qpn
>>> from qpn.solvers.des.lanes import build_lanes
>>> c = qpn.compile_net(qpn.load("models/mutex.qpn"))
>>> e = EventEngine(build_lanes([c], 2), [0, 1], seed=1)
>>> e.start(); e.advance(1000, float("inf"))
>>> e.steps.tolist()
[1000, 1000]
"""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba.typed import List

from qpn.errors import SolverError

from .flat import build_net_arrays, build_params, residence_units
from .jit import loop
from .jit.layout import (DEADLOCK, DONE, GROW_MULTI, GROW_RING, GROW_WORK, OK, ROW_FLOAT, ROW_INT, TRAP, YIELD,
                         Sizes, ev_tree_init, pack, pack_floats, pow2, region, rows)
from .lanes import LaneNet
from .options import usable_cores
from .stats import EPOCH_GROWTH, Stats

STORE_REGIONS = {"rc", "wcls", "wseq", "wflag", "wrseq", "wsrv", "rt", "wt0", "wwork", "wqleft", "wsetup",
                 "cclk", "cstart"}


def lane_generators(seed, keys) -> list[np.random.Generator]:
    """Lane i's Generator: ``SeedSequence(seed)``'s child with spawn key ``keys[i]``."""
    entropy = np.random.SeedSequence(seed).entropy
    return [np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(int(k),))))
            for k in np.asarray(keys)]


def next_epoch(start: int) -> int:
    """Step count at which the histogram epoch opened at ``start`` closes: epochs grow
    geometrically (a warm-up cut found later drops at most a fraction of the samples
    after it) and last at least 1024 steps (each epoch end is a return to Python)."""
    return int(-(-max(EPOCH_GROWTH * start + 64, start + 1024) // 64) * 64)


#: lane calls from Python (one per lane and round) before one call over a typed list of
#: the lanes' Generators pays for compiling that list (~1.2 s, ~50,000 calls)
LANE_CALLS = 20_000


def _moved(caps, old_offs, new_offs) -> tuple[np.ndarray, ...]:
    """(store, place in it, old column, new column) of every cell of stores of ``caps``
    cells that move from ``old_offs`` to ``new_offs``.

    >>> [a.tolist() for a in _moved(np.array([2, 1]), np.array([0, 2]), np.array([0, 4]))]
    [[0, 0, 1], [0, 1, 0], [0, 1, 2], [0, 1, 4]]
    """
    caps = np.asarray(caps, dtype=np.int64)
    x = np.repeat(np.arange(len(caps)), caps)
    k = np.arange(len(x)) - np.repeat(np.cumsum(caps) - caps, caps)
    return x, k, np.asarray(old_offs, dtype=np.int64)[x] + k, np.asarray(new_offs, dtype=np.int64)[x] + k


class EventEngine:
    """Lanes of one net; ``start()``, then ``advance(target_steps, t_end)`` as often as needed."""

    kernel = "EventEngine"
    processes = 1

    def __init__(self, net: LaneNet, keys, seed, *, histograms: bool = True, buckets: int = 64,
                 width: int = 32, threads: int | None = None):
        c = net.c
        self.net, self.c, self.L = net, c, net.L
        L = self.L
        self.units, self.unit = residence_units(c)
        self.flat = build_net_arrays(net)
        self.params = build_params(net, self.flat)
        self.nf = pack_floats(self.flat, self.params)
        self.gens = lane_generators(seed, keys)
        # the same Generators as numba's typed list, for one call over many lanes: made
        # when the lanes' calls from Python would cost more than building it (1.2 s of
        # compiling in every fresh process, more than a 10-lane run spends on calls)
        self.glist = None
        self.lane_calls = 0
        ring, work = self._initial_room()
        self.sizes = Sizes(self.flat, self.params, ring, work, np.full(self.flat.nmulti, 8, dtype=np.int64))
        self.ni = pack(self.flat, self.params, self.sizes)
        _, self.where = self.sizes.layout()
        self.si, self.sf = rows(self.where, L)
        p = self.params
        for name, value in (("m0", p.m0), ("cap_limit", p.cap_limit), ("inh_thr", p.inh_thr),
                            ("smp_off", p.smp_off[:, :len(p.smp_kind)]), ("smp_n", p.smp_n[:, :len(p.smp_kind)]),
                            ("point", p.point[:, None])):
            region(self.si, self.where, name)[:] = value.reshape(L, -1)[:, :self.where[name][1]]
        Q = self.flat.nqueues
        for name, value in (("weight", p.weight), ("tservers", p.tservers), ("qservers", p.qservers[:, :Q]),
                            ("quantum", p.quantum[:, :Q]), ("switch", p.switch[:, :Q]),
                            ("qspeed", p.qspeed[:, :self.where["qspeed"][1]]),
                            ("mu", p.mu[:, :self.where["mu"][1]]),
                            ("smp_par", p.smp_par[:, :len(p.smp_kind)].reshape(L, -1))):
            region(self.sf, self.where, name)[:] = value
        for name in ("ev", "cclk", "cstart"):
            region(self.sf, self.where, name)[:] = np.inf
        region(self.si, self.where, "evtree")[:] = ev_tree_init(self.flat.ntimed + self.flat.nqueues)
        region(self.sf, self.where, "dead")[:] = np.nan
        self.hist = bool(histograms)
        qk = [len(q.classes) for q in c.queues]
        self.stats = st = Stats(L, c.nslots, len(c.modes), qk, len(self.units), buckets=buckets,
                                width=width, histograms=histograms, point=net.point, npoints=net.npoints)
        K = int(sum(qk))
        self.bk_busy = np.zeros((buckets, max(K, 1), L))
        offs = np.cumsum([0] + qk)
        st.bk_busy = [self.bk_busy[:, offs[i]:offs[i + 1]] for i in range(len(qk))]
        self.hist_arr = st.hist if st.hist is not None else np.zeros((1, 1, 1), dtype=np.int64)
        self.threads = max(1, min(int(threads or usable_cores()), L))
        # thread 0 counts into the statistics' histogram, the others into their own
        self.hists = [self.hist_arr] + [np.zeros_like(self.hist_arr) for _ in range(self.threads - 1)]
        self.pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self.alive = np.ones(L, dtype=bool)
        self.finished = np.zeros(L, dtype=bool)       # reached the horizon, or deadlocked
        self.flushed = False
        self.notes: list[str] = []
        self.gstep = 0                                # steps of the lanes still running
        #: a run of immediate firings still going ``wall_cap`` seconds after the first return
        #: from the compiled loop (compiling is not counted) stops its lane; ``burst`` then
        #: says where: (lane, firings in a row, time)
        self.wall_cap = math.inf
        self.deadline: float | None = None
        self.burst: tuple[int, int, float] | None = None
        #: a store still to grow past that deadline (each growth lays every lane out anew:
        #: seconds with a million tokens) stops the run instead: the lanes that asked
        self.capped: list[int] = []
        self.epoch_end = next_epoch(0)

    @property
    def t(self) -> np.ndarray:
        """Each lane's clock."""
        return region(self.sf, self.where, "t")[:, 0]

    @property
    def steps(self) -> np.ndarray:
        """Each lane's number of events so far."""
        return region(self.si, self.where, "steps")[:, 0]

    def _initial_room(self):
        """Store sizes that hold the initial marking of every lane."""
        a, m0 = self.flat, self.params.m0
        ring = np.zeros(a.nrings, dtype=np.int64)
        work = np.zeros(a.nwork, dtype=np.int64)
        top = m0.max(axis=0) if len(m0) else np.zeros(a.nslots, dtype=np.int64)
        for s in range(a.nslots):
            if a.slot_ring[s] >= 0:
                ring[a.slot_ring[s]] = top[s]
        for k, s in enumerate(a.ord_real):          # order rings: all of a place's tokens
            ring[a.ord_ring[k]] += top[s]
        for q in range(a.nqueues):
            k0, k1 = a.q_kptr[q], a.q_kptr[q + 1]
            slots = a.cls_qslot[k0:k1]
            total = int(m0[:, slots].sum(axis=1).max()) if len(m0) else 0
            if a.q_kind[q] == 3:
                work[a.q_store[q]] = total
            elif a.q_kind[q] == 2:
                ring[a.q_store[q]] = total
            else:
                for k in range(k1 - k0):
                    ring[a.q_store[q] + k] = top[slots[k]]
        return (np.array([pow2(int(n)) for n in ring], dtype=np.int64),
                np.array([pow2(int(n)) for n in work], dtype=np.int64))

    def _grow(self, kind: int, which: int, need: int) -> None:
        """Enlarge one store; every lane's rows are laid out anew."""
        old = self.sizes.stores
        ring, work, multi = old["r_cap"].copy(), old["w_cap"].copy(), old["c_cap"].copy()
        cap = {GROW_RING: ring, GROW_WORK: work}.get(kind, multi)
        if need <= cap[which]:          # grown already for another lane of the same round
            return
        # four times the room: a store that fills up once usually fills again (a place
        # that gathers 3,000 releases grew 9 times by doubling), and each growth lays
        # every lane's rows out anew
        if kind == GROW_RING:
            ring[which] = pow2(max(need, 4 * int(ring[which])))
        elif kind == GROW_WORK:
            work[which] = pow2(max(need, 4 * int(work[which])))
        else:
            multi[which] = pow2(max(need, 4 * int(multi[which])))
        sizes = Sizes(self.flat, self.params, ring, work, multi)
        _, where = sizes.layout()
        L = self.L
        si, sf = rows(where, L)
        for old_rows, new, names in ((self.si, si, ROW_INT), (self.sf, sf, ROW_FLOAT)):
            for name in names:
                if name not in STORE_REGIONS:
                    region(new, where, name)[:] = region(old_rows, self.where, name)
        region(sf, where, "cclk")[:] = np.inf
        region(sf, where, "cstart")[:] = np.inf
        lanes = np.arange(L)[:, None]
        heads = region(self.si, self.where, "rh")
        # every store of a kind copied at once (a colored net has thousands of rings): the
        # old cells' columns and their new ones, store by store
        x, k, src, dst = _moved(old["r_cap"], old["r_off"], sizes.stores["r_off"])
        src = old["r_off"][x][None, :] + (heads[:, x] + k[None, :]) % old["r_cap"][x][None, :]
        for name, old_rows, new in (("rt", self.sf, sf), ("rc", self.si, si)):
            region(new, where, name)[:, dst] = region(old_rows, self.where, name)[lanes, src]
        region(si, where, "rh")[:] = 0
        for caps, offs, names in (("w_cap", "w_off", ("wt0", "wwork", "wqleft", "wsetup", "wcls", "wseq",
                                                        "wflag", "wrseq", "wsrv")),
                                  ("c_cap", "c_off", ("cclk", "cstart"))):
            _, _, src, dst = _moved(old[caps], old[offs], sizes.stores[offs])
            for name in names:
                old_rows, new = (self.sf, sf) if name in ROW_FLOAT else (self.si, si)
                region(new, where, name)[:, dst] = region(old_rows, self.where, name)[:, src]
        self.ni = pack(self.flat, self.params, sizes)
        self.sizes, self.where, self.si, self.sf = sizes, where, si, sf

    # ------------------------------------------------------------------ run
    def _run_lanes(self, lanes: np.ndarray, target: int, t_end: float, hist: np.ndarray) -> np.ndarray:
        """The compiled loop for several lanes (releases the GIL); their statuses.  A call
        per lane (~15-30 us each) until the lanes' calls add up to LANE_CALLS, then one
        call for all of them over the typed list of their Generators."""
        st = self.stats
        codes = np.empty(len(lanes), dtype=np.int64)
        if self.glist is not None:
            loop.run_lanes(self.ni, self.nf, self.si, self.sf, hist, self.glist, lanes, codes, target,
                           t_end, self.hist, st.bk_time, st.bk_area, st.bk_fires, self.bk_busy,
                           st.bk_res, st.nb_l, st.width_l)
            return codes
        for x, lane in enumerate(lanes.tolist()):
            codes[x] = loop.run_lane(self.ni, self.nf, self.si[lane], self.sf[lane], hist, self.gens[lane],
                                     lane, target, t_end, self.hist, st.bk_time, st.bk_area, st.bk_fires,
                                     self.bk_busy, st.bk_res, st.nb_l, st.width_l)
        return codes

    def _resolve(self, lane: int, code: int) -> None:
        """Act on a status other than OK, DONE, DEADLOCK: grow the store the lane needs."""
        info = region(self.si, self.where, "info")[lane]
        if code in (GROW_RING, GROW_WORK, GROW_MULTI):
            self._grow(code, int(info[0]), int(info[1]))
        elif code == TRAP:
            names = sorted({m.transition for m in self.c.modes if m.kind == "immediate"})
            raise SolverError("timeless trap: immediate transitions keep firing without time "
                              f"passing ({', '.join(names)})", construct="timeless trap")
        else:
            raise SolverError(f"event engine: unknown status {code}")

    def start(self) -> None:
        """Place the initial tokens and settle every lane at time 0; a set-up that alone
        outlasts the wall-clock cap (100,000 replications: about 0.15 ms each) is refused
        when it does, with what would fit."""
        t0 = getattr(self, "setup_started", None) or time.perf_counter()
        ts = time.perf_counter()
        built = (ts - t0) / self.L            # building the lanes, per lane
        for lane in range(self.L):
            t1 = time.perf_counter()
            loop.start_lane(self.ni, self.nf, self.si[lane], self.sf[lane], self.gens[lane])
            if lane == 0:       # loading (or compiling) the loop is not set-up: left out
                self.jit_seconds = time.perf_counter() - t1
                ts += self.jit_seconds
            now = time.perf_counter()
            if lane % 1024 == 1023 and now - ts + built * self.L > self.wall_cap:
                each = built + (now - ts) / (lane + 1)
                raise SolverError(
                    f"setting up {self.L:,} replications outlasts the wall-clock cap of "
                    f"{self.wall_cap:.3g} s: about {1e3 * each:.2g} ms each, {self.L * each:.3g} s "
                    f"in all; ask for at most {max(int(self.wall_cap / each / 4), 1):,} "
                    f"replications (-R), or a longer --wall", construct="replications")
        for lane, code in self._advance_lanes(np.arange(self.L, dtype=np.int64), 0, np.inf):
            if code == YIELD:
                self.alive[lane] = False

    def advance(self, target: int, t_end: float) -> None:
        """Run every live lane to ``target`` steps (or past ``t_end``)."""
        live = np.flatnonzero(self.alive).astype(np.int64)
        for lane, code in self._advance_lanes(live, int(target), float(t_end)):
            if code != OK:
                self.alive[lane] = False
                self.finished[lane] = code != YIELD
        self.gstep = int(target)

    def _advance_lanes(self, lanes: np.ndarray, target: int, t_end: float) -> list:
        """Run ``lanes`` until each stops for a reason other than a full store, shared among
        the threads; (lane, status) pairs.  A lane that needs a bigger store waits for the
        others: growing lays out every lane's rows anew."""
        out, todo = [], lanes
        while len(todo):
            self.lane_calls += len(todo)         # (here, before the threads share the lanes)
            if self.glist is None and self.lane_calls > LANE_CALLS:
                self.glist = List(self.gens)
            if self.pool is None or len(todo) < 2:
                parts, done = [todo], [self._run_lanes(todo, target, t_end, self.hists[0])]
            else:
                parts = [p for p in np.array_split(todo, min(self.threads, len(todo))) if len(p)]
                done = list(self.pool.map(self._run_lanes, parts, [target] * len(parts),
                                          [t_end] * len(parts), self.hists[:len(parts)]))
            waiting = []
            now = time.perf_counter()
            if self.deadline is None:
                self.deadline = now + self.wall_cap
            late = now > self.deadline
            for part, codes in zip(parts, done):
                for lane, code in zip(part.tolist(), codes.tolist()):
                    if code in (OK, DONE, DEADLOCK):
                        out.append((lane, code))
                    elif code == YIELD:
                        if late:
                            info = region(self.si, self.where, "info")[lane]
                            self.burst = (lane, int(info[2]), float(self.t[lane]))
                            out.append((lane, code))
                        else:
                            waiting.append(lane)
                    elif late and code in (GROW_RING, GROW_WORK, GROW_MULTI):
                        self.capped.append(lane)   # paused before the event: its counts hold
                        out.append((lane, YIELD))
                    else:
                        self._resolve(lane, code)
                        waiting.append(lane)
            todo = np.array(waiting, dtype=np.int64)
        return out

    def _gather_hist(self) -> None:
        """Add the other threads' residence counts to the statistics' histogram."""
        for h in self.hists[1:]:
            self.hist_arr += h
            h[:] = 0

    def close_epoch(self) -> None:
        """Start a new histogram epoch at the live lanes' step count."""
        st = self.stats
        if st.hist is not None:
            self._gather_hist()
            st.epochs.append(st.hist.astype(np.int32))
            st.epoch_start.append(self.gstep)
            st.hist[:] = 0
        self.epoch_end = next_epoch(self.gstep)

    def flush(self, regular: bool = False) -> None:
        """Close every lane's partial bucket (once, at the end of the run)."""
        if self.flushed:
            return
        self.flushed = True
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        if self.stats.hist is not None:
            self._gather_hist()
        st = self.stats
        t_start = region(self.sf, self.where, "t_start")[:, 0]
        t, steps = self.t, self.steps
        for lane in range(self.L):
            if t[lane] > t_start[lane] or steps[lane] % st.width_l[lane]:
                loop.flush(self.ni, self.nf, self.si[lane], self.sf[lane], lane,
                           st.bk_time, st.bk_area, st.bk_fires, self.bk_busy, st.bk_res, st.nb_l, st.width_l)

    def deadlocks(self) -> np.ndarray:
        """Lanes that reached a marking where nothing can ever fire, and when."""
        return region(self.sf, self.where, "dead")[:, 0]


__all__ = ["EventEngine", "lane_generators", "next_epoch"]
