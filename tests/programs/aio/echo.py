"""A start_server echo server and an open_connection client in one process
(tests/tracing/test_asyncio_trace.py).

Usage: python echo.py LINES
"""
import asyncio
import sys


done = None


async def handle(reader, writer):
    while line := await reader.readline():      # site: server-recv
        writer.write(line.upper())               # site: server-send
        await writer.drain()
    writer.close()
    await writer.wait_closed()
    done.set()


async def main(lines):
    global done
    done = asyncio.Event()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)   # site: connect
    for i in range(lines):
        writer.write(b"line %d\n" % i)           # site: client-send
        reply = await reader.readexactly(7)      # site: client-recv
        assert reply == b"LINE %d\n" % i, reply
    writer.close()
    await writer.wait_closed()
    await done.wait()
    server.close()
    await server.wait_closed()
    print("echoed", lines)


asyncio.run(main(int(sys.argv[1])))
