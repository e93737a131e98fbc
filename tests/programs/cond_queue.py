"""A hand-written producer / consumer: a Condition and a deque, per-item objects.

Usage: python cond_queue.py [ITEMS] [WORKERS] [GAP_US]

The main thread makes ITEMS jobs, one every GAP_US microseconds of pure-Python
work, each with its own lock (made per item, like a server's per-connection
lock), appends it to a ``collections.deque`` under a lock and notifies a
``threading.Condition``.  WORKERS threads wait on the condition while the
deque is empty, pop a job, hash its data with the job's lock held, and count
it under a shared lock.  The hand-over shows in a trace only as the lock, the
waits and the notifies (the deque is not traced); the per-item locks are a
different object every time.  Prints ``done N`` when all jobs were served.
"""
import collections
import hashlib
import sys
import threading


class Job:
    __slots__ = ("data", "lock", "digest")

    def __init__(self, data: bytes):
        self.data = data
        self.lock = threading.Lock()      # one per job: contends only within the job
        self.digest = None


def spin(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    return acc


class Dispatcher:
    def __init__(self):
        self.jobs = collections.deque()
        self.lock = threading.Lock()
        self.ready = threading.Condition(self.lock)
        self.stopping = False
        self.count_lock = threading.Lock()
        self.served = 0

    def add(self, job: Job) -> None:
        with self.lock:
            self.jobs.append(job)
            self.ready.notify()

    def work(self) -> None:
        while True:
            with self.lock:
                while not self.jobs and not self.stopping:
                    self.ready.wait()
                if not self.jobs:             # stopping and drained
                    return
                job = self.jobs.popleft()
            spin(3000)
            with job.lock:
                job.digest = hashlib.sha256(job.data * 256).hexdigest()
            with self.count_lock:
                self.served += 1

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            self.ready.notify_all()


def main(items: int = 200, workers: int = 3, gap_us: int = 1500) -> int:
    d = Dispatcher()
    threads = [threading.Thread(target=d.work, name=f"worker-{i}") for i in range(workers)]
    for t in threads:
        t.start()
    per_us = 12                               # spin() steps per microsecond, roughly
    for i in range(items):
        spin(gap_us * per_us // 10)
        d.add(Job(str(i).encode()))
    d.stop()
    for t in threads:
        t.join()
    print(f"done {d.served}")
    return d.served


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
