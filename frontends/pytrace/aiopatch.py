"""asyncio traced as what it is: every Task a virtual thread, its awaits its own events.

Installed when the program imports asyncio (:mod:`.boot`); a program that does not
never loads it.  Inside the traced process it only records, as cheaply as it can:

* ``aio_task`` when a task is created (``loop.create_task``, which ``asyncio.create_task``,
  ``ensure_future``, ``gather``, ``wait_for``, ``TaskGroup`` and ``asyncio.run`` use):
  ``(kind, tid, ts, None, site, serial, name, coroutine's qualname, id(loop), new loop)``.
  The task keeps its serial number (1, 2, ... in the process) in ``task._qpn``;
* ``aio_name``: the name the program gave a task after creating it (``create_task(...,
  name=)`` sets it so): ``(kind, tid, ts, None, None, serial, name)``;
* ``aio_step`` per step of a task: each ``Handle._run`` whose callback is bound to a Task
  (the C task's ``TaskStepMethWrapper`` and ``task_wakeup``, the Python task's ``__step``
  and ``__wakeup``): ``(kind, tid, t0, cpu0, serial, dur, cpu_dur, waits)``, ``waits``
  being what the task then awaits when that is another task (``("join", serial, site)``)
  or an executor's future (``("future", id(concurrent future), site)``), else None;
* the awaits as ordinary records (``wait``, ``acquire``, ``release``, ``notify``,
  ``put``, ``get``, ``io``) whose ``ts`` is when the task began to wait and whose ``dur``
  runs until it ran again.  A join's ``target`` is ``-serial`` of the awaited task; an
  asyncio lock's or semaphore's acquire is an ``aio_acquire`` record (the fields of
  ``acquire``): whether it had to wait is known only when its steps are.

The runner (:mod:`.aioconvert`) gives every task its virtual thread id and moves every
record that the loop's thread made during a step of a task to that task, with the task's
own CPU clock.  Socket calls that asyncio makes for itself (its wake-up pipe, the
transports' reads and writes, the retries of ``sock_*``) are left out
(``agent.AIO_FILES``): the program's I/O is recorded where its tasks await it.

Only the standard library may be imported here (see :mod:`.agent`).
"""
from __future__ import annotations

import itertools
import os
import sys
import types

from . import agent
from .agent import classify, cpu, emit, gettid, mono, site, site_id, spent
from .iopatch import _name
from .sync import _LibraryAware, declare

_serials = itertools.count(1)
#: id(coroutine) -> [coroutine, the task made of it]: wait_for's task, caught at creation
_capture: dict = {}
_step_cb: dict = {}            # type of a Handle's callback -> may it be a task's step?
_is_task: dict = {}            # type -> is it a Task type?
_STEP_NAMES = frozenset({"task_wakeup", "task_step", "__step", "__wakeup"})
_INTERNAL: dict = {}           # code of a coroutine -> is it asyncio's own (untraced task)?
_TASK_TYPES: tuple = ()
_CFuture: type = type(None)
_TracedTask: type = type(None)
_loops_seen: set = set()       # ids of loops whose attributes cannot be set


class _AsOriginal(type):
    """The metaclass of the traced asyncio classes: ``isinstance`` and ``issubclass`` answer
    for them as for the class each replaces (``asyncio.Lock`` is the traced lock, but a lock
    asyncio or a library made, of the original class, is still an ``asyncio.Lock``)."""

    def __instancecheck__(cls, obj) -> bool:
        orig = cls.__dict__.get("_original")
        return isinstance(obj, orig) if orig is not None else type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub) -> bool:
        orig = cls.__dict__.get("_original")
        return issubclass(sub, orig) if orig is not None else type.__subclasscheck__(cls, sub)


def _learn_cb(tp: type) -> bool:
    """May a callback of type ``tp`` be a task's step (a method bound to the task)?"""
    ok = tp in (types.BuiltinMethodType, types.MethodType) or tp.__name__ == "TaskStepMethWrapper"
    _step_cb[tp] = ok
    return ok


def _learn_task(tp: type) -> bool:
    try:
        ok = issubclass(tp, _TASK_TYPES)
    except TypeError:
        ok = False
    _is_task[tp] = ok
    return ok


def _qualname(coro) -> str | None:
    q = getattr(coro, "__qualname__", None)
    return q if isinstance(q, str) else type(coro).__name__


def _new_loop(loop) -> bool:
    """True the first time a task of ``loop`` is seen."""
    try:
        if loop.__dict__.get("_qpn_seen"):
            return False
        loop._qpn_seen = True
        return True
    except (AttributeError, TypeError):
        if id(loop) in _loops_seen:
            return False
        _loops_seen.add(id(loop))
        return True


