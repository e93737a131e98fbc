"""Process pools traced like thread pools whose threads live in other processes.

``concurrent.futures.ProcessPoolExecutor`` and ``multiprocessing.Pool`` are recorded with
the events :func:`.queues.install_futures` gives a ``ThreadPoolExecutor``, under ids that
agree across the processes' traces (:mod:`.layout`: ``SHARED_IDS``):

* in the parent, at the pool's creation: an ``object`` of type ``pool`` (``workers``,
  ``queue`` = Q, ``name``, ``processes: true``) and ``object`` s of type ``queue`` for Q
  (the work) and R (the results), each ``SHARED_IDS`` + the inode of the pool's pipe
  (the call queue's or the task queue's, the result queue's): both ends of a pipe have
  one inode, in the parent and in forked or spawned workers;
* in the submitting thread, a ``put obj=Q item=I`` per work item (I: :func:`.layout.
  shared_item` of Q and the executor's work id, or the pool's job and task index);
* in a worker: ``get obj=Q item=I`` (``dur``: the wait for the item's bytes; unpickling
  the arguments follows it), a ``task`` span (``item``, ``obj`` = I, ``func``) around the
  call, then ``put obj=R item=I`` around sending the pickled result (pickling it is the
  worker's CPU between the two);
* in the parent, every wait for a result is ``wait on=future obj=I``: ``Future.result``,
  ``as_completed``, ``wait``, ``Executor.map``'s iteration; ``AsyncResult.get``/``wait``,
  the next result of ``imap``/``imap_unordered``, ``map`` returning.  A wait for several
  results (``wait(fs)``, ``Pool.map``) is one wait per result: the first lasts until the
  last result came, the others take no time; so each task's result is waited for once,
  as the analyzer counts them (docs/analyzer.md, "Waits on futures").

The executors' own threads (a ``ProcessPoolExecutor``'s manager and feeder, a ``Pool``'s
task, result and worker handlers) record no puts or gets: their traffic is the library's
plumbing.  Only the standard library may be imported here (see :mod:`.agent`).
"""
from __future__ import annotations

import importlib
import sys
import types
from types import ModuleType

from .agent import blocking, cpu, emit, gettid, mono, site, site_id, spent
from .layout import ITEM_BITS, LONG, shared_item
from .procpatch import channel_id, ns, raw_method, raw_queue


def _declare_pool(pool, workers, q: int, r: int, name: str) -> None:
    """The pool's ``object`` events: Q and R, then the pool."""
    tid, t, c, s = gettid(), mono(), cpu(), site()
    emit(("object", tid, t, c, s, q, "queue", None))
    emit(("object", tid, t, c, s, r, "queue", None))
    emit(("object", tid, t, c, s, id(pool), "pool",
          {"workers": workers, "queue": q, "name": name, "processes": True}))


def _callable_of(fn, wrappers: tuple):
    """The program's function behind ``fn`` (a pool's chunk helper holds it)."""
    inner = getattr(fn, "func", None)                 # functools.partial(_process_chunk, f)
    if inner is not None and inner in wrappers and getattr(fn, "args", None):
        return fn.args[0]
    return fn


_SHOWN: dict = {}          # a task's function -> (site, name)


def _task(fn, item: int, shown):
    """``fn`` timed as a ``task`` span of work item ``item`` (``shown``: the program's
    function it runs, for ``func`` and the site)."""
    try:
        s, name = _SHOWN[shown]
    except (KeyError, TypeError):
        code = getattr(shown, "__code__", None)
        s = site_id(code.co_filename, code.co_firstlineno) if code is not None else None
        name = getattr(shown, "__qualname__", None) or repr(shown)
        try:
            _SHOWN[shown] = s, name
        except TypeError:                      # (unhashable)
            pass

    def run(*args, **kwargs):
        c0 = cpu()
        t0 = mono()
        try:
            return fn(*args, **kwargs)
        finally:
            t1, c1 = mono(), cpu()
            emit(("task", gettid(), t0, c0, s, item, t1 - t0, c1 - c0, name, item))
    return run


def _waits(s, t0: int, c0: int, items: list, ok=None, timeout=None) -> None:
    """One wait per result: the first (the result that ended the wait) with the wait's
    time, the others after it, taking none."""
    t1, c1 = mono(), cpu()
    d = t1 - t0
    tid = gettid()
    emit(("wait", tid, t0, c0, s, "future", items[0] if items else None, d, ok, ns(timeout),
          None, None, c1 - c0 if d > LONG else None))
    for it in items[1:]:
        emit(("wait", tid, t1, c1, s, "future", it, 0))


