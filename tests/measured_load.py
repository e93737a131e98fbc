"""Retries for tests marked ``measured``, decided by the machine's measured load.

A measured test (a prediction checked against timed runs, a GIL estimate) may
fail because other work shared the CPUs while it ran.  Each attempt measures
the CPU time the rest of the machine used meanwhile (``/proc/stat`` busy time
less this process's and its waited children's CPU time) and the share the
hypervisor stole.  A failed attempt is retried, up to ``QPN_MEASURED_RETRIES``
times (default 2), only when that foreign work was high; a failure on a quiet
machine stands.  Every retry is reported with the load that caused it.
"""
from __future__ import annotations

import os
import resource
import time

#: foreign CPU use (in cores, averaged over the attempt) above which an attempt is "busy"
BUSY_CORES = 0.3
#: share of CPU time stolen by the hypervisor above which an attempt is "busy"
BUSY_STEAL = 0.05


def _cpu_counters() -> list[int] | None:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            first = fh.readline().split()
        return [int(x) for x in first[1:9]] if first and first[0] == "cpu" else None
    except (OSError, ValueError):
        return None


def _own_cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class LoadProbe:
    """Foreign CPU use and steal over the span between construction and :meth:`stop`."""

    def __init__(self) -> None:
        self.t0, self.own0, self.cpu0 = time.monotonic(), _own_cpu(), _cpu_counters()

    def stop(self) -> dict:
        wall, own = time.monotonic() - self.t0, _own_cpu() - self.own0
        cpu1 = _cpu_counters()
        if not self.cpu0 or not cpu1 or wall <= 0:
            return {"foreign_cores": None, "steal": None, "busy": False}
        d = [b - a for a, b in zip(self.cpu0, cpu1)]
        hz = os.sysconf("SC_CLK_TCK")
        # user nice system idle iowait irq softirq steal
        busy = (d[0] + d[1] + d[2] + d[5] + d[6]) / hz
        total = sum(d)
        foreign = max(0.0, busy - own) / wall
        steal = d[7] / total if total > 0 else 0.0
        return {"foreign_cores": round(foreign, 2), "steal": round(steal, 3),
                "busy": foreign > BUSY_CORES or steal > BUSY_STEAL}


def run_with_retries(item, nextitem, runtestprotocol) -> list:
    """Run ``item``'s protocol; retry a failure while the measured load was high."""
    retries = int(os.environ.get("QPN_MEASURED_RETRIES", "2"))
    for attempt in range(retries + 1):
        probe = LoadProbe()
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        load = probe.stop()
        failed = any(r.failed for r in reports)
        for r in reports:
            r.sections.append(("machine load", f"attempt {attempt + 1}: {load}"))
        if not failed or not load["busy"] or attempt == retries:
            return reports
        print(f"\n{item.nodeid}: failed on a busy machine ({load}); retrying "
              f"({attempt + 1} of {retries})", flush=True)
    return reports
