"""Threads doing equal chunks of work, pure Python or GIL-releasing (suite program d).

Usage: python gil_work.py MODE THREADS CHUNKS
MODE "python": a pure-Python loop (holds the GIL); "hash": hashlib over a 1 MiB
buffer (releases the GIL).  THREADS threads take CHUNKS chunks from a queue; the
program prints the elapsed time of the work.
"""
import hashlib
import queue
import sys
import threading
import time

BUF = bytes(range(256)) * 4096          # 1 MiB


def python_chunk():
    acc = 0
    for i in range(60_000):
        acc = (acc * 31 + i) % 1000003
    return acc


def hash_chunk():
    h = hashlib.sha256()
    for _ in range(4):
        h.update(BUF)
    return h.digest()[0]


def worker(tasks, work):
    while True:
        item = tasks.get()
        if item is None:
            return
        work()


def main(mode="python", nthreads=2, chunks=40):
    work = python_chunk if mode == "python" else hash_chunk
    tasks = queue.Queue()
    for i in range(chunks):
        tasks.put(i)
    for _ in range(nthreads):
        tasks.put(None)
    threads = [threading.Thread(target=worker, args=(tasks, work)) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    t0 = time.perf_counter()
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    print(f"elapsed {time.perf_counter() - t0:.6f}")
