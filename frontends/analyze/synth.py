"""Synthetic traces in the neutral format, with known structure and parameters.

Used by the tests (known answers the analyzer must recover) and the benchmark
(a million events from many threads).  Timing is simulated, not measured: the
threads never compete for CPU (no GIL, enough cores), so fragment CPU = wall.

* :func:`batch_trace` -- a main thread puts N tasks into an unbounded queue and
  takes N results; W workers take a task, compute, update a total under a
  lock and put the result; one stop marker per worker ends them.
* :func:`server_trace` -- an open workload: an acceptor accepts connections
  from clients outside the trace (Poisson arrivals) and puts them into a
  bounded queue; W workers take one, parse it, look it up under a lock, read a
  file (a page-cache hit or a device access) and send the reply.

>>> t = server_trace(requests=50, workers=3, seed=1)
>>> sorted({e["kind"] for e in t.events})[:4], t.header.has("thread_cpu")
(['acquire', 'get', 'io', 'object'], True)
"""
from __future__ import annotations

import heapq
import random

from qpn.frontends.trace import Trace, TraceHeader, write_trace

US = 1000
MS = 1_000_000
CAPS = {"thread_cpu": True, "lock_hold": True, "lock_uncontended": True, "queue_items": True,
        "sites": True, "file_io": True, "socket_io": True, "gil": False}


def _header(argv, cpus: int, gil: bool = False) -> TraceHeader:
    return TraceHeader(source="synthetic", capabilities=dict(CAPS), clock="monotonic",
                       program={"argv": argv, "pid": 100, "exit_code": 0},
                       runtime={"implementation": "synthetic", "gil": gil, "cpus": cpus,
                                "switch_interval_ns": 5 * MS})


class _Thread:
    """A thread's clock and CPU clock while its events are generated."""

    def __init__(self, out: list, tid: int, ts: int, name: str, site: str | None = None,
                 parent: int | None = None):
        self.out, self.tid, self.t, self.cpu = out, tid, ts, 0
        ev = {"kind": "thread_start", "tid": tid, "ts": ts, "cpu": 0, "name": name}
        if site:
            ev["site"] = site
        if parent is not None:
            ev["parent"] = parent
        out.append(ev)

    def compute(self, ns: int) -> None:
        self.t += ns
        self.cpu += ns

    def ev(self, kind: str, dur: int = 0, cpu_dur: int = 0, **fields) -> dict:
        ev = {"kind": kind, "tid": self.tid, "ts": self.t, "cpu": self.cpu, **fields}
        if dur or kind in ("get", "put", "acquire"):
            ev["dur"] = dur
        if cpu_dur:
            ev["cpu_dur"] = cpu_dur
        self.out.append(ev)
        self.t += dur
        self.cpu += cpu_dur
        return ev

    def end(self) -> None:
        self.out.append({"kind": "thread_end", "tid": self.tid, "ts": self.t, "cpu": self.cpu})


def _trace(header, events) -> Trace:
    events.sort(key=lambda e: e["ts"])
    return Trace(header, events, "synthetic.jsonl")


def batch_trace(tasks: int = 100, workers: int = 3, *, work: int = 2 * MS,
                seed: int = 1) -> Trace:
    """A batch program: main puts ``tasks`` tasks, ``workers`` threads do them.

    >>> t = batch_trace(tasks=10, workers=2)
    >>> len(t.events), t.header.source
    (73, 'synthetic')
    """
    rng = random.Random(seed)
    out: list = []
    main = _Thread(out, 100, 0, "MainThread")
    main.compute(50 * US)
    for obj, typ, line in ((11, "queue", 3), (12, "queue", 4), (13, "lock", 5)):
        main.ev("object", obj=obj, type=typ, site=f"batch.py:{line}")
        main.compute(5 * US)
    free = []
    for k in range(workers):
        main.compute(30 * US)
        w = _Thread(out, 101 + k, main.t, f"worker-{k}", "batch.py:20", 100)
        free.append((w.t, k, w))
    heapq.heapify(free)
    ready = []                                   # (time the result is put, item)
    for i in range(tasks + workers):
        main.compute(int(rng.uniform(5, 15) * US))
        item = 1000 + i if i < tasks else 7          # stop markers share one id (None)
        main.ev("put", obj=11, item=item, site="batch.py:22" if i < tasks else "batch.py:24",
                size=1)
        t_put = main.t
        t_free, k, w = heapq.heappop(free)
        w.t = max(w.t, t_free)
        wait = max(0, t_put - w.t)
        w.ev("get", dur=wait, obj=11, item=item, site="batch.py:10", size=0)
        if item == 7:
            w.compute(10 * US)
            w.end()
            continue
        w.compute(int(rng.gammavariate(4, work / 4)))
        w.ev("acquire", obj=13, site="batch.py:12", contended=False)
        w.compute(3 * US)
        w.ev("release", obj=13, site="batch.py:12", hold=3 * US)
        w.compute(4 * US)
        w.ev("put", obj=12, item=item, site="batch.py:14", size=1)
        ready.append((w.t, item))
        w.compute(2 * US)
        heapq.heappush(free, (w.t, k, w))
    for t_res, item in sorted(ready):
        main.compute(int(rng.uniform(2, 6) * US))
        wait = max(0, t_res - main.t)
        main.ev("get", dur=wait, obj=12, item=item, site="batch.py:26", size=0)
    main.compute(100 * US)
    main.end()
    return _trace(_header(["batch.py", str(tasks), str(workers)], max(4, workers + 1)), out)


