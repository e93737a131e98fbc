"""Exponential IS, PS and FCFS queues, vectorized over lanes (the fast path).

Service is memoryless, so a queue's next completion is redrawn whenever its
content changes: the total rate follows from the counts (IS: n_k mu_k; PS:
n_k mu_k min(1, s/n); FCFS: the rates of the first s tokens in arrival
order).  Which token completes is drawn exactly: a class in proportion to its
rate, then a uniformly random token of that class for IS/PS (all equally
likely), or the right position among the first s for FCFS.  Every token keeps
the time it entered the place, for residence-time distributions.
"""
from __future__ import annotations

import math

import numpy as np

from .rng import LaneRandom


class RateQueue:
    fast = True

    def __init__(self, discipline: str, K: int, L: int, mu: np.ndarray, servers: np.ndarray,
                 cap: int = 16):
        self.disc = discipline            # 'is' | 'ps' | 'fcfs'
        self.K, self.L = K, L
        self.mu = mu                      # (L, K) service rates per lane
        self.s = servers.astype(float)    # (L,) servers (inf for IS)
        self.n = np.zeros((L, K), dtype=np.int64)
        self.next_t = np.full(L, np.inf)
        self.cap = cap
        if discipline == "fcfs":
            self.rc = np.zeros((L, cap), dtype=np.int16)     # class, in arrival order (ring)
            self.rt = np.zeros((L, cap))                      # time the token entered the place
            self.head = np.zeros(L, dtype=np.int64)
        else:
            self.bag = np.zeros((L, K, cap))                  # entry times per class (unordered)
        self.last = np.zeros(L)
        self.busy_area = np.zeros((L, K))

    # ----------------------------------------------------------- storage
    def _grow(self):
        new = self.cap * 2
        if self.disc == "fcfs":
            idx = (self.head[:, None] + np.arange(self.cap)[None, :]) % self.cap
            rc = np.zeros((self.L, new), dtype=np.int16)
            rt = np.zeros((self.L, new))
            rc[:, :self.cap] = np.take_along_axis(self.rc, idx, axis=1)
            rt[:, :self.cap] = np.take_along_axis(self.rt, idx, axis=1)
            self.rc, self.rt = rc, rt
            self.head[:] = 0
        else:
            bag = np.zeros((self.L, self.K, new))
            bag[:, :, :self.cap] = self.bag
            self.bag = bag
        self.cap = new

    # ------------------------------------------------------------ busy time
    def busy(self, lanes: np.ndarray) -> np.ndarray:
        """Busy servers per class (len(lanes), K) in the current state."""
        n = self.n[lanes].astype(float)
        if self.disc == "is":
            return n
        tot = n.sum(axis=1)
        if self.disc == "ps":
            s = self.s[lanes]
            share = np.where(tot > s, s / np.maximum(tot, 1.0), 1.0)
            return n * share[:, None]
        # fcfs: classes of the first s tokens
        s = self.s[lanes]
        if self.K == 1:
            return np.minimum(n, s[:, None])
        out = np.zeros((len(lanes), self.K))
        smax = int(min(np.max(s), self.cap)) if len(lanes) else 0
        size = n.sum(axis=1).astype(np.int64)
        for j in range(smax):
            live = (j < size) & (j < s)
            if live.any():
                ln = lanes[live]
                k = self.rc[ln, (self.head[ln] + j) % self.cap]
                out[np.flatnonzero(live), k] += 1
        return out

    def account(self, lanes: np.ndarray, now: np.ndarray) -> None:
        """Accumulate busy-server time up to ``now`` (before the content changes)."""
        dt = now - self.last[lanes]
        self.busy_area[lanes] += self.busy(lanes) * dt[:, None]
        self.last[lanes] = now

    # -------------------------------------------------------------- events
    def rates(self, lanes: np.ndarray) -> np.ndarray:
        """Completion rate of each class (len(lanes), K)."""
        if self.disc == "fcfs":
            return self.busy(lanes) * self.mu[lanes]
        return self.busy(lanes) * self.mu[lanes]

    def reschedule(self, lanes: np.ndarray, now: np.ndarray, rng: LaneRandom) -> None:
        R = self.rates(lanes).sum(axis=1)
        live = R > 0
        nxt = np.full(len(lanes), np.inf)
        if live.any():
            nxt[live] = now[live] + rng.exponential(lanes[live]) / R[live]
        self.next_t[lanes] = nxt

    def arrive(self, lanes: np.ndarray, k, t0: np.ndarray, now: np.ndarray, rng: LaneRandom) -> None:
        """One token of class ``k`` (scalar or per lane) enters each lane's queue."""
        self.account(lanes, now)
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), lanes.shape)
        size = self.n[lanes].sum(axis=1)
        if (size >= self.cap).any() or (self.disc != "fcfs" and (self.n[lanes, k] >= self.cap).any()):
            self._grow()
        if self.disc == "fcfs":
            pos = (self.head[lanes] + size) % self.cap
            self.rc[lanes, pos] = k
            self.rt[lanes, pos] = t0
        else:
            self.bag[lanes, k, self.n[lanes, k]] = t0
        self.n[lanes, k] += 1
        self.reschedule(lanes, now, rng)

    def complete(self, lanes: np.ndarray, now: np.ndarray, rng: LaneRandom):
        """The next token leaves each lane: returns (class, entry time)."""
        self.account(lanes, now)
        if self.disc == "fcfs":
            k, t0 = self._complete_fcfs(lanes, rng)
        else:
            if self.K == 1:
                k = np.zeros(len(lanes), dtype=np.int64)
            else:
                R = self.rates(lanes)
                cum = np.cumsum(R, axis=1)
                u = rng.uniform(lanes) * cum[:, -1]
                k = np.minimum((u[:, None] >= cum).sum(axis=1), self.K - 1)
            cnt = self.n[lanes, k]
            j = np.minimum((rng.uniform(lanes) * cnt).astype(np.int64), cnt - 1)
            t0 = self.bag[lanes, k, j].copy()
            self.bag[lanes, k, j] = self.bag[lanes, k, cnt - 1]
            self.n[lanes, k] -= 1
        self.reschedule(lanes, now, rng)
        return k, t0

    def _complete_fcfs(self, lanes, rng):
        s = self.s[lanes]
        size = self.n[lanes].sum(axis=1)
        h = self.head[lanes]
        if np.all(s == 1):
            j = np.zeros(len(lanes), dtype=np.int64)
        else:
            served = np.minimum(size, s).astype(np.int64)
            w = max(int(served.max()), 1)
            pos = (h[:, None] + np.arange(w)[None, :]) % self.cap
            ks = self.rc[lanes[:, None], pos].astype(np.int64)
            r = np.where(np.arange(w)[None, :] < served[:, None], self.mu[lanes[:, None], ks], 0.0)
            cum = np.cumsum(r, axis=1)
            u = rng.uniform(lanes) * cum[:, -1]
            j = np.minimum((u[:, None] >= cum).sum(axis=1), served - 1)
        at = (h + j) % self.cap
        k = self.rc[lanes, at].astype(np.int64)
        t0 = self.rt[lanes, at].copy()
        # close the gap: tokens ahead of position j move one step back, head advances
        for step in range(int(j.max()) if len(j) else 0, 0, -1):
            sel = j >= step
            ln = lanes[sel]
            dst = (h[sel] + step) % self.cap
            src = (h[sel] + step - 1) % self.cap
            self.rc[ln, dst] = self.rc[ln, src]
            self.rt[ln, dst] = self.rt[ln, src]
        self.head[lanes] = (h + 1) % self.cap
        self.n[lanes, k] -= 1
        return k, t0

    def finish(self, now: np.ndarray) -> None:
        self.account(np.arange(self.L), now)


def usable(discipline: str, services, fifo: bool) -> bool:
    """Whether the rate-based fast path applies."""
    return discipline in ("is", "ps", "fcfs") and not fifo and all(d.exponential for d in services)


__all__ = ["RateQueue", "usable", "math"]
