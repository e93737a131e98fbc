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
    """Simulate ``net``; with ``sweep`` a SweepResult, else a Result."""
    o = options_of(options)
    if o.scheduler:
        return simulate_distributed(net, sweep=sweep, options=o, params=params)
    points = sweep_points(sweep)
    compiled = [compile_net(net, {**(params or {}), **pt}) for pt in points]
    return _simulate_compiled(compiled, points, o, sweep is not None)


class DESSolver:
    """``des``: discrete-event simulation with confidence intervals (every construct)."""
    name = "des"
    Options = DESOptions

    def problems(self, compiled, options: dict) -> list[str]:
        """None: the simulator runs every construct of the language."""
        return []

    def solve(self, compiled, options: dict) -> Result:
        """Simulate independent replications (in threads, processes or on a Dask
        scheduler) until the relative half-width of every chosen measure's confidence
        interval reaches ``precision``, or a cap stops them (said on the result)."""
        o = options_of(options)
        if o.scheduler:
            return simulate_distributed(compiled.net, sweep=None, options=o, params=dict(compiled.params))
        return _simulate_compiled([compiled], [{}], o, False)


__all__ = ["simulate", "DESSolver", "SweepResult", "PointResult", "sweep_points"]
