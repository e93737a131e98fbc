"""The steps of the software layer, run by simulated threads, as trace events.

Each step writes what a traced program doing the same would write
(``docs/trace-format.md``); a ``cpu`` step writes nothing, it only advances
the thread's CPU clock, so its demand shows as the fragment between the
events around it, as in a real trace:

=====================  =========================================================
step                   events
=====================  =========================================================
``cpu D``              none (``cpu`` of the next event grows by the demand)
``io on DISK``         ``io`` op ``read`` (``dur``: queueing + service)
``sleep D``            ``wait`` on ``sleep`` (``requested``)
``lock m``/``unlock``  ``acquire`` (``dur``, ``contended``) / ``release`` (``hold``)
``read/write lock``    the same on the ``rwlock`` object, with ``mode``
``acquire [n] s``      ``acquire`` (``count``) / ``release`` (``count``)
``await b``            ``wait`` on ``barrier``
``wait c``             ``wait`` on ``cond`` containing the ``release`` and re-``acquire`` of its mutex
``notify [all] c``     ``notify`` (``waiters``, ``all``)
``put q``/``take q``   ``put``/``get`` with ``item``, ``dur``, ``size``; ``ok: false`` when full/empty/timed out
``put SINK``           ``io`` op ``send`` (the reply; ``req`` = the item)
``allocate``/``free``  ``acquire`` (``ok: false`` on the error route) / ``release`` on a ``bsem``
``timer start/stop``   ``request`` ``begin``/``end`` (``req`` = the item the thread handles)
``fork``               children's ``thread_start`` (``parent``), the parent's ``wait`` on ``join`` per child
``branch`` ``loop``    none (their choices show in which events follow)
``call`` ``return``    none
think (population)     ``wait`` on ``sleep`` before every run
a source's arrival     ``io`` op ``accept`` (acceptor thread), or a new thread
=====================  =========================================================

A put or take that gives up after its ``timeout`` has ``ok: false`` and the
extra field ``timeout`` (the wait given up, ns).

A thread handles one *item* at a time: a request of a source gets a new id,
``take`` sets it to the item taken, ``put`` hands it on (a put without an item
makes a new one), ``timer`` events name it, so the analyzer can follow a
request from thread to thread.
"""
from __future__ import annotations

import os

from qpn.software import ast as sw
from qpn.software.env import assign_labels

from .engine import ns
from .sync import WAIT

#: bytes of one disk read / reply (the trace wants a size; the model has none)
BLOCK = 4096


class _Return(Exception):
    """``return``: ends the current behavior, run, request or forked thread."""


class Scope:
    """The steps of one runner, behavior or forked block: labels and path prefix."""

    def __init__(self, steps, prefix: str):
        self.labels = assign_labels(steps)
        self.prefix = prefix

    def label(self, st) -> str:
        """The label of a step here (given with ``as``, else its kind)."""
        return self.labels.get(id(st), type(st).__name__.lower())


