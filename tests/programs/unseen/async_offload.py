"""asyncio service with an in-process open-loop (Poisson) client.

Usage: python async_offload.py N [RATE] [REQUESTS] [LOOKUP_SLOTS]

  N             threads in the ThreadPoolExecutor used for CPU work
  RATE          mean arrival rate, requests per second (default 100)
  REQUESTS      number of requests to issue (default 400)
  LOOKUP_SLOTS  asyncio.Semaphore size guarding the simulated lookup (default 8)

Each request awaits a simulated lookup (asyncio.sleep of 2-5 ms) under the
semaphore, then hands CPU work (a pure-Python scoring loop plus SHA-256) to
the executor via loop.run_in_executor.  Arrivals are scheduled in advance and
sent at their planned instants regardless of completions.

Prints "mean response X.XXX ms" (planned send time to response).
"""
import asyncio
import hashlib
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def score_document(doc_id, size):
    """CPU-bound part of a request: a toy scoring pass and a digest."""
    acc = doc_id
    tokens = []
    for i in range(size):
        acc = (acc * 1103515245 + 12345) & 0x7FFFFFFF
        if acc % 7 == 0:
            tokens.append(acc % 997)
    score = sum(t * t for t in tokens) % 100_003
    digest = hashlib.sha256(repr(tokens).encode()).hexdigest()
    return score, digest[:12]


class Service:
    def __init__(self, executor, lookup_slots):
        self.executor = executor
        self.lookup_sem = asyncio.Semaphore(lookup_slots)

    async def handle(self, req_id, lookup_delay, work_size):
        async with self.lookup_sem:
            await asyncio.sleep(lookup_delay)  # simulated database/cache lookup
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, score_document, req_id, work_size)


async def client(service, rate, n_requests, seed=7):
    rng = random.Random(seed)
    plan = []
    t = 0.0
    for i in range(n_requests):
        t += rng.expovariate(rate)
        plan.append((t, rng.uniform(0.002, 0.005), rng.randint(3000, 5000)))

    latencies = []

    async def one(req_id, planned, lookup_delay, work_size):
        await service.handle(req_id, lookup_delay, work_size)
        latencies.append(time.perf_counter() - planned)

    tasks = []
    start = time.perf_counter()
    for req_id, (offset, lookup_delay, work_size) in enumerate(plan):
        planned = start + offset
        delay = planned - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(req_id, planned, lookup_delay, work_size)))
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - start


async def main_async(workers, rate, n_requests, slots):
    with ThreadPoolExecutor(max_workers=workers) as executor:
        service = Service(executor, slots)
        latencies, duration = await client(service, rate, n_requests)
    print(f"requests={len(latencies)} duration={duration:.2f}s "
          f"p95={sorted(latencies)[int(0.95 * len(latencies))] * 1000:.3f}ms",
          file=sys.stderr)
    print(f"mean response {statistics.fmean(latencies) * 1000:.3f} ms")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    workers = int(sys.argv[1])
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
    n_requests = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    slots = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    asyncio.run(main_async(workers, rate, n_requests, slots))


if __name__ == "__main__":
    main()
