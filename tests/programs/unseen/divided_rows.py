"""Jacobi relaxation of a 2-D heat grid, rows divided among threads.

Usage: python divided_rows.py N [SIZE] [ITERATIONS]

  N           number of worker threads; each owns a contiguous band of rows
  SIZE        grid is SIZE x SIZE (default 1000)
  ITERATIONS  Jacobi sweeps (default 200)

Threads synchronise with a threading.Barrier after every sweep; the barrier
action swaps the read and write buffers.  Prints "elapsed X.XXXX s".
"""
import sys
import threading
import time

import numpy as np


def make_grid(size, seed=3):
    rng = np.random.default_rng(seed)
    grid = rng.random((size, size)) * 0.1
    grid[0, :] = 1.0          # hot top edge
    grid[-1, :] = 0.0
    grid[:, 0] = np.linspace(1.0, 0.0, size)
    grid[:, -1] = np.linspace(1.0, 0.0, size)
    return grid


class Relaxation:
    def __init__(self, grid, n_threads, iterations):
        self.buffers = [grid, grid.copy()]
        self.iterations = iterations
        self.n_threads = n_threads
        interior = grid.shape[0] - 2
        edges = np.linspace(1, 1 + interior, n_threads + 1).astype(int)
        self.bands = list(zip(edges[:-1], edges[1:]))
        self.barrier = threading.Barrier(n_threads, action=self._swap)

    def _swap(self):
        self.buffers.reverse()

    def worker(self, lo, hi):
        tmp = np.empty((hi - lo, self.buffers[0].shape[1] - 2))  # per-thread scratch
        for _ in range(self.iterations):
            cur, nxt = self.buffers
            if hi > lo:
                np.add(cur[lo - 1:hi - 1, 1:-1], cur[lo + 1:hi + 1, 1:-1], out=tmp)
                tmp += cur[lo:hi, :-2]
                tmp += cur[lo:hi, 2:]
                np.multiply(tmp, 0.25, out=nxt[lo:hi, 1:-1])
            self.barrier.wait()

    def run(self):
        threads = [threading.Thread(target=self.worker, args=band, name=f"band-{i}")
                   for i, band in enumerate(self.bands)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self.buffers[0]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    n_threads = int(sys.argv[1])
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    iterations = int(sys.argv[3]) if len(sys.argv) > 3 else 200

    grid = make_grid(size)
    start = time.perf_counter()
    result = Relaxation(grid, n_threads, iterations).run()
    mean_temp = float(result.mean())
    elapsed = time.perf_counter() - start
    print(f"grid={size}x{size} iterations={iterations} mean={mean_temp:.6f}", file=sys.stderr)
    print(f"elapsed {elapsed:.4f} s")


if __name__ == "__main__":
    main()
