"""Clocks of timed transitions (race semantics with enabling memory).

* exponential delays: one clock per mode, redrawn whenever the effective
  degree min(enabling degree, servers) changes (memoryless, so exact);
* other delays, single server: a clock drawn when the mode becomes enabled,
  kept while it stays enabled, dropped when it is disabled;
* other delays, k or infinite servers: one clock per concurrent firing; when
  the degree drops, the most recently started firings are abandoned.
"""
from __future__ import annotations

import math

import numpy as np

from .rng import LaneRandom
from .sampling import Sampler

INF = np.inf


class ExpClock:
    def __init__(self, L: int, sampler: Sampler, servers: np.ndarray):
        self.rate = 1.0 / sampler.mean
        self.servers = servers
        self.eff = np.zeros(L)
        self.next_t = np.full(L, INF)

    def update(self, lanes, deg, now, rng: LaneRandom, fired=None):
        eff = np.minimum(deg, self.servers[lanes])
        changed = eff != self.eff[lanes]
        if fired is not None:
            changed |= fired
        if not changed.any():
            return
        ln = lanes[changed]
        e = eff[changed]
        nxt = np.full(len(ln), INF)
        live = e > 0
        if live.any():
            nxt[live] = now[changed][live] + rng.exponential(ln[live]) / (self.rate[ln[live]] * e[live])
        self.next_t[ln] = nxt
        self.eff[ln] = e

    def fire(self, lanes):
        pass


class SingleClock:
    def __init__(self, L: int, sampler: Sampler):
        self.sampler = sampler
        self.next_t = np.full(L, INF)

    def update(self, lanes, deg, now, rng, fired=None):
        on = deg > 0
        cur = self.next_t[lanes]
        if fired is not None:
            cur = np.where(fired, INF, cur)
        start = on & np.isinf(cur)
        new = np.where(on, cur, INF)
        if start.any():
            new[start] = now[start] + self.sampler.draw(rng, lanes[start])
        self.next_t[lanes] = new


class MultiClock:
    def __init__(self, L: int, sampler: Sampler, servers: np.ndarray, width: int = 8):
        self.sampler = sampler
        self.servers = servers
        self.clk = np.full((L, width), INF)
        self.start = np.full((L, width), INF)
        self.next_t = np.full(L, INF)

    def _grow(self):
        L, w = self.clk.shape
        self.clk = np.concatenate([self.clk, np.full((L, w), INF)], axis=1)
        self.start = np.concatenate([self.start, np.full((L, w), INF)], axis=1)

    def update(self, lanes, deg, now, rng, fired=None):
        if fired is not None and fired.any():
            fl = lanes[fired]
            j = np.argmin(self.clk[fl], axis=1)
            self.clk[fl, j] = INF
            self.start[fl, j] = INF
        target = np.minimum(deg, self.servers[lanes])
        target = np.where(np.isinf(target), deg, target).astype(np.int64)
        while True:
            active = np.isfinite(self.clk[lanes]).sum(axis=1)
            more = active < target
            fewer = active > target
            if not more.any() and not fewer.any():
                break
            if fewer.any():  # abandon the most recently started firing
                fl = lanes[fewer]
                j = np.argmax(np.where(np.isfinite(self.start[fl]), self.start[fl], -INF), axis=1)
                self.clk[fl, j] = INF
                self.start[fl, j] = INF
            if more.any():
                ml = lanes[more]
                if not (~np.isfinite(self.clk[ml])).any(axis=1).all():
                    self._grow()
                j = np.argmax(~np.isfinite(self.clk[ml]), axis=1)
                self.clk[ml, j] = now[more] + self.sampler.draw(rng, ml)
                self.start[ml, j] = now[more]
        self.next_t[lanes] = self.clk[lanes].min(axis=1)


def make_clock(L: int, sampler: Sampler, servers: np.ndarray):
    if sampler.exponential:
        return ExpClock(L, sampler, servers)
    if np.all(servers == 1):
        return SingleClock(L, sampler)
    return MultiClock(L, sampler, servers)


__all__ = ["make_clock", "ExpClock", "SingleClock", "MultiClock", "math"]
