"""A batch of items of two sizes through a worker pool: each worker reads its item's
file and folds its bytes in pure Python, so an item's CPU grows with its size.

Usage: python sized_items.py TASKS WORKERS LARGE_SHARE

The items are 4 KiB and 64 KiB files (written at start); round(TASKS * LARGE_SHARE) of
them are large, in an order shuffled with a fixed seed.  Prints the items done.
"""
import os
import queue
import random
import sys
import tempfile
import threading

SMALL, LARGE = 4096, 65536


def fold(data: bytes) -> int:
    acc = 0
    for b in data:
        acc = (acc * 31 + b) % 1_000_003
    return acc


def worker(q: queue.Queue, results: list, lock: threading.Lock) -> None:
    while True:
        path = q.get()
        if path is None:
            return
        with open(path, "rb") as fh:
            data = fh.read()
        value = fold(data)
        with lock:
            results.append(value)


def main(tasks: int, workers: int, large_share: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for size in (SMALL, LARGE):
            paths[size] = os.path.join(tmp, f"item{size}")
            with open(paths[size], "wb") as fh:
                fh.write(bytes(range(256)) * (size // 256))
        n_large = round(tasks * large_share)
        items = [paths[LARGE]] * n_large + [paths[SMALL]] * (tasks - n_large)
        random.Random(7).shuffle(items)
        q: queue.Queue = queue.Queue()
        results: list = []
        lock = threading.Lock()
        threads = [threading.Thread(target=worker, args=(q, results, lock), name=f"worker-{k}")
                   for k in range(workers)]
        for t in threads:
            t.start()
        for p in items:
            q.put(p)
        for _ in threads:
            q.put(None)
        for t in threads:
            t.join()
        print(f"{len(results)} items")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
