"""Import ``perf`` scheduler and system-call tracepoints into the neutral trace format.

``qpn trace --perf -o run.jsonl -- CMD ARGS`` records, system-wide while the command
runs (``perf record -a -k mono``), the tracepoints in :data:`EVENTS`: scheduler
switches, wake-ups, forks and exits, and the entry and exit of futex, file, socket and
sleep system calls; ``perf script --ns`` prints them::

    15032/15034 [000] 45773.091873012: sched:sched_switch: prev_comm=taskpool prev_pid=15034 ...
    15032/15035 [001] 45773.108233077: syscalls:sys_enter_futex: uaddr: 0x55dc975ce124, op: 0x00000081, ...

and this module turns the lines of the command's threads (its process and every
descendant: ``sched_process_fork``) into events.  Unlike strace, perf costs a few
microseconds per event and sees the scheduler, so each thread's **CPU clock** is exact:
the sum of its slices between ``sched_switch`` in and out (``thread_cpu: true``); an I/O
call's own CPU is its ``cpu_dur``.  Futex calls go through :mod:`.futexes` (mutexes,
conditions, barriers, joins); file and socket calls become ``io`` events with their
``fd``, ``bytes`` and duration -- not their path: a tracepoint holds the file name's
address, not the name.

===========================================  =========================================
perf                                         neutral trace
===========================================  =========================================
``sched_process_fork`` of a traced thread    ``thread_start`` of the child (``parent``)
``sched_process_exit``                       ``thread_end``
``sched_process_exec`` of the root           the events before it left out (the shell
                                             that became the command)
``sched_switch``                             the threads' CPU clocks (``cpu``)
``sys_enter/exit_futex``                     :func:`.futexes.futex_events`
``sys_enter/exit_read``, ``pread64``, ...    ``io`` (``op``, ``fd``, ``bytes``, ``dur``,
                                             ``cpu_dur``, ``ok``; ``accept``'s ``conn``)
``sys_enter/exit_(clock_)nanosleep``         ``wait`` (``on: sleep``)
===========================================  =========================================

>>> text = '''10/10 [000] 1.000000000: sched:sched_process_fork: comm=p pid=10 child_comm=p child_pid=11
... 10/11 [001] 1.000100000: syscalls:sys_enter_pread64: fd: 0x00000003, buf: 0x7f, count: 0x00010000, pos: 0x0
... 10/11 [001] 1.000130000: syscalls:sys_exit_pread64: 0x10000'''
>>> tr = perf_to_events(text, root=10)
>>> [(e["kind"], e.get("op"), e.get("bytes"), e.get("dur")) for e in tr.events]
[('thread_start', None, None, None), ('thread_start', None, None, None), ('io', 'read', 65536, 30000), ('thread_end', None, None, None), ('thread_end', None, None, None)]
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .futexes import FutexCall, futex_events
from .perf_pthread import PROBES, RETURN, PthreadEvents
from .strace_import import OTHER_IO, READS, SLEEP, WRITES, seconds_ns
from .trace import TraceError, TraceHeader

#: the system calls recorded (entry and exit tracepoints of each)
SYSCALLS = ("futex", "read", "pread64", "readv", "write", "pwrite64", "writev", "openat", "close",
            "fsync", "fdatasync", "recvfrom", "recvmsg", "sendto", "sendmsg", "accept",
            "accept4", "connect", "nanosleep", "clock_nanosleep")
#: the tracepoints ``qpn trace --perf`` records
EVENTS = ("sched:sched_switch", "sched:sched_process_fork", "sched:sched_process_exit",
          "sched:sched_process_exec",
          *(f"syscalls:sys_{side}_{name}" for name in SYSCALLS for side in ("enter", "exit")))

_LINE = re.compile(r"^\s*(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<sec>\d+)\.(?P<frac>\d+):"
                   r"\s+(?P<event>PERF_RECORD_\w+|[\w]+:[\w]+(?=:)):?\s?(?P<rest>.*)$")
_MMAP = re.compile(r"\[0x(?P<start>[0-9a-f]+)\(0x(?P<len>[0-9a-f]+)\) @ (?:0x)?(?P<pgoff>[0-9a-f]+)[^\]]*\]:"
                   r"\s+(?P<prot>\S+)\s+(?P<path>.+?)\s*$")
_FIELD = re.compile(r"(\w+)[:=]\s*(\S+?)(?:,|\s|$)")
_WAIT = {0, 9, 11}                  # FUTEX_WAIT, WAIT_BITSET, WAIT_REQUEUE_PI
_WAKE = {1, 3, 4, 5, 10}            # WAKE, REQUEUE, CMP_REQUEUE, WAKE_OP, WAKE_BITSET
_LOCK = {6, 8, 13}                  # LOCK_PI, TRYLOCK_PI, LOCK_PI2


@dataclass
class PerfTrace:
    """The events of a ``perf script`` text, its header, and what a lenient read left out."""
    header: TraceHeader
    events: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _int(v: str) -> int | None:
    try:
        return int(v, 16) if v.startswith(("0x", "-0x")) else int(v)
    except ValueError:
        return None


def _signed(v: int | None) -> int | None:
    """A syscall's return value as perf prints it (64-bit hex) -> signed."""
    return v - (1 << 64) if v is not None and v >= 1 << 63 else v


