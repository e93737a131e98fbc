"""A JIT's warm-up: the first iterations of a steady-state loop, before the compiler has
made the code fast, are not the loop's steady state.

A Java pool's first 50 tasks per thread took 1.5-2.2 ms of CPU each, the next 500 about
0.7 ms (``tests/programs/TaskPool.java`` under JFR): kept, they would make every task
18% slower than the program runs once warm.  For a runtime with a JIT (the header's
``runtime.jit``) each thread's iterations are cut where the MSER-5 rule puts the end of
the transient: the iterations' CPU in batches of 5, the first d batches (d at most half)
that minimize the squared deviations of the rest from their mean over the square of
their number.

>>> warm_iterations([9, 9, 8, 9, 9] + [3, 2, 3, 3, 2] * 8)
5
>>> warm_iterations([3, 2, 3, 3, 2] * 9)
0
"""
from __future__ import annotations

BATCH = 5


def warm_iterations(cpu: list) -> int:
    """How many of the first iterations (CPU of each, in order) are the warm-up."""
    means = [sum(cpu[i:i + BATCH]) / BATCH for i in range(0, len(cpu) - BATCH + 1, BATCH)]
    n = len(means)
    if n < 4:
        return 0
    tail_sum = tail_sq = 0.0
    stats = [0.0] * n
    for d in range(n - 1, -1, -1):          # the rest's sums from the end backwards
        tail_sum += means[d]
        tail_sq += means[d] * means[d]
        k = n - d
        stats[d] = (tail_sq - tail_sum * tail_sum / k) / (k * k)
    best = min(stats[:n // 2 + 1])
    # the first d at the minimum (rounding makes equal tails' statistics differ slightly)
    scale = max(abs(m) for m in means) ** 2 or 1.0
    cut = next(d for d in range(n // 2 + 1) if stats[d] <= best + 1e-12 * scale)
    return cut * BATCH