def _internal(coro) -> bool:
    """Is this coroutine asyncio's own work (a server's address lookup, an accepted
    connection's set-up, the shutdown of async generators and of the default executor)?
    Its task is not traced: private coroutines of asyncio's modules and the two
    shutdowns; ``ensure_future``'s wrapper of an awaitable is the program's."""
    code = getattr(coro, "cr_code", None)
    if code is None:
        return False
    k = _INTERNAL.get(code)
    if k is None:
        name = code.co_name
        k = _INTERNAL[code] = code.co_filename in agent.AIO_FILES and (
            name.startswith("_") and name != "_wrap_awaitable"
            or name in ("shutdown_asyncgens", "shutdown_default_executor"))
    return k


def _register(task, coro, loop, name, t0: int) -> None:
    """Number a task just created and record its creation (``aio_task``)."""
    if getattr(task, "_qpn", None) is not None:          # a subclass's create_task and ours
        return
    if _internal(coro):
        task._qpn = 0
        return
    n = next(_serials)
    task._qpn = n
    if _capture:
        box = _capture.get(id(coro))
        if box is not None and box[0] is coro and len(box) == 1:
            box.append(task)
    emit(("aio_task", gettid(), t0, None, site(), n, None if name is None else str(name),
          _qualname(coro), id(loop), _new_loop(loop)))


def _adopt(task) -> int:
    """A task met at its first step without having been seen created (``asyncio.Task(...)``
    made directly, a task factory's own type): number it now; 0 if it cannot be."""
    try:
        coro = task.get_coro()
        if _internal(coro):
            task._qpn = 0
            return 0
        task._qpn = None                 # fails before a serial is used if it cannot be set
        n = next(_serials)
        task._qpn = n
        loop = task.get_loop()
        name = task.get_name()
        if isinstance(name, str) and name.startswith("Task-") and name[5:].isdigit():
            name = None                  # asyncio's default name
        emit(("aio_task", gettid(), mono(), None, None, n, name, _qualname(coro), id(loop),
              _new_loop(loop)))
        return n
    except Exception:
        return 0


def _await_site(task) -> int | None:
    """Site of the innermost user-code coroutine in the await chain of a suspended task
    (without one, of the innermost library coroutine, as :func:`agent.site` falls back)."""
    c = task.get_coro()
    last, lib = None, False
    for _ in range(200):
        tc = type(c)
        if tc is types.CoroutineType:
            f, nxt = c.cr_frame, c.cr_await
        elif tc is types.GeneratorType:
            f, nxt = c.gi_frame, c.gi_yieldfrom
        else:
            break
        if f is None:
            break
        fn = f.f_code.co_filename
        k = agent._kind.get(fn)
        if k is None:
            k = classify(fn)
        if k == 0 or k == 1 and (last is None or lib):
            last, lib = f, k == 1
        c = nxt
    return None if last is None else site_id(last.f_code.co_filename, last.f_lineno)


def _waits_on(task, w) -> tuple | None:
    """What a task that has just yielded waits for, when the trace names it: another task
    (a join) or an executor's future."""
    tw = type(w)
    if tw is _CFuture:
        v = getattr(w, "_qpn_cf", None)
        if v is None:
            return None
        on = "future"
    else:
        if tw is _TracedTask:            # its __await__ records the join
            return None
        k = _is_task.get(tw)
        if k is None:
            k = _learn_task(tw)
        if not k:
            return None
        v = getattr(w, "_qpn", None)
        if v is None:
            v = _adopt(w)                # made directly and not run yet
        if not v:
            return None
        on = "join"
    if getattr(task, "_qpn_x", None):        # a wrapper (wait_for ...) records this wait
        return None
    return (on, v, _await_site(task))


def _requested(delay) -> int | None:
    try:
        return max(0, int(delay * 1e9))
    except Exception:
        return None


def _end(stream) -> tuple:
    """(id, fd) of the socket (or pipe) under a StreamReader or StreamWriter."""
    d = stream.__dict__
    e = d.get("_qpn_end")
    if e is not None:
        return e
    tr = d.get("_transport")
    if tr is None:
        return (None, None)
    e = (None, None)
    try:
        sock = tr.get_extra_info("socket")
        if sock is None:
            sock = tr.get_extra_info("pipe")
        if sock is not None:
            e = (id(sock), sock.fileno())
    except Exception:
        pass
    d["_qpn_end"] = e
    return e


