"""A software model run as a program: the main thread, resources, runners, the trace.

:func:`synthesize` builds the program of a net's ``software`` blocks and runs
it for ``time`` simulated seconds:

* a main thread (tid = pid = 1000, ``MainThread``) creates every object
  (``object`` events with capacity, parties, permits, the condition's lock),
  starts the threads and joins the first one until the end;
* a pool or population of size N is N threads ``NAME-1`` .. ``NAME-N``
  started by the main thread at the pool's line;
* a source is either a thread per request (``NAME-1``, ``NAME-2``, ... each
  runs the body once) or one acceptor thread ``NAME`` that waits for each
  arrival in an ``io accept`` and runs the body for it.  ``sources="auto"``
  takes the acceptor when the body never waits (``put`` into a sink, an
  unbounded queue or with ``else``, timers, branches of those): the arrivals
  are then exactly the model's;
* threads still alive at the end get their ``thread_end`` there; operations
  still under way are left out, as a tracer stopped at that moment would.

>>> import qpn
>>> net = qpn.parse('''
... software {
...     cpu host cores 1 ps
...     mutex m
...     pool workers size 2 { cpu exp(1 ms) as work  lock m  cpu det(1 ms)  unlock m }
... }''')
>>> res = synthesize(net, time=0.05, seed=3)
>>> sorted(res.info["threads"].items()), res.header.source
([('main', 1), ('workers', 2)], 'synth')
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from qpn.errors import QPNError
from qpn.software import ast as sw

from qpn.frontends.trace import Trace, TraceHeader

from .engine import PID, Sim, Thread, ns
from .interp import Interp, never_waits
from .sampling import Randoms
from .servers import Server
from .sync import Barrier, BlockingQueue, Condition, Limit, Mutex, RwLock, Semaphore

CAPABILITIES = ("thread_cpu", "lock_hold", "lock_uncontended", "queue_items", "sites")


class Sink:
    """``sink NAME``: where replies go (an ``io send`` on a socket)."""
    kind = "sink"

    def __init__(self, name: str, fd: int):
        self.name, self.fd, self.count = name, fd, 0


class Disk:
    """``disk NAME``: its server, file descriptor and service time."""

    def __init__(self, decl: sw.Disk, server: Server, fd: int, rnd: Randoms):
        self.name, self.server, self.fd, self.rnd = decl.name, server, fd, rnd
        self.service = decl.service
        self.load = sorted(decl.load, key=lambda kv: kv[0])

    def work(self):
        """The disk's own service time: a number, or a function of the load."""
        if self.load:
            return self._by_load
        if self.service is None:
            raise QPNError(f"disk '{self.name}' has no service time and the io step gives none")
        return self.rnd.draw(self.service)

    def _by_load(self, n: int) -> float:
        dist = self.load[0][1]
        for k, d in self.load:
            if k <= n:
                dist = d
        return self.rnd.draw(dist)


class World:
    """The program's objects by name (one namespace for all software blocks)."""

    def __init__(self):
        self.objects: dict = {}
        self.cpus: dict[str, Server] = {}
        self.disks: dict[str, Disk] = {}
        self.behaviors: dict[str, sw.Behavior] = {}
        self.timers: dict[str, dict] = {}
        self.ended: dict[str, int] = {}
        self.branches: dict = {}

    def obj(self, name: str):
        """The synchronization object or queue declared as ``name``."""
        return self.objects[name]

    def cpu(self, name: str | None) -> Server:
        """The CPU a step runs on (the only one when the step names none)."""
        return _named(self.cpus, name, "a cpu step needs 'on CPU'", "cpus")

    def disk(self, name: str | None) -> Disk:
        """The disk an I/O step uses (the only one when the step names none)."""
        return _named(self.disks, name, "an io step needs 'on DISK'", "disks")


@dataclass
class SynthResult:
    """A synthetic trace: header, events (sorted by ts) and what happened."""

    header: TraceHeader
    events: list
    info: dict = field(default_factory=dict)

    def trace(self, path: str = "synthetic.jsonl") -> Trace:
        """The synthetic run as a :class:`~frontends.trace.Trace` (as if read from
        ``path``)."""
        return Trace(self.header, self.events, path)


def parse_time(text) -> float:
    """Seconds from ``60``, ``60s``, ``500 ms``, ``2min``.

    >>> parse_time("500 ms"), parse_time(3), parse_time("2min")
    (0.5, 3.0, 120.0)
    """
    from qpn.expr import UNITS
    if isinstance(text, (int, float)):
        return float(text)
    t = str(text).strip().replace(" ", "")
    for unit in sorted(UNITS, key=len, reverse=True):
        if t.endswith(unit):
            try:
                return float(t[:-len(unit)]) * UNITS[unit]
            except ValueError:
                break
    try:
        return float(t)
    except ValueError:
        raise QPNError(f"qpn synth: --time wants a duration like 60, 60s or 500ms, got {text!r}")


