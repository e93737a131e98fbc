"""Edit-distance statistics computed by worker subprocesses.

Usage: python subprocess_workers.py N [PAIRS]
       python subprocess_workers.py worker        (internal: worker mode)

  N      number of worker processes started with subprocess.Popen
  PAIRS  number of string pairs to compare (default 4000)

The driver generates PAIRS random string pairs (seeded), splits them into N
contiguous shares and starts N copies of this script in worker mode.  Each
worker reads its pairs from stdin (one "a b" per line), computes Levenshtein
distances and writes a JSON summary to stdout; the driver combines them.
Prints "elapsed X.XXXX s" (from starting the workers to the combined result).
"""
import json
import random
import subprocess
import sys
import time

ALPHABET = "acgt"


def levenshtein(a, b):
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1,
                               current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def worker_main():
    count = 0
    total = 0
    histogram = {}
    for line in sys.stdin:
        a, b = line.split()
        d = levenshtein(a, b)
        count += 1
        total += d
        histogram[d] = histogram.get(d, 0) + 1
    json.dump({"count": count, "total": total, "histogram": histogram}, sys.stdout)


def make_pairs(n, seed=17):
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        a = "".join(rng.choices(ALPHABET, k=rng.randint(20, 40)))
        b = "".join(rng.choices(ALPHABET, k=rng.randint(20, 40)))
        pairs.append(f"{a} {b}\n")
    return pairs


def driver_main(n_workers, n_pairs):
    pairs = make_pairs(n_pairs)

    start = time.perf_counter()
    share = -(-len(pairs) // n_workers)
    procs = []
    for i in range(n_workers):
        p = subprocess.Popen([sys.executable, __file__, "worker"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append((p, pairs[i * share:(i + 1) * share]))
    # feed every worker before reading any result so they all run concurrently
    for p, part in procs:
        p.stdin.writelines(part)
        p.stdin.close()
    count = total = 0
    histogram = {}
    for p, _ in procs:
        out = p.stdout.read()
        p.stdout.close()
        if p.wait() != 0:
            raise RuntimeError(f"worker {p.pid} exited with {p.returncode}")
        summary = json.loads(out)
        count += summary["count"]
        total += summary["total"]
        for d, c in summary["histogram"].items():
            histogram[int(d)] = histogram.get(int(d), 0) + c
    elapsed = time.perf_counter() - start

    mode = max(histogram, key=histogram.get)
    print(f"pairs={count} mean_distance={total / count:.3f} mode={mode}", file=sys.stderr)
    print(f"elapsed {elapsed:.4f} s")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    if sys.argv[1] == "worker":
        worker_main()
        return
    n_workers = int(sys.argv[1])
    n_pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
    driver_main(n_workers, n_pairs)


if __name__ == "__main__":
    main()
