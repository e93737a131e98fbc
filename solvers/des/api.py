"""The simulator's entry points: :func:`simulate` and the ``des`` solver.

Both run on this process (threads and worker processes) unless the ``scheduler`` option
names a Dask scheduler, which gets the points and replications instead
(:mod:`solvers.des.distributed`).

>>> import qpn
>>> res = simulate(qpn.load("models/mm1.qpn"), options={"time": 2000, "replications": 4,
...                                                     "seed": 1, "quiet": True})
>>> res.method, res.level
('des', 0.95)
"""
from __future__ import annotations

from qpn.compile import compile_net

from ..result import Result
from ..sweep_result import PointResult, SweepResult, sweep_points  # noqa: F401  (this module's API)
from .distributed import simulate_distributed
from .options import DESOptions
from .solver import _simulate_compiled, options_of


def simulate(net, *, sweep: dict | None = None, options: dict | None = None, params: dict | None = None):
    """Simulate ``net``; with ``sweep`` a SweepResult, else a Result.

    >>> import qpn
    >>> net = qpn.load("models/mm1.qpn")
    >>> opts = {"time": 20000, "replications": 4, "seed": 1, "quiet": True}
    >>> res = simulate(net, params={"lambda": 0.5}, options=opts)     # M/M/1 at rho 0.5
    >>> abs(res.get("tokens", "server") - 1.0) < 0.1, abs(res.get("response", "server") - 2.0) < 0.2
    (True, True)
    >>> sw = simulate(net, sweep={"lambda": [0.25, 0.5]}, options=opts)
    >>> type(sw).__name__, [p.params for p in sw.points]
    ('SweepResult', [{'lambda': 0.25}, {'lambda': 0.5}])
    """
    o = options_of(options)
    if o.scheduler:
        return simulate_distributed(net, sweep=sweep, options=o, params=params)
    points = sweep_points(sweep)
    compiled = [compile_net(net, {**(params or {}), **pt}) for pt in points]
    return _simulate_compiled(compiled, points, o, sweep is not None)


class DESSolver:
    """``des``: discrete-event simulation with confidence intervals (every construct).

    >>> import qpn
    >>> c = qpn.compile_net(qpn.load("models/mm1.qpn"), {"lambda": 0.5})
    >>> des = DESSolver()
    >>> res = des.solve(c, {"time": 20000, "replications": 4, "seed": 1, "quiet": True})
    >>> des.name, res.level, abs(res.get("utilization", "server") - 0.5) < 0.05
    ('des', 0.95, True)
    """
    name = "des"
    Options = DESOptions

    def problems(self, compiled, options: dict) -> list[str]:
        """None: the simulator runs every construct of the language.

        >>> import qpn
        >>> DESSolver().problems(qpn.compile_net(qpn.load("models/rr_cpu.qpn")), {})
        []
        """
        return []

    def solve(self, compiled, options: dict) -> Result:
        """Simulate independent replications (in threads, processes or on a Dask
        scheduler) until every chosen measure's confidence interval is as narrow as the
        options ``rtol`` (relative half-width) or ``atol`` ask, or a cap stops them (said
        on the result).

        >>> import qpn
        >>> c = qpn.compile_net(qpn.load("models/mm1.qpn"), {"lambda": 0.5})
        >>> res = DESSolver().solve(c, {"time": 20000, "replications": 4, "seed": 1, "quiet": True})
        >>> cell = res.cell("tokens", "server")                  # exact: 1
        >>> abs(cell.value - 1.0) < 0.1, 0 < cell.ci < 0.1, cell.n > 0
        (True, True, True)
        """
        o = options_of(options)
        _check_open_load(compiled)
        if o.scheduler:
            return simulate_distributed(compiled.net, sweep=None, options=o, params=dict(compiled.params))
        return _simulate_compiled([compiled], [{}], o, False)


def _check_open_load(compiled) -> None:
    """An open product-form net that saturates a station has no steady state to
    simulate towards: Unstable (exit 5) now, as auto says, not a run that ends with
    a warm-up warning and exit 0."""
    from ..mva.open import check_open_load
    from ..mva.productform import product_form
    qn = product_form(compiled)
    if not isinstance(qn, list):
        check_open_load(qn)


__all__ = ["simulate", "DESSolver", "SweepResult", "PointResult", "sweep_points"]
