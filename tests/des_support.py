"""Shared checks for the simulator's correctness tests (tests/simulation/test_des_*.py).

How the tolerances are derived
------------------------------
For R >= 2 replications the simulator reports, per measure, the half-width
``h = t(0.975, R-1) * s / sqrt(R)`` of a 95% Student-t confidence interval.
A test accepts an estimate when ``|estimate - exact| <= K_CI * h`` with
``K_CI = 1.8``: for R = 20 (t = 2.09) that is 3.8 standard errors, which a
correct simulator exceeds with probability about 1e-3 per check.  So a test
does not start failing when the random streams change slightly (another
order of draws, another kernel), yet a systematic error of a few standard
errors is caught.  A 95% interval that misses the exact value at the fixed
seed but lies within 1.8 half-widths is accepted on purpose (with dozens of
checks, a few 95% misses are expected).

So that no check passes merely because its interval is wide, every check also
bounds the half-width itself (``max_rel``: the interval must be narrower than
this fraction of the exact value).
"""
from __future__ import annotations

import math
import os

import numpy as np

import qpn

K_CI = 1.8

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "models")
DES_MODELS = os.path.join(HERE, "models_des")


# Fixed seed of every check; DES_TEST_SEED=n reruns the suite with another one
# (to see that no check passes or fails only by the luck of one seed).
SEED = int(os.environ.get("DES_TEST_SEED", "1"))


def des(net, options: dict, **params):
    """Simulate with quiet output and the fixed seed unless the options say otherwise."""
    o = {"seed": SEED, "quiet": True}
    o.update(options)
    return qpn.solve(net, method="des", options=o, **params)


def cell_label(measure: str, element: str, color: str = "") -> str:
    return f"{measure}({element}{', ' + color if color else ''})"


def assert_covers(res, measure: str, element: str, color: str, exact: float, *,
                  max_rel: float | None = 0.05, what: str = "") -> None:
    """The estimate lies within K_CI half-widths of ``exact``; the interval is informative."""
    est = res.get(measure, element, color)
    h = res.ci(measure, element, color)
    label = cell_label(measure, element, color) + (f" [{what}]" if what else "")
    assert math.isfinite(est), f"{label}: estimate {est}"
    assert h is not None and math.isfinite(h), f"{label}: no confidence interval (estimate {est})"
    if h <= 1e-12 * max(1.0, abs(est)):
        # a conserved quantity (identical in every replication up to rounding): must be exact
        assert abs(est - exact) <= 1e-9 * max(1.0, abs(exact)), \
            f"{label}: constant estimate {est!r} != exact {exact!r}"
        return
    assert abs(est - exact) <= K_CI * h, (
        f"{label}: estimate {est:.6g} +/- {h:.3g} (95% CI) vs exact {exact:.6g}: "
        f"off by {abs(est - exact) / h:.2f} half-widths (allowed {K_CI}), "
        f"relative error {abs(est - exact) / abs(exact) if exact else float('nan'):.2%}")
    if max_rel is not None:
        assert h <= max_rel * abs(exact), (
            f"{label}: half-width {h:.3g} is {h / abs(exact):.1%} of the exact value {exact:.6g}; "
            f"the test needs <= {max_rel:.0%} to mean anything")


def assert_all_cover(res, exact_res, measures=("throughput", "tokens"), *, min_value: float = 1e-9,
                     max_rel: float = 0.05, precise_above: float = 0.1, what: str = "") -> int:
    """Every cell of ``measures`` in the analytic result ``exact_res`` is covered by the
    simulation; cells whose exact value is at least ``precise_above`` must also have
    a half-width below ``max_rel`` of it (tiny values are checked for coverage only,
    their relative interval is naturally wide).  Returns the number of cells checked."""
    n = 0
    for cell in exact_res.rows:
        if cell.measure not in measures or abs(cell.value) < min_value:
            continue
        assert_covers(res, cell.measure, cell.element, cell.color, cell.value,
                      max_rel=max_rel if abs(cell.value) >= precise_above else None, what=what)
        n += 1
    return n


def t_quantile(level: float, df: int) -> float:
    from scipy.stats import t
    return float(t.ppf(0.5 + level / 2, df))


def mean_and_halfwidth(values, level: float = 0.95) -> tuple[float, float]:
    """Sample mean and Student-t half-width of independent estimates."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), t_quantile(level, len(v) - 1) * float(v.std(ddof=1)) / math.sqrt(len(v))
