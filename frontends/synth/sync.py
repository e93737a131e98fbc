"""The state of locks, semaphores, barriers, conditions, queues and limits.

These classes only decide who may go on and wake threads (``sim.resume``);
the interpreter (:mod:`.interp`) writes the events.  A method that can block
returns whether the caller got what it asked for *now*; if not, the caller is
queued and ``yield``\\ s until the object resumes it.

Policies: a mutex is handed to its waiters in FIFO order; a read-write lock
admits readers unless a writer holds it (with ``prefer writers``: or waits),
a writer when nobody holds it, scanning its waiters in FIFO order; a
semaphore grants waiters in FIFO order as far as the permits go (a smaller
later request may pass a larger earlier one); a barrier is cyclic; a
condition wakes its waiters in FIFO order; a blocking queue hands items to
takers in FIFO order and is FIFO or LIFO for the items it stores.

>>> from qpn.frontends.synth.engine import Sim, Thread
>>> sim = Sim(horizon=1)
>>> m = Mutex(sim, obj=7)
>>> a, b = Thread(1, "a"), Thread(2, "b")
>>> m.acquire(a), m.acquire(b), m.holder is a
(True, False, True)
>>> m.release(); m.holder is b, [t.name for t, _ in sim.ready]
(True, ['b'])
"""
from __future__ import annotations

import math
from collections import deque

WAIT = object()          # BlockingQueue.take: the caller waits


class Mutex:
    """A mutex with a FIFO line of waiting threads."""
    def __init__(self, sim, obj: int, name: str = ""):
        self.sim, self.obj, self.name = sim, obj, name
        self.holder = None
        self.waiters: deque = deque()
        self.acquired = 0

    def acquire(self, th) -> bool:
        """Take the lock for ``th`` now, or queue it (resumed when it gets the lock)."""
        if self.holder is None:
            self.holder = th
            self.acquired += 1
            return True
        self.waiters.append(th)
        return False

    def release(self) -> None:
        """Free the mutex, handing it to the first waiter if any."""
        if self.waiters:
            self.holder = self.waiters.popleft()
            self.acquired += 1
            self.sim.resume(self.holder)
        else:
            self.holder = None


class RwLock:
    """A readers-writer lock; ``prefer_writers`` blocks new readers while a writer waits."""
    def __init__(self, sim, obj: int, prefer_writers: bool, name: str = ""):
        self.sim, self.obj, self.name, self.prefer = sim, obj, name, prefer_writers
        self.readers = 0
        self.writer = None
        self.waiting: deque = deque()      # (thread, mode)
        self.writers_waiting = 0

    def _can(self, mode: str) -> bool:
        if mode == "read":
            return self.writer is None and not (self.prefer and self.writers_waiting)
        return self.writer is None and self.readers == 0

    def _grant(self, th, mode: str) -> None:
        if mode == "read":
            self.readers += 1
        else:
            self.writer = th

    def acquire(self, th, mode: str) -> bool:
        """Take the lock in ``mode`` (read or write) now if possible (True), else queue the
        thread."""
        if self._can(mode):
            self._grant(th, mode)
            return True
        self.waiting.append((th, mode))
        if mode == "write":
            self.writers_waiting += 1
        return False

    def release(self, th, mode: str) -> None:
        """Give the lock up and grant it to the waiters that can have it now."""
        if mode == "read":
            self.readers -= 1
        else:
            self.writer = None
        for entry in list(self.waiting):
            w, m = entry
            if m == "write":
                self.writers_waiting -= 1           # not counted while deciding itself
            if self._can(m):
                self.waiting.remove(entry)
                self._grant(w, m)
                self.sim.resume(w)
            elif m == "write":
                self.writers_waiting += 1


