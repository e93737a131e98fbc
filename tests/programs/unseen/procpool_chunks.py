"""Batch word/number statistics over synthetic records using a process pool.

Usage: python procpool_chunks.py N [RECORDS] [CHUNK_SIZE]

  N           number of worker processes (ProcessPoolExecutor max_workers)
  RECORDS     number of records to process (default 60000)
  CHUNK_SIZE  records per submitted chunk (default 2000)

Prints "elapsed X.XXXX s" (wall time from pool creation to merged result).
"""
import random
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
         "nu xi omicron pi rho sigma tau upsilon phi chi psi omega").split()


def make_records(count, seed=12345):
    rng = random.Random(seed)
    records = []
    for i in range(count):
        words = rng.choices(WORDS, k=rng.randint(8, 24))
        values = [rng.randint(1, 10_000) for _ in range(rng.randint(4, 12))]
        records.append(f"{i}|{' '.join(words)}|{','.join(map(str, values))}")
    return records


def digest(value):
    # small pure-Python checksum to give each number some real work
    h = 2166136261
    for ch in str(value * 2654435761 % 1_000_003):
        h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return h


def process_chunk(chunk):
    word_counts = Counter()
    total = 0
    checksum = 0
    longest = ""
    for line in chunk:
        rec_id, text, numbers = line.split("|")
        words = text.split()
        word_counts.update(w.upper() for w in words)
        nums = [int(x) for x in numbers.split(",")]
        total += sum(nums)
        for n in nums:
            checksum ^= digest(n)
        for w in words:
            if len(w) > len(longest):
                longest = w
    return word_counts, total, checksum, longest


def chunked(seq, size):
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    workers = int(sys.argv[1])
    n_records = int(sys.argv[2]) if len(sys.argv) > 2 else 60000
    chunk_size = int(sys.argv[3]) if len(sys.argv) > 3 else 2000

    records = make_records(n_records)

    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        partials = list(pool.map(process_chunk, chunked(records, chunk_size)))

    word_counts = Counter()
    total = 0
    checksum = 0
    longest = ""
    for wc, t, c, l in partials:
        word_counts.update(wc)
        total += t
        checksum ^= c
        if len(l) > len(longest):
            longest = l
    elapsed = time.perf_counter() - start

    top = ", ".join(f"{w}={c}" for w, c in word_counts.most_common(3))
    print(f"records={n_records} total={total} checksum={checksum:08x} top: {top}",
          file=sys.stderr)
    print(f"elapsed {elapsed:.4f} s")


if __name__ == "__main__":
    main()
