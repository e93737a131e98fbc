"""Open-loop asyncio client for async_streams_server.py.

Usage: python async_streams_client.py HOST PORT [RATE] [REQUESTS] [CONNECTIONS]

  HOST, PORT   server address
  RATE         mean request rate, per second, Poisson arrivals (default 100)
  REQUESTS     number of requests (default 400)
  CONNECTIONS  number of TCP connections, used round-robin (default 4)

Requests are sent at pre-planned instants (exponential gaps, seeded) whether
or not earlier replies have arrived; replies are matched by request id.
Prints "mean response X.XXX ms" (planned send time to reply).
"""
import asyncio
import random
import statistics
import sys
import time


class Connection:
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer
        self.waiting = {}
        self.reader_task = asyncio.create_task(self._read_replies())

    async def _read_replies(self):
        while True:
            line = await self.reader.readline()
            if not line:
                break
            req_id, _, result = line.decode().partition(" ")
            fut = self.waiting.pop(req_id, None)
            if fut is not None and not fut.done():
                fut.set_result(result.strip())
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError("connection closed"))

    async def request(self, req_id, seed, size):
        fut = asyncio.get_running_loop().create_future()
        self.waiting[str(req_id)] = fut
        self.writer.write(f"{req_id} {seed} {size}\n".encode())
        await self.writer.drain()
        return await fut

    async def close(self):
        self.writer.close()
        await self.writer.wait_closed()
        await self.reader_task


async def run(host, port, rate, n_requests, n_conns, seed=99):
    rng = random.Random(seed)
    plan = []
    t = 0.0
    for i in range(n_requests):
        t += rng.expovariate(rate)
        plan.append((t, rng.randrange(1, 2**31), rng.randint(1500, 2500)))

    conns = []
    for _ in range(n_conns):
        reader, writer = await asyncio.open_connection(host, port)
        conns.append(Connection(reader, writer))

    latencies = []

    async def one(req_id, planned, wseed, size):
        await conns[req_id % n_conns].request(req_id, wseed, size)
        latencies.append(time.perf_counter() - planned)

    tasks = []
    start = time.perf_counter()
    for req_id, (offset, wseed, size) in enumerate(plan):
        planned = start + offset
        delay = planned - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(req_id, planned, wseed, size)))
    await asyncio.gather(*tasks)
    duration = time.perf_counter() - start

    for c in conns:
        await c.close()
    return latencies, duration


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    host = sys.argv[1]
    port = int(sys.argv[2])
    rate = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
    n_requests = int(sys.argv[4]) if len(sys.argv) > 4 else 400
    n_conns = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    latencies, duration = asyncio.run(run(host, port, rate, n_requests, n_conns))
    print(f"requests={len(latencies)} duration={duration:.2f}s "
          f"p95={sorted(latencies)[int(0.95 * len(latencies))] * 1000:.3f}ms",
          file=sys.stderr)
    print(f"mean response {statistics.fmean(latencies) * 1000:.3f} ms")


if __name__ == "__main__":
    main()
