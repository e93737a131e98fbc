"""How fast this machine runs Python at this moment: a fixed loop, timed.

On a shared VM a core's speed changes from one spell to the next (here up to 1.9x
for pure Python).  A trace taken in a fast spell gives short CPU demands, and a
model built from it predicts too fast against measurements taken in a slow one.
:func:`python_loop_ns` times a fixed pure-Python loop and gives nanoseconds per
iteration: ``qpn trace`` records it before and after the traced run (the trace
header's ``machine.python_loop_ns``), ``qpn verify`` before every measured run and
shows the ratio of the two; a suite with ``[predict] calibrate = true`` scales the
model's CPU demands by it when it differs from 1 by more than the loop's own spread.
Off by default: on the 21 suites the ratio did not track the programs' own speed
(docs/verify.md, Calibration).

The loop is short (about 15 ms a round) and the best of a few rounds is kept: a
round that the scheduler interrupted is slower, never faster.

>>> ns = python_loop_ns(rounds=1)
>>> 1.0 < ns < 10_000.0
True
>>> speed_ratio([40.0, 42.0], [50.0, 52.0, 51.0])    # traced faster than measured
0.804
>>> loop_spread([40.0, 42.0], [50.0, 52.0, 51.0])     # each side's own variation
0.049
"""
from __future__ import annotations

import statistics
import time

#: iterations of the timed loop, and the rounds of which the fastest counts
LOOP_ITERATIONS = 200_000
ROUNDS = 3


def python_loop_ns(rounds: int = ROUNDS) -> float:
    """Nanoseconds per iteration of a fixed pure-Python loop (the fastest of ``rounds``)."""
    best = float("inf")
    for _ in range(max(1, rounds)):
        t0 = time.perf_counter_ns()
        x = 0
        for i in range(LOOP_ITERATIONS):
            x += i * i % 7
        best = min(best, time.perf_counter_ns() - t0)
    return best / LOOP_ITERATIONS


def speed_ratio(traced: list[float], measured: list[float]) -> float | None:
    """The loop's median time while tracing over its median while measuring (3 digits):
    below 1 when the trace ran faster.  The model's CPU demands, divided by it (the
    ``speedup_*`` parameters), are what the measured runs' machine would have taken.
    None when either side has no calibration."""
    t = _timings(traced)
    m = _timings(measured)
    if not t or not m:
        return None
    return round(statistics.median(t) / statistics.median(m), 3)


def loop_spread(traced: list[float], measured: list[float]) -> float:
    """How much the loop's own timings vary on either side ((max - min) / median, the larger
    side): a speed ratio closer to 1 than this is not told apart from the loop's noise."""
    out = 0.0
    for xs in (_timings(traced), _timings(measured)):
        if len(xs) > 1:
            out = max(out, (max(xs) - min(xs)) / statistics.median(xs))
    return round(out, 3)


def _timings(xs) -> list[float]:
    return [x for x in xs or [] if isinstance(x, (int, float)) and x > 0]


__all__ = ["python_loop_ns", "speed_ratio", "loop_spread", "LOOP_ITERATIONS", "ROUNDS"]
