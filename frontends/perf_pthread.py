"""pthread calls seen by perf: user-space probes on libc's mutex, condition and barrier
functions, so that a kernel-side trace has every lock operation, not only the blocked ones.

A futex shows a mutex only when a thread had to wait for it.  With probes on
``pthread_mutex_lock`` (entry and return), ``pthread_mutex_unlock``,
``pthread_cond_wait``/``timedwait`` (entry and return), ``pthread_cond_signal``/
``broadcast``, ``pthread_barrier_init`` and ``pthread_barrier_wait`` (entry and return)
the trace gets what the Python tracer gives: acquisitions with their wait, releases with
their hold time, condition waits with their mutex, notifies, barrier waits with the
barrier's parties, and the **site** of each call (its return address, as ``module+offset``:
the same in every run of the binary).  :func:`add_probes` defines them (``perf probe``,
a group of this process's own, removed by :func:`remove_probes`); recording per task, the
breakpoints are set only in the traced program's processes.

>>> ev = PthreadEvents(site=lambda pid, a: f"prog+{a - 0x1000:#x}")
>>> ev.entry(7, 7, 100, "mutex_lock", {"m": "64", "ra": "4352"}, cpu=10)
>>> ev.ret(7, 7, 150, "mutex_lock", cpu=12)
>>> ev.entry(7, 7, 400, "mutex_unlock", {"m": "64", "ra": "4400"}, cpu=300)
>>> [(e["kind"], e["obj"], e.get("dur"), e.get("hold"), e["site"]) for e in ev.events]
[('acquire', 64, 50, None, 'prog+0x100'), ('release', 64, None, 250, 'prog+0x130')]
"""
from __future__ import annotations

import os
import re
import subprocess

#: probe name -> (libc function, arguments fetched at entry, whether its return is probed)
PROBES = {
    "mutex_lock": ("pthread_mutex_lock", "m=%di:u64 ra=+0(%sp):u64", True),
    "mutex_unlock": ("pthread_mutex_unlock", "m=%di:u64 ra=+0(%sp):u64", False),
    "cond_wait": ("pthread_cond_wait", "c=%di:u64 m=%si:u64 ra=+0(%sp):u64", True),
    "cond_timedwait": ("pthread_cond_timedwait", "c=%di:u64 m=%si:u64 ra=+0(%sp):u64", True),
    "cond_signal": ("pthread_cond_signal", "c=%di:u64 ra=+0(%sp):u64", False),
    "cond_broadcast": ("pthread_cond_broadcast", "c=%di:u64 ra=+0(%sp):u64", False),
    "barrier_init": ("pthread_barrier_init", "b=%di:u64 n=%dx:u32", False),
    "barrier_wait": ("pthread_barrier_wait", "b=%di:u64 ra=+0(%sp):u64", True),
}
RETURN = "__return"                  # perf's suffix of a return probe's event name


def libc_of(program: str) -> str | None:
    """The C library a program loads (``ldd``), or None (static, or not an ELF file)."""
    try:
        out = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"libc\.so\.6 => (\S+)", out)
    return m.group(1) if m and os.path.exists(m.group(1)) else None


def add_probes(libc: str, group: str) -> list[str]:
    """Define the probes on ``libc`` in ``group``: the event names to record.  Raises
    OSError with perf's message when perf cannot (no root, no symbols)."""
    events = []
    try:
        for name, (func, args, ret) in PROBES.items():
            specs = [(f"{group}:{name}={func} {args}", f"{group}:{name}")]
            if ret:
                specs.append((f"{group}:{name}={func}%return r=$retval:s32",
                              f"{group}:{name}{RETURN}"))
            for spec, event in specs:
                p = subprocess.run(["perf", "probe", "-q", "-x", libc, "-a", spec],
                                   capture_output=True, text=True, timeout=60)
                if p.returncode != 0:
                    raise OSError(p.stderr.strip()[-300:] or f"perf probe {spec} failed")
                events.append(event)
    except BaseException:
        remove_probes(group)
        raise
    return events


