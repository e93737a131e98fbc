"""Traced versions of the ``threading`` primitives and thread start/join.

Objects the program creates are traced; objects the standard library creates
for itself (the mutex inside ``queue.Queue``, the condition inside a
``Future``) stay plain, so the trace shows the program's synchronization and
not the library's plumbing.

Timing rules: an uncontended acquisition is one non-blocking try and records
``dur`` 0; only when the try fails is the blocking wait timed.  Waits measured
here include re-acquiring the GIL after the wake-up.
"""
from __future__ import annotations

import _thread
import numbers
import threading

from .agent import blocking, cpu, created_by_library, emit, gettid, mono, native_tid, site, spent

_allocate = _thread.allocate_lock
_RawRLock = _thread.RLock
_Condition = threading.Condition
_Semaphore = threading.Semaphore
_BoundedSemaphore = threading.BoundedSemaphore
_Barrier = threading.Barrier
_Event = threading.Event
_BrokenBarrierError = threading.BrokenBarrierError


def ns(seconds) -> int | None:
    """A timeout in seconds as ns; None for 'wait forever'."""
    return None if seconds is None or seconds < 0 else int(seconds * 1e9)


def declare(obj: object, type_: str, **params) -> None:
    """Emit the ``object`` event of a newly created traced object."""
    emit(("object", gettid(), mono(), cpu(), site(), id(obj), type_, params or None))



def _traced_wait(obj, kind: str, wait, timeout: float | None) -> bool:
    """``wait(timeout)`` of a condition or event with its wait event."""
    s = site()
    c0 = cpu()
    t0 = mono()
    ok = wait(timeout)
    d, cd = spent(t0, c0)
    emit(("wait", gettid(), t0, c0, s, kind, id(obj), d, None if ok else False,
          ns(timeout), None, None, cd))
    return ok


blocking(_traced_wait, lambda f, tid, d: (
    "wait", tid, f.f_locals["t0"], f.f_locals["c0"], f.f_locals["s"], f.f_locals["kind"],
    id(f.f_locals["obj"]), d, False, ns(f.f_locals["timeout"])))


def _acquire_contended(obj: object, acquire, blocking: bool,
                       timeout: float | None) -> int | None:
    """The slow path of every traced acquire, after its non-blocking try failed: the
    refusal when not ``blocking``, else the timed blocking ``acquire(True, timeout)``
    with its event.  Kept out of line so the uncontended fast path stays one try and
    one event with no call.  Returns when the lock was taken (ns), else None."""
    c0 = cpu()
    t0 = mono()
    if not blocking:
        emit(("acquire", gettid(), t0, c0, site(), id(obj), 0, True, False))
        return None
    ok = acquire(True, timeout)
    d, cd = spent(t0, c0)
    emit(("acquire", gettid(), t0, c0, site(), id(obj), d, True,
          None if ok else False, ns(timeout), None, cd))
    return t0 + d if ok else None


class TracedLock:
    """``threading.Lock`` with acquire (wait, contended) and release (hold) events."""

    __slots__ = ("_l", "_t", "__weakref__")

    def __init__(self, _type: str = "lock"):
        self._l = _allocate()
        self._t = 0
        declare(self, _type)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """As ``threading.Lock.acquire``; records every acquisition (the wait and the
        thread's CPU during it when contended, a failed or timed-out attempt too)."""
        if self._l.acquire(False):
            t = self._t = mono()
            emit(("acquire", gettid(), t, cpu(), site(), id(self), 0, False))
            return True
        t = _acquire_contended(self, self._l.acquire, blocking, timeout)
        if t is None:
            return False
        self._t = t
        return True

    __enter__ = acquire

    def release(self) -> None:
        """As ``threading.Lock.release``; records the hold time."""
        t = mono()
        hold = t - self._t       # read before releasing: the next owner rewrites _t
        self._l.release()
        emit(("release", gettid(), t, cpu(), site(), id(self), hold))

    def __exit__(self, *exc) -> None:
        # release() inlined: `with lock:` is the hottest path of most programs
        t = mono()
        hold = t - self._t
        self._l.release()
        emit(("release", gettid(), t, cpu(), site(), id(self), hold))

    def locked(self) -> bool:
        """As ``threading.Lock.locked``."""
        return self._l.locked()

    # Condition(lock) support: a wait releases and re-acquires the lock.
    def _is_owned(self) -> bool:
        return self._l.locked()

    def _release_save(self) -> None:
        self.release()

    def _acquire_restore(self, _state) -> None:
        self.acquire()

    def _at_fork_reinit(self) -> None:
        self._l._at_fork_reinit()

    def __repr__(self) -> str:
        return f"<traced lock {'locked' if self.locked() else 'unlocked'} at {id(self):#x}>"