def _pickler():
    """multiprocessing's pickler (as its queues use it)."""
    p = _PICKLER[0]
    if p is None:
        from multiprocessing.reduction import ForkingPickler
        p = _PICKLER[0] = ForkingPickler
    return p


_PICKLER: list = [None]


def _cut_wait(f, tid: int, d: int) -> tuple:
    """The record of a wait for a result cut short by a signal (which result: unknown)."""
    L = f.f_locals
    return ("wait", tid, L["t0"], L["c0"], L["s"], "future", None, d, False,
            ns(L.get("timeout")))


def _cut_received(f, tid: int, d: int) -> tuple:
    """The record of a worker's get cut short by a signal (``Pool.terminate``)."""
    L = f.f_locals
    return ("get", tid, L["t0"], L["c0"], L["s"], L["self"]._ch, None, d, None, False)


class _End:
    """A worker's end of one of its pool's queues (``multiprocessing.queues.Queue`` or
    ``SimpleQueue``); what the worker does not call is delegated.  What a call needs is
    bound once: the unwrapped connection methods (:func:`.procpatch.raw`), the locks, the
    pickler, the calling line (the same for every call)."""

    def __init__(self, q, ch: int, base: int, last: list):
        self._q, self._ch, self._base, self._last = q, ch, base, last
        self._site = None
        pickler = _pickler()
        self._loads, self._dumps = pickler.loads, pickler.dumps

    def __getattr__(self, name):
        return getattr(self._q, name)

    def _caller(self) -> int | None:
        f = sys._getframe(2)
        s = self._site = site_id(f.f_code.co_filename, f.f_lineno)
        return s


class _WorkEnd(_End):
    """The worker's end of the pool's work queue Q: ``get`` records the pool's get of the
    item (the wait for its bytes; unpickling after it) and wraps its call in a task span;
    ``decode(message)`` gives (item, message to return) or None (a stop sentinel)."""

    def __init__(self, q, ch: int, base: int, last: list, decode):
        super().__init__(q, ch, base, last)
        self._decode = decode
        self._recv = raw_method(q._reader, "recv_bytes")
        self._rlock, self._sem = q._rlock, getattr(q, "_sem", None)

    def get(self, *args, **kwargs):
        if args not in ((), (True,)) or kwargs.get("timeout") is not None:
            return self._q.get(*args, **kwargs)
        s = self._site or self._caller()
        c0 = cpu()
        t0 = mono()
        with self._rlock:
            res = self._recv()
        if self._sem is not None:               # a Queue (not a SimpleQueue): a slot freed
            self._sem.release()
        d = mono() - t0
        cd = cpu() - c0 if d > LONG else None
        msg = self._loads(res)
        try:
            got = self._decode(msg)
        except Exception:                       # noqa: BLE001  the worker gets its message
            got = None
        if got is None:
            return msg
        item, msg = got
        emit(("get", gettid(), t0, c0, s, self._ch, item, d, None, None, cd))
        return msg


class _ResultEnd(_End):
    """The worker's end of the result queue R: ``put`` pickles the result, then records
    sending it as the put of the item on R; ``item_of(message)`` gives the item or None."""

    def __init__(self, q, ch: int, base: int, last: list, item_of):
        super().__init__(q, ch, base, last)
        self._item_of = item_of
        self._send = raw_method(q._writer, "send_bytes")
        self._wlock = q._wlock

    def put(self, obj, *args):
        try:
            item = None if args else self._item_of(obj)
        except Exception:                       # noqa: BLE001
            item = None
        if item is None:
            return self._q.put(obj, *args)
        data = self._dumps(obj)
        s = self._site or self._caller()
        c0 = cpu()
        t0 = mono()
        if self._wlock is None:
            self._send(data)
        else:
            with self._wlock:
                self._send(data)
        d = mono() - t0
        emit(("put", gettid(), t0, c0, s, self._ch, item, d, None, None,
              cpu() - c0 if d > LONG else None))


# -- concurrent.futures -------------------------------------------------------------

