"""Processors and disks: where ``cpu`` and ``io`` steps take time.

Disciplines, as the simulator of the net (``solvers/des``) has them:

* ``ps`` -- processor sharing on ``servers`` cores: n jobs each get
  ``min(1, servers / n)`` of a core;
* ``fcfs`` / ``random`` -- ``servers`` servers, waiting jobs start in arrival
  order / in random order;
* ``rr quantum Q switch C`` -- round robin: a job runs at most Q on a core,
  then goes to the back of the ready queue if another job waits (else it goes
  on); every start on a core from the ready queue costs a context switch C
  (core time that is not the thread's CPU time).

A job's work is a number (seconds), or, for a disk ``service by load``, a
function of the number of requests in service when it starts (itself included).

>>> from qpn.frontends.synth.engine import Sim
>>> sim = Sim(horizon=10)
>>> host = Server(sim, "host", servers=1, discipline="ps")
>>> ends = {}
>>> def job(th, w):
...     host.submit(th, w); yield; ends[th.name] = sim.now
>>> _ = sim.spawn("a", lambda th: job(th, 1.0), parent=None)
>>> _ = sim.spawn("b", lambda th: job(th, 2.0), parent=None)
>>> sim.run(); ends        # both share the core until a is done at 2 s
{'a': 2.0, 'b': 3.0}
"""
from __future__ import annotations

import math
from collections import Counter, deque

from qpn import disciplines

EPS = 1e-12


#: how the synthesizer's server plays a discipline, by its scheduling (serves, order):
#: a shared capacity (PS), the round-robin ready queue, or one token a server taken in
#: arrival order or at random
_PLAYS = {("shared", "arrival"): "shared", ("first", "ready"): "ready",
          ("first", "arrival"): "arrival", ("first", "random"): "random",
          ("cores", "arrival"): "cores"}


def _serves(discipline: str) -> str:
    """How a server of ``discipline`` serves: one of :data:`_PLAYS`'s values.

    >>> _serves("ps"), _serves("rr"), _serves("fcfs")
    ('shared', 'ready', 'arrival')
    """
    d = disciplines.find(discipline)
    plays = d and _PLAYS.get((d.scheduling.serves, d.scheduling.order))
    if not plays:
        known = [d.name for d in disciplines.all_disciplines()
                 if (d.scheduling.serves, d.scheduling.order) in _PLAYS]
        raise ValueError(f"the synthesizer serves cpus and disks by {', '.join(known)}, "
                         f"not {discipline!r}")
    return plays


