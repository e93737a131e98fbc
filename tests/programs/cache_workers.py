"""Workers serving lookups through a shared cache, with rare paths that differ by run.

Usage: python cache_workers.py [REQUESTS] [WORKERS]

The main thread puts REQUESTS random keys into a queue.Queue, then one stop marker per
worker.  A worker takes a key; on a hit it reads the cache under its lock; on a miss it
hashes (hashlib: no GIL) and stores the result under the lock.  Rarely -- whichever
worker happens to be there -- a worker evicts the cache (when it is full, under a second
lock) or appends a line to a log file (every 16th request served).  Which worker takes
which rare path changes from run to run: the workers are identical all the same.
"""
import hashlib
import os
import queue
import random
import sys
import tempfile
import threading

KEYS = 40
LIMIT = 12
DATA = bytes(range(256)) * 2048                  # 512 KiB: a miss costs ~0.3 ms


def main(requests=120, workers=2):
    tasks = queue.Queue()
    cache, lock, evict = {}, threading.Lock(), threading.Lock()
    served = [0]
    log = os.path.join(tempfile.mkdtemp(), "served.log")

    def worker():
        while True:
            key = tasks.get()
            if key is None:
                break
            with lock:
                value = cache.get(key)
            if value is None:
                value = hashlib.sha256(DATA + bytes([key])).hexdigest()
                with lock:
                    cache[key] = value
                    full = len(cache) > LIMIT
                if full:
                    with evict:
                        with lock:
                            cache.clear()
            with lock:
                served[0] += 1
                n = served[0]
            if n % 16 == 0:
                with open(log, "a") as fh:
                    fh.write(f"{n} {value[:8]}\n")

    threads = [threading.Thread(target=worker, name=f"worker-{k}") for k in range(workers)]
    for t in threads:
        t.start()
    for _ in range(requests):
        tasks.put(random.randrange(KEYS))
    for _ in threads:
        tasks.put(None)
    for t in threads:
        t.join()
    print(f"{served[0]} requests on {workers} workers")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
