"""Collatz statistics over many small integer ranges with multiprocessing.Pool.imap_unordered.

Usage: python mp_imap.py N [TASKS] [TASK_SIZE]

  N          pool size (worker processes)
  TASKS      number of tasks (default 2000)
  TASK_SIZE  integers per task (default 25)

Each task gets a pseudo-random starting point (seeded) and computes Collatz
chain lengths for TASK_SIZE consecutive integers; the parent aggregates
results as they arrive.  Prints "elapsed X.XXXX s".
"""
import multiprocessing as mp
import random
import sys
import time


def collatz_len(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def task(args):
    task_id, start, size = args
    best_n, best_len, total = start, 0, 0
    for n in range(start, start + size):
        length = collatz_len(n)
        total += length
        if length > best_len:
            best_n, best_len = n, length
    return task_id, total, best_n, best_len


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    workers = int(sys.argv[1])
    n_tasks = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 25

    rng = random.Random(2024)
    jobs = [(i, rng.randint(1, 10_000_000), size) for i in range(n_tasks)]

    start = time.perf_counter()
    grand_total = 0
    best = (0, 0)
    done = 0
    with mp.Pool(processes=workers) as pool:
        for task_id, total, best_n, best_len in pool.imap_unordered(task, jobs):
            grand_total += total
            if best_len > best[1]:
                best = (best_n, best_len)
            done += 1
    elapsed = time.perf_counter() - start

    print(f"tasks={done} total_steps={grand_total} longest={best[0]} ({best[1]} steps)",
          file=sys.stderr)
    print(f"elapsed {elapsed:.4f} s")


if __name__ == "__main__":
    main()