class TracedRLock:
    """``threading.RLock``: events only for the outermost acquire/release."""

    __slots__ = ("_l", "_t", "_depth", "__weakref__")

    def __init__(self):
        self._l = _RawRLock()
        self._t = 0
        self._depth = 0          # written only by the owning thread
        declare(self, "rlock")

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """As ``threading.RLock.acquire``; re-entries are counted, not recorded."""
        l = self._l
        if self._depth and l._is_owned():
            l.acquire()
            self._depth += 1
            return True
        if l.acquire(False):
            t = self._t = mono()
            self._depth = 1
            emit(("acquire", gettid(), t, cpu(), site(), id(self), 0, False))
            return True
        t = _acquire_contended(self, l.acquire, blocking, timeout)
        if t is None:
            return False
        self._t = t
        self._depth = 1
        return True

    __enter__ = acquire

    def release(self) -> None:
        """As ``threading.RLock.release``; the outermost release records the hold."""
        if not self._l._is_owned():
            raise RuntimeError("cannot release un-acquired lock")
        d = self._depth
        if d > 1:
            self._depth = d - 1
            self._l.release()
            return
        self._depth = 0
        t = mono()
        hold = t - self._t
        self._l.release()
        emit(("release", gettid(), t, cpu(), site(), id(self), hold))

    def __exit__(self, *exc) -> None:
        self.release()

    def _is_owned(self) -> bool:
        return self._l._is_owned()

    def _release_save(self):
        t = mono()
        hold, depth = t - self._t, self._depth
        self._depth = 0
        state = self._l._release_save()
        emit(("release", gettid(), t, cpu(), site(), id(self), hold))
        return state, depth

    def _acquire_restore(self, saved) -> None:
        state, depth = saved
        c0 = cpu()
        t0 = mono()
        self._l._acquire_restore(state)
        d, cd = spent(t0, c0)
        self._t = t0 + d
        self._depth = depth
        # contended is unknown here: re-acquiring after a wait cannot be tried first
        emit(("acquire", gettid(), t0, c0, site(), id(self), d, None, None, None, None, cd))

    def _at_fork_reinit(self) -> None:
        self._l._at_fork_reinit()
        self._depth = 0

    def __repr__(self) -> str:
        return f"<traced rlock at {id(self):#x}>"


def Lock():
    """Factory replacing ``threading.Lock``."""
    if created_by_library():
        return _allocate()
    return TracedLock()


def RLock(*args, **kwargs):
    """Factory replacing ``threading.RLock``."""
    if created_by_library():
        return _RawRLock()
    return TracedRLock()


class _LibraryAware:
    """``__new__`` that hands library code the untraced original class."""

    _original: type = object

    def __new__(cls, *args, **kwargs):
        if cls.__dict__.get("_traced_base") and created_by_library():
            return cls._original(*args, **kwargs)
        return object.__new__(cls)