def _target(f) -> tuple | None:
    """How a wait on future ``f`` is named: ("join", -serial) for a task, ("future",
    id(concurrent future)) for an executor's; None for others."""
    k = _is_task.get(type(f))
    if k is None:
        k = _learn_task(type(f))
    if k:
        n = getattr(f, "_qpn", None)
        if n is None:
            n = _adopt(f)
        return ("join", -n) if n else None
    if type(f) is _CFuture:
        v = getattr(f, "_qpn_cf", None)
        return None if v is None else ("future", v)
    return None


def _current(current_task):
    """The running task, or None (no loop running: a coroutine driven by hand)."""
    try:
        return current_task()
    except RuntimeError:
        return None


def _joins(targets: list, s, t0: int, c0: int, ok) -> None:
    """The waits of one await on several tasks or futures: the first carries the wait, the
    others follow at its end with dur 0."""
    try:
        _emit_joins(targets, s, t0, c0, ok)
    except Exception:                   # recording must never break the program
        pass


def _emit_joins(targets: list, s, t0: int, c0: int, ok) -> None:
    d, cd = spent(t0, c0)
    t1, c1 = t0 + d, cpu()
    seen = set()
    first = True
    for on, v in targets:
        if (on, v) in seen:
            continue
        seen.add((on, v))
        obj, target = (v, None) if on == "future" else (None, v)
        if first:
            emit(("wait", gettid(), t0, c0, s, on, obj, d, ok, None, target, None, cd))
            first = False
        else:
            emit(("wait", gettid(), t1, c1, s, on, obj, 0, ok, None, target))


def _tidy(cls: type) -> type:
    """Name a traced class and the methods defined in it as the originals are named: a
    task made of one of its coroutines (``create_task(event.wait())``) takes that name."""
    cls.__qualname__ = cls.__name__
    for v in vars(cls).values():
        if isinstance(v, types.FunctionType) and ".<locals>." in v.__qualname__:
            v.__qualname__ = f"{cls.__name__}.{v.__name__}"
    return cls


def _named(fn, qualname: str):
    fn.__qualname__ = qualname
    fn.__name__ = qualname.rsplit(".", 1)[-1]
    return fn


def install() -> None:
    """Wrap asyncio: task creation and steps, sleeps, locks, semaphores, events, conditions,
    barriers, queues, executor futures, gather/wait/wait_for/TaskGroup, streams, sock_*.
    Each part is installed on its own: one that does not fit this Python's asyncio is
    left out, and the program runs as it would untraced."""
    import asyncio
    if getattr(asyncio, "_qpn_patched", False):
        return
    asyncio._qpn_patched = True
    d = os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep
    for name, m in list(sys.modules.items()):
        fn = getattr(m, "__file__", None)
        if (name == "asyncio" or name.startswith("asyncio.")) and fn:
            agent.AIO_FILES[fn] = True
            agent.AIO_FILES[os.path.join(d, os.path.basename(fn))] = True
    for part in (_install_tasks, _install_sync, _install_queues, _install_waits,
                 _install_streams, _install_sock):
        try:
            part(asyncio)
        except Exception as exc:   # an asyncio this recorder does not know: leave that part
            sys.stderr.write(f"qpn trace: asyncio {part.__name__[9:]} not traced: {exc!r}\n")


def _install_tasks(asyncio) -> None:
    global _TASK_TYPES, _CFuture
    from asyncio import base_events, events, futures, tasks
    _TASK_TYPES = tuple({t for t in (tasks.Task, getattr(tasks, "_PyTask", None),
                                     getattr(tasks, "_CTask", None)) if isinstance(t, type)})
    _CFuture = futures.Future
    create = base_events.BaseEventLoop.create_task

    def create_task(self, coro, *args, **kwargs):
        t0 = mono()
        task = create(self, coro, *args, **kwargs)
        try:
            _register(task, coro, self, kwargs.get("name"), t0)
        except Exception:
            pass
        return task
    _named(create_task, "BaseEventLoop.create_task")
    create_task.__doc__ = create.__doc__
    base_events.BaseEventLoop.create_task = create_task

    set_name = getattr(tasks, "_set_task_name", None)
    if set_name is not None:
        def _set_task_name(task, name):
            set_name(task, name)
            k = _is_task.get(type(task))
            if k is None:
                k = _learn_task(type(task))
            if name is not None and k:
                n = getattr(task, "_qpn", None)
                if n:
                    emit(("aio_name", gettid(), mono(), None, None, n, str(name)))
        tasks._set_task_name = _set_task_name

    from . import aiostep
    run = aiostep.make_run(events.Handle._run, _step_cb, _is_task, _learn_cb, _learn_task,
                           _adopt, _waits_on, _STEP_NAMES)
    agent._kind[run.__code__.co_filename] = 3      # where a task's frames begin: site() stops
    events.Handle._run = run
    _install_task_class(tasks)