def install_futures_base(mod: ModuleType) -> None:
    """``concurrent.futures._base``: ``as_completed`` and ``wait`` record the waits for
    process-pool futures (others are left as they were: their ``result`` is recorded)."""
    if getattr(mod, "_qpn_patched", False):
        return
    mod._qpn_patched = True
    as_completed, wait = mod.as_completed, mod.wait

    def traced_as_completed(fs, timeout=None):
        it = as_completed(fs, timeout)
        while True:
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                f = next(it)
            except StopIteration:
                return
            obj = getattr(f, "_qpn_obj", None)
            if obj is not None and not f._qpn_waited:
                f._qpn_waited = True
                d, cd = spent(t0, c0)
                emit(("wait", gettid(), t0, c0, s, "future", obj, d, None, ns(timeout),
                      None, None, cd))
            yield f

    def traced_wait(fs, timeout=None, return_when=mod.ALL_COMPLETED):
        s = site()
        c0 = cpu()
        t0 = mono()
        res = wait(fs, timeout, return_when)
        try:
            items = []
            for f in res.done:
                obj = getattr(f, "_qpn_obj", None)
                if obj is not None and not f._qpn_waited:
                    f._qpn_waited = True
                    items.append(obj)
            if items:
                _waits(s, t0, c0, sorted(items), timeout=timeout)
        except Exception:
            pass
        return res

    for new, old in ((traced_as_completed, as_completed), (traced_wait, wait)):
        new.__name__ = new.__qualname__ = old.__name__
        new.__doc__ = old.__doc__
        blocking(new, _cut_wait)
    mod.as_completed, mod.wait = traced_as_completed, traced_wait
    import sys
    pkg = sys.modules.get("concurrent.futures")
    if pkg is not None:
        for name, new, old in (("as_completed", traced_as_completed, as_completed),
                               ("wait", traced_wait, wait)):
            if getattr(pkg, name, None) is old:
                setattr(pkg, name, new)


def install_process_pool(mod: ModuleType) -> None:
    """``concurrent.futures.process``: ``ProcessPoolExecutor`` (parent and workers)."""
    PPE = mod.ProcessPoolExecutor
    if getattr(PPE, "_qpn_patched", False):
        return
    PPE._qpn_patched = True
    import queue as queue_module
    queues = importlib.import_module(".queues", __package__)   # (see boot: not `from . import`)
    queues.install_future_result()
    install_futures_base(__import__("concurrent.futures._base", fromlist=["_"]))

    class _WorkIds(queues.RealQueue):
        """The executor's queue of work ids (the library's own: untraced), whose ``put``,
        in ``submit``, is the submitting thread's ``put obj=Q item=I``."""
        _qpn = None                      # (Q, the executor's pending work items)

        def put(self, work_id, block=True, timeout=None):
            q = self._qpn
            if q is not None:
                try:
                    item = shared_item(q[0], work_id)
                    q[1][work_id].future._qpn_obj = item
                    emit(("put", gettid(), mono(), cpu(), site(), q[0], item))
                except Exception:
                    pass
            queues.RealQueue.put(self, work_id, block, timeout)

    # process.py makes its work-id queue with `queue.Queue()`: it gets the class above
    shim = types.ModuleType("queue")
    shim.__dict__.update(vars(queue_module))
    shim.Queue = _WorkIds
    mod.queue = shim

    init = PPE.__init__

    def traced_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            q = channel_id(self._call_queue._reader.fileno())
            r = channel_id(self._result_queue._reader.fileno())
            if q is not None and r is not None and isinstance(self._work_ids, _WorkIds):
                self._work_ids._qpn = (q, self._pending_work_items)
                raw_queue(self._call_queue)          # (the manager's and feeder's traffic)
                raw_queue(self._result_queue)
                _declare_pool(self, self._max_workers, q, r, "ProcessPoolExecutor")
        except Exception:
            pass

    traced_init.__doc__ = init.__doc__
    PPE.__init__ = traced_init

    real_worker = mod._process_worker
    chunk = getattr(mod, "_process_chunk", None)

    mask = (1 << ITEM_BITS) - 1

    def _process_worker(call_queue, result_queue, *args, **kwargs):
        try:
            q = channel_id(call_queue._reader.fileno())
            r = channel_id(result_queue._reader.fileno())
            if q is not None and r is not None:
                base, last = shared_item(q, 0), [None, None]      # (work id, item)

                def decode(call):
                    work_id = getattr(call, "work_id", None)
                    if work_id is None:
                        return None
                    item = base + (work_id & mask)
                    last[0], last[1] = work_id, item
                    fn = call.fn
                    call.fn = _task(fn, item, _callable_of(fn, (chunk,)))
                    return item, call

                def item_of(result):
                    work_id = getattr(result, "work_id", None)
                    if work_id is None:
                        return None
                    return last[1] if work_id == last[0] else base + (work_id & mask)

                call_queue, result_queue = (_WorkEnd(call_queue, q, base, last, decode),
                                            _ResultEnd(result_queue, r, base, last, item_of))
        except Exception:
            pass
        return real_worker(call_queue, result_queue, *args, **kwargs)

    # a spawned worker's target is pickled by name: this function must be found under it
    _process_worker.__module__ = real_worker.__module__
    _process_worker.__qualname__ = real_worker.__qualname__
    _process_worker.__doc__ = real_worker.__doc__
    mod._process_worker = _process_worker