class _Threads:
    """The traced threads' CPU clocks from their scheduler slices."""

    def __init__(self):
        self.acc: dict[int, int] = {}
        self.since: dict[int, int | None] = {}

    def on(self, tid: int, ts: int) -> None:
        if self.since.get(tid) is None:
            self.since[tid] = ts
        self.acc.setdefault(tid, 0)

    def off(self, tid: int, ts: int) -> None:
        s = self.since.get(tid)
        if s is not None:
            self.acc[tid] = self.acc.get(tid, 0) + max(0, ts - s)
        self.since[tid] = None

    def clock(self, tid: int, ts: int) -> int:
        """The thread's CPU time at ``ts`` (an event in its context: it runs)."""
        self.on(tid, ts)
        return self.acc[tid] + max(0, ts - self.since[tid])


def perf_to_events(text: str, path: str = "<perf script>", *, root: int | None = None,
                   strict: bool = True) -> PerfTrace:
    """The neutral events of ``perf script --ns -F pid,tid,cpu,time,event,trace`` output.

    ``root``: the traced command's process id; its threads and descendants are kept
    (None: every process with a system-call event, as when ``perf record`` followed
    one command)."""
    reader = _PerfReader(path, root, strict)
    for no, line in enumerate(text.splitlines(), 1):
        reader.line(no, line)
    if reader.first is None:
        raise TraceError("no event of the traced program here", path, 1, 0,
                         (text.splitlines() or [""])[0],
                         hint="record with qpn trace --perf, or perf record -e ... -- CMD and "
                              "perf script --ns -F pid,tid,cpu,time,event,trace")
    return reader.finish()


