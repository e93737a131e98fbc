"""A JIT's warm-up: the first iterations of a steady-state loop, before the compiler has
made the code fast, are not the loop's steady state.

A Java pool's first 50 tasks per thread took 1.5-2.2 ms of CPU each, the next 500 about
0.7 ms (``tests/programs/TaskPool.java`` under JFR): kept, they would make every task
18% slower than the program runs once warm.  For a runtime with a JIT (the header's
``runtime.jit``) each thread's iterations are cut where the MSER-5 rule (the simulator's,
qpn/truncation.py) puts the end of the transient: the iterations' CPU in batches of 5,
the first d batches (d at most half) that minimize the squared deviations of the rest
from their mean over the square of their number.

>>> warm_iterations([9, 9, 8, 9, 9] + [3, 2, 3, 3, 2] * 8)
5
>>> warm_iterations([3, 2, 3, 3, 2] * 9)
0
"""
from __future__ import annotations

import numpy as np

from qpn.truncation import mser

BATCH = 5


def warm_iterations(cpu: list) -> int:
    """How many of the first iterations (CPU of each, in order) are the warm-up."""
    means = np.array([sum(cpu[i:i + BATCH]) / BATCH
                      for i in range(0, len(cpu) - BATCH + 1, BATCH)], dtype=float)
    if len(means) < 4 or means.max() - means.min() <= 1e-9 * abs(means.max()):
        return 0                        # (a flat series: rounding must not cut a batch)
    return int(mser(means[None, :, None])[0]) * BATCH