# -- multiprocessing.Pool ------------------------------------------------------------

def _pool_item(q: int, job: int, i: int) -> int:
    """The run-wide id of task ``i`` of job ``job`` (16 bits of the job, 24 of the task)."""
    return shared_item(q, ((job & 0xFFFF) << 24) | (i & 0xFFFFFF))


def install_pool(mod: ModuleType) -> None:
    """``multiprocessing.pool``: ``Pool`` (not ``ThreadPool``, whose queues are traced as
    queues already), parent and workers."""
    Pool = mod.Pool
    if getattr(Pool, "_qpn_patched", False):
        return
    Pool._qpn_patched = True
    import queue as queue_module
    queues = importlib.import_module(".queues", __package__)
    ThreadPool = getattr(mod, "ThreadPool", ())
    Apply, Map, IMap, IMapU = mod.ApplyResult, mod.MapResult, mod.IMapIterator, mod.IMapUnorderedIterator
    Pool._qpn_ids = None                 # (Q, R) of a process pool
    Apply._qpn_ids = IMap._qpn_ids = None
    Apply._qpn_n = 1                     # tasks of the result
    Apply._qpn_last = 0                  # the task whose result completed it
    Apply._qpn_waited = False
    IMapU._qpn_unordered = True
    IMap._qpn_unordered = False
    quiet: dict = {}                     # threads making a process pool (tid -> True)
    made: dict = {}                      # tid -> the IMapIterator its imap call made
    drawn: dict = {}                     # tid -> site: its imap's tasks are put when drawn

    def SimpleQueue():
        # Pool.__init__ makes its task queue with `queue.SimpleQueue()`: the library's own
        return queues.RealSimpleQueue() if quiet.get(gettid()) else queue_module.SimpleQueue()

    shim = types.ModuleType("queue")
    shim.__dict__.update(vars(queue_module))
    shim.SimpleQueue = SimpleQueue
    mod.queue = shim

    class _TaskFeed:
        """The pool's task queue as the program's calls see it: an ``imap`` over an
        iterator (its tasks do not exist before the task handler draws them) gets each
        task's put recorded when the handler draws it, in the handler's thread."""

        def __init__(self, real, q: int):
            self._real, self._q = real, q

        def put(self, entry):
            s = drawn.get(gettid())
            if s is not None and type(entry) is tuple and len(entry) == 2:
                entry = (self._drawn(entry[0], s), entry[1])
            self._real.put(entry)

        def _drawn(self, taskseq, s):
            q = self._q
            for task in taskseq:
                try:
                    emit(("put", gettid(), mono(), cpu(), s, q, _pool_item(q, task[0], task[1])))
                except Exception:
                    pass
                yield task

        def __getattr__(self, name):
            return getattr(self._real, name)

    init = Pool.__init__

    def traced_init(self, *args, **kwargs):
        proc = not isinstance(self, ThreadPool)
        tid = gettid()
        if proc:
            quiet[tid] = True
        try:
            init(self, *args, **kwargs)
        finally:
            if proc:
                quiet.pop(tid, None)
        if proc:
            try:
                q = channel_id(self._inqueue._reader.fileno())
                r = channel_id(self._outqueue._reader.fileno())
                if q is not None and r is not None:
                    self._taskqueue = _TaskFeed(self._taskqueue, q)
                    self._qpn_ids = (q, r)
                    _declare_pool(self, self._processes, q, r, "Pool")
            except Exception:
                pass

    traced_init.__doc__ = init.__doc__
    Pool.__init__ = traced_init
    setup = Pool._setup_queues

    def traced_setup_queues(self):
        setup(self)
        if quiet.get(gettid()):                  # a process pool (not a ThreadPool)
            try:
                raw_queue(self._inqueue)
                raw_queue(self._outqueue)
                self._quick_put = self._inqueue._writer.send    # (the task handler's)
                self._quick_get = self._outqueue._reader.recv   # (the result handler's)
            except Exception:
                pass

    traced_setup_queues.__doc__ = setup.__doc__
    Pool._setup_queues = traced_setup_queues

    def _puts(q, s, t0, c0, job, n) -> None:
        tid = gettid()
        for i in range(n):
            emit(("put", tid, t0, c0, s, q, _pool_item(q, job, i)))

    apply_async, map_async = Pool.apply_async, Pool._map_async

    def traced_apply_async(self, *args, **kwargs):
        ids = self._qpn_ids
        if ids is None:
            return apply_async(self, *args, **kwargs)
        s = site()
        c0 = cpu()
        t0 = mono()
        res = apply_async(self, *args, **kwargs)
        try:
            _puts(ids[0], s, t0, c0, res._job, 1)
        except Exception:
            pass
        return res

    def traced_map_async(self, *args, **kwargs):
        ids = self._qpn_ids
        if ids is None:
            return map_async(self, *args, **kwargs)
        s = site()
        c0 = cpu()
        t0 = mono()
        res = map_async(self, *args, **kwargs)
        try:
            _puts(ids[0], s, t0, c0, res._job, res._qpn_n)
        except Exception:
            pass
        return res

    def imapper(real):
        def imap(self, func, iterable, chunksize=1):
            ids = self._qpn_ids
            if ids is None:
                return real(self, func, iterable, chunksize)
            tid = gettid()
            s = site()
            c0 = cpu()
            t0 = mono()
            n = None
            try:
                n = -(-len(iterable) // chunksize) if chunksize >= 1 else None
            except Exception:
                drawn[tid] = s                  # an iterator: put as the handler draws
            made.pop(tid, None)
            try:
                res = real(self, func, iterable, chunksize)
            finally:
                drawn.pop(tid, None)
                it = made.pop(tid, None)
            if n is not None and it is not None:
                try:
                    _puts(ids[0], s, t0, c0, it._job, n)
                except Exception:
                    pass
            return res
        imap.__name__ = imap.__qualname__ = real.__name__
        imap.__doc__ = real.__doc__
        return imap

    for name, new, old in (("apply_async", traced_apply_async, apply_async),
                           ("_map_async", traced_map_async, map_async)):
        new.__name__ = new.__qualname__ = name
        new.__doc__ = old.__doc__
        setattr(Pool, name, new)
    Pool.imap = imapper(Pool.imap)
    Pool.imap_unordered = imapper(Pool.imap_unordered)

    # results: which pool, how many tasks, which completed them
    apply_init, map_init, imap_init = Apply.__init__, Map.__init__, IMap.__init__
    map_set, imapu_set = Map._set, IMapU._set
    apply_wait, imap_next = Apply.wait, IMap.next

    def traced_apply_init(self, pool, *args, **kwargs):
        apply_init(self, pool, *args, **kwargs)
        self._qpn_ids = getattr(pool, "_qpn_ids", None)

    def traced_map_init(self, *args, **kwargs):
        map_init(self, *args, **kwargs)
        if self._qpn_ids is not None:
            self._qpn_n = self._number_left

    def traced_imap_init(self, pool, *args, **kwargs):
        imap_init(self, pool, *args, **kwargs)
        ids = self._qpn_ids = getattr(pool, "_qpn_ids", None)
        if ids is not None:
            import collections
            self._qpn_base = shared_item(ids[0], (self._job & 0xFFFF) << 24)
            self._qpn_next = 0
            self._qpn_order = collections.deque()
            made[gettid()] = self

    def traced_map_set(self, i, obj):
        self._qpn_last = i               # before: the waiter may wake inside _set
        map_set(self, i, obj)

    def traced_imapu_set(self, i, obj):
        if self._qpn_ids is not None:
            self._qpn_order.append(i)    # in the order the results are queued
        imapu_set(self, i, obj)

    def traced_wait(self, timeout=None):
        ids = self._qpn_ids
        if ids is None or self._qpn_waited:
            return apply_wait(self, timeout)
        s = site()
        c0 = cpu()
        t0 = mono()
        apply_wait(self, timeout)
        try:
            q, job, last, n = ids[0], self._job, self._qpn_last, self._qpn_n
            if self._event.is_set():
                self._qpn_waited = True
                if n:                           # (an empty map waits for nothing)
                    _waits(s, t0, c0, [_pool_item(q, job, last)]
                           + [_pool_item(q, job, i) for i in range(n) if i != last],
                           timeout=timeout)
            else:
                _waits(s, t0, c0, [], ok=False, timeout=timeout)
        except Exception:
            pass

    def traced_next(self, timeout=None):
        ids = self._qpn_ids
        if ids is None:
            return imap_next(self, timeout)
        s = site()
        c0 = cpu()
        t0 = mono()
        got = True
        try:
            return imap_next(self, timeout)
        except StopIteration:
            t0 = None
            raise
        except mod.TimeoutError:
            got = False
            raise
        finally:
            if t0 is not None:
                d = mono() - t0
                try:
                    if not got:
                        item = None
                    elif self._qpn_unordered:
                        item = self._qpn_base + (self._qpn_order.popleft() & 0xFFFFFF)
                    else:
                        i = self._qpn_next
                        self._qpn_next = i + 1
                        item = self._qpn_base + (i & 0xFFFFFF)
                    emit(("wait", gettid(), t0, c0, s, "future", item, d, None if got else False,
                          None if timeout is None else ns(timeout), None, None,
                          cpu() - c0 if d > LONG else None))
                except Exception:
                    pass

    for cls, name, new, old in ((Apply, "__init__", traced_apply_init, apply_init),
                                (Map, "__init__", traced_map_init, map_init),
                                (IMap, "__init__", traced_imap_init, imap_init),
                                (Map, "_set", traced_map_set, map_set),
                                (IMapU, "_set", traced_imapu_set, imapu_set),
                                (Apply, "wait", traced_wait, apply_wait),
                                (IMap, "next", traced_next, imap_next)):
        new.__name__, new.__qualname__, new.__doc__ = name, f"{cls.__name__}.{name}", old.__doc__
        setattr(cls, name, new)
    IMap.__next__ = traced_next
    blocking(traced_wait, _cut_wait)
    blocking(traced_next, _cut_wait)

    # the workers
    real_worker = mod.worker
    helpers = tuple(f for f in (getattr(mod, "mapstar", None), getattr(mod, "starmapstar", None))
                    if f is not None)
    reraise = getattr(mod, "_helper_reraises_exception", None)

    def worker(inqueue, outqueue, *args, **kwargs):
        try:
            q = channel_id(inqueue._reader.fileno())
            r = channel_id(outqueue._reader.fileno())
            if q is not None and r is not None and hasattr(inqueue, "_rlock"):
                base, last = shared_item(q, 0), [None, None, None]   # (job, task, item)

                def decode(task):
                    if type(task) is not tuple or len(task) != 5:
                        return None                     # the pool's stop sentinel
                    job, i, func, args, kwds = task
                    item = base + (((job & 0xFFFF) << 24) | (i & 0xFFFFFF))
                    last[0], last[1], last[2] = job, i, item
                    if func is not reraise:
                        shown = args[0][0] if func in helpers and args and args[0] else func
                        task = (job, i, _task(func, item, shown), args, kwds)
                    return item, task

                def item_of(result):
                    if type(result) is not tuple or len(result) != 3:
                        return None
                    job, i = result[0], result[1]
                    if job == last[0] and i == last[1]:
                        return last[2]
                    return base + (((job & 0xFFFF) << 24) | (i & 0xFFFFFF))

                inqueue, outqueue = (_WorkEnd(inqueue, q, base, last, decode),
                                     _ResultEnd(outqueue, r, base, last, item_of))
        except Exception:
            pass
        return real_worker(inqueue, outqueue, *args, **kwargs)

    worker.__module__ = real_worker.__module__
    worker.__qualname__ = real_worker.__qualname__
    worker.__doc__ = real_worker.__doc__
    mod.worker = worker


blocking(_WorkEnd.get, _cut_received)
