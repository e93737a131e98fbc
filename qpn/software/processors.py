"""CPUs, disks and sleeping: the steps where a thread spends time.

* ``cpu host cores 4 ps`` is a shared queue ``host : ps servers 4``; each
  ``cpu DIST`` step is a queueing place ``RUNNER.cpu`` on it with that service
  time, so all threads compete for the same cores while every step keeps its
  own measures.  ``rr quantum 10 ms [switch 50 us]`` time-slices.
* ``disk ssd servers 2 fcfs service exp(2 ms)`` is a shared queue too; ``io``
  steps are places on it (with their own time or the disk's).
* ``disk ssd servers 4 service by load 1: D1, 2: D2, 4: D4`` chooses the service
  time by the number of requests in service when a request starts: a request
  waits in ``RUNNER.io`` (counted in ``ssd.waiting``), takes a free server
  (``ssd.slots``) and enters ``RUNNER.io.load<k>`` (an infinite-server place
  with time D<k>) when ``ssd.busy`` holds k-1 .. next level - 2 requests.
* ``sleep DIST`` is an infinite-server place: every thread waits out its time.

>>> import qpn
>>> net = qpn.parse("software { cpu host cores 2\\n pool w size 3 { cpu exp(4 ms) as parse } }")
>>> p = net.place_map["w.parse"]; p.queue, net.queue_map["host"].discipline
('host', 'ps')
"""
from __future__ import annotations

import math

from ..expr import Num
from . import ast as sw
from .cfg import Exit, ExitMode
from .env import declaration, step
from .kit import arc, ctx_color, ctx_vars


@declaration(sw.Cpu)
def cpu_decl(d: sw.Cpu, env) -> None:
    """``cpu host cores N``: the processor-sharing (or other) queue of a CPU."""
    env.kit.queue(d.name, d.discipline, d.cores, d.quantum, d.switch, loc=d.loc)


@declaration(sw.Disk)
def disk_decl(d: sw.Disk, env) -> None:
    """``disk d servers N service D``: the queue of a disk."""
    if not d.load:
        env.kit.queue(d.name, d.discipline, d.servers, loc=d.loc)
        return
    if not _infinite(d.servers):
        env.kit.place(f"{d.name}.slots", init=d.servers, loc=d.loc)
    env.kit.place(f"{d.name}.busy", loc=d.loc)


def _infinite(e) -> bool:
    return isinstance(e, Num) and e.value == math.inf


@step(sw.Compute)
def compute(st: sw.Compute, nxt, env):
    """``cpu D [on host]``: a burst of CPU time in the CPU's queue."""
    cpu = env.table.get(st.on, (sw.Cpu,), st.loc) if st.on else env.table.default((sw.Cpu,), st.loc, "")
    s = env.station(env.path(st), st.loc, queue=cpu.name, service=st.dist)
    s.exits.append(Exit(f"{s.place}.done", next=nxt, loc=st.loc))
    return s


@step(sw.Sleep)
def sleep(st: sw.Sleep, nxt, env):
    """``sleep D``: a delay in an infinite-server place of its own."""
    s = env.station(env.path(st), st.loc, delay=True, service=st.dist)
    s.exits.append(Exit(f"{s.place}.done", next=nxt, loc=st.loc))
    return s


@step(sw.Io)
def io(st: sw.Io, nxt, env):
    """``io [D] [on disk]``: a visit to the disk's queue."""
    disk = env.table.get(st.on, (sw.Disk,), st.loc) if st.on else env.table.default((sw.Disk,), st.loc, "")
    path = env.path(st)
    if not disk.load:
        s = env.station(path, st.loc, queue=disk.name, service=st.dist or disk.service)
        s.exits.append(Exit(f"{s.place}.done", next=nxt, loc=st.loc))
        return s
    kit, d = env.kit, disk.name
    finite = not _infinite(disk.servers)
    waiting = kit.counter(f"{d}.waiting", disk.loc)
    wait = env.station(path, st.loc, entry=[arc(waiting)])
    modes = []
    levels = list(disk.load)
    for i, (level, dist) in enumerate(levels):
        served = env.station(f"{path}.load{level}", st.loc, delay=True, service=dist)
        served.exits.append(Exit(f"{served.place}.done", next=nxt, loc=st.loc, modes=[ExitMode(
            ins=[arc(f"{d}.busy")], outs=[arc(f"{d}.slots")] if finite else [])]))
        ins = [arc(waiting)] + ([arc(f"{d}.slots")] if finite else [])
        if level > 1:
            ins.append(arc(f"{d}.busy", level - 1))
        inh = [arc(f"{d}.busy", levels[i + 1][0] - 1)] if i + 1 < len(levels) else []
        outs = [arc(f"{d}.busy", level), arc(served.place, 1, ctx_color(ctx_vars(len(env.ctx))))]
        modes.append(ExitMode(f"load{level}", ins, outs, inh))
    wait.exits.append(Exit(f"{path}.start", modes=modes, loc=st.loc))
    return wait
