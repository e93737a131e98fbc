"""Vectorized discrete-event simulation of queueing Petri nets."""
from .. import register
from .solver import DESSolver, SweepResult, simulate

register(DESSolver())

__all__ = ["simulate", "DESSolver", "SweepResult"]
