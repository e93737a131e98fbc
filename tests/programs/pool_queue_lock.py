"""A thread pool draining a bounded queue (suite program a).

Usage: python pool_queue_lock.py [TASKS] [WORKERS]

The main thread puts TASKS tasks into a bounded ``queue.Queue``; WORKERS pool
threads (``ThreadPoolExecutor``) take them, compute in pure Python, add to
shared totals under a ``threading.Lock`` and hand each finished task to a
results queue that the main thread drains.  Lines marked ``# site:`` are
checked by tests/tracing/test_trace_pytrace.py.
"""
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

CAPACITY = 8


class Task:
    __slots__ = ("n", "result")

    def __init__(self, n):
        self.n = n
        self.result = None


def compute(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    return acc


def worker(tasks, results, lock, totals):
    done = 0
    while True:
        task = tasks.get()  # site: get
        if task is None:
            return done
        task.result = compute(task.n)
        with lock:  # site: lock
            totals["sum"] += task.result
            totals["count"] += 1
        results.put(task)  # site: result-put
        done += 1


def main(ntasks=1000, nworkers=3):
    tasks = queue.Queue(maxsize=CAPACITY)  # site: tasks-queue
    results = queue.Queue()
    lock = threading.Lock()  # site: lock-object
    totals = {"sum": 0, "count": 0}
    with ThreadPoolExecutor(max_workers=nworkers) as pool:  # site: pool
        futures = [pool.submit(worker, tasks, results, lock, totals) for _ in range(nworkers)]
        for i in range(ntasks):
            tasks.put(Task(6000 + (i % 7) * 500))  # site: put
        for _ in range(nworkers):
            tasks.put(None)  # site: stop
        finished = [results.get() for _ in range(ntasks)]  # site: result-get
        done = sum(f.result() for f in futures)
    assert done == ntasks == totals["count"] == len(finished)
    print(f"{ntasks} tasks on {nworkers} workers, checksum {totals['sum']}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
