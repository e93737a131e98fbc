"""Timer-driven record batcher writing compressed, fsync'ed batches to a log.

PRODUCERS threads generate ITEMS records in total (split among them).  Each
record is a few hundred bytes of text -- a synthetic access-log style line
with a pure-Python FNV-1a checksum -- and is handed to a Batcher.  A single
flusher thread waits on a threading.Condition with a timeout and flushes a
batch of at most 64 records whenever 5 ms have passed since the last flush
or 64 records are waiting, whichever comes first.  Each batch is
zlib-compressed and appended to a log file as a length-prefixed frame,
followed by os.fsync.  Producers block while 1024 records are already
pending (back-pressure).

After all producers are done the batcher is closed (final flush), the log
is read back and verified, and one summary line is printed.

Usage: python batcher.py [ITEMS] [PRODUCERS]
"""

import os
import random
import struct
import sys
import tempfile
import threading
import time
import zlib

FLUSH_INTERVAL = 0.005     # seconds
FLUSH_COUNT = 64           # records
MAX_PENDING = 1024         # records buffered before submit() blocks
SEED = 1234

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo "
         "lima mike november oscar papa quebec romeo sierra tango uniform "
         "victor whiskey xray yankee zulu").split()
METHODS = ("GET", "GET", "GET", "POST", "PUT", "DELETE")
STATUSES = (200, 200, 200, 200, 201, 204, 301, 404, 500)


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def make_record(rng, producer, seq):
    path = "/" + "/".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
    query = "&".join(f"{rng.choice(WORDS)}={rng.randint(0, 99999)}"
                     for _ in range(rng.randint(3, 8)))
    agent = " ".join(rng.choice(WORDS).capitalize() for _ in range(6))
    body = (f"p={producer} seq={seq} ts={1_700_000_000 + seq * 7 + producer} "
            f"client=10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)} "
            f"method={rng.choice(METHODS)} path={path}?{query} "
            f"status={rng.choice(STATUSES)} bytes={rng.randint(100, 200000)} "
            f"latency_ms={rng.expovariate(1 / 40.0):.3f} agent=\"{agent}\"")
    raw = body.encode()
    return raw + b" fnv=%016x\n" % fnv1a(raw)


class Batcher:
    def __init__(self, path, interval=FLUSH_INTERVAL, max_count=FLUSH_COUNT,
                 max_pending=MAX_PENDING):
        self.interval = interval
        self.max_count = max_count
        self.max_pending = max_pending
        self.pending = []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)       # wakes the flusher
        self.not_full = threading.Condition(self.lock)   # wakes producers
        self.closed = False
        self.batches = 0
        self.records = 0
        self.raw_bytes = 0
        self.written = 0
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.thread = threading.Thread(target=self._run, name="flusher")
        self.thread.start()

    def submit(self, record):
        with self.cond:
            while len(self.pending) >= self.max_pending and not self.closed:
                self.not_full.wait()
            if self.closed:
                raise RuntimeError("batcher is closed")
            self.pending.append(record)
            if len(self.pending) >= self.max_count:
                self.cond.notify()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()
        self.thread.join()
        os.close(self.fd)

    def _run(self):
        deadline = time.monotonic() + self.interval
        while True:
            with self.cond:
                while len(self.pending) < self.max_count and not self.closed:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self.cond.wait(remaining)
                batch = self.pending[:self.max_count]
                del self.pending[:self.max_count]
                if batch:
                    self.not_full.notify_all()
                done = self.closed and not self.pending
            if batch:
                self._flush(batch)
            deadline = time.monotonic() + self.interval
            if done:
                break

    def _flush(self, batch):
        raw = b"".join(batch)
        data = zlib.compress(raw, 6)
        os.write(self.fd, struct.pack("<II", len(data), len(batch)) + data)
        os.fsync(self.fd)
        self.batches += 1
        self.records += len(batch)
        self.raw_bytes += len(raw)
        self.written += 8 + len(data)


def verify(path):
    records = 0
    with open(path, "rb") as f:
        while header := f.read(8):
            size, count = struct.unpack("<II", header)
            lines = zlib.decompress(f.read(size)).splitlines()
            if len(lines) != count:
                raise ValueError("frame record count mismatch")
            for line in lines:
                body, _, tag = line.rpartition(b" fnv=")
                if int(tag, 16) != fnv1a(body):
                    raise ValueError("bad record checksum")
            records += count
    return records


def main():
    items = int(sys.argv[1]) if len(sys.argv) > 1 else 12000
    nproducers = int(sys.argv[2]) if len(sys.argv) > 2 else 4

    with tempfile.TemporaryDirectory(prefix="batcher-") as tmp:
        path = os.path.join(tmp, "records.log")
        batcher = Batcher(path)

        def producer(idx, count):
            rng = random.Random(SEED + idx)
            for seq in range(count):
                batcher.submit(make_record(rng, idx, seq))

        shares = [items // nproducers + (1 if i < items % nproducers else 0)
                  for i in range(nproducers)]
        threads = [threading.Thread(target=producer, args=(i, shares[i]),
                                    name=f"producer-{i}")
                   for i in range(nproducers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        batcher.close()

        checked = verify(path)

    print(f"items={items} producers={nproducers} batches={batcher.batches} "
          f"avg_batch={batcher.records / max(batcher.batches, 1):.1f} "
          f"raw={batcher.raw_bytes} compressed={batcher.written} "
          f"verified={checked}")


if __name__ == "__main__":
    main()
