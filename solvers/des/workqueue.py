"""Every discipline with any service distribution: per-token remaining work.

The slower, general path (O(tokens) per event of the queue): each token keeps
its class, entry time, remaining work, arrival sequence and flags.  Between
two events of a queue the set of tokens in service and their shares are
constant, so work is advanced lazily.  Disciplines: IS, PS, FCFS, LCFS-PR,
PRIO (preemptive-resume or not), RANDOM, RR with a quantum and a
context-switch cost; FIFO departure holds finished tokens until every earlier
token of their place has finished.
"""
from __future__ import annotations

import math

import numpy as np

from .rng import LaneRandom
from .sampling import Sampler

SERVING, DONE = 1, 2
INF = np.inf


class WorkQueue:
    fast = False

    def __init__(self, discipline: str, K: int, L: int, samplers: list[Sampler], servers: np.ndarray,
                 prio: np.ndarray, preemptive: bool, fifo: np.ndarray, place_of: np.ndarray,
                 quantum: np.ndarray | None, switch: np.ndarray | None, cap: int = 16):
        self.disc, self.K, self.L = discipline, K, L
        self.samplers = samplers
        self.s = servers.astype(float)
        self.prio = prio                       # (K,) priority level per class
        self.preemptive = preemptive
        self.fifo = fifo                       # (K,) FIFO departure per class
        self.place_of = place_of               # (K,) place index per class
        self.quantum = quantum                 # (L,) or None
        self.switch = switch if switch is not None else np.zeros(L)
        self.cap = cap
        self._alloc(cap)
        self.counter = np.zeros(L, dtype=np.int64)
        self.last = np.zeros(L)
        self.next_t = np.full(L, INF)
        self.busy_area = np.zeros((L, K))
        self.n = np.zeros((L, K), dtype=np.int64)

    def _alloc(self, cap):
        L = self.L
        self.cls = np.full((L, cap), -1, dtype=np.int64)
        self.t0 = np.zeros((L, cap))
        self.work = np.zeros((L, cap))
        self.seq = np.full((L, cap), np.iinfo(np.int64).max, dtype=np.int64)
        self.flag = np.zeros((L, cap), dtype=np.int64)
        self.rseq = np.zeros((L, cap), dtype=np.int64)   # RR ready order
        self.qleft = np.zeros((L, cap))                   # RR quantum left
        self.setup = np.zeros((L, cap))                   # RR switch time left

    def _grow(self):
        old = (self.cls, self.t0, self.work, self.seq, self.flag, self.rseq, self.qleft, self.setup)
        c = self.cap
        self.cap *= 2
        self._alloc(self.cap)
        for new, o in zip((self.cls, self.t0, self.work, self.seq, self.flag, self.rseq, self.qleft,
                           self.setup), old):
            new[:, :c] = o

    # ------------------------------------------------------------ service
    def served(self, lanes):
        """Mask (len(lanes), cap) of tokens progressing, and their share of a server."""
        cls, flag = self.cls[lanes], self.flag[lanes]
        active = (cls >= 0) & ((flag & DONE) == 0)
        s = self.s[lanes][:, None]
        d = self.disc
        if d == "is":
            return active, np.ones(active.shape)
        if d == "ps":
            nact = active.sum(axis=1, keepdims=True)
            share = np.where(nact > s, s / np.maximum(nact, 1), 1.0)
            return active, np.broadcast_to(share, active.shape)
        if d in ("random",) or (d == "prio" and not self.preemptive):
            return active & ((flag & SERVING) > 0), np.ones(active.shape)
        if d == "rr":
            key = np.where(active, self.rseq[lanes], np.iinfo(np.int64).max)
        elif d == "lcfs-pr":
            key = np.where(active, -self.seq[lanes], np.iinfo(np.int64).max)
        elif d == "prio":
            pr = self.prio[np.maximum(cls, 0)]
            key = np.where(active, -(pr * 2 ** 40).astype(np.int64) + self.seq[lanes], np.iinfo(np.int64).max)
        else:  # fcfs
            key = np.where(active, self.seq[lanes], np.iinfo(np.int64).max)
        rank = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1)
        return active & (rank < s), np.ones(active.shape)

    def _advance(self, lanes, now):
        """Progress work (and RR setup/quantum) up to ``now``; account busy time."""
        dt = (now - self.last[lanes])[:, None]
        srv, share = self.served(lanes)
        cls = self.cls[lanes]
        # busy time per (lane, class) in one bincount: a loop over the classes cost
        # a numpy call per class per event (a GIL model has one class per fragment)
        nl, K = len(lanes), self.K
        idx = np.arange(nl)[:, None] * K + np.maximum(cls, 0)
        w = np.where(srv, share, 0.0) * dt
        self.busy_area[lanes] += np.bincount(idx.ravel(), weights=w.ravel(),
                                             minlength=nl * K).reshape(nl, K)
        if self.disc == "rr":
            setup = self.setup[lanes]
            used = np.where(srv, np.minimum(setup, dt), 0.0)
            run = np.where(srv, dt - used, 0.0)
            self.setup[lanes] = setup - used
            self.work[lanes] -= run
            self.qleft[lanes] -= run
        else:
            self.work[lanes] -= np.where(srv, share * dt, 0.0)
        self.last[lanes] = now

    def _reschedule(self, lanes, now):
        srv, share = self.served(lanes)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.disc == "rr":
                until = self.setup[lanes] + np.minimum(np.maximum(self.work[lanes], 0),
                                                        np.maximum(self.qleft[lanes], 0))
            else:
                until = np.maximum(self.work[lanes], 0) / share
        until = np.where(srv, until, INF)
        self.next_t[lanes] = now + until.min(axis=1)

    # -------------------------------------------------------------- events
    def arrive(self, lanes, k, t0, now, rng: LaneRandom):
        self._advance(lanes, now)
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), lanes.shape).copy()
        while True:
            free = self.cls[lanes] < 0
            if free.any(axis=1).all():
                break
            self._grow()
        j = np.argmax(self.cls[lanes] < 0, axis=1)
        self.cls[lanes, j] = k
        self.t0[lanes, j] = t0
        work = np.empty(len(lanes))
        for kk in np.unique(k):
            sel = k == kk
            work[sel] = self.samplers[kk].draw(rng, lanes[sel])
        self.work[lanes, j] = work
        self.seq[lanes, j] = self.counter[lanes]
        self.rseq[lanes, j] = self.counter[lanes]
        self.counter[lanes] += 1
        self.flag[lanes, j] = 0
        self.n[lanes, k] += 1
        if self.disc == "rr":
            # a token that starts running immediately pays the context switch too
            self.setup[lanes, j] = self.switch[lanes]
            self.qleft[lanes, j] = self.quantum[lanes]
        self._start(lanes, rng)
        self._reschedule(lanes, now)

    def _start(self, lanes, rng):
        """Non-preemptive disciplines: give free servers to waiting tokens."""
        if not (self.disc == "random" or (self.disc == "prio" and not self.preemptive)):
            return
        for _ in range(int(np.max(self.s[lanes])) if len(lanes) and not math.isinf(np.max(self.s[lanes])) else 1):
            cls, flag = self.cls[lanes], self.flag[lanes]
            occ = (cls >= 0) & ((flag & DONE) == 0)
            serving = occ & ((flag & SERVING) > 0)
            waiting = occ & ~serving
            need = (serving.sum(axis=1) < self.s[lanes]) & waiting.any(axis=1)
            if not need.any():
                break
            ln = lanes[need]
            w = waiting[need]
            if self.disc == "random":
                W = w.sum(axis=1)
                pick = np.minimum((rng.uniform(ln) * W).astype(np.int64), W - 1)
                order = np.cumsum(w, axis=1) - 1
                j = np.argmax(w & (order == pick[:, None]), axis=1)
            else:
                pr = self.prio[np.maximum(cls[need], 0)]
                key = np.where(w, -(pr * 2 ** 40).astype(np.int64) + self.seq[ln], np.iinfo(np.int64).max)
                j = np.argmin(key, axis=1)
            self.flag[ln, j] |= SERVING

    def complete(self, lanes, now, rng: LaneRandom):
        """The queue's next event in each lane; returns the tokens released to the
        depository as (lane, class, entry time) arrays (0, 1 or more per lane)."""
        self._advance(lanes, now)
        srv, share = self.served(lanes)
        if self.disc == "rr":
            until = self.setup[lanes] + np.minimum(np.maximum(self.work[lanes], 0),
                                                    np.maximum(self.qleft[lanes], 0))
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                until = np.maximum(self.work[lanes], 0) / share
        until = np.where(srv, until, INF)
        if self.disc == "rr":
            # quanta ending at the same instant go in ready order (as a scheduler would)
            m = until.min(axis=1, keepdims=True)
            tie = until <= m + 1e-12 * np.maximum(1.0, np.abs(now))[:, None]
            j = np.argmin(np.where(tie, self.rseq[lanes], np.iinfo(np.int64).max), axis=1)
        else:
            j = np.argmin(until, axis=1)
        if self.disc == "rr":
            expired = self.work[lanes, j] > 1e-12 * np.maximum(1.0, np.abs(now))
            ex = lanes[expired]
            if len(ex):
                # quantum over: to the back of the ready queue; a switch only if another token waits
                je = j[expired]
                self.rseq[ex, je] = self.counter[ex]
                self.counter[ex] += 1
                self.qleft[ex, je] = self.quantum[ex]
                active = (self.cls[ex] >= 0) & ((self.flag[ex] & DONE) == 0)
                others = active.sum(axis=1) > self.s[ex]
                self.setup[ex, je] = np.where(others, self.switch[ex], 0.0)
            done_lanes = lanes[~expired]
            j = j[~expired]
        else:
            done_lanes = lanes
        # every waiting token owes one context switch at its next start (set when it
        # arrived or was sent to the back), so a freed core needs no bookkeeping here
        out = self._finish_tokens(done_lanes, j)
        self._start(lanes, rng)
        self._reschedule(lanes, now)
        return out

    def _finish_tokens(self, lanes, j):
        k = self.cls[lanes, j]
        fifo = self.fifo[k]
        rel_l, rel_k, rel_t = [lanes[~fifo]], [k[~fifo]], [self.t0[lanes[~fifo], j[~fifo]].copy()]
        self._remove(lanes[~fifo], j[~fifo])
        if fifo.any():
            fl = lanes[fifo]
            self.flag[fl, j[fifo]] = DONE
            l2, k2, t2 = self._release(fl)
            rel_l.append(l2)
            rel_k.append(k2)
            rel_t.append(t2)
        return np.concatenate(rel_l), np.concatenate(rel_k), np.concatenate(rel_t)

    def _remove(self, lanes, j):
        k = self.cls[lanes, j]
        self.n[lanes, k] -= 1
        self.cls[lanes, j] = -1
        self.flag[lanes, j] = 0
        self.seq[lanes, j] = np.iinfo(np.int64).max

    def _release(self, lanes):
        """FIFO departure: finished tokens leave once no earlier token of their place is pending."""
        outl, outk, outt = [], [], []
        for _ in range(self.cap):
            if len(lanes) == 0:
                break
            cls, flag, seq = self.cls[lanes], self.flag[lanes], self.seq[lanes]
            occ = cls >= 0
            pl = np.where(occ, self.place_of[np.maximum(cls, 0)], -1)
            done = occ & ((flag & DONE) > 0)
            pending = occ & ~done
            rel = np.zeros(done.shape, dtype=bool)
            for p in np.unique(self.place_of):
                pend_seq = np.where(pending & (pl == p), seq, np.iinfo(np.int64).max).min(axis=1)
                rel |= done & (pl == p) & (seq < pend_seq[:, None])
            rows = np.flatnonzero(rel.any(axis=1))
            if len(rows) == 0:
                break
            key = np.where(rel[rows], seq[rows], np.iinfo(np.int64).max)
            j = np.argmin(key, axis=1)
            ln = lanes[rows]
            outl.append(ln)
            outk.append(self.cls[ln, j].copy())
            outt.append(self.t0[ln, j].copy())
            self._remove(ln, j)
        if not outl:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(outl), np.concatenate(outk), np.concatenate(outt)

    def finish(self, now):
        self._advance(np.arange(self.L), now)
