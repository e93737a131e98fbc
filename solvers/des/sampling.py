"""Vectorized sampling of distributions whose parameters may differ per lane.

A :class:`Sampler` is built from one bound distribution per lane (a sweep
gives each lane its own parameters; the kind must agree) and draws, for a set
of lanes, one value per lane from their own random streams (see
:mod:`.rng`).  Every draw is an inverse transform or a sum of exponentials,
so the number of uniforms a lane consumes depends only on that lane.
"""
from __future__ import annotations

import numpy as np

from qpn.distributions import (Det, Distribution, Empirical, Erlang, Exp, Gamma, HyperExp,
                               HyperExpFit, Lognormal, Normal, Uniform)
from qpn.errors import SolverError

from .rng import LaneRandom


def _same_kind(dists: list[Distribution]) -> type:
    kinds = {type(d) for d in dists}
    if len(kinds) == 1 and HyperExpFit not in kinds:
        return kinds.pop()
    if kinds <= {HyperExp, HyperExpFit}:      # the mean/scv form is sampled as its branches
        return HyperExp
    raise SolverError("lanes of one run must use the same kind of distribution per element; "
                      f"got {sorted(k.__name__ for k in kinds)}")


class Sampler:
    """Draws of one distribution family with per-lane parameters."""

    def __init__(self, dists: list[Distribution]):
        if len(dists) > 1 and all(d is dists[0] for d in dists):
            self._init_same(dists[0], len(dists))
            return
        self.kind = _same_kind(dists)
        self.n = len(dists)
        k = self.kind
        self.exponential = k is Exp
        self.mean = np.array([d.mean() for d in dists], dtype=float)
        if k is Exp or k is Det:
            return
        if k is Uniform:
            self.lo = np.array([d.lo for d in dists], float)
            self.hi = np.array([d.hi for d in dists], float)
        elif k is Erlang:
            self.k = np.array([int(d.k) for d in dists])
        elif k is HyperExp:
            hs = [d.branches() if isinstance(d, HyperExpFit) else d for d in dists]
            B = max(len(h.probs) for h in hs)
            self.cum = np.ones((self.n, B))
            self.bmean = np.zeros((self.n, B))
            for i, h in enumerate(hs):
                c = np.cumsum(h.probs)
                self.cum[i, :len(c)] = c
                self.bmean[i, :len(h.means)] = h.means
            self.cum[:, -1] = 1.0
        elif k is Gamma:
            self.shape = np.array([1.0 / d.scv() for d in dists])
            self.scale = self.mean / self.shape
        elif k is Lognormal:
            s2 = np.log1p(np.array([d.scv() for d in dists]))
            self.mu = np.log(self.mean) - s2 / 2
            self.sigma = np.sqrt(s2)
        elif k is Normal:
            self.nmu = np.array([d.mu for d in dists], float)
            self.nsig = np.array([d.sigma for d in dists], float)
        elif k is Empirical:
            vals = [d.values() for d in dists]
            self.shared = all(len(v) == len(vals[0]) and np.array_equal(v, vals[0]) for v in vals)
            L = max(len(v) for v in vals)
            self.values = np.zeros((self.n, L))
            self.count = np.array([len(v) for v in vals])
            for i, v in enumerate(vals):
                self.values[i, :len(v)] = v
            self.replay = any(d.replay for d in dists)
            self.cursor = np.zeros(self.n, dtype=np.int64)

    def _init_same(self, d: Distribution, n: int) -> None:
        """Every lane has the same distribution object (replications): build once, broadcast."""
        one = Sampler([d])
        self.__dict__.update(one.__dict__)
        self.n = n
        for name, v in one.__dict__.items():
            if isinstance(v, np.ndarray) and v.shape[:1] == (1,):
                setattr(self, name, np.repeat(v, n, axis=0))

    def draw_many(self, rng, lane: int, n: int) -> np.ndarray:
        """n draws for one lane (``rng.uniform(lanes)`` gives len(lanes) numbers)."""
        if self.kind is Empirical and self.replay:
            idx = (self.cursor[lane] + np.arange(n)) % self.count[lane]
            self.cursor[lane] += n
            return self.values[lane, idx]
        return self.draw(rng, np.full(n, lane))

    def draw(self, rng: LaneRandom, lanes: np.ndarray) -> np.ndarray:
        """One draw for each of ``lanes`` (each from its lane's parameters)."""
        k = self.kind
        if k is Exp:
            return self.mean[lanes] * rng.exponential(lanes)
        if k is Det:
            return self.mean[lanes].copy()
        if k is Uniform:
            u = rng.uniform(lanes)
            return self.lo[lanes] + (self.hi[lanes] - self.lo[lanes]) * u
        if k is Erlang:
            kk = self.k[lanes]
            total = np.zeros(len(lanes))
            for j in range(int(kk.max()) if len(kk) else 0):
                sel = kk > j
                total[sel] += rng.exponential(lanes[sel])
            return total * self.mean[lanes] / kk
        if k is HyperExp:
            u = rng.uniform(lanes)
            branch = (u[:, None] >= self.cum[lanes]).sum(axis=1)
            branch = np.minimum(branch, self.cum.shape[1] - 1)
            return self.bmean[lanes, branch] * rng.exponential(lanes)
        if k is Gamma:
            from scipy.special import gammaincinv
            u = rng.uniform(lanes)
            return gammaincinv(self.shape[lanes], u) * self.scale[lanes]
        if k is Lognormal:
            from scipy.special import ndtri
            u = np.clip(rng.uniform(lanes), 1e-300, 1 - 1e-16)
            return np.exp(self.mu[lanes] + self.sigma[lanes] * ndtri(u))
        if k is Normal:
            from scipy.special import ndtr, ndtri
            mu, sig = self.nmu[lanes], self.nsig[lanes]
            lo = ndtr(-mu / sig)
            u = rng.uniform(lanes)
            return np.maximum(mu + sig * ndtri(lo + u * (1 - lo)), 0.0)
        if k is Empirical:
            if self.replay:
                idx = self.cursor[lanes] % self.count[lanes]
                self.cursor[lanes] += 1
            else:
                idx = np.minimum((rng.uniform(lanes) * self.count[lanes]).astype(np.int64),
                                 self.count[lanes] - 1)
            return self.values[lanes, idx]
        raise SolverError(f"cannot sample {k.__name__}")
