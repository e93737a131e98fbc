"""Random numbers of the synthetic program: distributions of the model, branches.

Each distribution of the model is bound to the parameter values once and
sampled in batches with its own ``_sample`` (a numpy ``Generator``, so every
distribution of :mod:`qpn.distributions` works: exp, det, uniform, erlang,
hyperexp, gamma, lognormal, normal, empirical).  ``replay(...)`` gives its
samples in order, starting over at the end.  One seed fixes the whole run.

>>> from qpn.distributions import Det, Exp
>>> from qpn.expr import Num
>>> r = Randoms(seed=1, env={})
>>> r.draw(Det(Num(2, "ms")))
0.002
>>> 0 < r.draw(Exp(Num(1))) and 0 <= r.uniform() < 1
True
"""
from __future__ import annotations

import numpy as np

from qpn.distributions import Distribution, Empirical
from qpn.errors import ModelError
from qpn.expr import evaluate

BATCH = 512


class _Stream:
    """Batched draws of one bound distribution."""

    __slots__ = ("dist", "buf", "i", "replay")

    def __init__(self, dist: Distribution):
        self.dist = dist
        self.buf: list = []
        self.i = 0
        self.replay = isinstance(dist, Empirical) and dist.replay

    def next(self, rng: np.random.Generator) -> float:
        if self.i >= len(self.buf):
            if self.replay:
                self.buf = self.dist.values().tolist()
            else:
                self.buf = np.maximum(self.dist._sample(rng, BATCH), 0.0).tolist()
            self.i = 0
        v = self.buf[self.i]
        self.i += 1
        return v


class Randoms:
    """Samples of the model's distributions and uniform numbers, from one seed."""

    def __init__(self, seed: int | None, env: dict):
        self.rng = np.random.default_rng(seed)
        self.env = env
        self.streams: dict[int, _Stream] = {}
        self.values: dict[int, float] = {}
        self._u: list = []
        self._ui = 0
        self._keep: list = []          # the nodes whose id() keys the caches

    def draw(self, dist: Distribution) -> float:
        """One sample (seconds) of a distribution of the model."""
        s = self.streams.get(id(dist))
        if s is None:
            bound = dist.bind(self.env)
            bound._check()
            s = self.streams[id(dist)] = _Stream(bound)
            self._keep.append(dist)
        return s.next(self.rng)

    def mean(self, dist: Distribution) -> float:
        """A distribution's mean with the program's parameters."""
        return dist.mean(self.env)

    def value(self, expr) -> float:
        """The number an expression of the model stands for (cached)."""
        v = self.values.get(id(expr))
        if v is None:
            v = float(evaluate(expr, self.env))
            self.values[id(expr)] = v
            self._keep.append(expr)
        return v

    def count(self, expr, what: str, loc=None, minimum: int = 1) -> int:
        """A whole number >= ``minimum`` (a size, a count), or a located error."""
        v = self.value(expr)
        if v == float("inf"):
            return v                      # servers inf
        if v != int(v) or v < minimum:
            raise ModelError(f"{what} must be a whole number >= {minimum}, got {v:g}", loc)
        return int(v)

    def uniform(self) -> float:
        """A uniform draw in [0, 1) (drawn in batches)."""
        if self._ui >= len(self._u):
            self._u = self.rng.random(BATCH).tolist()
            self._ui = 0
        u = self._u[self._ui]
        self._ui += 1
        return u

    def choose(self, weights: list[float]) -> int:
        """An index drawn with probabilities proportional to ``weights``."""
        u = self.uniform() * sum(weights)
        acc = 0.0
        for i, w in enumerate(weights):
            acc += w
            if u < acc:
                return i
        return len(weights) - 1