def _install_task_class(tasks) -> None:
    """The tasks that ``loop.create_task`` makes (it makes ``tasks.Task``) are of a subclass
    whose ``__await__`` records the join, also of a task already done (an await that does
    not suspend its task leaves no step to see it by).  ``isinstance`` and ``issubclass``
    answer for it as for the Task it derives from; ``asyncio.Task`` stays that Task."""
    global _TracedTask
    Base = tasks.Task
    base_await = Base.__await__
    current_task = tasks.current_task

    class _Meta(type(Base)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, Base)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, Base)

    class Task(Base, metaclass=_Meta):
        __slots__ = ()

        def __await__(self):
            n = getattr(self, "_qpn", None)
            me = _current(current_task) if n else None
            if not n or me is not None and getattr(me, "_qpn_x", None):
                return (yield from base_await(self))
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                return (yield from base_await(self))
            except GeneratorExit:
                s = False
                raise
            finally:
                if s is not False:
                    _joins([("join", -n)], s, t0, c0, None if self.done() else False)
        __iter__ = __await__
    Task.__module__ = Base.__module__
    Task.__doc__ = Base.__doc__
    _tidy(Task)
    _TracedTask = Task
    _is_task[Task] = _is_task[Base] = True
    tasks.Task = Task


def _install_sync(asyncio) -> None:
    from asyncio import locks
    lock_acquire, lock_release = locks.Lock.acquire, locks.Lock.release

    class Lock(_LibraryAware, locks.Lock, metaclass=_AsOriginal):
        """``asyncio.Lock`` that records acquisitions (the wait) and releases (the hold)."""
        _original, _traced_base = locks.Lock, True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._qpn_t = 0
            declare(self, "lock")

        async def acquire(self):
            """As ``asyncio.Lock.acquire``; records the acquisition and its wait."""
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                r = await lock_acquire(self)
            except GeneratorExit:
                raise
            except BaseException:
                d, cd = spent(t0, c0)
                emit(("aio_acquire", gettid(), t0, c0, s, id(self), d, None, False, None, None, cd))
                raise
            d, cd = spent(t0, c0)
            self._qpn_t = t0 + d
            emit(("aio_acquire", gettid(), t0, c0, s, id(self), d, None, None, None, None, cd))
            return r

        def release(self):
            """As ``asyncio.Lock.release``; records the hold time."""
            t = mono()
            hold = t - self._qpn_t
            lock_release(self)
            emit(("release", gettid(), t, cpu(), site(), id(self), hold))

    sem_acquire, sem_release = locks.Semaphore.acquire, locks.Semaphore.release
    bsem_release = locks.BoundedSemaphore.release

    async def _sem_acquire(self):
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            r = await sem_acquire(self)
        except GeneratorExit:
            raise
        except BaseException:
            d, cd = spent(t0, c0)
            emit(("aio_acquire", gettid(), t0, c0, s, id(self), d, None, False, None, None, cd))
            raise
        d, cd = spent(t0, c0)
        emit(("aio_acquire", gettid(), t0, c0, s, id(self), d, None, None, None, None, cd))
        return r

    class Semaphore(_LibraryAware, locks.Semaphore, metaclass=_AsOriginal):
        """``asyncio.Semaphore`` that records acquisitions (the wait) and releases."""
        _original, _traced_base = locks.Semaphore, True

        def __init__(self, value: int = 1, *args, **kwargs):
            super().__init__(value, *args, **kwargs)
            declare(self, "sem", permits=value)

        acquire = _sem_acquire

        def release(self):
            """As ``asyncio.Semaphore.release``; records it."""
            t = mono()
            sem_release(self)
            emit(("release", gettid(), t, cpu(), site(), id(self)))

    class BoundedSemaphore(_LibraryAware, locks.BoundedSemaphore, metaclass=_AsOriginal):
        """``asyncio.BoundedSemaphore`` that records acquisitions (the wait) and releases."""
        _original, _traced_base = locks.BoundedSemaphore, True

        def __init__(self, value: int = 1, *args, **kwargs):
            super().__init__(value, *args, **kwargs)
            declare(self, "bsem", permits=value)

        acquire = _sem_acquire

        def release(self):
            """As ``asyncio.BoundedSemaphore.release``; records it."""
            t = mono()
            bsem_release(self)
            emit(("release", gettid(), t, cpu(), site(), id(self)))

    ev_wait, ev_set = locks.Event.wait, locks.Event.set

    class Event(_LibraryAware, locks.Event, metaclass=_AsOriginal):
        """``asyncio.Event`` that records waits and sets."""
        _original, _traced_base = locks.Event, True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            declare(self, "event")

        async def wait(self):
            """As ``asyncio.Event.wait``; records the wait."""
            s = site()
            c0 = cpu()
            t0 = mono()
            ok = None
            try:
                return await ev_wait(self)
            except GeneratorExit:
                s = False
                raise
            except BaseException:
                ok = False
                raise
            finally:
                if s is not False:
                    d, cd = spent(t0, c0)
                    emit(("wait", gettid(), t0, c0, s, "event", id(self), d, ok, None, None, None,
                          cd))

        def set(self):
            """As ``asyncio.Event.set``; records it (a notification of every waiter)."""
            t = mono()
            waiters = sum(1 for w in (self._waiters or ()) if not w.done())
            ev_set(self)
            emit(("notify", gettid(), t, cpu(), site(), "event", id(self), True, waiters))

    cond_wait, cond_notify = locks.Condition.wait, locks.Condition.notify

    class Condition(_LibraryAware, locks.Condition, metaclass=_AsOriginal):
        """``asyncio.Condition`` that records waits and notifications (its lock, made
        traced when the program gives none, records the release and re-acquisition)."""
        _original, _traced_base = locks.Condition, True

        def __init__(self, lock=None, *args, **kwargs):
            if lock is None:
                lock = Lock()
            super().__init__(lock, *args, **kwargs)
            declare(self, "cond", lock=id(lock))

        async def wait(self):
            """As ``asyncio.Condition.wait``; records the wait."""
            s = site()
            c0 = cpu()
            t0 = mono()
            ok = None
            try:
                return await cond_wait(self)
            except GeneratorExit:
                s = False
                raise
            except BaseException:
                ok = False
                raise
            finally:
                if s is not False:
                    d, cd = spent(t0, c0)
                    emit(("wait", gettid(), t0, c0, s, "cond", id(self), d, ok, None, None, None,
                          cd))

        def notify(self, n: int = 1):
            """As ``asyncio.Condition.notify``; records it with the number of waiters."""
            t = mono()
            waiters = sum(1 for w in self._waiters if not w.done())
            cond_notify(self, n)
            emit(("notify", gettid(), t, cpu(), site(), "cond", id(self), None, waiters))

        def notify_all(self):
            """As ``asyncio.Condition.notify_all``; records it with the number of waiters."""
            t = mono()
            waiters = sum(1 for w in self._waiters if not w.done())
            cond_notify(self, len(self._waiters))
            emit(("notify", gettid(), t, cpu(), site(), "cond", id(self), True, waiters))

    traced = {"Lock": Lock, "Semaphore": Semaphore, "BoundedSemaphore": BoundedSemaphore,
              "Event": Event, "Condition": Condition}
    Barrier0 = getattr(locks, "Barrier", None)
    if Barrier0 is not None:
        bar_wait = Barrier0.wait

        class Barrier(_LibraryAware, Barrier0, metaclass=_AsOriginal):
            """``asyncio.Barrier`` that records each wait (its parties in the object event)."""
            _original, _traced_base = Barrier0, True

            def __init__(self, parties, *args, **kwargs):
                super().__init__(parties, *args, **kwargs)
                declare(self, "barrier", parties=parties)

            async def wait(self):
                """As ``asyncio.Barrier.wait``; records the wait until the barrier trips."""
                s = site()
                c0 = cpu()
                t0 = mono()
                ok = None
                try:
                    return await bar_wait(self)
                except GeneratorExit:
                    s = False
                    raise
                except BaseException:
                    ok = False
                    raise
                finally:
                    if s is not False:
                        d, cd = spent(t0, c0)
                        emit(("wait", gettid(), t0, c0, s, "barrier", id(self), d, ok, None, None,
                              None, cd))
        traced["Barrier"] = Barrier
    _sem_acquire.__qualname__ = "Semaphore.acquire"
    for name, cls in traced.items():
        cls.__module__ = "asyncio.locks"
        setattr(asyncio, name, _tidy(cls))


