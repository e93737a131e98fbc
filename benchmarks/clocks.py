"""One clock for every side of a benchmark: CPU time (user + system) of whole runs.

* **cold** — a fresh process does the whole job (interpreter start, imports,
  loading compiled code from numba's on-disk cache, building, running,
  analysing): the CPU time of that child process, from ``getrusage(RUSAGE_CHILDREN)``;
* **warm** — the job again inside a process that has already done it once:
  the CPU time of this process and of the worker processes it forked and
  reaped meanwhile.

Wall-clock time is recorded beside it, never compared.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time


def _children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_now() -> float:
    """CPU seconds of this process plus its reaped children."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime + _children()


def warm(fn):
    """(result, CPU s, wall s) of ``fn()``, workers it forked included."""
    c0, t0 = cpu_now(), time.perf_counter()
    out = fn()
    return out, cpu_now() - c0, time.perf_counter() - t0


def run_timed(args: list[str], timeout: float = 1800, **kwargs) -> tuple[subprocess.CompletedProcess, float, float]:
    """(the finished process, CPU s, wall s) of a fresh process running ``args``."""
    c0, t0 = _children(), time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    return p, _children() - c0, time.perf_counter() - t0


def cold(args: list[str], timeout: float = 1800) -> tuple[dict, float, float]:
    """(last JSON line printed, CPU s, wall s) of a fresh process running ``args``."""
    p, cpu, wall = run_timed(args, timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{args[:3]} failed: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1]), cpu, wall


def qpn_cold(path: str, options: dict, code: str) -> tuple[dict, float, float]:
    """A fresh ``python -c`` that loads and solves ``path`` with ``options`` and prints
    json.dumps(<code evaluated with res bound>)."""
    script = (f"import json, qpn\nres = qpn.solve(qpn.load({path!r}), method='des', options={options!r})\n"
              f"print(json.dumps({code}))\n")
    return cold([sys.executable, "-c", script])


def load_average() -> str:
    """'load average 0.95 0.93 0.90', printed beside every figure."""
    return "load average %.2f %.2f %.2f" % os.getloadavg()


class Figures:
    """The lines a benchmark module prints as its tests run, printed again together at the end."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, line: str) -> None:
        self.lines.append(line)
        print("\n" + line)

    def print_all(self, title: str) -> None:
        print(f"\n\n==== {title} ====")
        for line in self.lines:
            print(line)
