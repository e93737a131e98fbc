"""The flow check every analytic answer passes before it is printed.

In a steady state each place's tokens arrive as fast as they leave, and its mean
tokens are its arrival rate times its mean residence (Little's law).  An exact
method satisfies both to rounding; an answer that does not is not a steady state,
whatever the solver's own convergence test said.  (A stiff CTMC -- a 1 ns step
beside 200 s of think time -- once gave the five transitions of one cycle
throughputs 26% apart with status ok.)  Simulated results are left out: their
arrivals and departures differ by the tokens in flight at the end, within their
confidence intervals, and the simulator has its own precision rule.
"""
from __future__ import annotations

import math

#: relative difference above which two rates or a Little's-law product disagree
TOLERANCE = 1e-6
#: rates below this (1/s) are compared absolutely: a place that is never visited
FLOOR = 1e-12


def _apart(a: float, b: float, tol: float) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return False            # infinite or undefined values are reported elsewhere
    return abs(a - b) > tol * max(abs(a), abs(b)) + FLOOR


def flow_violations(result, tol: float = TOLERANCE) -> list[str]:
    """What breaks flow balance or Little's law in ``result``'s rows, one line each.

    Parameters
    ----------
    result : Result
        A solver's result (rows of measures per place and color).
    tol : float
        Relative difference allowed.

    Returns
    -------
    list of str
        Empty when the answer balances (always for simulated rows, which carry a
        confidence interval).

    >>> from qpn.solvers.result import Result
    >>> r = Result("ctmc", "m")
    >>> r.add("arrivals", "a", 0.0955); r.add("departures", "a", 0.0963)
    >>> r.add("tokens", "b", 2.0); r.add("arrivals", "b", 0.5); r.add("departures", "b", 0.5)
    >>> r.add("residence", "b", 4.0)
    >>> flow_violations(r)
    ["place 'a': arrivals 0.0955/s but departures 0.0963/s (0.83% apart)"]
    """
    if getattr(result, "level", None) is not None:      # simulated: estimates with a CI level
        return []
    cells: dict[tuple[str, str], dict[str, float]] = {}
    for row in result.rows:
        if row.ci is not None:
            return []
        if row.measure in ("arrivals", "departures", "tokens", "residence"):
            cells.setdefault((row.element, row.color), {})[row.measure] = row.value
    out = []
    for (element, color), c in cells.items():
        where = f"place '{element}'" + (f" color '{color}'" if color else "")
        a, d = c.get("arrivals"), c.get("departures")
        if a is not None and d is not None and _apart(a, d, tol):
            out.append(f"{where}: arrivals {a:.6g}/s but departures {d:.6g}/s "
                       f"({abs(a - d) / max(abs(a), abs(d)):.2%} apart)")
        n, r = c.get("tokens"), c.get("residence")
        if a is not None and n is not None and r is not None and a > FLOOR \
                and _apart(n, a * r, tol):
            out.append(f"{where}: {n:.6g} tokens but arrivals x residence = {a * r:.6g} "
                       "(Little's law)")
    return out