class _PerfReader:
    """The state of a read, line by line: the traced threads, their CPU clocks, the
    system calls entered and not yet left, the futex calls and the executable mappings
    (for the sites of pthread probes).  One method per kind of perf event."""

    def __init__(self, path: str, root: int | None, strict: bool):
        self.path, self.root, self.strict = path, root, strict
        self.out = PerfTrace(TraceHeader(source="perf", clock="monotonic",
                                         capabilities={"thread_cpu": True, "file_io": True,
                                                       "socket_io": True}))
        self.ours: set[int] = set()
        self.cpu = _Threads()
        self.pending: dict[int, tuple] = {}          # tid -> (call, args, ts, cpu)
        self.futex: list[FutexCall] = []
        self.alive: set[int] = set()
        self.seen: set[int] = set()
        self.maps: dict[int, list] = {}              # pid -> its executable mappings
        self.probed = False
        self.pthread = PthreadEvents(self.site)
        self.first: int | None = None

    def site(self, pid: int, addr: int) -> str:
        # the latest mapping of an address wins (an exec maps the new image over the old)
        for start_, length, pgoff, name in reversed(self.maps.get(pid) or self.maps.get(self.root)
                                                    or ()):
            if start_ <= addr < start_ + length:
                return f"{name}+{addr - start_ + pgoff:#x}"
        return f"{addr:#x}"

    def start(self, tid: int, ts: int, parent: int | None = None) -> None:
        if tid in self.alive:
            return
        self.alive.add(tid)
        self.seen.add(tid)
        ev = {"kind": "thread_start", "tid": tid, "ts": ts, "cpu": self.cpu.clock(tid, ts)
              if parent is None else 0}
        if parent is not None:
            ev["parent"] = parent
        self.out.events.append(ev)

    def _bad(self, no: int, line: str, what: str, **hint) -> None:
        """A line that cannot be read: an error, or (lenient) a warning and the line left out."""
        if self.strict:
            raise TraceError(what, self.path, no, 0, line, **hint)
        self.out.warnings.append(f"{self.path}:{no}: {what.split(':')[0]}; left out")

    # ------------------------------------------------------------- one line
    def line(self, no: int, line: str) -> None:
        m = _LINE.match(line)
        if not m:
            if line.strip() and not line.lstrip().startswith("#"):
                self._bad(no, line, "not a perf script line: expected 'PID/TID [CPU] SECONDS: "
                          "EVENT: FIELDS'",
                          hint="print with perf script --ns -F pid,tid,cpu,time,event,trace")
            return
        pid, tid = int(m.group("pid")), int(m.group("tid"))
        ts = seconds_ns(f'{m.group("sec")}.{m.group("frac")}')
        if ts >= 1 << 63 or pid >= 1 << 31 or tid >= 1 << 31:
            self._bad(no, line, "a thread id or time out of range")
            return
        event, rest = m.group("event"), m.group("rest")
        if event.startswith("PERF_RECORD_"):
            self.record(event, rest, pid, tid, ts)
            return
        f = dict(_FIELD.findall(rest))
        if event == "sched:sched_switch":
            self.switch(f, ts)
        elif event == "sched:sched_process_fork":
            self.fork(f, ts, no, line)
        elif self.traced(event, pid, tid, ts):
            self.event(event, rest, f, pid, tid, ts)

    def record(self, event: str, rest: str, pid: int, tid: int, ts: int) -> None:
        """PERF_RECORD_SWITCH (a CPU slice of a traced thread), PERF_RECORD_MMAP (an
        executable mapping, for sites)."""
        if event.startswith("PERF_RECORD_SWITCH") and tid in self.ours:
            (self.cpu.on if rest.startswith("IN") else self.cpu.off)(tid, ts)
        elif event.startswith("PERF_RECORD_MMAP"):
            mm = _MMAP.search(rest)
            if mm and "x" in mm.group("prot"):
                self.maps.setdefault(pid, []).append((int(mm.group("start"), 16),
                                                      int(mm.group("len"), 16),
                                                      int(mm.group("pgoff"), 16),
                                                      os.path.basename(mm.group("path"))))

    def switch(self, f: dict, ts: int) -> None:
        prev, nxt = _int(f.get("prev_pid", "")), _int(f.get("next_pid", ""))
        if prev in self.ours:
            self.cpu.off(prev, ts)
        if nxt in self.ours:
            self.cpu.on(nxt, ts)

    def fork(self, f: dict, ts: int, no: int, line: str) -> None:
        parent, child = _int(f.get("pid", "")), _int(f.get("child_pid", ""))
        if parent is None or child is None or not 0 < child < 1 << 31:
            self._bad(no, line, "a fork without its pid and child_pid")
            return
        if parent in self.ours or (self.root is not None and parent == self.root and not self.ours):
            self.ours.update((parent, child))
            self.start(parent, ts)
            self.start(child, ts, parent)

    def traced(self, event: str, pid: int, tid: int, ts: int) -> bool:
        """Whether the event's thread is the program's (adopting the first caller when no
        root was given); the program's first event starts the trace."""
        if self.root is None and not self.ours and event.startswith("syscalls:") and tid > 0:
            self.ours.add(tid)                    # no root given: the first caller's process
            self.root = pid
        if tid not in self.ours:
            if self.root is not None and pid == self.root and tid > 0:
                self.ours.add(tid)                # a thread of the root process seen first here
            else:
                return False
        if self.first is None:
            self.first = ts
            self.out.header.start_ns = ts
            self.out.header.program = {"pid": self.root if self.root is not None else pid}
        self.start(tid, ts)
        return True

    def event(self, event: str, rest: str, f: dict, pid: int, tid: int, ts: int) -> None:
        """An event of a traced thread: exec, pthread probe, exit or system call."""
        if event == "sched:sched_process_exec" and tid == self.root:
            # the root became the command (perf execs qpn's wrapper shell, which execs the
            # command): what the images before did is not the program's
            self.out.events[:] = [e for e in self.out.events
                                  if e["tid"] != tid or e["kind"] == "thread_start"]
            self.futex[:] = [c for c in self.futex if c.tid != tid]
            self.pending.pop(tid, None)
            return
        probe = event.partition(":")[2]
        base = probe[:-len(RETURN)] if probe.endswith(RETURN) else probe
        if base in PROBES:                   # a pthread call (perf_pthread.py)
            self.probed = True
            now = self.cpu.clock(tid, ts)
            if probe.endswith(RETURN):
                self.pthread.ret(pid, tid, ts, base, now, _signed(_int(f.get("r", ""))))
            else:
                self.pthread.entry(pid, tid, ts, base, f, now)
        elif event == "sched:sched_process_exit":
            if tid in self.alive:
                self.alive.discard(tid)
                self.out.events.append({"kind": "thread_end", "tid": tid, "ts": ts,
                                        "cpu": self.cpu.clock(tid, ts)})
                self.cpu.off(tid, ts)
        elif event.startswith("syscalls:sys_"):
            self.syscall(event, rest, f, pid, tid, ts)

    def syscall(self, event: str, rest: str, f: dict, pid: int, tid: int, ts: int) -> None:
        """An entry is held until its exit: then a futex call, a sleep or an I/O event."""
        side, _, call = event[len("syscalls:sys_"):].partition("_")
        now = self.cpu.clock(tid, ts)
        if side == "enter":
            self.pending[tid] = (call, f, ts, now)
            return
        if tid not in self.pending or self.pending[tid][0] != call:
            return                           # entered before the recording began
        call, args, t0, c0 = self.pending.pop(tid)
        ret = _signed(_int(rest.strip()))
        ok = ret is not None and ret >= 0
        ev = {"tid": tid, "ts": t0, "cpu": c0, "dur": ts - t0}
        if call == "futex":
            op = _int(args.get("op", "")) or 0
            cmd = op & 0x7F
            kind = ("wait" if cmd in _WAIT else "wake" if cmd in _WAKE else
                    "lock" if cmd in _LOCK else "unlock" if cmd == 7 else None)
            addr = _int(args.get("uaddr", ""))
            if kind is not None and addr:
                self.futex.append(FutexCall(tid, t0, ts - t0, addr, kind, cmd in (9, 10),
                                            _int(args.get("val", "")), ret if ok else -1, pid, c0))
            return
        if call in SLEEP:
            self.out.events.append({**ev, "kind": "wait", "on": "sleep", "ok": ok})
            return
        op = READS.get(call) or WRITES.get(call) or OTHER_IO.get(call)
        if op is None:
            return
        ev.update(kind="io", op=op, ok=ok, cpu_dur=max(0, now - c0))
        fd = _int(args.get("fd", "")) if op != "open" else (ret if ok else None)
        if fd is not None and fd >= 0:
            ev["fd"] = fd
        if op in ("read", "write", "recv", "send") and ok:
            ev["bytes"] = ret
        if op == "accept" and ok:
            ev["conn"] = ret
        self.out.events.append(ev)

    # ------------------------------------------------------------- the end
    def finish(self) -> PerfTrace:
        """The futex (or pthread) events and objects added, the threads still alive
        ended at the last event, everything in time order."""
        out = self.out
        fevents, objects = futex_events(self.futex, self.seen)
        if self.probed:
            # the pthread calls themselves are in the trace: the futexes add only the joins
            fevents = [e for e in fevents if e.get("on") == "join"]
            objects = list(self.pthread.objects.values())
            fevents += self.pthread.events
            out.header.capabilities.update(lock_uncontended=True, lock_hold=True, sites=True)
        out.events[:0] = objects
        out.events.extend(fevents)
        last = max(e["ts"] for e in out.events)
        for tid in sorted(self.alive):
            out.events.append({"kind": "thread_end", "tid": tid, "ts": last,
                               "cpu": self.cpu.clock(tid, last)})
        out.events.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start"))
        return out