def synthesize(net, *, time: float = 60.0, seed: int | None = 1, sources: str = "auto",
               max_events: int | None = None, model_path: str | None = None) -> SynthResult:
    """Run the software layer of ``net`` as a program for ``time`` seconds; its trace.

    >>> import qpn
    >>> res = synthesize(qpn.load("models/sw_producer_consumer.qpn"), time=2, seed=1)
    >>> len(res.trace().by_thread()), res.info["time"]
    (4, 2.0)
    """
    if sources not in ("auto", "threads", "acceptor"):
        raise QPNError(f"sources must be auto, threads or acceptor, got {sources!r}")
    decls = [d for b in net.software for d in b.decls]
    if not decls:
        raise QPNError(f"model '{net.name}' has no software block: nothing to run as a "
                       f"program (qpn synth runs the 'software {{ ... }}' layer, see "
                       f"docs/software-layer.md)")
    if not time > 0 or math.isinf(time):
        raise QPNError(f"the simulated time must be a positive number of seconds, got {time}")
    net.all_items                         # the layer's checks (names, probabilities, ...)
    env = net.param_values()
    rnd = Randoms(seed, env)
    sim = Sim(time, max_events)
    world = World()
    interp = Interp(sim, rnd, world)
    main = Thread(PID, "MainThread", "main")
    sim.events.append({"kind": "thread_start", "tid": PID, "ts": 0, "cpu": 0,
                       "name": "MainThread", "daemon": False})
    fds = iter(range(10, 1 << 20))
    for d in sorted(decls, key=lambda d: isinstance(d, sw.Condition)):   # mutexes first
        _declare(d, sim, rnd, world, interp, main, fds)
    counts = {"main": 1}
    first, first_site = None, None
    modes = {}
    for d in decls:
        if not isinstance(d, sw.RUNNERS):
            continue
        steps = world.behaviors[d.body].body if isinstance(d.body, str) else d.body
        sc = interp.scope(steps, d.name)
        site = interp.site(d)
        if isinstance(d, sw.Source):
            mode = sources
            if mode == "auto":
                mode = "acceptor" if never_waits(steps, world) else "threads"
            modes[d.name] = mode
            if mode == "acceptor":
                fd = next(fds)
                th = sim.spawn(d.name, lambda t, s=steps, c=sc, e=d.every, si=site, f=fd:
                               interp.acceptor_thread(t, e, s, c, si, f),
                               parent=main, site=site, runner=d.name)
                counts[d.name] = 1
            else:
                _arrivals(sim, rnd, interp, d, steps, sc, site, main, counts)
                th = None
        else:
            n = rnd.count(d.size, "a pool size", d.loc)
            counts[d.name] = n
            for i in range(1, n + 1):
                if isinstance(d, sw.Pool):
                    body = (lambda t, s=steps, c=sc: interp.pool_thread(t, s, c))
                else:
                    body = (lambda t, s=steps, c=sc, k=d.think, si=site:
                            interp.population_thread(t, s, c, k, si))
                th = sim.spawn(f"{d.name}-{i}", body, parent=main, site=site, runner=d.name)
                if first is None:
                    first, first_site = th, site
        if first is None and th is not None:
            first, first_site = th, site
    sim.run()
    end = ns(sim.now)
    if first is not None:
        sim.events.append({"kind": "wait", "tid": PID, "ts": 0, "cpu": 0,
                           "site": first_site, "on": "join", "dur": end, "target": first.tid})
    for th in [main] + sim.threads:
        if th.alive:
            sim.events.append({"kind": "thread_end", "tid": th.tid, "ts": end,
                               "cpu": ns(th.cpu)})
    events = sim.trace_events()
    return SynthResult(_header(net, world, events, env, time, seed, modes, model_path),
                       events, _info(sim, world, counts, modes, env, time, events))