def _install_queues(asyncio) -> None:
    from asyncio import queues
    Q = queues.Queue
    q_put, q_get, q_put_nowait, q_get_nowait = Q.put, Q.get, Q.put_nowait, Q.get_nowait
    put_code, get_code = q_put.__code__, q_get.__code__
    Full, Empty = queues.QueueFull, queues.QueueEmpty

    class _Traced:
        _kind = "queue"

        def __init__(self, maxsize: int = 0, *args, **kwargs):
            super().__init__(maxsize, *args, **kwargs)
            declare(self, self._kind, capacity=maxsize if maxsize > 0 else None)

        async def put(self, item):
            """As ``asyncio.Queue.put``; records the put and the time it blocked."""
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                r = await q_put(self, item)
            except GeneratorExit:
                raise
            except BaseException:
                d, cd = spent(t0, c0)
                emit(("put", gettid(), t0, c0, s, id(self), id(item), d, self.qsize(), False, cd))
                raise
            d, cd = spent(t0, c0)
            emit(("put", gettid(), t0, c0, s, id(self), id(item), d, self.qsize(), None, cd))
            return r

        def put_nowait(self, item):
            """As ``asyncio.Queue.put_nowait``; records the put."""
            if sys._getframe(1).f_code is put_code:      # the end of a put: recorded there
                return q_put_nowait(self, item)
            t = mono()
            try:
                r = q_put_nowait(self, item)
            except Full:
                emit(("put", gettid(), t, cpu(), site(), id(self), id(item), 0, self.qsize(),
                      False))
                raise
            emit(("put", gettid(), t, cpu(), site(), id(self), id(item), 0, self.qsize()))
            return r

        async def get(self):
            """As ``asyncio.Queue.get``; records the get and the time it waited."""
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                item = await q_get(self)
            except GeneratorExit:
                raise
            except BaseException:
                d, cd = spent(t0, c0)
                emit(("get", gettid(), t0, c0, s, id(self), None, d, self.qsize(), False, cd))
                raise
            d, cd = spent(t0, c0)
            emit(("get", gettid(), t0, c0, s, id(self), id(item), d, self.qsize(), None, cd))
            return item

        def get_nowait(self):
            """As ``asyncio.Queue.get_nowait``; records the get."""
            if sys._getframe(1).f_code is get_code:      # the end of a get: recorded there
                return q_get_nowait(self)
            t = mono()
            try:
                item = q_get_nowait(self)
            except Empty:
                emit(("get", gettid(), t, cpu(), site(), id(self), None, 0, 0, False))
                raise
            emit(("get", gettid(), t, cpu(), site(), id(self), id(item), 0, self.qsize()))
            return item

    for v in vars(_Traced).values():
        if isinstance(v, types.FunctionType):
            v.__qualname__ = f"Queue.{v.__name__}"

    def make(base, kind):
        # queues are traced whoever creates them, as queue.Queue's are (queues.py)
        cls = _AsOriginal(base.__name__, (_Traced, base),
                          {"_kind": kind, "_original": base, "__module__": "asyncio.queues",
                           "__doc__": f"``asyncio.{base.__name__}`` that records puts and gets."})
        return _tidy(cls)
    asyncio.Queue = make(queues.Queue, "queue")
    asyncio.LifoQueue = make(queues.LifoQueue, "lifo_queue")
    asyncio.PriorityQueue = make(queues.PriorityQueue, "prio_queue")


