"""asyncio TCP server doing per-request CPU work in the default executor.

Usage: python async_streams_server.py N PORT [HOST]

  N     max_workers of the loop's default ThreadPoolExecutor (used by asyncio.to_thread)
  PORT  TCP port to listen on
  HOST  interface to bind (default 127.0.0.1)

Protocol: newline-delimited text.  A request line is "ID SEED SIZE"; the
reply is "ID RESULT".  Requests on one connection are handled concurrently
and replies may come back out of order.  Runs until SIGTERM or SIGINT.
"""
import asyncio
import signal
import sys
from concurrent.futures import ThreadPoolExecutor


def compute(seed, size):
    """Toy CPU work: generate numbers, bucket them, return a short summary."""
    x = seed
    buckets = [0] * 16
    for _ in range(size):
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        buckets[(x >> 60) & 15] += 1
    peak = max(range(16), key=buckets.__getitem__)
    return f"{peak}:{buckets[peak]}:{sum(i * b for i, b in enumerate(buckets))}"


async def handle_client(reader, writer):
    write_lock = asyncio.Lock()
    pending = set()

    async def serve_one(line):
        try:
            req_id, seed, size = line.split()
            result = await asyncio.to_thread(compute, int(seed), int(size))
            reply = f"{req_id} {result}\n"
        except ValueError:
            reply = "ERR bad request\n"
        async with write_lock:
            writer.write(reply.encode())
            await writer.drain()

    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            task = asyncio.create_task(serve_one(line.decode()))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionResetError, BrokenPipeError):
            pass


async def main_async(workers, host, port):
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="worker")
    loop.set_default_executor(executor)

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    server = await asyncio.start_server(handle_client, host, port)
    print(f"listening on {host}:{port} with {workers} executor threads", file=sys.stderr)
    async with server:
        await stop.wait()
    executor.shutdown(wait=True, cancel_futures=True)
    print("server stopped", file=sys.stderr)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    workers = int(sys.argv[1])
    port = int(sys.argv[2])
    host = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"
    asyncio.run(main_async(workers, host, port))


if __name__ == "__main__":
    main()
