"""Rounds of a fixed amount of work split among the workers, the main thread taking
part in every round's barrier (like a solver whose driver merges each sweep).

Usage: python split_rounds.py [ROUNDS] [WORKERS]

Every round hashes ROWS rows: worker k takes rows k, k + WORKERS, k + 2 WORKERS, ...
(so one worker does all of them, eight do an eighth each), hashes each (hashlib:
the GIL is released) and folds the digests in pure Python.  Then the WORKERS
workers and the main thread meet at a ``Barrier(WORKERS + 1)``; the main thread
merges the round's partial results (pure Python) while the workers start the next
round.
"""
import hashlib
import sys
import threading

ROWS = 48
ROW = bytes(range(256)) * 1024                 # 256 KiB per row


def fold(digest: bytes, n: int) -> int:
    acc = 0
    for _ in range(n):
        for b in digest:
            acc = (acc * 31 + b) % 1_000_003
    return acc


def main(rounds=20, workers=2):
    barrier = threading.Barrier(workers + 1)
    partial = [0] * workers
    total = 0

    def worker(k):
        for _ in range(rounds):
            acc = 0
            for row in range(k, ROWS, workers):
                acc ^= fold(hashlib.sha256(ROW + row.to_bytes(2, "little")).digest(), 8)
            partial[k] = acc
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(k,), name=f"worker-{k}") for k in range(workers)]
    for t in threads:
        t.start()
    for _ in range(rounds):
        barrier.wait()
        total = (total + fold(bytes(p % 256 for p in partial), 400)) % 1_000_003
    for t in threads:
        t.join()
    print(f"{rounds} rounds of {ROWS} rows on {workers} workers: {total}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