class TracedCondition(_LibraryAware, _Condition):
    """``threading.Condition`` that records waits and notifications."""
    _original, _traced_base = _Condition, True

    def __init__(self, lock=None):
        if lock is None:
            lock = TracedRLock()
        super().__init__(lock)
        declare(self, "cond", lock=id(lock))

    def wait(self, timeout: float | None = None) -> bool:
        """As ``Condition.wait``; records the wait."""
        return _traced_wait(self, "cond", super().wait, timeout)

    def notify(self, n: int = 1) -> None:
        """As ``Condition.notify``; records it with the number of waiters."""
        emit(("notify", gettid(), mono(), cpu(), site(), "cond", id(self), None,
              len(self._waiters)))
        super().notify(n)

    def notify_all(self) -> None:
        """As ``Condition.notify_all``; records it with the number of waiters."""
        waiters = len(self._waiters)
        emit(("notify", gettid(), mono(), cpu(), site(), "cond", id(self), True, waiters))
        super().notify(waiters)

    notifyAll = notify_all


class _SemaphoreMixin:
    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if super().acquire(False):
            emit(("acquire", gettid(), mono(), cpu(), site(), id(self), 0, False))
            return True
        return _acquire_contended(self, super().acquire, blocking, timeout) is not None

    __enter__ = acquire

    def release(self, n: int = 1) -> None:
        t = mono()
        super().release(n)
        emit(("release", gettid(), t, cpu(), site(), id(self), None, n if n != 1 else None))


class TracedSemaphore(_SemaphoreMixin, _LibraryAware, _Semaphore):
    """``threading.Semaphore`` that records acquisitions, waits and releases."""
    _original, _traced_base = _Semaphore, True

    def __init__(self, value: int = 1):
        super().__init__(value)
        declare(self, "sem", permits=value)


class TracedBoundedSemaphore(_SemaphoreMixin, _LibraryAware, _BoundedSemaphore):
    """``threading.BoundedSemaphore`` that records acquisitions, waits and releases."""
    _original, _traced_base = _BoundedSemaphore, True

    def __init__(self, value: int = 1):
        # BoundedSemaphore.__init__ calls the module's Semaphore, which is now
        # TracedSemaphore: do its two steps here instead.
        _Semaphore.__init__(self, value)
        self._initial_value = value
        declare(self, "bsem", permits=value)


class TracedBarrier(_LibraryAware, _Barrier):
    """``threading.Barrier`` that records each wait (its parties in the object event)."""
    _original, _traced_base = _Barrier, True

    def __init__(self, parties: int, action=None, timeout: float | None = None):
        super().__init__(parties, action, timeout)
        declare(self, "barrier", parties=parties)

    def wait(self, timeout: float | None = None) -> int:
        """As ``Barrier.wait``; records the wait until the barrier trips."""
        s = site()
        c0 = cpu()
        t0 = mono()
        try:
            index = super().wait(timeout)
        except _BrokenBarrierError:
            d, cd = spent(t0, c0)
            emit(("wait", gettid(), t0, c0, s, "barrier", id(self), d, False,
                  ns(timeout), None, None, cd))
            raise
        d, cd = spent(t0, c0)
        emit(("wait", gettid(), t0, c0, s, "barrier", id(self), d, None, None, None, None, cd))
        return index


blocking(TracedBarrier.wait, lambda f, tid, d: (
    "wait", tid, f.f_locals["t0"], f.f_locals["c0"], f.f_locals["s"], "barrier",
    id(f.f_locals["self"]), d, False, ns(f.f_locals["timeout"])))


class TracedEvent(_LibraryAware, _Event):
    """``threading.Event`` that records waits and sets."""
    _original, _traced_base = _Event, True

    def __init__(self):
        super().__init__()
        declare(self, "event")

    def wait(self, timeout: float | None = None) -> bool:
        """As ``Event.wait``; records the wait."""
        return _traced_wait(self, "event", super().wait, timeout)

    def set(self) -> None:
        """As ``Event.set``; records it (a notification of every waiter)."""
        t = mono()
        super().set()
        emit(("notify", gettid(), t, cpu(), site(), "event", id(self), True))


