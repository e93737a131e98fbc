"""A fuzzing harness for the ``qpn`` command line.

It mutates every model and trace the project ships or its tests use, generates
small nets from a grammar-aware Hypothesis strategy, runs ``check``, ``show``,
``fmt``, ``flatten`` and ``solve --method auto`` on models and ``trace-check``
(strict and lenient) and ``build`` on traces, in-process in a worker with a wall
and memory budget, and sorts each run into OK, USER_ERROR, CRASH, HANG, MEMORY
or WRONG (``fmt`` output that does not load or is not canonical).  Failures are
deduplicated by signature and reported with one small reproducing input each.

Run a campaign from the repository root (docs/robustness.md)::

    python -m tools.fuzz --models 2000 --traces 500 --seed 1 --out fuzz-out
"""
from .campaign import Campaign, run_campaign
from .runner import FAILURES, Outcome

__all__ = ["Campaign", "run_campaign", "FAILURES", "Outcome"]