def _install_waits(asyncio) -> None:
    from asyncio import futures, tasks
    import concurrent.futures
    CF = concurrent.futures.Future
    real_wrap = futures.wrap_future

    def wrap_future(future, *, loop=None):
        af = real_wrap(future, loop=loop)
        if af is not future and isinstance(future, CF):
            try:
                af._qpn_cf = id(future)
            except (AttributeError, TypeError):
                pass
        return af
    wrap_future.__doc__ = real_wrap.__doc__
    _named(wrap_future, "wrap_future")
    futures.wrap_future = wrap_future
    asyncio.wrap_future = wrap_future

    real_sleep = asyncio.sleep

    async def sleep(delay, result=None):
        """As ``asyncio.sleep``; records a sleep wait with the time asked for."""
        s = site()
        c0 = cpu()
        t0 = mono()
        ok = None
        try:
            return await real_sleep(delay, result)
        except GeneratorExit:
            s = False
            raise
        except BaseException:
            ok = False
            raise
        finally:
            if s is not False:
                d, cd = spent(t0, c0)
                emit(("wait", gettid(), t0, c0, s, "sleep", None, d, ok, None, None,
                      _requested(delay), cd))
    asyncio.sleep = _named(sleep, "sleep")

    current_task = tasks.current_task
    isfuture, iscoroutine = futures.isfuture, asyncio.iscoroutine
    real_wait_for = asyncio.wait_for
    Timeout = asyncio.TimeoutError

    async def wait_for(fut, timeout):
        """As ``asyncio.wait_for``; records the wait on the task or executor future."""
        known = isfuture(fut)
        box = None
        if not known and timeout is not None and iscoroutine(fut):
            box = _capture[id(fut)] = [fut]      # its task, caught when ensure_future makes it
        me = _current(current_task)
        if me is not None:
            me._qpn_x = getattr(me, "_qpn_x", 0) + 1
        s = site()
        c0 = cpu()
        t0 = mono()
        ok = None
        try:
            return await real_wait_for(fut, timeout)
        except GeneratorExit:
            s = False
            raise
        except BaseException as exc:
            ok = False if isinstance(exc, (Timeout, asyncio.CancelledError)) else None
            raise
        finally:
            if me is not None:
                me._qpn_x -= 1
            if box is not None:
                _capture.pop(id(box[0]), None)
            target = fut if known else (box[1] if box is not None and len(box) > 1 else None)
            if s is not False and target is not None:
                try:
                    t = _target(target)
                except Exception:
                    t = None
                if t is not None:
                    _joins([t], s, t0, c0, ok)
    asyncio.wait_for = _named(wait_for, "wait_for")

    real_wait = asyncio.wait

    async def wait(fs, *args, **kwargs):
        """As ``asyncio.wait``; records a join (or executor future wait) per task done."""
        s = site()
        c0 = cpu()
        t0 = mono()
        done, pending = await real_wait(fs, *args, **kwargs)
        try:
            targets = sorted(filter(None, map(_target, done)))
            if targets:
                _joins(targets, s, t0, c0, None)
        except Exception:
            pass
        return done, pending
    asyncio.wait = _named(wait, "wait")

    G = tasks._GatheringFuture

    class _GatheringFuture(G):
        def __await__(self):
            s = site()
            c0 = cpu()
            t0 = mono()
            ok = None
            try:
                return (yield from super().__await__())
            except GeneratorExit:
                s = False
                raise
            except BaseException:
                ok = False
                raise
            finally:
                if s is not False:
                    try:
                        targets = [t for t in map(_target, getattr(self, "_children", ())) if t]
                    except Exception:
                        targets = ()
                    if targets:
                        _joins(targets, s, t0, c0, ok)
        __iter__ = __await__
    _GatheringFuture.__module__ = G.__module__
    _tidy(_GatheringFuture)
    tasks._GatheringFuture = _GatheringFuture

    TaskGroup = getattr(asyncio, "TaskGroup", None)
    if TaskGroup is not None:
        tg_create, tg_exit = TaskGroup.create_task, TaskGroup.__aexit__

        def create_task(self, coro, *args, **kwargs):
            task = tg_create(self, coro, *args, **kwargs)
            n = getattr(task, "_qpn", None)
            if n:
                self.__dict__.setdefault("_qpn_kids", []).append(n)
            return task
        create_task.__doc__ = tg_create.__doc__

        async def __aexit__(self, et, exc, tb):
            s = site()
            c0 = cpu()
            t0 = mono()
            ok = None
            try:
                return await tg_exit(self, et, exc, tb)
            except GeneratorExit:
                s = False
                raise
            except asyncio.CancelledError:
                ok = False
                raise
            finally:
                kids = self.__dict__.get("_qpn_kids")
                if s is not False and kids:
                    _joins([("join", -n) for n in kids], s, t0, c0, ok)
        TaskGroup.create_task = _named(create_task, "TaskGroup.create_task")
        TaskGroup.__aexit__ = _named(__aexit__, "TaskGroup.__aexit__")