class Interp:
    """Runs steps for threads of a :class:`~frontends.synth.engine.Sim`."""

    def __init__(self, sim, rnd, world):
        self.sim, self.rnd, self.w = sim, rnd, world
        self.sites: dict[int, str] = {}
        self.scopes: dict[tuple, Scope] = {}
        self.forks = 0
        self.H = {sw.Compute: self.compute, sw.Io: self.io, sw.Sleep: self.sleep,
                  sw.Lock: self.lock, sw.Unlock: self.unlock, sw.Acquire: self.acquire,
                  sw.Release: self.release, sw.Await: self.await_, sw.Wait: self.wait,
                  sw.Notify: self.notify, sw.Put: self.put, sw.Take: self.take,
                  sw.Allocate: self.allocate, sw.Free: self.free, sw.TimerStep: self.timer,
                  sw.Branch: self.branch, sw.Loop: self.loop, sw.Fork: self.fork,
                  sw.Call: self.call, sw.Return: self.ret}

    # -- helpers ---------------------------------------------------------------
    def scope(self, steps, prefix: str) -> Scope:
        """The labels and name prefix of a body run under ``prefix`` (made once, then
        cached)."""
        key = (id(steps), prefix)
        sc = self.scopes.get(key)
        if sc is None:
            sc = self.scopes[key] = Scope(steps, prefix)
        return sc

    def site(self, node, sc: Scope | None = None) -> str:
        """``model.qpn:LINE`` of a step or declaration (its label without a location)."""
        s = self.sites.get(id(node))
        if s is None:
            loc = getattr(node, "loc", None)
            if loc is not None and loc.line:
                s = f"{os.path.basename(loc.file)}:{loc.line}"
            else:
                s = f"{sc.prefix}.{sc.label(node)}" if sc is not None else type(node).__name__
            self.sites[id(node)] = s
        return s

    def steps(self, th, steps, sc: Scope):
        """Run ``steps`` for ``th`` (a generator: ``yield from`` it)."""
        H = self.H
        for st in steps:
            g = H[type(st)](th, st, sc)
            if g is not None:
                yield from g

    def body(self, th, steps, sc: Scope):
        """One run of a body; ``return`` ends it."""
        try:
            yield from self.steps(th, steps, sc)
        except _Return:
            pass

    def _arm(self, th, q, t: float, fail) -> None:
        """A timeout ``t`` from now for ``th`` waiting at queue ``q``."""
        self.sim.at(self.sim.now + t, self._expire, th, q, th.wid, fail)

    def _expire(self, th, q, wid: int, fail) -> None:
        if th.wid == wid and q.give_up(th):
            self.sim.resume(th, fail)

    # -- time ------------------------------------------------------------------
    def compute(self, th, st, sc):
        """Step ``cpu``: a drawn demand on its CPU (the thread waits for the server)."""
        d = self.rnd.draw(st.dist)
        if d > 0:
            self.w.cpu(st.on).submit(th, d)
            yield
            th.cpu += d

    def io(self, th, st, sc):
        """Step ``io``: a drawn (or the disk's own) service on its disk, recorded as a read."""
        disk = self.w.disk(st.on)
        work = self.rnd.draw(st.dist) if st.dist is not None else disk.work()
        e = self.sim.ev(th, "io", self.site(st, sc), op="read",
                        path=f"/data/{disk.name}/{sc.label(st)}.dat", fd=disk.fd, bytes=BLOCK,
                        dur=None)
        disk.server.submit(th, work)
        yield
        self.sim.done(e)

    def sleep(self, th, st, sc):
        """Step ``sleep``: a drawn pause."""
        yield from self.pause(th, self.rnd.draw(st.dist), self.site(st, sc))

    def pause(self, th, d: float, site: str):
        """The thread waits ``d`` seconds, recorded as a sleep at ``site``."""
        sim = self.sim
        e = sim.ev(th, "wait", site, on="sleep", dur=None, requested=ns(d))
        sim.at(sim.now + d, sim.resume, th)
        yield
        sim.done(e)

    # -- locks -----------------------------------------------------------------
    def lock(self, th, st, sc):
        """Step ``lock`` (mutex, read or write): wait until granted, recorded with the wait."""
        o = self.w.obj(st.target)
        sim = self.sim
        if st.mode == "mutex":
            e = sim.ev(th, "acquire", self.site(st, sc), obj=o.obj, dur=None,
                       contended=o.holder is not None)
            if not o.acquire(th):
                yield
        else:
            e = sim.ev(th, "acquire", self.site(st, sc), obj=o.obj, dur=None,
                       contended=not o._can(st.mode), mode=st.mode)
            if not o.acquire(th, st.mode):
                yield
        sim.done(e)
        th.held[o.obj] = e["ts"] + e["dur"]

    def unlock(self, th, st, sc):
        """Step ``unlock``: release, recording the hold time."""
        o = self.w.obj(st.target)
        t0 = th.held.pop(o.obj, None)
        now = ns(self.sim.now)
        self.sim.ev(th, "release", self.site(st, sc), obj=o.obj,
                    hold=None if t0 is None else now - t0,
                    mode=None if st.mode == "mutex" else st.mode)
        if st.mode == "mutex":
            o.release()
        else:
            o.release(th, st.mode)

    def acquire(self, th, st, sc):
        """Step ``acquire``: wait for the permits."""
        s = self.w.obj(st.target)
        n = self.rnd.count(st.count, "a permit count", st.loc)
        e = self.sim.ev(th, "acquire", self.site(st, sc), obj=s.obj, dur=None,
                        contended=s.free < n, count=n if n != 1 else None)
        if not s.acquire(th, n):
            yield
        self.sim.done(e)

    def release(self, th, st, sc, what: str = "a permit count"):
        """Step ``release`` (and ``free``): give the units back, waking those they satisfy."""
        s = self.w.obj(st.target)
        n = self.rnd.count(st.count, what, st.loc)
        self.sim.ev(th, "release", self.site(st, sc), obj=s.obj, count=n if n != 1 else None)
        s.release(n)

    def await_(self, th, st, sc):
        """Step ``await``: wait at the barrier until its parties have arrived."""
        b = self.w.obj(st.target)
        e = self.sim.ev(th, "wait", self.site(st, sc), on="barrier", obj=b.obj, dur=None)
        if not b.arrive(th):
            yield
        self.sim.done(e)

    def wait(self, th, st, sc):
        """``wait c``: a ``wait`` on ``cond`` that contains the release of the mutex at its
        start and the re-acquire at its end, placed strictly inside it (at least 1 ns in:
        readers skip events that start before the enclosing one ends)."""
        sim = self.sim
        c = self.w.obj(st.target)
        m = c.mutex
        site = self.site(st, sc)
        e = sim.ev(th, "wait", site, on="cond", obj=c.obj, dur=None)
        rel = None
        if m is not None:
            t0 = th.held.pop(m.obj, None)
            rel = {"kind": "release", "tid": th.tid, "ts": e["ts"], "cpu": ns(th.cpu),
                   "site": site, "obj": m.obj}
            if t0 is not None:
                rel["hold"] = e["ts"] - t0
            m.release()
        c.waiters.append(th)
        yield
        sim.done(e)
        if m is not None:
            end = e["ts"] + e["dur"]
            th.held[m.obj] = end
            if e["dur"] >= 2:                 # too short to nest in: left out
                ts = max(e["ts"] + 1, min(ns(th.signal_at), end - 1))
                sim.events.append(rel)
                sim.events.append({"kind": "acquire", "tid": th.tid, "ts": ts,
                                   "cpu": ns(th.cpu), "site": site, "obj": m.obj,
                                   "dur": end - ts, "contended": th.relock_contended})

    def notify(self, th, st, sc):
        """Step ``notify [all]``: wake one or every waiter of the condition."""
        c = self.w.obj(st.target)
        self.sim.ev(th, "notify", self.site(st, sc), obj=c.obj, on="cond",
                    all=True if st.all else None, waiters=len(c.waiters))
        c.notify(st.all)

    # -- queues and limits -------------------------------------------------------
    def put(self, th, st, sc):
        """Step ``put``: hand the thread's item (or a new one) to the queue, waiting for
        room (with a timeout and else-block when given)."""
        sim = self.sim
        q = self.w.obj(st.target)
        item = th.item if th.item is not None else sim.new_item()
        if q.kind == "sink":
            sim.ev(th, "io", self.site(st, sc), op="send", fd=q.fd, bytes=BLOCK, dur=0, req=item)
            q.count += 1
            th.item = None
            return
        wait = st.otherwise is None or st.timeout is not None
        e = sim.ev(th, "put", self.site(st, sc), obj=q.obj, item=item, dur=None)
        ok = q.put(th, item, wait)
        size = 1 if q.handed else len(q.items)
        timeout = None
        if ok is None:
            ok, timeout = yield from self._wait_at(th, st, q, False)
            size = len(q.items)
        sim.done(e)
        e["size"] = size
        if ok:
            th.item = None
            return
        e["ok"] = False
        if timeout is not None:
            e["timeout"] = ns(timeout)            # the wait given up (an extra field)
        if st.otherwise:
            yield from self.steps(th, st.otherwise, sc)

    def take(self, th, st, sc):
        """Step ``take``: wait for an item (with a timeout and else-block when given); the
        thread carries it on."""
        sim = self.sim
        q = self.w.obj(st.target)
        wait = st.otherwise is None or st.timeout is not None
        e = sim.ev(th, "get", self.site(st, sc), obj=q.obj, dur=None)
        item = q.take(th, wait)
        timeout = None
        if item is WAIT:
            item, timeout = yield from self._wait_at(th, st, q, None)
        sim.done(e)
        if item is not None:
            e["item"] = item
            e["size"] = len(q.items)
            th.item = item
            return
        e["size"] = 0
        e["ok"] = False
        if timeout is not None:
            e["timeout"] = ns(timeout)
        if st.otherwise:
            yield from self.steps(th, st.otherwise, sc)

    def _wait_at(self, th, st, q, fail):
        """The wait of a ``put`` or ``take`` that found no room or item, in one place for
        both (a generator: ``yield from`` it): arm the step's timeout if it has one (it
        wakes the thread with ``fail``), block until woken, and return (what the thread
        was woken with, the timeout drawn or None)."""
        timeout = None
        if st.timeout is not None:
            timeout = self.rnd.draw(st.timeout)
            self._arm(th, q, timeout, fail)
        woken = yield
        th.wid += 1
        return woken, timeout

    def allocate(self, th, st, sc):
        """Step ``allocate``: take units of a limit, or run the else-block when too few are
        free."""
        lim = self.w.obj(st.target)
        n = self.rnd.count(st.count, "an allocation count", st.loc)
        ok = lim.allocate(n)
        self.sim.ev(th, "acquire", self.site(st, sc), obj=lim.obj, dur=0, contended=not ok,
                    ok=None if ok else False, count=n if n != 1 else None)
        if not ok and st.otherwise:
            yield from self.steps(th, st.otherwise, sc)

    def free(self, th, st, sc):
        """Step ``free``: give units of a limit back."""
        self.release(th, st, sc, "a count")

    def timer(self, th, st, sc):
        """Step ``timer start|stop``: start or end a request's response time."""
        open_ = self.w.timers[st.target]
        if st.action == "start":
            if th.item is None:
                th.item = self.sim.new_item()
            open_[th.item] = None
            self.sim.ev(th, "request", self.site(st, sc), req=th.item, phase="begin",
                        name=st.target)
            return
        req = th.item if th.item in open_ else next(iter(open_), None)
        if req is None:
            return
        del open_[req]
        self.w.ended[st.target] = self.w.ended.get(st.target, 0) + 1
        self.sim.ev(th, "request", self.site(st, sc), req=req, phase="end", name=st.target)

    # -- control flow ------------------------------------------------------------
    def branch(self, th, st, sc):
        """Step ``branch``: one alternative drawn by its probability."""
        ws = [self.rnd.value(a.prob) for a in st.alternatives]
        i = self.rnd.choose(ws)
        self.w.branches[(id(st), i)] = self.w.branches.get((id(st), i), 0) + 1
        return self.steps(th, st.alternatives[i].body, sc)

    def loop(self, th, st, sc):
        """Step ``loop``: the body a fixed or a geometric number of times."""
        if st.geometric:
            p = 1.0 / self.rnd.value(st.count)
            while True:
                yield from self.steps(th, st.body, sc)
                if self.rnd.uniform() < p:
                    return
        for _ in range(self.rnd.count(st.count, "a loop count", st.loc)):
            yield from self.steps(th, st.body, sc)

    def call(self, th, st, sc):
        """Step ``call``: run a behavior's body here."""
        b = self.w.behaviors[st.target]
        return self.body(th, b.body, self.scope(b.body, f"{sc.prefix}.{sc.label(st)}"))

    def ret(self, th, st, sc):
        """Step ``return``: end the current behavior."""
        raise _Return()

    def fork(self, th, st, sc):
        """Step ``fork``: start the child threads and wait until all have ended."""
        sim = self.sim
        n = self.rnd.count(st.count, "a fork count", st.loc)
        label, site = sc.label(st), self.site(st, sc)
        kids = []
        for bi, blk in enumerate(st.blocks):
            child = "child" if len(st.blocks) == 1 else f"child{bi + 1}"
            csc = self.scope(blk.body, f"{sc.prefix}.{label}.{child}")
            target = f"{csc.prefix}".replace(".", "_")
            for _ in range(n):
                self.forks += 1
                k = sim.spawn(f"Thread-{self.forks} ({target})",
                              lambda t, b=blk.body, c=csc: self.body(t, b, c),
                              parent=th, site=site, runner=csc.prefix)
                k.parent = th
                kids.append(k)
        th.pending = len(kids)
        t = sim.now
        yield
        for k in kids:                        # the parent joins them in start order
            sim.events.append({"kind": "wait", "tid": th.tid, "ts": ns(t), "cpu": ns(th.cpu),
                               "site": site, "on": "join", "dur": max(0, ns(k.end) - ns(t)),
                               "target": k.tid})
            t = max(t, k.end)

    # -- runners -----------------------------------------------------------------
    def pool_thread(self, th, steps, sc):
        """A pool thread: the body forever."""
        while True:
            th.item = None
            yield from self.body(th, steps, sc)

    def population_thread(self, th, steps, sc, think, site: str):
        """A population thread: think (a sleep), then the body, forever."""
        while True:
            yield from self.pause(th, self.rnd.draw(think), site)
            th.item = None
            yield from self.body(th, steps, sc)

    def request_thread(self, th, steps, sc):
        """A thread per request of a source: the body once, for a new item."""
        th.item = self.sim.new_item()
        yield from self.body(th, steps, sc)

    def acceptor_thread(self, th, every, steps, sc, site: str, fd: int):
        """One thread accepts the requests of a source (``io accept``) and runs the body."""
        sim = self.sim
        t_next = self.rnd.draw(every)
        while True:
            e = sim.ev(th, "io", site, op="accept", fd=fd, dur=None)
            if t_next > sim.now:
                sim.at(t_next, sim.resume, th)
                yield
            sim.done(e)
            t_next += self.rnd.draw(every)
            th.item = sim.new_item()
            yield from self.body(th, steps, sc)


def never_waits(steps, world) -> bool:
    """Whether ``steps`` always finish at once (no cpu, I/O, sleep or blocking wait)."""
    for st in steps:
        t = type(st)
        if t in (sw.TimerStep, sw.Unlock, sw.Release, sw.Notify, sw.Free, sw.Return):
            continue
        if t is sw.Put:
            q = world.obj(st.target)
            if q.kind == "sink" or (q.kind == "queue" and q.capacity == float("inf")):
                continue
            if st.otherwise is not None and st.timeout is None and never_waits(st.otherwise, world):
                continue
            return False
        if t is sw.Take:
            if st.otherwise is not None and st.timeout is None and never_waits(st.otherwise, world):
                continue
            return False
        if t is sw.Allocate:
            if never_waits(st.otherwise, world):
                continue
            return False
        if t is sw.Branch:
            if all(never_waits(a.body, world) for a in st.alternatives):
                continue
            return False
        if t is sw.Call:
            if never_waits(world.behaviors[st.target].body, world):
                continue
            return False
        return False
    return True