def read_perf_script(path: str, *, root: int | None = None, strict: bool = True) -> PerfTrace:
    """:func:`perf_to_events` of the ``perf script`` text in the file at ``path``."""
    from .trace_text import require_import_memory
    require_import_memory(path, "perf script")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        from qpn.errors import QPNError
        raise QPNError(f"{path}: cannot read: {exc.strerror}") from None
    return perf_to_events(text, path, root=root, strict=strict)


def record_command(data: str, pidfile: str, cmd: list[str], probes: list[str] = ()) -> list[str]:
    """The command line that records ``cmd`` into ``data``, its pid into ``pidfile``.

    perf follows the command's processes and threads (per task, inherited: not the rest
    of the machine, not perf's own reads and writes of its buffers) and records each
    thread's switches in and out (``--switch-events``: its CPU clock), the tracepoints
    :data:`EVENTS` and ``probes`` (:mod:`.perf_pthread`).  A shell writes its pid and
    execs the command: the root of the traced tree."""
    events = [x for e in [*EVENTS, *probes] for x in ("-e", e)]
    return ["perf", "record", "-q", "-k", "mono", "--switch-events", "-m", "1024", "-o", data,
            *events, "--", "sh", "-c", 'echo $$ > "$0"; exec "$@"', pidfile, *cmd]


