"""Exact CTMC solution of queueing Petri nets (vectorized state-space generation)."""
from ..registry import register
from .solver import CTMC, CTMCSolver, build, measures, solve_transient

register(CTMCSolver())

__all__ = ["CTMC", "CTMCSolver", "build", "measures", "solve_transient"]
