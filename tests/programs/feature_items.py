"""A batch of in-memory items of three sizes through a worker pool: each worker compares
every pair of its item's numbers in pure Python, so an item's CPU grows with the square of
its size.  Nothing is read: the program names each item's size with
``qpn.frontends.pytrace.feature`` (free when untraced) for ``qpn build`` to fit on.

Usage: python feature_items.py TASKS WORKERS LARGE_SHARE

Sizes 80 (the rest), 120 and 160 (15% each) and 320 numbers (LARGE_SHARE of the items),
in an order shuffled with a fixed seed.  Prints the items done.
"""
import queue
import random
import sys
import threading

try:
    from qpn.frontends.pytrace import feature
except ImportError:                     # run without qpn installed: no features
    def feature(name, value):
        return None

SIZES = (80, 120, 160, 320)


def close_pairs(values: list) -> int:
    n = 0
    for a in values:
        for b in values:
            if abs(a - b) < 0.01:
                n += 1
    return n


def worker(q: queue.Queue, results: list, lock: threading.Lock) -> None:
    while True:
        item = q.get()
        if item is None:
            return
        feature("numbers", len(item))
        value = close_pairs(item)
        with lock:
            results.append(value)


def main(tasks: int, workers: int, large_share: float) -> None:
    rng = random.Random(7)
    n_large, n_medium = round(tasks * large_share), round(tasks * 0.15)
    sizes = [SIZES[3]] * n_large + [SIZES[2]] * n_medium + [SIZES[1]] * n_medium
    sizes += [SIZES[0]] * (tasks - len(sizes))
    rng.shuffle(sizes)
    q: queue.Queue = queue.Queue()
    results: list = []
    lock = threading.Lock()
    threads = [threading.Thread(target=worker, args=(q, results, lock), name=f"worker-{k}")
               for k in range(workers)]
    for t in threads:
        t.start()
    for n in sizes:
        q.put([rng.random() for _ in range(n)])
    for _ in threads:
        q.put(None)
    for t in threads:
        t.join()
    print(len(results))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