def _library(thread) -> bool | None:
    """True when the thread runs library code (its target is defined in the standard
    library or an installed package: a queue's feeder, a pool's result handler), so that
    the analyzer does not read the library's helpers as the program's work."""
    try:
        target = getattr(thread, "_target", None)
        code = getattr(target, "__code__", None) or getattr(
            getattr(target, "__func__", None), "__code__", None)
        if code is None:                # a Thread subclass: its run method
            code = getattr(type(thread).run, "__code__", None)
        if code is None:
            return None
        from .agent import _kind, classify
        k = _kind.get(code.co_filename)
        return (classify(code.co_filename) if k is None else k) == 1 or None
    except Exception:
        return None


def _shapes(args) -> list | None:
    """What a thread's target was given, for the analyzer to see how work was divided
    (docs/trace-format.md, thread_start ``args``): per positional argument an int's value
    ``["i", v]``, a range ``["r", start, stop, step]``, an array (numpy) ``["a", rows,
    id of its base, byte offset in it]``, a sized object ``["n", len, id]``, else ``["o"]``.
    Never raises: a strange object is ``["o"]``."""
    out = []
    try:
        for a in tuple(args)[:8]:
            if isinstance(a, bool):
                out.append(["o"])
            elif isinstance(a, numbers.Integral):      # numpy's integers too
                v = int(a)
                out.append(["i", v if -(1 << 62) < v < (1 << 62) else 0])
            elif isinstance(a, range):
                out.append(["r", a.start, a.stop, a.step])
            elif hasattr(a, "shape") and hasattr(a, "__array_interface__"):
                shape = a.shape
                base = a.base if getattr(a, "base", None) is not None else a
                try:
                    off = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
                except Exception:
                    off = 0
                out.append(["a", int(shape[0]) if shape else 1, id(base), int(off)])
            elif hasattr(a, "__len__") and not isinstance(a, type):
                out.append(["n", len(a), id(a)])
            else:
                out.append(["o"])
    except Exception:
        return None
    return out or None


def _patch_thread() -> None:
    Thread = threading.Thread
    start, bootstrap, join = Thread.start, Thread._bootstrap_inner, Thread.join

    def traced_start(self):
        self._qpn_origin = (gettid(), site(), _shapes(getattr(self, "_args", ())),
                            _library(self), mono())
        start(self)

    def traced_bootstrap_inner(self):
        # the time start() was called goes last (layout.to_event leaves it out): it names
        # the asyncio task that started the thread, if one did (aioconvert.py)
        parent, s, shapes, lib, started = getattr(self, "_qpn_origin",
                                                  (None, None, None, None, None))
        emit(("thread_start", gettid(), mono(), cpu(), s, self.name, parent, self.daemon,
              native_tid(), shapes, lib, started))
        try:
            bootstrap(self)
        finally:
            emit(("thread_end", gettid(), mono(), cpu(), None))

    def traced_join(self, timeout=None):
        s = site()
        c0 = cpu()
        t0 = mono()
        join(self, timeout)
        d, cd = spent(t0, c0)
        emit(("wait", gettid(), t0, c0, s, "join", id(self), d,
              False if self.is_alive() else None, ns(timeout), self.native_id, None, cd))

    Thread.start = traced_start
    Thread._bootstrap_inner = traced_bootstrap_inner
    Thread.join = traced_join
    blocking(traced_join, lambda f, tid, d: (
        "wait", tid, f.f_locals["t0"], f.f_locals["c0"], f.f_locals["s"], "join",
        id(f.f_locals["self"]), d, False, ns(f.f_locals["timeout"]),
        f.f_locals["self"].native_id))


def install() -> None:
    """Replace threading's lock, condition, semaphore, barrier and event classes by the
    traced ones."""
    threading.Lock = Lock
    threading.RLock = RLock
    threading.Condition = TracedCondition
    threading.Semaphore = TracedSemaphore
    threading.BoundedSemaphore = TracedBoundedSemaphore
    threading.Barrier = TracedBarrier
    threading.Event = TracedEvent
    _patch_thread()
