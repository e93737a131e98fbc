"""Distributions as first-class values, with analytic mean and SCV.

Arguments are expressions (so ``exp(think)`` stays parametric); once every
argument is a constant, ``mean()``, ``scv()`` and ``sample()`` work.  Times
are in seconds.

>>> from qpn.distributions import Erlang
>>> d = Erlang(4, 2.0)
>>> d.mean(), d.scv()
(2.0, 0.25)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Mapping

import numpy as np

from .errors import Loc, ModelError
from .expr import Expr, Num, as_expr, evaluate, fmt

#: the range of a time (mean, branch mean, sigma) or scv: beyond it a rate (1 / mean), or a
#: sum of rates over servers and tokens, overflows or underflows a float in the solvers
MIN_VALUE = 1e-100
MAX_VALUE = 1e100
#: largest squared coefficient of variation of any distribution (see Distribution.check)
MAX_SCV = 1e12
#: the most phases of an erlang(k, mean): the CTMC expands each phase into states, and
#: beyond it the delay is constant for any practical purpose (use det)
MAX_ERLANG_PHASES = 1000

Value = Any  # Expr | int | float


def _val(x: Value, env: Mapping[str, Any] | None) -> float:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    return evaluate(x, env or {})


@dataclass(frozen=True, kw_only=True)
class Distribution:
    """Common interface. Subclasses are frozen dataclasses of expressions; where the
    distribution was written (``loc``, keyword-only) takes no part in equality."""

    kind: ClassVar[str] = ""
    loc: Loc | None = field(default=None, compare=False, repr=False)

    # -- binding ------------------------------------------------------------
    def bind(self, env: Mapping[str, Any]) -> "Distribution":
        """A copy whose expression arguments are evaluated to numbers."""
        changes = {}
        for f in fields(self):
            if f.name in ("loc", "source", "replay", "unit", "samples"):
                continue
            v = getattr(self, f.name)
            if isinstance(v, tuple):
                changes[f.name] = tuple(_val(i, env) for i in v)
            elif v is not None:
                changes[f.name] = _val(v, env)
        return replace(self, **changes)

    def args(self) -> tuple:
        """The parameters, in declaration order (numbers or expressions)."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "loc")

    # -- moments ------------------------------------------------------------
    def mean(self, env: Mapping[str, Any] | None = None) -> float:
        """The mean, with expression arguments evaluated in ``env``.

        >>> Exp(0.25).mean(), Erlang(4, 2.0).mean()
        (0.25, 2.0)
        """
        return self.bind(env or {})._mean()

    def scv(self, env: Mapping[str, Any] | None = None) -> float:
        """Squared coefficient of variation, Var/mean^2."""
        return self.bind(env or {})._scv()

    def variance(self, env: Mapping[str, Any] | None = None) -> float:
        """The variance, scv x mean^2."""
        b = self.bind(env or {})
        return b._scv() * b._mean() ** 2

    def is_exponential(self) -> bool:
        """Whether this is an exponential distribution (memoryless: one CTMC phase)."""
        return False

    def sample(self, rng: np.random.Generator, size: int | tuple = 1,
               env: Mapping[str, Any] | None = None) -> np.ndarray:
        """Draw i.i.d. samples (numpy, vectorized)."""
        return self.bind(env or {})._sample(rng, size)

    def check(self, env: Mapping[str, Any]) -> None:
        """Raise :class:`ModelError` if the evaluated arguments are invalid, or if its mean
        or squared coefficient of variation is out of range: every solver works from
        them (a phase-type fit of an SCV of 2^63 divides by zero, a mean of 1e308 squared
        overflows)."""
        b = self.bind(env)
        b._check()
        try:
            mean, scv = b._mean(), b._scv()
        except NotImplementedError:
            return
        except (OverflowError, ZeroDivisionError, ValueError):
            raise b._fail("its mean or variance is beyond the range of floating point numbers",
                          hint="times are means in seconds (or with a unit: 5 ms)") from None
        if not (math.isfinite(mean) and math.isfinite(scv)) or mean > MAX_VALUE:
            raise b._fail(f"its mean ({mean:.3g}) or variance is beyond the range the solvers "
                          f"handle (mean up to {MAX_VALUE:g})",
                          hint="times are means in seconds (or with a unit: 5 ms)")
        if scv > MAX_SCV:
            raise b._fail(f"its squared coefficient of variation is {scv:.3g}, beyond {MAX_SCV:g}: no "
                          "phase-type fit or simulation would represent it",
                          hint="a variance that large means almost every sample is near 0")

    def _fail(self, msg: str, hint: str | None = None) -> ModelError:
        return ModelError(f"{self.kind}: {msg}", self.loc, hint=hint)

    def _positive(self, name: str, v: float) -> None:
        if not (v > 0) or math.isinf(v):
            raise self._fail(f"{name} must be a positive finite number, got {v}",
                             hint="times are means in seconds (or with a unit: 5 ms)")
        if not MIN_VALUE <= v <= MAX_VALUE:
            # beyond this, rates (1 / mean) and sums of rates overflow or underflow in the solvers
            raise self._fail(f"{name} must be between {MIN_VALUE:g} and {MAX_VALUE:g}, got {v:g}",
                             hint="times are means in seconds (or with a unit: 5 ms)")

    # subclass hooks
    def _mean(self) -> float: raise NotImplementedError
    def _scv(self) -> float: raise NotImplementedError
    def _sample(self, rng, size): raise NotImplementedError
    def _check(self) -> None: pass


