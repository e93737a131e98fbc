"""An open-loop load generator inside the program: requests arrive on a schedule
(Poisson, RATE per second) whatever the workers are doing.

Usage: python open_client.py [REQUESTS] [WORKERS] [RATE] [FIXED]

The client thread keeps a schedule: it draws the next arrival time from an exponential
distribution and sleeps until then (not for a fixed time after its own work), then puts
a request stamped with its arrival time into a queue.  WORKERS threads take requests,
hash a block (hashlib: no GIL) and fold the digest (pure Python), and record the
request's response time.  The program prints the mean response time in ms.  With
FIXED = 1 the client instead sleeps a fixed 1 / RATE after each request (its period
then includes its own work: not a schedule).
"""
import hashlib
import queue
import random
import sys
import threading
import time

BLOCK = bytes(range(256)) * 1024                      # 256 KiB


def handle(stamp: float) -> None:
    digest = hashlib.sha256(BLOCK + str(stamp).encode()).digest()
    acc = 0
    for _ in range(6):
        for b in digest:
            acc = (acc * 33 + b) % 65_521


def main(requests=200, workers=2, rate=400, fixed=0):
    q = queue.Queue()
    times = []

    def client():
        nxt = time.perf_counter()
        for _ in range(requests):
            if fixed:
                time.sleep(1 / rate)
            else:
                nxt += random.expovariate(rate)
                delay = nxt - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            q.put(time.perf_counter())
        for _ in range(workers):
            q.put(None)

    def worker():
        while True:
            stamp = q.get()
            if stamp is None:
                return
            handle(stamp)
            times.append(time.perf_counter() - stamp)

    threads = [threading.Thread(target=client, name="client")]
    threads += [threading.Thread(target=worker, name=f"worker-{k}") for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{len(times)} requests, mean response {1000 * sum(times) / len(times):.3f} ms")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]), *(float(a) for a in sys.argv[3:4]),
         *(int(a) for a in sys.argv[4:5]))
