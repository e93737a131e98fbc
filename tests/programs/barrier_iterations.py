"""Barrier-synchronized iterations, like Java Grande's Moldyn (suite program b).

Usage: python barrier_iterations.py [ITERATIONS] [THREADS]

THREADS workers wait for a start ``Event``, then run ITERATIONS iterations:
a pure-Python part (needs the GIL), a hashlib part (releases the GIL), a short
section limited by a ``BoundedSemaphore`` and a ``Barrier`` wait.  The last
worker to finish notifies the main thread through a ``Condition``.
"""
import hashlib
import sys
import threading

BLOCK = bytes(range(256)) * 8192          # 2 MiB for hashlib (GIL released): ~half an iteration


def python_work(n):
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 7919
    return acc


def main(iterations=40, nthreads=3):
    start = threading.Event()
    barrier = threading.Barrier(nthreads)  # site: barrier-object
    writers = threading.BoundedSemaphore(2)  # site: sem-object
    finished = threading.Condition()
    state = {"done": 0, "digest": b""}

    def worker(k):
        start.wait()  # site: start-wait
        for it in range(iterations):
            python_work(15000 + 1000 * k)
            digest = hashlib.sha256(BLOCK).digest()
            with writers:  # site: sem
                state["digest"] = digest
            barrier.wait()  # site: barrier-wait
        with finished:
            state["done"] += 1
            finished.notify_all()  # site: notify

    threads = [threading.Thread(target=worker, args=(k,), name=f"worker-{k}")
               for k in range(nthreads)]
    for t in threads:
        t.start()
    start.set()
    with finished:
        finished.wait_for(lambda: state["done"] == nthreads)  # site: cond-wait
    for t in threads:
        t.join()  # site: join
    print(f"{iterations} iterations on {nthreads} threads, digest {state['digest'].hex()[:12]}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