@dataclass(frozen=True)
class Exp(Distribution):
    """Exponential with the given mean (``exp(rate = r)`` means mean 1/r)."""
    mean_: Value
    kind = "exp"

    def is_exponential(self) -> bool:
        """True: the exponential is memoryless."""
        return True

    def _mean(self): return self.mean_
    def _scv(self): return 1.0
    def _sample(self, rng, size): return rng.exponential(self.mean_, size)
    def _check(self): self._positive("mean", self.mean_)


@dataclass(frozen=True)
class Det(Distribution):
    """Deterministic (constant) value."""
    value: Value
    kind = "det"

    def _mean(self): return self.value
    def _scv(self): return 0.0
    def _sample(self, rng, size): return np.full(size, float(self.value))

    def _check(self):
        if not (self.value >= 0) or math.isinf(self.value):
            raise self._fail(f"value must be >= 0 and finite, got {self.value}")
        if self.value > MAX_VALUE:
            raise self._fail(f"value must be at most {MAX_VALUE:g}, got {self.value:g}")


@dataclass(frozen=True)
class Uniform(Distribution):
    """Uniform between ``lo`` and ``hi``."""
    lo: Value
    hi: Value
    kind = "uniform"

    def _mean(self): return (self.lo + self.hi) / 2
    def _scv(self): return ((self.hi - self.lo) / self._mean()) ** 2 / 12   # no overflow
    def _sample(self, rng, size): return rng.uniform(self.lo, self.hi, size)

    def _check(self):
        if self.lo < 0 or self.hi < self.lo or self.hi <= 0:
            raise self._fail(f"need 0 <= lo <= hi and hi > 0, got ({self.lo}, {self.hi})")


@dataclass(frozen=True)
class Erlang(Distribution):
    """Sum of k exponential phases; mean is the total mean."""
    k: Value
    mean_: Value
    kind = "erlang"

    def _mean(self): return self.mean_
    def _scv(self): return 1.0 / self.k
    def _sample(self, rng, size): return rng.gamma(self.k, self.mean_ / self.k, size)

    def _check(self):
        if not math.isfinite(self.k) or self.k != int(self.k) or self.k < 1:
            raise self._fail(f"the number of phases k must be a whole number >= 1, got {self.k}")
        if self.k > MAX_ERLANG_PHASES:
            # the CTMC expands every phase into states; the scv 1/k is 0 for any practical purpose
            raise self._fail(f"the number of phases k must be at most {MAX_ERLANG_PHASES:,}, got {self.k:g}",
                             hint="for a (nearly) constant time use det(value)")
        self._positive("mean", self.mean_)


@dataclass(frozen=True)
class HyperExp(Distribution):
    """Mixture of exponentials: with probability p_i, exponential with mean m_i."""
    probs: tuple
    means: tuple
    kind = "hyperexp"

    def _mean(self): return sum(p * m for p, m in zip(self.probs, self.means))

    def _scv(self):
        m1 = self._mean()
        m2 = sum(p * 2 * m * m for p, m in zip(self.probs, self.means))
        return m2 / m1 ** 2 - 1

    def _sample(self, rng, size):
        n = int(np.prod(size))
        branch = rng.choice(len(self.probs), size=n, p=np.asarray(self.probs, float))
        out = rng.exponential(1.0, n) * np.asarray(self.means, float)[branch]
        return out.reshape(size)

    def _check(self):
        if len(self.probs) < 1:
            raise self._fail("needs at least one branch 'p: mean'")
        if any(p < 0 for p in self.probs) or abs(sum(self.probs) - 1) > 1e-9:
            raise self._fail(f"branch probabilities must be >= 0 and sum to 1, got {list(self.probs)}",
                             hint="write hyperexp(0.3: 1 ms, 0.7: 10 ms)")
        for m in self.means:
            self._positive("branch mean", m)


#: largest scv of hyperexp(mean = ..., scv = ...): its two branches stay representable
MAX_HYPEREXP_SCV = MAX_SCV


@dataclass(frozen=True)
class MeanScv(Distribution):
    """A distribution given by its mean and squared coefficient of variation (the
    shape the fitted families share; each subclass says how it samples).

    >>> Gamma(2.0, 0.5).mean(), Lognormal(2.0, 0.5).scv()
    (2.0, 0.5)
    """
    mean_: Value
    scv_: Value

    def _mean(self): return self.mean_
    def _scv(self): return self.scv_

    def _check(self):
        self._positive("mean", self.mean_)
        self._positive("scv", self.scv_)


