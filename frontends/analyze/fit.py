"""Distributions fitted to measured samples, chosen by the squared coefficient of variation.

=================  =======================================================
SCV c               distribution written
=================  =======================================================
one sample, c<0.01  ``det(mean)``
0.01 <= c < 0.75    ``erlang(k, mean)``, k = round(1/c) phases (c = 1/k), at most 50
0.75 <= c <= 1.3    ``exp(mean)``
c > 1.3             ``hyperexp(p1: m1, p2: m2)`` (two phases fitted by EM)
                    or ``lognormal(m, c)``, whichever gives the sample the
                    higher likelihood
=================  =======================================================

All of them match the sample mean exactly (EM keeps it too) and the SCV as
closely as the family allows (qpn/distributions.py has their exact moments).  Times are ns here
and written with a unit.

>>> from qpn.dsl.printing import fmt_dist
>>> fmt_dist(fit([100_000] * 5).dist())
'det(100 us)'
>>> f = fit([50_000, 100_000, 150_000, 100_000, 60_000, 140_000])
>>> f.family, round(f.scv, 3), fmt_dist(f.dist("speedup_x"))
('erlang', 0.137, 'erlang(7, 100 us / speedup_x)')
>>> fmt_time(4_100_000), fmt_time(1_234), fmt_time(2.5e9)
('4.1 ms', '1.234 us', '2.5 s')
>>> from qpn.distributions import Erlang
>>> f.dist("speedup_x") == Erlang(Num(7), BinOp("/", Num(100, "us"), Ref("speedup_x")))
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qpn.distributions import Det, Distribution, Erlang, Exp, HyperExp, HyperExpFit, Lognormal
from qpn.expr import BinOp, Expr, Num, Ref

MAX_PHASES = 50
#: det below this SCV: closer to 0 than to erlang(MAX_PHASES)'s 1/50.  (It was 0.05, which
#: wrote work with a 21% standard deviation as constant: two such hashers sharing cores
#: then stayed phase-locked in the model, and its simulation did not converge in 60 s.)
DET_BELOW = 0.5 / MAX_PHASES


def fmt_time(ns: float) -> str:
    """A time in ns as a model literal with a unit and 4 significant digits."""
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{_g(ns / scale)} {unit}"
    return f"{_g(ns)} ns"


def number(text: str) -> Num:
    """The number a model literal stands for, as the parser reads it (whole digits: an
    int; else a float; a leading minus negates).

    >>> number("12"), number("4.1"), number("-3")
    (Num(value=12, unit=None), Num(value=4.1, unit=None), Num(value=-3, unit=None))
    """
    text = str(text)
    if text.startswith("-"):
        n = number(text[1:])
        return Num(-n.value, n.unit)
    return Num(int(text) if text.isdigit() else float(text))


def time_num(ns: float) -> Num:
    """A time in ns as the literal :func:`fmt_time` writes (its unit and 4 digits).

    >>> time_num(4_100_000)
    Num(value=4.1, unit='ms')
    """
    value, unit = fmt_time(ns).split(" ")
    return Num(number(value).value, unit)


def _g(x: float) -> str:
    s = f"{x:.4g}"
    if "e" in s:
        s = f"{x:.6f}".rstrip("0").rstrip(".")
    return s


@dataclass
class Fit:
    """A fitted distribution: family, mean (ns), SCV, phases, sample size."""

    family: str
    mean: float
    scv: float
    n: int
    k: int = 1
    sd: float = 0.0
    phases: tuple = ()        # hyperexp fitted by EM: ((p1, mean1), (p2, mean2)) in ns

    def dist(self, speedup: str | None = None, *, mean: Expr | None = None,
             scale: float = 1.0, factor: Expr | None = None) -> Distribution:
        """The distribution as a model object.

        ``speedup`` names the parameter dividing the mean, ``mean`` replaces the mean by
        an expression (``1 / rate``), ``scale`` multiplies it (a share of the fragment),
        ``factor`` multiplies it by an expression (a parameter).
        """
        def scaled(m: Expr) -> Expr:
            if factor is not None:
                m = BinOp("*", m, factor)
            if speedup:
                m = BinOp("/", m, Ref(speedup))
            return m
        m = scaled(mean if mean is not None else time_num(self.mean * scale))
        if self.family == "det":
            return Det(m)
        if self.family == "exp":
            return Exp(m)
        if self.family == "erlang":
            return Erlang(Num(self.k), m)
        if self.family == "hyperexp" and self.phases and mean is None:
            return HyperExp(tuple(number(_g(p)) for p, _ in self.phases),
                            tuple(scaled(time_num(x * scale)) for _, x in self.phases))
        if self.family == "hyperexp":
            return HyperExpFit(m, number(_g(self.scv)))
        if self.family == "lognormal":
            return Lognormal(m, number(_g(self.scv)))
        raise ValueError(self.family)

    def describe(self) -> str:
        """The sample size, mean and SCV, for a model comment."""
        return f"{self.n} samples, mean {fmt_time(self.mean)}, scv {_g(self.scv)}"


def uneven(samples_by: dict, *, min_n: int = 3, ratio: float = 1.2,
           p: float = 1e-3) -> dict | None:
    """{key: mean} when the keys' samples (those with at least ``min_n``) have
    means ``ratio`` or more apart, lowest to highest, and the two are different
    beyond chance (Welch's t-test, p < ``p``); else None.

    >>> uneven({"a": [1, 1.1, 0.9], "b": [2, 2.1, 1.9], "c": [9]})
    {'a': 1.0, 'b': 2.0}
    >>> uneven({"a": [1, 1, 1], "b": [1.1, 1.1, 1.1]}) is None
    True
    >>> uneven({"a": [0.2, 1, 1.8], "b": [0.5, 2, 3.5]}) is None     # could be chance
    True
    """
    groups = {k: np.asarray(v, dtype=float) for k, v in samples_by.items() if len(v) >= min_n}
    if len(groups) < 2:
        return None
    means = {k: float(v.mean()) for k, v in groups.items()}
    lo = min(means, key=means.get)
    hi = max(means, key=means.get)
    if means[lo] <= 0 or means[hi] < ratio * means[lo]:
        return None
    a, b = groups[lo], groups[hi]
    if a.var() == 0 and b.var() == 0:
        return means
    return means if welch_p(a, b) < p else None


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of Welch's t-test (unequal variances) for samples ``a``, ``b``:
    scipy.stats.ttest_ind(a, b, equal_var=False).pvalue, without importing scipy.stats
    (1.2 s, a fifth of a small qpn build); the t distribution is scipy.special's.

    >>> round(welch_p(np.array([1, 1.1, 0.9]), np.array([2, 2.1, 1.9])), 6)
    0.000255
    """
    from scipy.special import stdtr
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0:
        return 0.0 if a.mean() != b.mean() else 1.0
    t = (a.mean() - b.mean()) / math.sqrt(se2)
    df = se2 ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return float(2 * stdtr(df, -abs(t)))


def moments(samples) -> tuple[int, float, float]:
    """(n, mean, scv) of a sample.

    >>> moments([1, 2, 3])
    (3, 2.0, 0.16666666666666666)
    """
    a = np.asarray(samples, dtype=float)
    n = len(a)
    if n == 0:
        return 0, 0.0, 0.0
    m = float(a.mean())
    if n < 2 or m <= 0:
        return n, m, 0.0
    return n, m, float(a.var() / (m * m))


def fit(samples, *, families=("det", "erlang", "exp", "hyperexp", "lognormal")) -> Fit:
    """The distribution for a sample of positive times (ns), chosen by SCV."""
    a = np.asarray(samples, dtype=float)
    n, m, c = moments(a)
    sd = math.sqrt(c) * m
    if n == 0 or m <= 0:
        return Fit("det", 0.0, 0.0, n)
    if n == 1 or c < DET_BELOW:
        return Fit("det", m, c, n, sd=sd)
    if c < 0.75:
        k = max(2, min(MAX_PHASES, round(1.0 / c)))
        return Fit("erlang", m, c, n, k, sd=sd)
    if c <= 1.3:
        return Fit("exp", m, c, n, sd=sd)
    family, phases = _heavy(a, m, c)
    return Fit(family, m, c, n, sd=sd, phases=phases)


def _h2_em(x: np.ndarray, iters: int = 60) -> tuple[float, float, float]:
    """Maximum-likelihood two-phase hyperexponential (EM): (p1, mean1, mean2).

    EM keeps the sample mean: p1 m1 + (1 - p1) m2 = mean(x).
    """
    m = float(x.mean())
    p, m1, m2 = 0.5, 0.5 * m, 1.5 * m
    for _ in range(iters):
        a = p / m1 * np.exp(-x / m1)
        b = (1 - p) / m2 * np.exp(-x / m2)
        r = a / np.maximum(a + b, 1e-300)
        w = float(r.sum())
        if w <= 0 or w >= len(x):
            break
        p = w / len(x)
        m1 = float((r * x).sum() / w)
        m2 = float(((1 - r) * x).sum() / (len(x) - w))
    if m1 > m2:
        p, m1, m2 = 1 - p, m2, m1
    return p, m1, m2


def _heavy(a: np.ndarray, m: float, c: float) -> tuple[str, tuple]:
    """hyperexp (fitted by EM) or lognormal, by the log-likelihood of the sample."""
    x = a[a > 0]
    if len(x) > 20000:
        x = x[np.linspace(0, len(x) - 1, 20000).astype(int)]
    if len(x) < 5:
        return "hyperexp", ()
    p, m1, m2 = _h2_em(x)
    ll_h = float(np.sum(np.log(p / m1 * np.exp(-x / m1) + (1 - p) / m2 * np.exp(-x / m2)
                               + 1e-300)))
    s2 = math.log(1 + c)
    mu = math.log(m) - s2 / 2
    lx = np.log(x)
    ll_l = float(np.sum(-lx - 0.5 * math.log(2 * math.pi * s2) - (lx - mu) ** 2 / (2 * s2)))
    if ll_l > ll_h:
        return "lognormal", ()
    if not (0.001 < p < 0.999) or m1 <= 0:
        return "hyperexp", ()
    p = float(f"{p:.4g}")                 # written with 4 digits; the two add up to 1
    return "hyperexp", ((p, m1), (float(f"{1 - p:.4g}"), m2))


def split_bimodal(samples, threshold: float) -> tuple[list, list]:
    """(below, at or above) the threshold: cache hits and device accesses."""
    lo = [x for x in samples if x < threshold]
    hi = [x for x in samples if x >= threshold]
    return lo, hi
