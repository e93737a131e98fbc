"""Draw one service time or delay for one lane (numba).

Each lane has its own numpy Generator (see :func:`solvers.des.events.lane_generators`),
passed to the loop; every family is drawn with the Generator's own methods.
A sampler's parameters are the lane's ``smp_par`` region (mean, then the
family's own), its tables (hyperexponential branches, measured samples) a
stretch of the net's ``smp_tab``.
"""
from __future__ import annotations

import math

from ..flat import (S_DET, S_EMPIRICAL, S_ERLANG, S_EXP, S_GAMMA, S_HYPER, S_LOGNORMAL, S_NORMAL,
                    S_REPLAY, S_UNIFORM)
from .layout import NF_SMP_TAB, PF_SMP_PAR, PI_SMP_N, PI_SMP_OFF, SI_CURSOR, SMP_KIND
from .options import kernel


@kernel
def truncated_normal(g, mu: float, sigma: float, below: float) -> float:
    """Normal(mu, sigma) conditioned on >= 0; ``below`` = P(X < 0)."""
    if below < 0.5:                  # at most two tries on average
        while True:
            x = mu + sigma * g.standard_normal()
            if x >= 0.0:
                return x
    # most of the mass is cut off: sample the tail z >= a by an exponential proposal
    # (Robert 1995, optimal rate), then scale back
    a = -mu / sigma
    alpha = 0.5 * (a + math.sqrt(a * a + 4.0))
    while True:
        z = a + g.standard_exponential() / alpha
        if g.random() <= math.exp(-0.5 * (z - alpha) * (z - alpha)):
            return mu + sigma * z


@kernel
def draw(ni, nf, si, sf, sid: int, g) -> float:
    """One draw of sampler ``sid`` for this lane."""
    kind = ni[ni[SMP_KIND] + sid]
    p = ni[PF_SMP_PAR] + 4 * sid
    if kind == S_EXP:
        return sf[p] * g.standard_exponential()
    if kind == S_DET:
        return sf[p]
    if kind == S_UNIFORM:
        return sf[p + 1] + (sf[p + 2] - sf[p + 1]) * g.random()
    if kind == S_ERLANG:
        k = int(sf[p + 1])
        if k <= 16:
            s = 0.0
            for _ in range(k):
                s += g.standard_exponential()
        else:
            s = g.standard_gamma(float(k))
        return s * sf[p] / k
    if kind == S_GAMMA:
        return g.standard_gamma(sf[p + 1]) * sf[p + 2]
    if kind == S_LOGNORMAL:
        return math.exp(sf[p + 1] + sf[p + 2] * g.standard_normal())
    if kind == S_NORMAL:
        return truncated_normal(g, sf[p + 1], sf[p + 2], sf[p + 3])
    tab = ni[NF_SMP_TAB] + si[ni[PI_SMP_OFF] + sid]
    n = si[ni[PI_SMP_N] + sid]
    if kind == S_HYPER:                  # cumulative branch probabilities, then branch means
        u = g.random()
        b = 0
        while b < n - 1 and u >= nf[tab + b]:
            b += 1
        return nf[tab + n + b] * g.standard_exponential()
    if kind == S_EMPIRICAL:
        return nf[tab + min(int(g.random() * n), n - 1)]
    if kind == S_REPLAY:
        c = ni[SI_CURSOR] + sid
        i = si[c] % n
        si[c] += 1
        return nf[tab + i]
    return math.nan