def _declare(d, sim, rnd, world, interp, main, fds) -> None:
    """A resource of the model: its object (and ``object`` event on the main thread)."""
    site = interp.site(d)

    def obj_event(o, typ, **fields):
        sim.ev(main, "object", site, obj=o.obj, type=typ, name=d.name, **fields)
        world.objects[d.name] = o

    if isinstance(d, sw.Cpu):
        q = rnd.value(d.quantum) if d.quantum is not None else None
        sw_cost = rnd.value(d.switch) if d.switch is not None else 0.0
        world.cpus[d.name] = Server(sim, d.name, servers=rnd.count(d.cores, "cores", d.loc),
                                    discipline=d.discipline, quantum=q, switch=sw_cost,
                                    randoms=rnd)
    elif isinstance(d, sw.Disk):
        srv = Server(sim, d.name, servers=rnd.count(d.servers, "servers", d.loc),
                     discipline=d.discipline, randoms=rnd)
        world.disks[d.name] = Disk(d, srv, next(fds), rnd)
    elif isinstance(d, sw.Mutex):
        obj_event(Mutex(sim, sim.new_obj(), d.name), "lock")
    elif isinstance(d, sw.RwLock):
        obj_event(RwLock(sim, sim.new_obj(), d.prefer_writers, d.name), "rwlock")
    elif isinstance(d, sw.Semaphore):
        n = rnd.count(d.permits, "permits", d.loc, minimum=0)
        obj_event(Semaphore(sim, sim.new_obj(), n, d.name), "sem", permits=n)
    elif isinstance(d, sw.Barrier):
        n = rnd.count(d.parties, "parties", d.loc)
        obj_event(Barrier(sim, sim.new_obj(), n, d.name), "barrier", parties=n)
    elif isinstance(d, sw.Condition):
        m = world.objects.get(d.mutex) if d.mutex else None
        obj_event(Condition(sim, sim.new_obj(), m, d.name), "cond",
                  lock=m.obj if m is not None else None)
    elif isinstance(d, sw.BlockingQueue):
        cap = rnd.count(d.capacity, "a capacity", d.loc) if d.capacity is not None else None
        lifo = d.order == "lifo"
        obj_event(BlockingQueue(sim, sim.new_obj(), cap, lifo, d.name),
                  "lifo_queue" if lifo else "queue",
                  capacity=None if cap is None or math.isinf(cap) else cap)
    elif isinstance(d, sw.Limit):
        n = rnd.count(d.count, "a limit", d.loc, minimum=0)
        obj_event(Limit(sim, sim.new_obj(), n, d.name), "bsem", permits=n)
    elif isinstance(d, sw.Timer):
        world.timers[d.name] = {}
    elif isinstance(d, sw.Sink):
        world.objects[d.name] = Sink(d.name, next(fds))
    elif isinstance(d, sw.Behavior):
        world.behaviors[d.name] = d


def _arrivals(sim, rnd, interp, src, steps, sc, site, main, counts) -> None:
    """A thread per request of ``src``: each arrival starts one."""
    counts[src.name] = 0

    def arrive():
        counts[src.name] += 1
        sim.spawn(f"{src.name}-{counts[src.name]}",
                  lambda t: interp.request_thread(t, steps, sc),
                  parent=main, site=site, runner=src.name)
        sim.at(sim.now + rnd.draw(src.every), arrive)

    sim.at(rnd.draw(src.every), arrive)


def _header(net, world, events, env, time, seed, modes, model_path) -> TraceHeader:
    caps = {c: True for c in CAPABILITIES}
    caps["gil"] = False
    ops = {e["op"] for e in events if e["kind"] == "io"}
    caps["file_io"] = "read" in ops
    caps["socket_io"] = bool(ops & {"send", "accept"})
    cores = [s.c for s in world.cpus.values()]
    runtime = {"implementation": "synth", "gil": False}
    if cores and not any(math.isinf(c) for c in cores):
        runtime["cpus"] = int(sum(cores))
    rr = [s.quantum for s in world.cpus.values() if s.serves == "ready"]
    if rr and not math.isinf(rr[0]):
        runtime["switch_interval_ns"] = ns(rr[0])
    model = model_path or getattr(net, "path", None) or net.name
    program = {"argv": ["qpn", "synth", os.path.basename(str(model))], "pid": PID,
               "exit_code": 0, "end": "exit"}
    synth = {"model": str(model), "net": net.name, "seed": seed, "time_ns": ns(time),
             "params": {k: v for k, v in env.items() if isinstance(v, (int, float))},
             "sources": modes}
    return TraceHeader(source="synth", capabilities=caps, clock="simulated", program=program,
                       runtime=runtime, start_ns=0, extra={"synth": synth})


def _info(sim, world, counts, modes, env, time, events) -> dict:
    """What the run did (for the CLI summary and tests)."""
    sinks = {n: o.count for n, o in world.objects.items() if isinstance(o, Sink)}
    return {"time": sim.now, "threads": counts, "sources": modes, "events": len(events),
            "sinks": sinks, "timers": dict(world.ended), "truncated": sim.truncated,
            "utilization": {n: s.utilization(sim.now) for n, s in
                            list(world.cpus.items()) +
                            [(n, d.server) for n, d in world.disks.items()]},
            "params": env}


def _named(table: dict, name: str | None, need: str, what: str):
    """``table[name]``, or its only entry when the step names none."""
    if name is None:
        if len(table) != 1:
            raise QPNError(f"{need} (the model has {len(table)} {what})")
        return next(iter(table.values()))
    return table[name]
