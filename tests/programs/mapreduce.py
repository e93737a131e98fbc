"""Rounds of map-reduce: a parallel map over chunks on a ThreadPoolExecutor, then a
serial reduce in the main thread.

Usage: python mapreduce.py [ROUNDS] [WORKERS]

Every round maps 12 chunks (zlib compression of 128 KiB: releases the GIL for most
of its time) with ``executor.map`` and reduces the results in pure Python.
"""
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor

CHUNKS = 12
DATA = bytes((i * 7919) % 251 for i in range(131072))


def compress(k: int) -> int:
    return len(zlib.compress(DATA[k:] + DATA[:k], 6))


def main(rounds=10, workers=2):
    total = 0
    with ThreadPoolExecutor(max_workers=workers) as ex:
        for r in range(rounds):
            sizes = list(ex.map(compress, range(r, r + CHUNKS)))
            acc = 0
            for _ in range(40):
                for s in sizes:
                    acc = (acc * 33 + s) % 65_521
            total += acc
    print(f"{rounds} rounds on {workers} workers: {total}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
