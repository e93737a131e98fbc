"""Monte Carlo pricing of a European call option under Black-Scholes.

A fixed total number of simulated terminal prices is split evenly among
worker threads.  Each thread draws its share of standard normal variates,
computes the discounted payoffs and keeps a running sum and sum of squares;
the main thread combines the partial sums at the end into a price estimate
and its standard error, and prints the analytic Black-Scholes price for
comparison.

MODE selects the inner loop:
  numpy   vectorized numpy in chunks of 100k samples (releases the GIL)
  python  a plain Python loop over random.gauss

Usage: python montecarlo.py [MODE] [SAMPLES] [THREADS]
"""

import math
import random
import sys
import threading

import numpy as np

SPOT = 100.0
STRIKE = 105.0
RATE = 0.03
VOL = 0.2
MATURITY = 1.0
CHUNK = 100_000
SEED = 20240611


def black_scholes_call(s, k, r, sigma, t):
    d1 = (math.log(s / k) + (r + 0.5 * sigma * sigma) * t) / (sigma * math.sqrt(t))
    d2 = d1 - sigma * math.sqrt(t)
    cdf = lambda x: 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
    return s * cdf(d1) - k * math.exp(-r * t) * cdf(d2)


def simulate_numpy(n, seed):
    rng = np.random.default_rng(seed)
    drift = (RATE - 0.5 * VOL * VOL) * MATURITY
    diffusion = VOL * math.sqrt(MATURITY)
    discount = math.exp(-RATE * MATURITY)
    total = 0.0
    total_sq = 0.0
    done = 0
    while done < n:
        m = min(CHUNK, n - done)
        z = rng.standard_normal(m)
        st = SPOT * np.exp(drift + diffusion * z)
        payoff = np.maximum(st - STRIKE, 0.0) * discount
        total += float(payoff.sum())
        total_sq += float(np.square(payoff).sum())
        done += m
    return total, total_sq


def simulate_python(n, seed):
    rng = random.Random(seed)
    gauss = rng.gauss
    exp = math.exp
    drift = (RATE - 0.5 * VOL * VOL) * MATURITY
    diffusion = VOL * math.sqrt(MATURITY)
    discount = math.exp(-RATE * MATURITY)
    total = 0.0
    total_sq = 0.0
    for _ in range(n):
        st = SPOT * exp(drift + diffusion * gauss(0.0, 1.0))
        if st > STRIKE:
            p = (st - STRIKE) * discount
            total += p
            total_sq += p * p
    return total, total_sq


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "numpy"
    if mode not in ("numpy", "python"):
        sys.exit("MODE must be 'numpy' or 'python'")
    default_samples = 40_000_000 if mode == "numpy" else 2_000_000
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else default_samples
    nthreads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    worker_fn = simulate_numpy if mode == "numpy" else simulate_python

    shares = [samples // nthreads + (1 if i < samples % nthreads else 0)
              for i in range(nthreads)]
    results = [None] * nthreads

    def worker(idx):
        results[idx] = worker_fn(shares[idx], SEED + idx)

    threads = [threading.Thread(target=worker, args=(i,), name=f"mc-{i}")
               for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    total = sum(r[0] for r in results)
    total_sq = sum(r[1] for r in results)
    mean = total / samples
    var = max(total_sq / samples - mean * mean, 0.0)
    stderr = math.sqrt(var / samples)
    exact = black_scholes_call(SPOT, STRIKE, RATE, VOL, MATURITY)
    print(f"mode={mode} samples={samples} threads={nthreads} "
          f"price={mean:.4f} stderr={stderr:.4f} black_scholes={exact:.4f}")


if __name__ == "__main__":
    main()