class Semaphore:
    """A counting semaphore; waiters are served in arrival order as permits suffice."""
    def __init__(self, sim, obj: int, permits: int, name: str = ""):
        self.sim, self.obj, self.name = sim, obj, name
        self.free = permits
        self.waiting: deque = deque()      # (thread, count)

    def acquire(self, th, n: int) -> bool:
        """Take ``n`` permits now if free (True), else queue the thread."""
        if self.free >= n:
            self.free -= n
            return True
        self.waiting.append((th, n))
        return False

    def release(self, n: int) -> None:
        """Give ``n`` permits back and wake the waiters they satisfy."""
        self.free += n
        for entry in list(self.waiting):
            if entry[1] <= self.free:
                self.waiting.remove(entry)
                self.free -= entry[1]
                self.sim.resume(entry[0])


class Barrier:
    """A cyclic barrier: the ``parties``-th arrival releases every waiting thread."""
    def __init__(self, sim, obj: int, parties: int, name: str = ""):
        self.sim, self.obj, self.name, self.parties = sim, obj, name, parties
        self.waiting: list = []
        self.trips = 0

    def arrive(self, th) -> bool:
        """True: ``th`` was the last party (the others are resumed); False: it waits."""
        self.waiting.append(th)
        if len(self.waiting) < self.parties:
            return False
        self.trips += 1
        for w in self.waiting:
            if w is not th:
                self.sim.resume(w)
        self.waiting = []
        return True


class Condition:
    """A condition variable tied to a mutex: waiters release it and take it back when woken."""
    def __init__(self, sim, obj: int, mutex: Mutex | None, name: str = ""):
        self.sim, self.obj, self.mutex, self.name = sim, obj, mutex, name
        self.waiters: deque = deque()

    def notify(self, everyone: bool) -> int:
        """Wake one waiter (or all); each takes the mutex again before it goes on."""
        n = len(self.waiters) if everyone else min(1, len(self.waiters))
        for _ in range(n):
            w = self.waiters.popleft()
            w.signal_at = self.sim.now
            m = self.mutex
            if m is None:
                self.sim.resume(w)
            else:
                w.relock_contended = m.holder is not None
                if m.acquire(w):
                    self.sim.resume(w)
        return n


class BlockingQueue:
    """A bounded FIFO or LIFO queue of items with waiting putters and takers."""
    kind = "queue"

    def __init__(self, sim, obj: int, capacity: float, lifo: bool, name: str = ""):
        self.sim, self.obj, self.name = sim, obj, name
        self.capacity = capacity if capacity is not None else math.inf
        self.lifo = lifo
        self.items: deque = deque()
        self.takers: deque = deque()
        self.putters: deque = deque()      # (thread, item)
        self.handed = False                # the last put went straight to a taker

    def put(self, th, item, wait: bool):
        """True: done; False: full and ``wait`` is false; None: ``th`` waits."""
        self.handed = False
        if self.takers:
            self.handed = True
            self.sim.resume(self.takers.popleft(), item)
            return True
        if len(self.items) < self.capacity:
            self.items.append(item)
            return True
        if not wait:
            return False
        self.putters.append((th, item))
        return None

    def take(self, th, wait: bool):
        """The item; None: empty and ``wait`` is false; :data:`WAIT`: ``th`` waits."""
        if self.items:
            item = self.items.pop() if self.lifo else self.items.popleft()
            if self.putters:
                p, pitem = self.putters.popleft()
                self.items.append(pitem)
                self.sim.resume(p, True)
            return item
        if not wait:
            return None
        self.takers.append(th)
        return WAIT

    def give_up(self, th) -> bool:
        """A timed-out waiter leaves the queue; False if it was served meanwhile."""
        if th in self.takers:
            self.takers.remove(th)
            return True
        for entry in self.putters:
            if entry[0] is th:
                self.putters.remove(entry)
                return True
        return False


class Limit:
    """An OS limit: ``allocate`` never waits, it succeeds or fails."""

    def __init__(self, sim, obj: int, count: int, name: str = ""):
        self.sim, self.obj, self.name, self.free, self.count = sim, obj, name, count, count

    def allocate(self, n: int) -> bool:
        """Take ``n`` units now if free (True), else nothing (False)."""
        if self.free >= n:
            self.free -= n
            return True
        return False

    def release(self, n: int) -> None:
        """Give ``n`` units back (never above the limit)."""
        self.free = min(self.count, self.free + n)