class Server:
    """A cpu or a disk: ``submit(thread, work)`` resumes the thread when the work is done."""

    def __init__(self, sim, name: str, *, servers: float = 1, discipline: str = "ps",
                 quantum: float | None = None, switch: float = 0.0, randoms=None):
        self.sim, self.name, self.c = sim, name, servers
        self.serves = _serves(discipline)
        self.quantum = quantum if quantum else math.inf
        self.switch = switch or 0.0
        self.randoms = randoms
        # ps; cores (jsq-ps): each job shares the server it was placed on
        self.jobs: dict = {}
        self.core: dict = {}
        self.last = 0.0
        self.version = 0
        # fcfs / random / rr
        self.busy = 0
        self.waiting: deque = deque()
        self.served = 0               # completed jobs (for tests and summaries)
        self.busy_time = 0.0          # integral of busy servers over time
        self._t_busy = 0.0

    def submit(self, th, work) -> None:
        """Start (or queue) ``work`` for ``th``; the thread is resumed when it is done."""
        if self.serves in ("shared", "cores"):
            self._ps_arrive(th, work)
        elif self.serves == "ready":
            w = work(self.busy + 1) if callable(work) else work
            if self.busy < self.c:
                self._account()
                self.busy += 1
                self._rr_run([th, w], True)
            else:
                self.waiting.append([th, w])
        else:
            if self.busy < self.c:
                self._start(th, work)
            else:
                self.waiting.append((th, work))

    # -- utilization -------------------------------------------------------
    def _account(self) -> None:
        now = self.sim.now
        if self.serves == "cores":
            n = len(set(self.core.values()))
        else:
            n = len(self.jobs) if self.serves == "shared" else self.busy
        self.busy_time += min(n, self.c) * (now - self._t_busy)
        self._t_busy = now

    # -- processor sharing ---------------------------------------------------
    def _rates(self) -> dict:
        """Each job's share of a server: c / n of one under PS; 1 / (jobs on its server)
        when each job keeps the server it was placed on."""
        if self.serves == "cores":
            on = Counter(self.core.values())
            return {th: 1.0 / on[self.core[th]] for th in self.jobs}
        n = len(self.jobs)
        r = 1.0 if n <= self.c else self.c / n
        return dict.fromkeys(self.jobs, r)

    def _ps_advance(self) -> None:
        now = self.sim.now
        dt = now - self.last
        if dt > 0 and self.jobs:
            jobs = self.jobs
            for k, r in self._rates().items():
                jobs[k] -= dt * r
        self.last = now

    def _ps_arrive(self, th, work) -> None:
        self._account()
        self._ps_advance()
        if self.serves == "cores":       # the server with the fewest jobs (lowest of a tie)
            on = Counter(self.core.values())
            self.core[th] = min(range(int(self.c)), key=lambda c: (on[c], c))
        self.jobs[th] = work(len(self.jobs) + 1) if callable(work) else work
        self._ps_schedule()

    def _ps_schedule(self) -> None:
        self.version += 1
        if self.jobs:
            until = min(max(self.jobs[th], 0.0) / r for th, r in self._rates().items())
            self.sim.at(self.sim.now + until, self._ps_fire, self.version)

    def _ps_fire(self, version: int) -> None:
        if version != self.version:
            return
        self._account()
        self._ps_advance()
        jobs = self.jobs
        until = {th: max(jobs[th], 0.0) / r for th, r in self._rates().items()}
        low = min(until.values())
        done = [th for th, u in until.items() if u <= low + EPS]
        for th in done:
            del jobs[th]
            self.core.pop(th, None)
            self.served += 1
            self.sim.resume(th)
        self._ps_schedule()

    # -- fcfs / random ---------------------------------------------------------
    def _start(self, th, work) -> None:
        self._account()
        self.busy += 1
        w = work(self.busy) if callable(work) else work
        self.sim.at(self.sim.now + w, self._done, th)

    def _done(self, th) -> None:
        self._account()
        self.busy -= 1
        self.served += 1
        self.sim.resume(th)
        if self.waiting:
            if self.serves == "random" and len(self.waiting) > 1:
                i = min(int(self.randoms.uniform() * len(self.waiting)), len(self.waiting) - 1)
                th2, work = self.waiting[i]
                del self.waiting[i]
            else:
                th2, work = self.waiting.popleft()
            self._start(th2, work)

    # -- round robin -----------------------------------------------------------
    def _rr_run(self, job: list, switch: bool) -> None:
        sl = min(self.quantum, job[1])
        self.sim.at(self.sim.now + (self.switch if switch else 0.0) + sl, self._rr_slice, job, sl)

    def _rr_slice(self, job: list, sl: float) -> None:
        job[1] -= sl
        if job[1] <= EPS:
            self.served += 1
            self.sim.resume(job[0])
            if self.waiting:
                self._rr_run(self.waiting.popleft(), True)
            else:
                self._account()
                self.busy -= 1
        elif self.waiting:
            self.waiting.append(job)
            self._rr_run(self.waiting.popleft(), True)
        else:
            self._rr_run(job, False)

    def utilization(self, now: float) -> float:
        """Mean busy servers / servers from the start until ``now``."""
        self._account()
        if now <= 0 or math.isinf(self.c):
            return math.nan
        return self.busy_time / (self.c * now)