def trace_with_perf(cmd: list[str], *, timeout: float | None = None, prefix: list[str] = (),
                    cwd: str | None = None, pthread: bool = False) -> tuple[PerfTrace, int]:
    """Run ``cmd`` under ``perf record`` (the tracepoints :data:`EVENTS`, and with
    ``pthread`` probes on the C library's mutex, condition and barrier calls when perf can
    set them) and import it: the trace (its header names the command and its exit
    status) and the exit status."""
    import shutil
    import subprocess
    import tempfile
    from qpn.errors import QPNError
    from .perf_pthread import add_probes, libc_of, remove_probes
    if shutil.which("perf") is None:
        raise QPNError("qpn trace --perf needs perf, which is not installed",
                       hint="install the Debian package linux-perf; recording needs root "
                            "(or kernel.perf_event_paranoid <= -1)")
    notes = []
    group, probes = f"qpn_{os.getpid()}", []
    exe = shutil.which(cmd[0], path=os.pathsep.join([cwd or ".", os.environ.get("PATH", "")]))
    libc = libc_of(exe or cmd[0]) if pthread else None
    if pthread and libc is None:
        notes.append(f"{cmd[0]}: no C library found (ldd): pthread calls not probed, locks "
                     "seen only when a thread blocked")
    elif libc is not None:
        try:
            probes = add_probes(libc, group)
        except OSError as exc:
            notes.append(f"pthread calls not probed (perf probe: {exc}): locks seen only when "
                         "a thread blocked")
    try:
        with tempfile.TemporaryDirectory(prefix="qpn-perf-") as d:
            data, pidfile = os.path.join(d, "perf.data"), os.path.join(d, "pid")
            try:
                proc = subprocess.run([*prefix, *record_command(data, pidfile, cmd, probes)],
                                      timeout=timeout, cwd=cwd,
                                      stdout=subprocess.DEVNULL if prefix else None,
                                      stderr=subprocess.PIPE, text=True)
            except subprocess.TimeoutExpired:
                raise QPNError(f"the program did not end within {timeout:g} s (--timeout)") from None
            except OSError as exc:
                raise QPNError(f"cannot run perf: {exc}") from None
            if not os.path.exists(data) or not os.path.exists(pidfile):
                raise QPNError(f"perf recorded nothing for {' '.join(cmd)!r}: "
                               f"{proc.stderr.strip()[-400:]}",
                               hint="recording tracepoints needs root or "
                                    "kernel.perf_event_paranoid <= -1")
            with open(pidfile) as fh:
                root = int(fh.read().strip())
            script = subprocess.run(["perf", "script", "-i", data, "--ns", "--show-switch-events",
                                     "--show-mmap-events", "-F", "pid,tid,cpu,time,event,trace"],
                                    capture_output=True, text=True, errors="replace")
            if script.returncode != 0:
                raise QPNError(f"perf script failed: {script.stderr.strip()[-400:]}")
            tr = perf_to_events(script.stdout, data, root=root, strict=False)
    finally:
        if probes:
            remove_probes(group)
    # perf's exit status is the command's
    tr.header.program.update(argv=list(cmd), exit_code=proc.returncode)
    tr.warnings[:0] = notes
    lost = re.search(r"(\d+) (?:samples|chunks|events) lost", proc.stderr or "")
    if lost:
        tr.warnings.append(f"perf lost {lost.group(1)} events (a buffer overflowed): the trace "
                           "has gaps")
    return tr, proc.returncode