def remove_probes(group: str) -> None:
    """Delete the probes of ``group`` (quietly: none may exist)."""
    subprocess.run(["perf", "probe", "-q", "-d", f"{group}:*"], capture_output=True, timeout=60)


class PthreadEvents:
    """Neutral events from the probes' hits, thread by thread (entries and returns pair
    up: these functions do not nest).  ``site(pid, address)`` names a return address."""

    def __init__(self, site):
        self.site = site
        self.events: list[dict] = []
        self.objects: dict[int, dict] = {}           # address -> its object event
        self.open: dict[int, tuple] = {}             # tid -> (probe, fields, ts, cpu)
        self.held: dict[tuple[int, int], int] = {}   # (tid, mutex) -> when acquired
        self.parties: dict[int, int] = {}            # barrier -> parties (barrier_init)

    def _object(self, tid: int, ts: int, obj: int, typ: str, **more) -> None:
        o = self.objects.get(obj)
        if o is None or o["type"] != typ:
            self.objects[obj] = {"kind": "object", "tid": tid, "ts": ts, "obj": obj, "type": typ,
                                 "name": f"{typ}_{obj:x}", **more}
        elif more:
            o.update((k, v) for k, v in more.items() if k not in o)

    def entry(self, pid: int, tid: int, ts: int, probe: str, f: dict, cpu: int) -> None:
        num = {k: int(v, 16) if v.startswith(("0x", "-0x")) else int(v)
               for k, v in f.items() if re.fullmatch(r"-?(0x[0-9a-f]+|\d+)", v)}
        site = self.site(pid, num["ra"]) if "ra" in num else None
        base = {"tid": tid, "ts": ts, "cpu": cpu, **({"site": site} if site else {})}
        if probe == "barrier_init":
            self.parties[num.get("b", 0)] = num.get("n", 0)
            self._object(tid, ts, num.get("b", 0), "barrier", parties=num.get("n", 0))
        elif probe == "mutex_unlock":
            m = num.get("m", 0)
            self._object(tid, ts, m, "lock")
            got = self.held.pop((tid, m), None)
            self.events.append({**base, "kind": "release", "obj": m,
                                **({"hold": ts - got} if got is not None else {})})
        elif probe in ("cond_signal", "cond_broadcast"):
            self.events.append({**base, "kind": "notify", "on": "cond", "obj": num.get("c", 0),
                                "all": probe == "cond_broadcast"})
        else:
            self.open[tid] = (probe, num, ts, cpu, base)

    def ret(self, pid: int, tid: int, ts: int, probe: str, cpu: int, r: int | None = None) -> None:
        got = self.open.pop(tid, None)
        if got is None or got[0] != probe:
            return                           # entered before the recording began
        _, num, t0, c0, base = got
        if probe == "mutex_lock":
            m = num.get("m", 0)
            self._object(tid, t0, m, "lock")
            self.events.append({**base, "kind": "acquire", "obj": m, "dur": ts - t0,
                                "ok": r in (None, 0)})
            self.held[(tid, m)] = ts
        elif probe in ("cond_wait", "cond_timedwait"):
            c, m = num.get("c", 0), num.get("m", 0)
            self._object(tid, t0, m, "lock")
            self._object(tid, t0, c, "cond", lock=m)
            self.events.append({**base, "kind": "wait", "on": "cond", "obj": c, "dur": ts - t0,
                                "ok": r in (None, 0)})
            self.held[(tid, m)] = ts       # re-acquired on return
        elif probe == "barrier_wait":
            b = num.get("b", 0)
            self._object(tid, t0, b, "barrier", **({"parties": self.parties[b]}
                                                    if b in self.parties else {}))
            self.events.append({**base, "kind": "wait", "on": "barrier", "obj": b,
                                "dur": ts - t0, "ok": True})