def _install_streams(asyncio) -> None:
    from asyncio import base_events, streams
    R, W = streams.StreamReader, streams.StreamWriter
    r_read, r_readline, r_readuntil, r_readexactly = R.read, R.readline, R.readuntil, R.readexactly
    readline_code = r_readline.__code__
    Incomplete = asyncio.IncompleteReadError

    def reader(real, name, nested_in=None):
        async def read(self, *args, **kwargs):
            if nested_in is not None and sys._getframe(1).f_code is nested_in:
                return await real(self, *args, **kwargs)
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                data = await real(self, *args, **kwargs)
            except GeneratorExit:
                raise
            except BaseException as exc:
                d, cd = spent(t0, c0)
                obj, fd = _end(self)
                n = len(exc.partial) if isinstance(exc, Incomplete) else None
                emit(("io", gettid(), t0, c0, s, "recv", obj, None, fd, n, d, cd, None, False))
                raise
            d, cd = spent(t0, c0)
            obj, fd = _end(self)
            emit(("io", gettid(), t0, c0, s, "recv", obj, None, fd, len(data), d, cd))
            return data
        read.__name__ = name
        read.__qualname__ = f"StreamReader.{name}"
        read.__doc__ = real.__doc__
        return read
    R.read = reader(r_read, "read")
    R.readline = reader(r_readline, "readline")
    R.readuntil = reader(r_readuntil, "readuntil", readline_code)
    R.readexactly = reader(r_readexactly, "readexactly")

    w_write, w_writelines = W.write, W.writelines

    def write(self, data):
        s = site()
        c0 = cpu()
        t0 = mono()
        r = w_write(self, data)
        d, cd = spent(t0, c0)
        obj, fd = _end(self)
        try:
            n = len(data)
        except TypeError:
            n = None
        emit(("io", gettid(), t0, c0, s, "send", obj, None, fd, n, d, cd))
        return r
    write.__doc__ = w_write.__doc__
    W.write = _named(write, "StreamWriter.write")

    def writelines(self, data):
        data = list(data)
        s = site()
        c0 = cpu()
        t0 = mono()
        r = w_writelines(self, data)
        d, cd = spent(t0, c0)
        obj, fd = _end(self)
        try:
            n = sum(map(len, data))
        except TypeError:
            n = None
        emit(("io", gettid(), t0, c0, s, "send", obj, None, fd, n, d, cd))
        return r
    writelines.__doc__ = w_writelines.__doc__
    W.writelines = _named(writelines, "StreamWriter.writelines")

    B = base_events.BaseEventLoop
    real_connect = B.create_connection

    async def create_connection(self, protocol_factory, *args, **kwargs):
        """As ``loop.create_connection``; records the connect with both addresses."""
        if kwargs.get("sock") is not None:                # connected by the program already
            return await real_connect(self, protocol_factory, *args, **kwargs)
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            transport, protocol = await real_connect(self, protocol_factory, *args, **kwargs)
        except GeneratorExit:
            raise
        except BaseException:
            d, cd = spent(t0, c0)
            emit(("io", gettid(), t0, c0, s, "connect", None, None, None, None, d, cd, None, False))
            raise
        d, cd = spent(t0, c0)
        try:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                emit(("io", gettid(), t0, c0, s, "connect", id(sock), None, sock.fileno(), None,
                      d, cd, _name(sock, True), None, None, None, _name(sock)))
        except Exception:
            pass
        return transport, protocol
    create_connection.__doc__ = real_connect.__doc__
    B.create_connection = _named(create_connection, "BaseEventLoop.create_connection")


