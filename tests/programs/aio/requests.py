"""asyncio phases for tests/tracing/test_asyncio_trace.py: a client making a task per
request, a gather, a semaphore, an executor, a queue.

Usage: python requests.py N      (N requests in the first phase)
Prints the loop thread's CPU time (ns) when the loop has finished.
"""
import asyncio
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def burn(ns):
    """Pure-Python work for about ``ns`` of CPU."""
    end = time.thread_time_ns() + ns
    x = 0
    while time.thread_time_ns() < end:
        for i in range(200):
            x += i * i
    return x


async def request(i, sem):
    async with sem:                              # site: req-acquire
        await asyncio.sleep(0.003)               # site: req-sleep
    burn(1_500_000)
    return i


async def client(n):
    sem = asyncio.Semaphore(2)                   # site: req-sem
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(request(i, sem)))   # site: create
        await asyncio.sleep(0.002)
    for t in tasks:
        await t                                  # site: join


async def child(ms):
    await asyncio.sleep(ms / 1000)
    return ms


async def holder(sem):
    async with sem:                              # site: sem-acquire
        await asyncio.sleep(0.005)


async def offload(pool, i):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(pool, burn, 1_000_000)   # site: offload


async def producer(q, n):
    for i in range(n):
        await q.put(("item", i))                 # site: put
    await q.put(None)


async def consumer(q):
    got = 0
    while await q.get() is not None:             # site: get
        got += 1
    return got


async def main(n):
    await asyncio.create_task(client(n), name="client")        # site: client
    print(await asyncio.gather(child(3), child(1), child(2)))  # site: gather
    sem = asyncio.Semaphore(2)                   # site: sem
    await asyncio.gather(*(holder(sem) for _ in range(5)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        await asyncio.gather(*(offload(pool, i) for i in range(6)))
    q = asyncio.Queue(maxsize=3)                 # site: queue
    got = await asyncio.gather(producer(q, 10), consumer(q))
    print("consumed", got[1])


asyncio.run(main(int(sys.argv[1])))             # site: run
print("loop thread cpu", time.thread_time_ns())
