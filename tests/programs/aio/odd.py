"""asyncio used in unusual ways, for tests/tracing/test_asyncio_trace.py: the traced run
must print what the untraced one prints.

A loop run inside a task (as nest_asyncio does), loops in two threads, a task cancelled,
a task never awaited, a task whose exception nobody retrieves, a task factory, a Task made
directly, uvloop if installed (else the default loop).
"""
import asyncio
import threading
import time


async def leaf(x):
    await asyncio.sleep(0.001)
    return x * 2


async def both():
    return await asyncio.gather(leaf(1), leaf(2))


def run_nested():
    """Run a second loop inside the running one's step (what nest_asyncio allows)."""
    outer = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(both())
        finally:
            loop.close()
    finally:
        asyncio.events._set_running_loop(outer)


async def nesting():
    await asyncio.sleep(0.001)
    return run_nested()


async def fails():
    await asyncio.sleep(0)
    raise ValueError("nobody asks")


async def forever():
    await asyncio.Event().wait()


async def main(tag):
    out = [await asyncio.create_task(nesting())]
    t = asyncio.create_task(forever())
    await asyncio.sleep(0.002)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        out.append("cancelled")
    asyncio.create_task(asyncio.sleep(5))            # never awaited: cancelled at the end
    f = asyncio.create_task(fails())
    await asyncio.sleep(0.002)
    out.append(type(f.exception()).__name__)
    loop = asyncio.get_running_loop()
    loop.set_task_factory(lambda lp, coro, **kw: asyncio.Task(coro, loop=lp, **kw))
    out.append(await loop.create_task(leaf(21)))
    loop.set_task_factory(None)
    out.append(await asyncio.Task(leaf(4)))
    return tag, out


cpu = {}


def in_thread(tag):
    cpu[tag] = (asyncio.run(main(tag)), time.thread_time_ns())


threads = [threading.Thread(target=in_thread, args=(f"thread-{i}",)) for i in range(2)]
for th in threads:
    th.start()
for th in threads:
    th.join()
try:
    import uvloop
    result = uvloop.run(main("uvloop"))
except ImportError:
    result = asyncio.run(main("main"))
for tag in sorted(cpu):
    print(cpu[tag][0])
print(result)
for tag in sorted(cpu):
    print("cpu", tag, cpu[tag][1])
print("cpu main", time.thread_time_ns())
