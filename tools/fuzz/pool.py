"""Worker processes that run inputs in-process with a memory limit, and a pool
that restarts a worker which hangs beyond its alarm or dies."""
from __future__ import annotations

import multiprocessing as mp
import os
import resource
import shutil
import signal
import tempfile
import time
from dataclasses import asdict
from multiprocessing.connection import wait

from . import outputs  # noqa: F401  (registers the "outputs" kind with the runner)
from .corpus import ROOT
from .runner import CRASH, HANG, Outcome, commands_for, make_workdir, run_input

DEFAULT_MEMORY = 3 << 30        # bytes of address space per worker
#: a tiny model per simulation kernel, solved once at start so that loading the
#: compiled kernels from numba's cache is not charged to the first inputs
WARMUP = ("models/mm1.qpn", "models/rr_cpu.qpn", "models/webserver.qpn", "models/tandem.qpn")


def _worker(conn, budget: float, memory: int, workdir: str, quick: bool) -> None:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # the parent handles Ctrl-C
    from .runner import run_command
    # every kernel, even for the quick slice: in a fresh clone the first solve
    # compiles what numba has not cached, which would read as a HANG
    for model in WARMUP:
        path = os.path.join(ROOT, model)
        if os.path.exists(path):
            # only the simulator is compiled (ctmc and mva are numpy and scipy)
            run_command("warmup", ["solve", path, "-m", "des", "--events", "500", "-R", "2",
                                   "--threads", "1", "--allow-imprecise", "-q"], 120.0)
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    conn.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        kind, data, only = msg
        results = run_input(kind, data, budget, workdir, only,
                            on_begin=lambda name: conn.send(("begin", name)), quick=quick)
        conn.send(("done", [asdict(r) for r in results]))


class Worker:
    """One worker process; ``target`` is its main function (``_worker``; the
    tests give a stand-in that dies or hangs) and ``slack`` the seconds granted
    beyond the alarm before it is killed."""

    def __init__(self, budget: float, memory: int, base: str, index: int, quick: bool,
                 target=_worker, slack: float = 10.0):
        self.budget, self.memory, self.quick = budget, memory, quick
        self.target, self.slack = target, slack
        self.workdir = make_workdir(os.path.join(base, f"w{index}"))
        self.proc = None
        self.start()

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=self.target,
                                args=(child, self.budget, self.memory, self.workdir, self.quick),
                                daemon=True)
        self.proc.start()
        child.close()
        self.task, self.ready = None, False

    def wait_ready(self) -> None:
        """Wait for the worker's warm-up (left running while the parent makes
        the first inputs)."""
        if not self.ready:
            if not self.conn.poll(600) or self.conn.recv()[0] != "ready":
                raise RuntimeError("fuzz worker did not start")
            self.ready = True

    def submit(self, kind: str, data: bytes, only=None) -> None:
        self.wait_ready()
        self.task = (kind, data, only)
        self.current = None
        self.deadline = time.monotonic() + self._hard_limit(kind, only)
        self.conn.send(self.task)

    def _hard_limit(self, kind: str, only) -> float:
        n = len(only) if only else len(commands_for(kind))
        return self.budget * (n + 1) * 1.5 + self.slack    # the alarm should fire long before

    def poll(self) -> list[Outcome] | None:
        """The results when the task is done (restarting the worker when it hung
        where the alarm could not reach, or died), else None."""
        while self.conn.poll():
            try:
                tag, payload = self.conn.recv()
            except (EOFError, OSError):
                return self._died()
            if tag == "begin":
                self.current = payload
            else:
                self.task = None
                return [Outcome(**r) for r in payload]
        if not self.proc.is_alive():
            return self._died()
        if time.monotonic() > self.deadline:
            self.proc.kill()
            self.proc.join()
            name = self.current or "?"
            out = [Outcome(name, HANG, signature=f"HANG in {name} @ (not interruptible: killed)",
                           seconds=self._hard_limit(*self.task[::2]))]
            self.start()
            return out
        return None

    def _died(self) -> list[Outcome]:
        self.proc.join()
        code = self.proc.exitcode
        name = self.current or "?"
        how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
        out = [Outcome(name, CRASH, signature=f"worker died ({how}) in {name}",
                       detail=f"the worker process ended with {how}")]
        self.start()
        return out

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


class Pool:
    """``jobs`` workers; :meth:`map` runs inputs and yields (input, outcomes)."""

    def __init__(self, jobs: int = 1, budget: float = 5.0, memory: int = DEFAULT_MEMORY,
                 quick: bool = False, target=_worker, slack: float = 10.0):
        self.base = tempfile.mkdtemp(prefix="qpn-fuzz-")
        self.workers = [Worker(budget, memory, self.base, i, quick, target, slack)
                        for i in range(jobs)]

    def map(self, items, only=None):
        """items: iterable of (key, kind, data).  Yields (key, kind, data, outcomes)
        in completion order."""
        items = iter(items)
        busy: dict[Worker, tuple] = {}
        idle = list(self.workers)
        exhausted = False
        while True:
            while idle and not exhausted:
                try:
                    item = next(items)
                except StopIteration:
                    exhausted = True
                    break
                w = idle.pop()
                w.submit(item[1], item[2], only)
                busy[w] = item
            if not busy:
                return
            wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.5)
            for w in list(busy):
                res = w.poll()
                if res is not None:
                    item = busy.pop(w)
                    idle.append(w)
                    yield (*item, res)

    def run(self, kind: str, data: bytes, only=None) -> list[Outcome]:
        return next(self.map([(None, kind, data)], only))[3]

    def close(self) -> None:
        for w in self.workers:
            w.close()
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
