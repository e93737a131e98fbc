"""Read-mostly in-memory cache guarded by a readers-writer lock.

A shared dict maps 256 keys to derived values (a SHA-256 digest over a
64 KiB blob built from the key and a version number, plus some metadata).
WORKERS threads serve REQUESTS lookups between them.  Roughly 1 request in
50 is an update: the worker takes the write lock, bumps the entry's version
and recomputes its value with hashlib.sha256 over ~64 KiB.  All other
requests take the read lock, fetch the entry and do a little pure-Python
work on it (a checksum over the digest bytes and a small token lookup).

The readers-writer lock is built on threading.Condition: any number of
readers may hold it at once, a writer holds it alone, and waiting writers
block new readers so that updates are not starved.

Usage: python rwcache.py [REQUESTS] [WORKERS]
"""

import hashlib
import random
import sys
import threading
from contextlib import contextmanager

NUM_KEYS = 256
BLOB_SIZE = 64 * 1024
UPDATE_EVERY = 50          # about 1 in 50 requests is an update
SEED = 99


class RWLock:
    """Many readers or one writer; writers get preference."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_read(self):
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self):
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    def acquire_write(self):
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True

    def release_write(self):
        with self._cond:
            self._writer = False
            self._cond.notify_all()

    @contextmanager
    def read_locked(self):
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextmanager
    def write_locked(self):
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()


def compute_value(key, version):
    seed = f"{key}:{version}:".encode()
    blob = (seed * (BLOB_SIZE // len(seed) + 1))[:BLOB_SIZE]
    digest = hashlib.sha256(blob).digest()
    tokens = [digest[i:i + 4].hex() for i in range(0, 32, 4)]
    return {"key": key, "version": version, "digest": digest, "tokens": tokens}


def summarize(value, probe):
    """The bit of per-read work a caller would do with a cached value."""
    acc = 0
    for i, b in enumerate(value["digest"]):
        acc = (acc * 31 + (b ^ i)) & 0xFFFFFFFF
    hit = sum(1 for t in value["tokens"] if probe in t)
    return acc + hit + value["version"]


class Cache:
    def __init__(self, num_keys):
        self.lock = RWLock()
        self.data = {f"user:{k}": compute_value(f"user:{k}", 0)
                     for k in range(num_keys)}

    def get(self, key):
        with self.lock.read_locked():
            value = self.data[key]
            return summarize(value, key[-1])

    def refresh(self, key):
        with self.lock.write_locked():
            old = self.data[key]
            self.data[key] = compute_value(key, old["version"] + 1)


def main():
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 150000
    nworkers = int(sys.argv[2]) if len(sys.argv) > 2 else 4

    cache = Cache(NUM_KEYS)
    keys = list(cache.data)
    shares = [requests // nworkers + (1 if i < requests % nworkers else 0)
              for i in range(nworkers)]
    reads = [0] * nworkers
    writes = [0] * nworkers
    checks = [0] * nworkers

    def worker(idx):
        rng = random.Random(SEED + idx)
        nread = nwrite = check = 0
        for _ in range(shares[idx]):
            # skewed popularity: low-numbered keys are requested more often
            key = keys[min(int(rng.expovariate(1 / 40.0)), NUM_KEYS - 1)]
            if rng.randrange(UPDATE_EVERY) == 0:
                cache.refresh(key)
                nwrite += 1
            else:
                check = (check + cache.get(key)) & 0xFFFFFFFF
                nread += 1
        reads[idx], writes[idx], checks[idx] = nread, nwrite, check

    threads = [threading.Thread(target=worker, args=(i,), name=f"worker-{i}")
               for i in range(nworkers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    total_versions = sum(v["version"] for v in cache.data.values())
    print(f"requests={requests} workers={nworkers} reads={sum(reads)} "
          f"updates={sum(writes)} versions={total_versions} "
          f"checksum={sum(checks) & 0xFFFFFFFF:08x}")


if __name__ == "__main__":
    main()
