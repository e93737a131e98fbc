"""Phase-type forms of distributions, for expansion into CTMC phases.

Exact for exp, erlang and hyperexp; a deterministic delay becomes an Erlang of
a stated order; every other distribution is matched to its mean and SCV
(SCV < 1: a mixture of Erlang(k-1) and Erlang(k) with a common rate;
SCV > 1: a two-phase hyperexponential with balanced means).  Each fit says
what it did, so the solver output can list the approximations.

>>> from qpn.distributions import Erlang, Uniform
>>> ph = phase_type(Erlang(3, 1.5))
>>> ph.nphases, ph.exact, round(ph.mean(), 12)
(3, True, 1.5)
>>> phase_type(Uniform(1.0, 3.0)).note
'uniform(1.0, 3.0): matched mean 2 and SCV 0.0833 by an Erlang mixture of 12 phases'
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qpn.distributions import (Det, Distribution, Erlang, Exp, HyperExp, HyperExpFit, describe)

DET_ORDER = 20      # Erlang order standing in for a deterministic delay
MAX_PHASES = 50     # beyond this the state space is not worth it


@dataclass
class PhaseType:
    """PH(alpha, T): start in phase i with alpha[i]; T is the sub-generator."""
    alpha: np.ndarray        # (p,)
    T: np.ndarray            # (p, p)
    exact: bool = True
    note: str = ""

    @property
    def nphases(self) -> int:
        """The number of phases."""
        return len(self.alpha)

    @property
    def exit(self) -> np.ndarray:
        """The exit rate of each phase (-T 1)."""
        return -self.T.sum(axis=1)

    def mean(self) -> float:
        """The mean, alpha (-T)^-1 1."""
        return float(self.alpha @ np.linalg.solve(-self.T, np.ones(self.nphases)))

    def scv(self) -> float:
        """The squared coefficient of variation, from the first two moments."""
        M = np.linalg.inv(-self.T)
        m1 = self.alpha @ M @ np.ones(self.nphases)
        m2 = 2 * self.alpha @ M @ M @ np.ones(self.nphases)
        return float(m2 / m1 ** 2 - 1)


def _erlang(k: int, mean: float) -> tuple[np.ndarray, np.ndarray]:
    if not mean > 0:
        from qpn.errors import SolverError
        raise SolverError("a time of 0 has no phase-type form for the CTMC: make the step an "
                          "immediate transition, or simulate (--method des)",
                          construct="zero time", methods=("des",))
    rate = k / mean
    T = np.diag(np.full(k, -rate))
    for i in range(k - 1):
        T[i, i + 1] = rate
    alpha = np.zeros(k)
    alpha[0] = 1.0
    return alpha, T


def _hyper(probs, means) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(probs, float), np.diag([-1.0 / m for m in means])


def erlang_mixture(mean: float, scv: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Tijms' fit for 0 < scv < 1: with prob p Erlang(k-1), else Erlang(k), common rate."""
    k = max(2, math.ceil(1.0 / scv))
    p = (k * scv - math.sqrt(k * (1 + scv) - k * k * scv)) / (1 + scv)
    rate = (k - p) / mean
    T = np.diag(np.full(k, -rate))
    for i in range(k - 1):
        T[i, i + 1] = rate
    # start in phase 1 (k phases to go) w.p. 1-p, in phase 2 (k-1 to go) w.p. p
    alpha = np.zeros(k)
    alpha[0] = 1 - p
    alpha[1] = p
    return alpha, T, k


def phase_type(d: Distribution, det_order: int = DET_ORDER) -> PhaseType:
    """Phase-type form of a bound (numeric) distribution."""
    if isinstance(d, Exp):
        return PhaseType(np.ones(1), np.array([[-1.0 / d.mean()]]))
    if isinstance(d, Erlang):
        a, T = _erlang(int(d.k), d.mean())
        return PhaseType(a, T)
    if isinstance(d, HyperExp):
        a, T = _hyper(d.probs, d.means)
        return PhaseType(a, T)
    if isinstance(d, HyperExpFit):
        h = d.branches()
        a, T = _hyper(h.probs, h.means)
        return PhaseType(a, T)
    mean, scv = d.mean(), d.scv()
    name = describe(d)
    if isinstance(d, Det) or scv <= 1.0 / MAX_PHASES:
        k = det_order if isinstance(d, Det) else MAX_PHASES
        a, T = _erlang(k, mean)
        what = "deterministic" if isinstance(d, Det) else f"SCV {scv:.3g}"
        return PhaseType(a, T, exact=False,
                         note=f"{name}: {what} approximated by an Erlang of order {k} (SCV {1 / k:.3g})")
    if abs(scv - 1.0) < 1e-12:
        return PhaseType(np.ones(1), np.array([[-1.0 / mean]]), exact=False,
                         note=f"{name}: matched mean {mean:.6g} and SCV 1 by an exponential")
    if scv < 1.0:
        a, T, k = erlang_mixture(mean, scv)
        return PhaseType(a, T, exact=False,
                         note=f"{name}: matched mean {mean:.6g} and SCV {scv:.3g} by an Erlang "
                              f"mixture of {k} phases")
    p1 = 0.5 * (1 + math.sqrt((scv - 1) / (scv + 1)))
    a, T = _hyper((p1, 1 - p1), (mean / (2 * p1), mean / (2 * (1 - p1))))
    return PhaseType(a, T, exact=False,
                     note=f"{name}: matched mean {mean:.6g} and SCV {scv:.3g} by a two-phase "
                          f"hyperexponential")
