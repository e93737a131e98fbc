"""Pure-Python statistics over a list, divided among threads.

Usage: python divided_python.py N [ITEMS]

  N      number of threads; the input list is cut into N contiguous slices
  ITEMS  number of input integers (default 60000)

Each thread counts primes (trial division) and sums digit-sums in its slice;
the main thread combines the partial results.  Prints "elapsed X.XXXX s".
"""
import random
import sys
import threading
import time


def is_prime(n):
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def digit_sum(n):
    s = 0
    while n:
        n, r = divmod(n, 10)
        s += r
    return s


def analyse(values, results, index):
    primes = 0
    digits = 0
    largest_prime = 0
    for v in values:
        if is_prime(v):
            primes += 1
            largest_prime = max(largest_prime, v)
        digits += digit_sum(v)
    results[index] = (primes, digits, largest_prime)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    n_threads = int(sys.argv[1])
    n_items = int(sys.argv[2]) if len(sys.argv) > 2 else 60000

    rng = random.Random(42)
    data = [rng.randrange(1_000_000, 50_000_000) for _ in range(n_items)]

    start = time.perf_counter()
    size = -(-len(data) // n_threads)
    slices = [data[i:i + size] for i in range(0, len(data), size)]
    results = [None] * len(slices)
    threads = [threading.Thread(target=analyse, args=(part, results, i))
               for i, part in enumerate(slices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    primes = sum(r[0] for r in results)
    digits = sum(r[1] for r in results)
    largest = max(r[2] for r in results)
    elapsed = time.perf_counter() - start

    print(f"items={n_items} primes={primes} digit_sum={digits} largest_prime={largest}",
          file=sys.stderr)
    print(f"elapsed {elapsed:.4f} s")


if __name__ == "__main__":
    main()