def _install_sock(asyncio) -> None:
    from asyncio import selector_events
    L = selector_events.BaseSelectorEventLoop
    sock_recv, sock_recv_into, sock_sendall = L.sock_recv, L.sock_recv_into, L.sock_sendall
    sock_accept, sock_connect = L.sock_accept, L.sock_connect

    def failed(sock, op, s, t0, c0):
        d, cd = spent(t0, c0)
        try:
            fd = sock.fileno()
        except Exception:
            fd = None
        emit(("io", gettid(), t0, c0, s, op, id(sock), None, fd, None, d, cd, None, False))

    def receiver(real, into):
        async def recv(self, sock, arg):
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                r = await real(self, sock, arg)
            except GeneratorExit:
                raise
            except BaseException:
                failed(sock, "recv", s, t0, c0)
                raise
            d, cd = spent(t0, c0)
            emit(("io", gettid(), t0, c0, s, "recv", id(sock), None, sock.fileno(),
                  r if into else len(r), d, cd))
            return r
        _named(recv, f"BaseSelectorEventLoop.{real.__name__}")
        recv.__doc__ = real.__doc__
        return recv
    L.sock_recv = receiver(sock_recv, False)
    L.sock_recv_into = receiver(sock_recv_into, True)

    async def sendall(self, sock, data):
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            r = await sock_sendall(self, sock, data)
        except GeneratorExit:
            raise
        except BaseException:
            failed(sock, "send", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "send", id(sock), None, sock.fileno(), len(data), d, cd))
        return r
    _named(sendall, "BaseSelectorEventLoop.sock_sendall")
    sendall.__doc__ = sock_sendall.__doc__
    L.sock_sendall = sendall

    async def accept(self, sock):
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            conn, addr = await sock_accept(self, sock)
        except GeneratorExit:
            raise
        except BaseException:
            failed(sock, "accept", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "accept", id(sock), None, sock.fileno(), None, d, cd,
              str(addr), None, None, conn.fileno(), _name(conn)))
        return conn, addr
    _named(accept, "BaseSelectorEventLoop.sock_accept")
    accept.__doc__ = sock_accept.__doc__
    L.sock_accept = accept

    async def connect(self, sock, address):
        if sys._getframe(1).f_code.co_filename in agent.AIO_FILES:   # create_connection's
            return await sock_connect(self, sock, address)
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            r = await sock_connect(self, sock, address)
        except GeneratorExit:
            raise
        except BaseException:
            failed(sock, "connect", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "connect", id(sock), None, sock.fileno(), None, d, cd,
              _name(sock, True) or str(address), None, None, None, _name(sock)))
        return r
    _named(connect, "BaseSelectorEventLoop.sock_connect")
    connect.__doc__ = sock_connect.__doc__
    L.sock_connect = connect