@dataclass(frozen=True)
class HyperExpFit(MeanScv):
    """Two-phase hyperexponential with balanced means fitted to (mean, scv >= 1)."""
    kind = "hyperexp"

    def branches(self) -> HyperExp:
        """The fitted two-branch :class:`HyperExp` (balanced means)."""
        m, c = self.mean_, self.scv_
        p1 = 0.5 * (1 + math.sqrt((c - 1) / (c + 1)))
        p2 = 1 - p1
        return HyperExp((p1, p2), (m / (2 * p1), m / (2 * p2)))

    def _sample(self, rng, size): return self.branches()._sample(rng, size)

    def _check(self):
        self._positive("mean", self.mean_)
        if not self.scv_ >= 1:
            raise self._fail(f"scv must be >= 1 for a hyperexponential, got {self.scv_}",
                             hint="for scv < 1 use erlang(k, mean) or gamma(mean, scv)")
        if self.scv_ > MAX_HYPEREXP_SCV:
            # the rare branch's probability, ~1 / (2 scv), would round to 0
            raise self._fail(f"scv must be at most {MAX_HYPEREXP_SCV:g} for a hyperexponential, "
                             f"got {self.scv_:g}", hint="give the branches: hyperexp(p: mean, ...)")


@dataclass(frozen=True)
class Gamma(MeanScv):
    """Gamma with the given mean and squared coefficient of variation."""
    kind = "gamma"

    def _sample(self, rng, size):
        return rng.gamma(1.0 / self.scv_, self.mean_ * self.scv_, size)


@dataclass(frozen=True)
class Lognormal(MeanScv):
    """Lognormal with the given mean and squared coefficient of variation."""
    kind = "lognormal"

    def _sample(self, rng, size):
        s2 = math.log1p(self.scv_)
        return rng.lognormal(math.log(self.mean_) - s2 / 2, math.sqrt(s2), size)


def _phi(x: float) -> float:
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _Phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


@dataclass(frozen=True)
class Normal(Distribution):
    """Normal(mu, sigma) truncated at 0 (a time cannot be negative)."""
    mu: Value
    sigma: Value
    kind = "normal"

    def _moments(self) -> tuple[float, float]:
        a = -self.mu / self.sigma
        z = 1 - _Phi(a)
        lam = _phi(a) / z
        mean = self.mu + self.sigma * lam
        var = self.sigma ** 2 * (1 + a * lam - lam * lam)
        return mean, var

    def _mean(self): return self._moments()[0]

    def _scv(self):
        m, v = self._moments()
        return v / m ** 2

    def _sample(self, rng, size):
        from scipy.special import ndtr, ndtri  # lazy: scipy only when sampling
        lo = ndtr(-self.mu / self.sigma)
        u = rng.uniform(lo, 1.0, size)
        return np.maximum(self.mu + self.sigma * ndtri(u), 0.0)

    def _check(self):
        self._positive("sigma", self.sigma)
        if math.isinf(self.mu):
            raise self._fail("mu must be finite")


@dataclass(frozen=True)
class Empirical(Distribution):
    """Measured samples, drawn at random (``empirical``) or in order (``replay``).

    ``samples`` are numbers in ``unit`` (seconds when None).  ``source`` names
    the file they were read from, so the printer writes the reference back.
    """
    samples: tuple
    replay: bool = False
    unit: str | None = None
    source: str | None = None
    column: int | None = None
    kind = "empirical"

    def values(self) -> np.ndarray:
        """The samples in seconds."""
        from .expr import UNITS
        scale = UNITS[self.unit] if self.unit else 1.0
        return np.asarray(self.samples, dtype=float) * scale

    def bind(self, env):
        """Itself: the samples are numbers already."""
        return self

    def _mean(self):
        with np.errstate(over="ignore", invalid="ignore"):
            return float(self.values().mean())

    def _scv(self):
        # samples near 1e308 overflow: inf or nan here, which check() turns into a located
        # error (no numpy warning lines before it)
        v = self.values()
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            m = v.mean()
            return float(v.var() / m ** 2)

    def _sample(self, rng, size):
        v = self.values()
        return v[rng.integers(0, len(v), size)]

    def _check(self):
        if len(self.samples) == 0:
            raise self._fail("no samples", hint="give a list [1.2, 3.4] or a file with one number per line")
        if min(self.samples) < 0:
            raise self._fail("samples must be >= 0")
        if self._mean() <= 0:
            raise self._fail("samples must not all be zero")


#: Distribution names of the language -> class (for the parser and printer).
DISTRIBUTIONS = ("exp", "det", "uniform", "erlang", "hyperexp", "gamma", "lognormal",
                 "normal", "empirical", "replay")


def exp(mean: Value) -> Exp:
    """Exponential distribution with the given mean."""
    return Exp(as_expr(mean) if not isinstance(mean, (int, float)) else Num(mean))


def describe(d: Distribution) -> str:
    """Short human description, e.g. ``exp(mean 0.05)``."""
    if isinstance(d, Empirical):
        name = "replay" if d.replay else "empirical"
        return f"{name}({len(d.samples)} samples)"
    parts = []
    for a in d.args():
        if isinstance(a, tuple):
            parts.append("[" + ", ".join(fmt(as_expr(x)) for x in a) + "]")
        else:
            parts.append(fmt(as_expr(a)))
    return f"{d.kind}({', '.join(parts)})"