def server_trace(requests: int = 1000, workers: int = 4, *, rate: float = 200.0,
                 miss: float = 0.25, parse: int = 2 * MS, disk: int = 5 * MS,
                 capacity: int = 32, seed: int = 1, miss_cpu: int = 8 * US) -> Trace:
    """An open-workload server; the known answers are the keyword arguments.

    ``rate`` arrivals per second (Poisson), ``miss`` = probability that the
    file read goes to the device (``disk`` ns) instead of the page cache
    (about 10 us), ``parse`` = mean CPU of the parse fragment (exponential),
    ``miss_cpu`` = the CPU a device read uses itself (ns, constant).
    """
    rng = random.Random(seed)
    out: list = []
    main = _Thread(out, 100, 0, "MainThread")
    main.compute(40 * US)
    main.ev("object", obj=21, type="queue", capacity=capacity, site="server.py:5")
    main.compute(5 * US)
    main.ev("object", obj=22, type="lock", site="server.py:6")
    main.compute(20 * US)
    acc = _Thread(out, 101, main.t, "acceptor", "server.py:30", 100)
    pool = []
    for k in range(workers):
        main.compute(20 * US)
        pool.append((main.t, k, _Thread(out, 102 + k, main.t, f"worker-{k}", "server.py:31", 100)))
    heapq.heapify(pool)
    t_arr = acc.t
    for i in range(requests):
        t_arr += int(rng.expovariate(rate) * 1e9)
        acc.compute(15 * US)
        wait = max(0, t_arr - acc.t)
        acc.ev("io", dur=wait, op="accept", fd=3, site="server.py:12")
        acc.compute(5 * US)
        t_free, k, w = heapq.heappop(pool)
        w.t = max(w.t, t_free)
        acc.ev("put", obj=21, item=5000 + i, site="server.py:13", size=1)
        w.ev("get", dur=max(0, acc.t - w.t), obj=21, item=5000 + i, site="server.py:40", size=0)
        w.compute(int(rng.expovariate(1.0 / parse)))
        w.ev("acquire", obj=22, site="server.py:42", contended=False)
        w.compute(20 * US)
        w.ev("release", obj=22, site="server.py:42", hold=20 * US)
        w.compute(30 * US)
        if rng.random() < miss:
            w.ev("io", dur=int(rng.expovariate(1.0 / disk)) + 100 * US + miss_cpu, cpu_dur=miss_cpu, op="read",
                 path="/data/f.bin", fd=5, bytes=65536, site="server.py:45")
        else:
            w.ev("io", dur=int(rng.uniform(5, 15) * US), op="read", path="/data/f.bin", fd=5,
                 bytes=65536, site="server.py:45")
        w.compute(200 * US)
        w.ev("io", dur=30 * US, op="send", fd=9, bytes=65536, site="server.py:47")
        w.compute(10 * US)
        heapq.heappush(pool, (w.t, k, w))
    end = max(w.t for _, _, w in pool) + MS
    acc.t = max(acc.t, end)
    acc.end()
    for _, _, w in pool:
        w.ev("get", dur=max(0, end - w.t), obj=21, item=9, site="server.py:40", size=0)
        w.end()
    main.ev("wait", dur=max(0, end - main.t) + 10 * US, on="join", target=101, site="server.py:50")
    main.end()
    return _trace(_header(["server.py"], 2 * workers, gil=False), out)


def write(trace: Trace, path) -> int:
    """Write a synthetic trace (validated) to ``path``."""
    return write_trace(path, trace.header, trace.events)
