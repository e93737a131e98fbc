"""Traced ``queue`` queues and ``concurrent.futures`` thread pools.

Every put/get carries ``item`` = ``id(item)``: the same object put into one
queue and taken out of it (or passed on to the next queue) has the same id, so
a request can be followed across threads.  Ids are unique only among objects
alive at the same time; match a get to the earliest unmatched put of the same
id on the same queue (``frontends.trace_query.match_items`` does).

Queues are traced even when library code creates them: the work queue of a
``ThreadPoolExecutor`` is how submitted tasks reach the worker threads.
"""
from __future__ import annotations

import queue
import sys
from functools import partial

from .agent import AIO_FILES, blocking, cpu, emit, gettid, mono, site, site_id, spent
from .sync import declare, ns

_Full, _Empty = queue.Full, queue.Empty
#: the untraced classes, for queues that are the library's plumbing (process pools)
RealQueue, RealSimpleQueue = queue.Queue, queue.SimpleQueue


def _traced_get(q, get, size, block: bool, timeout: float | None):
    """``get(block, timeout)`` of queue ``q`` with its get event (``size()``: items left)."""
    s = site()
    c0 = cpu()
    t0 = mono()
    try:
        item = get(block, timeout)
    except _Empty:
        d, cd = spent(t0, c0)
        emit(("get", gettid(), t0, c0, s, id(q), None, d, 0, False, cd))
        raise
    d, cd = spent(t0, c0)
    emit(("get", gettid(), t0, c0, s, id(q), id(item), d, size(), None, cd))
    return item


blocking(_traced_get, lambda f, tid, d: (
    "get", tid, f.f_locals["t0"], f.f_locals["c0"], f.f_locals["s"], id(f.f_locals["q"]), None,
    d, None, False))


class _QueueMixin:
    _kind = "queue"

    def __init__(self, maxsize: int = 0):
        super().__init__(maxsize)
        declare(self, self._kind, capacity=maxsize if maxsize > 0 else None)

    def put(self, item, block: bool = True, timeout: float | None = None) -> None:
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            super().put(item, block, timeout)
        except _Full:
            d, cd = spent(t0, c0)
            emit(("put", gettid(), t0, c0, s, id(self), id(item), d, self._qsize(), False, cd))
            raise
        d, cd = spent(t0, c0)
        emit(("put", gettid(), t0, c0, s, id(self), id(item), d, self._qsize(), None, cd))

    def get(self, block: bool = True, timeout: float | None = None):
        return _traced_get(self, super().get, self._qsize, block, timeout)


class TracedQueue(_QueueMixin, queue.Queue):
    """``queue.Queue`` that records puts and gets (with the waits)."""
    _kind = "queue"


class TracedLifoQueue(_QueueMixin, queue.LifoQueue):
    """``queue.LifoQueue`` that records puts and gets (with the waits)."""
    _kind = "lifo_queue"


class TracedPriorityQueue(_QueueMixin, queue.PriorityQueue):
    """``queue.PriorityQueue`` that records puts and gets (with the waits)."""
    _kind = "prio_queue"


class TracedSimpleQueue(queue.SimpleQueue):
    """``queue.SimpleQueue`` (C): every entry point is overridden."""

    def __init__(self):
        declare(self, "simple_queue")

    def put(self, item, block: bool = True, timeout: float | None = None) -> None:
        """As ``SimpleQueue.put``; records the put."""
        t = mono()
        super().put(item)
        emit(("put", gettid(), t, cpu(), site(), id(self), id(item), 0, self.qsize()))

    def put_nowait(self, item) -> None:
        """As ``SimpleQueue.put_nowait``; records the put."""
        self.put(item)

    def get(self, block: bool = True, timeout: float | None = None):
        """As ``SimpleQueue.get``; records the get and its wait."""
        return _traced_get(self, super().get, self.qsize, block, timeout)

    def get_nowait(self):
        """As ``SimpleQueue.get_nowait``; records the get."""
        return self.get(False)


def install_futures() -> None:
    """Patch ThreadPoolExecutor (pool object, task spans) and Future.result."""
    from concurrent.futures import _base as futures_base
    from concurrent.futures import thread as futures_thread
    install()                # the pool's work queue is a traced SimpleQueue
    if getattr(futures_thread, "_qpn_patched", False):
        return
    futures_thread._qpn_patched = True
    Pool, WorkItem = futures_thread.ThreadPoolExecutor, futures_thread._WorkItem
    init, run = Pool.__init__, WorkItem.run

    def traced_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        declare(self, "pool", workers=self._max_workers, queue=id(self._work_queue),
                name=self._thread_name_prefix or None)

    def traced_run(self):
        c0 = cpu()
        t0 = mono()
        try:
            run(self)
        finally:
            t1, c1 = mono(), cpu()
            fn = self.fn
            if type(fn) is partial and fn.args and getattr(fn.func, "__name__", None) == "run" \
                    and type(getattr(fn.func, "__self__", None)).__name__ == "Context":
                fn = fn.args[0]          # asyncio.to_thread's partial(context.run, func, ...)
            code = getattr(fn, "__code__", None)
            s = site_id(code.co_filename, code.co_firstlineno) if code is not None else None
            emit(("task", gettid(), t0, c0, s, id(self), t1 - t0, c1 - c0,
                  getattr(fn, "__qualname__", None) or repr(fn), id(self.future)))

    Pool.__init__ = traced_init
    WorkItem.run = traced_run
    install_future_result()


def install_future_result() -> None:
    """Record ``Future.result`` as a wait on the future (once, for thread and process pools).

    A future of a process pool carries its work item's run-wide id (``_qpn_obj``,
    :mod:`.poolpatch`), the ``obj`` of the worker's task span in another process; it is
    recorded once, by the first wait that saw it done (``as_completed``, ``wait`` or
    ``result``).  Other futures are named by ``id()`` and every call is recorded."""
    from concurrent.futures import _base as futures_base
    Future = futures_base.Future
    if getattr(Future, "_qpn_patched", False):
        return
    Future._qpn_patched = True
    Future._qpn_obj = None           # a process pool's work item (poolpatch)
    Future._qpn_waited = False       # its wait is recorded
    result = Future.result

    def traced_result(self, timeout=None):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return result(self, timeout)     # asyncio copying a done future's result
        obj = self._qpn_obj
        if obj is not None and self._qpn_waited:
            return result(self, timeout)
        s = site()
        c0 = cpu()
        t0 = mono()
        ok = None
        try:
            return result(self, timeout)
        except futures_base.TimeoutError:
            ok = False
            raise
        finally:
            d, cd = spent(t0, c0)
            if obj is None:
                obj = id(self)
            elif ok is None:
                self._qpn_waited = True
            emit(("wait", gettid(), t0, c0, s, "future", obj, d, ok, ns(timeout), None,
                  None, cd))

    traced_result.__doc__ = result.__doc__
    Future.result = traced_result
    blocking(traced_result, lambda f, tid, d: (
        "wait", tid, f.f_locals["t0"], f.f_locals["c0"], f.f_locals["s"], "future",
        f.f_locals["obj"] if f.f_locals["obj"] is not None else id(f.f_locals["self"]), d,
        False, ns(f.f_locals["timeout"])))


def install() -> None:
    """Replace the queue module's queue classes by the traced ones."""
    queue.Queue = TracedQueue
    queue.LifoQueue = TracedLifoQueue
    queue.PriorityQueue = TracedPriorityQueue
    queue.SimpleQueue = TracedSimpleQueue
