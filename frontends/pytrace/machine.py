"""How busy the machine was while a program was traced (Linux ``/proc``).

A trace taken beside other work gives longer CPU demands and a different GIL
picture: the analyzer should say so.  While the traced process runs, a thread
of ``qpn trace`` samples, every ``interval`` seconds, how many threads the
kernel has runnable (``procs_running`` in ``/proc/stat``) and how many of them
belong to the traced process (state ``R`` in ``/proc/PID/task/*/stat``); the
difference, less the sampler itself, is the other work.  The CPU time the
hypervisor stole (``steal`` in ``/proc/stat``) and the load averages before
and after are kept too.

The result is the trace header's ``machine`` object (docs/trace-format.md):

>>> import time; s = MachineSampler(None, interval=0.01).start(); time.sleep(0.05)
>>> m = s.stop()
>>> sorted(m) == sorted(['cpus', 'loadavg_before', 'loadavg_after', 'samples',
...                      'others_runnable', 'others_runnable_max', 'steal_share'])
True
>>> m["samples"] >= 2
True
"""
from __future__ import annotations

import os
import threading


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _loadavg() -> list[float] | None:
    parts = _read("/proc/loadavg").split()
    try:
        return [float(x) for x in parts[:3]]
    except ValueError:
        return None


def _stat() -> tuple[int | None, list[int] | None]:
    """(procs_running, the aggregate cpu line's counters) from /proc/stat."""
    running, cpu = None, None
    for line in _read("/proc/stat").splitlines():
        if line.startswith("cpu "):
            try:
                cpu = [int(x) for x in line.split()[1:]]
            except ValueError:
                cpu = None
        elif line.startswith("procs_running"):
            try:
                running = int(line.split()[1])
            except (IndexError, ValueError):
                running = None
    return running, cpu


def _runnable_threads(pid: int | None) -> int:
    """Threads of process ``pid`` in state R (running or waiting for a CPU)."""
    if pid is None:
        return 0
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return 0
    n = 0
    for t in tids:
        text = _read(f"{base}/{t}/stat")
        # "tid (comm) S ...": the state follows the last ')' (comm may hold spaces)
        rest = text[text.rfind(")") + 1:].split()
        if rest and rest[0] == "R":
            n += 1
    return n


class MachineSampler:
    """Samples the machine's other work while process ``pid`` runs (see the module)."""

    def __init__(self, pid: int | None, interval: float = 0.02):
        self.pid, self.interval = pid, interval
        self.others: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.before = _loadavg()
        self.cpu0 = _stat()[1]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            mine = _runnable_threads(self.pid)
            running, _ = _stat()
            if running is None:
                return
            # the traced threads change state every few microseconds: counted before and
            # after, the larger count is taken (the other work is persistent, not a race)
            mine = max(mine, _runnable_threads(self.pid))
            # procs_running counts this sampler too (it is running while it reads)
            self.others.append(max(0, running - 1 - mine))

    def start(self) -> "MachineSampler":
        """Start sampling the machine's load in a daemon thread; itself."""
        self._thread = threading.Thread(target=self._run, name="qpn-machine-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict:
        """Stop sampling; the header's ``machine`` object."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        cpu1 = _stat()[1]
        steal = None
        if self.cpu0 and cpu1 and len(self.cpu0) > 7 and len(cpu1) > 7:
            total = sum(cpu1[:8]) - sum(self.cpu0[:8])
            steal = round((cpu1[7] - self.cpu0[7]) / total, 4) if total > 0 else 0.0
        n = len(self.others)
        return {"cpus": os.cpu_count(), "loadavg_before": self.before, "loadavg_after": _loadavg(),
                "samples": n, "others_runnable": round(sum(self.others) / n, 3) if n else None,
                "others_runnable_max": max(self.others) if n else None, "steal_share": steal}


__all__ = ["MachineSampler"]
