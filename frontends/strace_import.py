"""Import ``strace -f -ttt -T`` output into the neutral trace format.

strace prints one line per system call of every thread::

    4242  1700000000.123456 read(3, "abc", 4096) = 3 <0.000021>
    4243  1700000000.123500 futex(0x7f..40, FUTEX_WAIT_PRIVATE, 2, NULL <unfinished ...>
    4242  1700000000.123600 futex(0x7f..40, FUTEX_WAKE_PRIVATE, 1) = 1 <0.000010>
    4243  1700000000.123700 <... futex resumed>) = 0 <0.000200>
    4242  1700000000.130000 +++ exited with 0 +++

A call cut by another thread's line (``<unfinished ...>``) is joined with its
``<... NAME resumed>`` line; ``-T``'s ``<seconds>`` is its duration.  What becomes an
event:

===============================================  =====================================
strace                                           neutral trace
===============================================  =====================================
``clone``/``clone3``/``fork``/``vfork`` = tid    ``thread_start`` of the child (``parent``)
``+++ exited with N +++``, ``exit``               ``thread_end``
``futex`` WAIT / LOCK_PI                          ``wait`` (``on: other``, ``obj``: the address;
                                                 ``on: join``, ``target`` when it waits for a
                                                 thread's id word: ``pthread_join``)
``futex`` WAKE / UNLOCK_PI                        ``notify`` (``waiters``: the result)
``read``/``write``/``pread64``/``pwrite64``/      ``io`` (``op``, ``fd``, ``path`` when the
``readv``/``writev``, ``recv*``/``send*``,        fd's open was seen, ``bytes``, ``dur``,
``accept``/``accept4`` (``conn``), ``connect``,   ``ok``)
``openat``/``open``, ``close``, ``fsync``,
``fdatasync``, ``lseek``, ``stat`` family
``nanosleep``/``clock_nanosleep``                 ``wait`` (``on: sleep``, ``requested``)
===============================================  =====================================

Times: ``-ttt`` gives seconds since 1970; ``ts`` keeps them as ns (the header's
``clock`` says ``realtime``).  strace does not measure CPU time: the analyzer must take
it from the gaps between calls (the header's ``thread_cpu`` is false).  Lines of other
shapes (signals ``--- SIG... ---``, ``strace: Process N attached``) are skipped and
counted; a line that looks like a call but does not parse is an error at its line
(``strict=False``: a warning, the line left out).

>>> tr = strace_to_events("7 1.000000 openat(AT_FDCWD, \\"/d/f\\", O_RDONLY) = 3 <0.000010>\\n"
...                       "7 1.000100 read(3, \\"ab\\", 10) = 2 <0.000020>\\n")
>>> [(e["kind"], e.get("op"), e.get("path"), e.get("bytes")) for e in tr.events]
[('thread_start', None, None, None), ('io', 'open', '/d/f', None), ('io', 'read', '/d/f', 2), ('thread_end', None, None, None)]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .futexes import MERGE_GAP, FutexCall, futex_events
from .trace import TraceError, TraceHeader

_LINE = re.compile(r"^(?:\[pid\s+)?(?P<pid>\d+)\]?\s+(?P<ts>\d+\.\d+)\s+(?P<rest>.*)$")
_CALL = re.compile(r"^(?P<name>[a-z_0-9]+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|0x[0-9a-f]+|\?)"
                   r"(?:\s+(?P<err>[A-Z][A-Z0-9_]+)[^<]*)?(?:\s+<(?P<dur>\d+\.\d+)>)?\s*$")
_UNFINISHED = re.compile(r"^(?P<name>[a-z_0-9]+)\((?P<args>.*?)\s*<unfinished \.\.\.>\s*$")
_RESUMED = re.compile(r"^<\.\.\. (?P<name>[a-z_0-9]+) resumed>(?P<args>.*)\)\s+=\s+"
                      r"(?P<ret>-?\d+|0x[0-9a-f]+|\?)(?:\s+(?P<err>[A-Z][A-Z0-9_]+)[^<]*)?"
                      r"(?:\s+<(?P<dur>\d+\.\d+)>)?\s*$")
_EXITED = re.compile(r"^\+\+\+ (?:exited with (?P<code>-?\d+)|killed by (?P<sig>\w+).*) \+\+\+$")

READS = {"read": "read", "pread64": "read", "readv": "read", "preadv": "read",
         "recvfrom": "recv", "recvmsg": "recv", "recv": "recv"}
WRITES = {"write": "write", "pwrite64": "write", "writev": "write", "pwritev": "write",
          "sendto": "send", "sendmsg": "send", "send": "send", "sendfile": "write"}
OTHER_IO = {"openat": "open", "open": "open", "close": "close", "fsync": "fsync",
            "fdatasync": "fsync", "lseek": "seek", "newfstatat": "stat", "fstat": "stat",
            "stat": "stat", "statx": "stat", "accept": "accept", "accept4": "accept",
            "connect": "connect"}
SPAWN = {"clone", "clone3", "fork", "vfork"}
SLEEP = {"nanosleep", "clock_nanosleep"}


@dataclass(frozen=True)
class StraceCost:
    """What strace adds to each system call, in ns: to the time between calls (``gap``:
    the stop at the call's entry, the tracer's work) and to the call's own ``-T``
    duration (``call``).  :func:`calibrate` measures them on this machine."""
    gap: int
    call: int


@dataclass
class StraceTrace:
    """The events of an strace log, its header, and what a lenient read left out."""
    header: TraceHeader
    events: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0


def seconds_ns(seconds: str) -> int:
    """``"1700000000.123456"`` (seconds, a decimal fraction of up to 9 digits) -> ns."""
    whole, _, frac = seconds.partition(".")
    return int(whole) * 1_000_000_000 + int((frac + "000000000")[:9])


def _first_arg(args: str) -> str:
    return args.split(",", 1)[0].strip()


def _fd(args: str) -> int | None:
    a = _first_arg(args)
    m = re.match(r"(-?\d+)", a)
    return int(m.group(1)) if m else None


def _path(args: str) -> str | None:
    m = re.search(r'"((?:[^"\\]|\\.)*)"', args)
    return m.group(1) if m else None


def _requested(args: str) -> int | None:
    """The sleep a nanosleep asked for (its timespec), in ns."""
    m = re.search(r"\{tv_sec=(\d+), tv_nsec=(\d+)\}", args)
    return int(m.group(1)) * 1_000_000_000 + int(m.group(2)) if m else None


class _Builder:
    def __init__(self, path: str, strict: bool, cost: StraceCost | None = None):
        self.path, self.strict = path, strict
        self.cost = cost or StraceCost(0, 0)
        self.out = StraceTrace(TraceHeader(source="strace", clock="realtime",
                                           capabilities={"file_io": True, "socket_io": True,
                                                         "thread_cpu": False,
                                                         "cpu_from_gaps": True}))
        if cost is not None:
            self.out.header.extra["strace_cost_ns"] = {"gap": cost.gap, "call": cost.call}
        self.busy: dict[int, list[int]] = {}   # tid -> [busy ns so far, end of its last call]
        self.fds: dict[tuple[int, int], str] = {}      # (fd table, fd) -> path
        self.table: dict[int, int] = {}                # tid -> its fd table (threads share one)
        self.closing: dict[int, str | None] = {}      # tid -> path of the fd its close freed
        self.pending: dict[int, tuple[int, str, str, int]] = {}   # pid -> (ts, name, args, line)
        self.alive: set[int] = set()
        self.started: dict[int, dict] = {}      # tid -> its thread_start event (while alive)
        self.seen: set[int] = set()              # every thread id the log has shown
        self.first_pid: int | None = None
        self.futex: list[FutexCall] = []        # classified at the end (frontends/futexes.py)

    def bad(self, no: int, text: str, why: str) -> None:
        if self.strict:
            raise TraceError(why, self.path, no, 0, text,
                             hint="record with strace -f -ttt -T -o FILE (one line per call, "
                                  "thread ids, absolute times, durations)")
        self.out.warnings.append(f"{self.path}:{no}: {why}; line left out")

    def start(self, pid: int, ts: int, parent: int | None = None) -> None:
        """The thread's start (once while it lives); a parent learnt later is added to it
        (a child's first call may be logged before its parent's clone returns)."""
        if pid in self.alive:
            if parent is not None:
                self.started[pid].setdefault("parent", parent)
            return
        self.alive.add(pid)
        self.seen.add(pid)
        self.busy[pid] = [0, ts]
        ev = {"kind": "thread_start", "tid": pid, "ts": ts, "cpu": 0}
        if parent is not None:
            ev["parent"] = parent
        self.started[pid] = ev
        self.out.events.append(ev)

    def clock(self, pid: int, ts: int) -> int:
        """The thread's busy time at ``ts``: the time outside its system calls, less
        strace's own cost per call (``StraceCost.gap``), since it started."""
        b = self.busy.setdefault(pid, [0, ts])
        if ts > b[1]:
            b[0] += max(0, ts - b[1] - self.cost.gap)
            b[1] = ts
        return b[0]

    def line(self, no: int, text: str) -> None:
        m = _LINE.match(text)
        if not m:
            self.out.skipped += 1
            return
        pid, ts, rest = int(m.group("pid")), seconds_ns(m.group("ts")), m.group("rest").strip()
        if pid >= 2 ** 31 or ts >= 2 ** 63:
            self.bad(no, text, "a thread id or time out of range (thread ids below 2^31, times "
                               "below 2^63 ns)")
            return
        if self.first_pid is None:
            self.first_pid = pid
            self.out.header.start_ns = ts
            self.out.header.program = {"pid": pid}
        if rest.startswith("---") or rest.startswith("strace:"):
            self.out.skipped += 1
            return
        self.start(pid, ts)
        e = _EXITED.match(rest)
        if e:
            self.alive.discard(pid)
            self.out.events.append({"kind": "thread_end", "tid": pid, "ts": ts,
                                    "cpu": self.clock(pid, ts)})
            if pid == self.first_pid:
                if e.group("code") is not None:      # killed by a signal: no exit code
                    self.out.header.program["exit_code"] = int(e.group("code"))
            return
        u = _UNFINISHED.match(rest)
        if u:
            self.pending[pid] = (ts, u.group("name"), u.group("args"), no)
            if u.group("name") == "close":       # the fd is free once close begins: another
                fd = _fd(u.group("args"))        # thread's open may return it before close does
                self.closing[pid] = self.fds.pop((self.table.get(pid, pid), fd), None)
            return
        r = _RESUMED.match(rest)
        if r:
            if pid not in self.pending or self.pending[pid][1] != r.group("name"):
                self.bad(no, text, f"'{r.group('name')} resumed' without its unfinished start "
                                   f"in thread {pid}")
                return
            t0, name, args, _ = self.pending.pop(pid)
            self.call(pid, t0, name, args + r.group("args"), r.group("ret"), r.group("err"),
                      r.group("dur"), end=ts)
            return
        c = _CALL.match(rest)
        if c:
            self.call(pid, ts, c.group("name"), c.group("args"), c.group("ret"), c.group("err"),
                      c.group("dur"))
            return
        if re.match(r"^[a-z_0-9]+\(", rest):
            self.bad(no, text, "a system call line that does not parse: expected "
                               "'NAME(ARGS) = RESULT <SECONDS>'")
            return
        self.out.skipped += 1

    def call(self, pid: int, ts: int, name: str, args: str, ret: str, err: str | None,
             dur: str | None, end: int | None = None) -> None:
        d = seconds_ns(dur) if dur else (max(0, end - ts) if end is not None else None)
        value = None if ret == "?" else int(ret, 16) if ret.startswith("0x") else int(ret)
        ok = value is not None and value >= 0 and err is None
        cpu = self.clock(pid, ts)
        if d is not None:
            self.busy[pid][1] = ts + d
            d = max(0, d - self.cost.call)      # strace's own share of the call's time
        ev: dict = {"tid": pid, "ts": ts, "cpu": cpu}
        if d is not None:
            ev["dur"] = d
        if name in SPAWN:
            if ok and value:
                self.start(value, ts + (d or 0), parent=pid)
                mine = self.table.get(pid, pid)
                if "CLONE_FILES" in args or "CLONE_THREAD" in args:
                    self.table[value] = mine             # a thread: the same descriptors
                    for (tab, fd), path in list(self.fds.items()):
                        if tab == value:                 # opened before the clone returned
                            self.fds[(mine, fd)] = self.fds.pop((tab, fd))
                else:                                    # a process: a copy of them
                    self.table[value] = value
                    for (tab, fd), path in list(self.fds.items()):
                        if tab == mine:
                            self.fds[(value, fd)] = path
            return
        if name in ("exit", "exit_group"):
            return                       # the '+++ exited' line ends the thread
        if name == "futex":
            parts = [x.strip() for x in args.split(",")]
            op = parts[1] if len(parts) > 1 else ""
            addr = re.fullmatch(r"0x([0-9a-f]{1,15})", parts[0])
            kind = ("lock" if "LOCK_PI" in op and "UNLOCK" not in op else
                    "unlock" if "UNLOCK" in op else "wait" if "WAIT" in op else
                    "wake" if "WAKE" in op or "REQUEUE" in op else None)
            if addr is None or kind is None:
                return                           # not an address strace could read
            val = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
            self.futex.append(FutexCall(pid, ts, d, int(addr.group(1), 16), kind,
                                        "BITSET" in op, val, value if ok else -1,
                                        self.table.get(pid, pid), cpu))
            return
        if name in SLEEP:
            ev.update(kind="wait", on="sleep")
            req = _requested(args)
            if req is not None:
                ev["requested"] = req
            self.out.events.append(ev)
            return
        op = READS.get(name) or WRITES.get(name) or OTHER_IO.get(name)
        if op is None:
            return
        ev.update(kind="io", op=op, ok=ok)
        fd = _fd(args)                   # (open's first argument is its path: unused)
        if op == "open":
            path = _path(args)
            if path is not None:
                ev["path"] = path
            if ok and value is not None:
                ev["fd"] = value
                if path is not None:
                    self.fds[(self.table.get(pid, pid), value)] = path
        else:
            key = (self.table.get(pid, pid), fd)
            if fd is not None and fd >= 0:
                ev["fd"] = fd
                if key in self.fds:
                    ev["path"] = self.fds[key]
            if op in ("read", "write", "recv", "send") and ok and value is not None:
                ev["bytes"] = value
            if op == "accept" and ok and value is not None:
                ev["conn"] = value
            if op == "close" and fd is not None:
                if end is None:
                    self.fds.pop(key, None)
                else:                            # freed when the close began (see line())
                    ev.pop("path", None)
                    freed = self.closing.pop(pid, None)
                    if freed is not None:
                        ev["path"] = freed
        self.out.events.append(ev)


def strace_to_events(text: str, path: str = "<strace>", *, strict: bool = True,
                     cost: StraceCost | None = None) -> StraceTrace:
    """The neutral events of strace output ``text`` (see the module docstring); ``cost``:
    strace's own time per call, taken off the calls' durations and the busy clock."""
    b = _Builder(path, strict, cost)
    for no, line in enumerate(text.splitlines(), 1):
        if line.strip():
            b.line(no, line)
    if b.first_pid is None:
        first = next((i for i, x in enumerate(text.splitlines(), 1) if x.strip()), 1)
        raise TraceError("no strace line here: expected 'PID SECONDS.MICROS NAME(ARGS) = RESULT "
                         "<SECONDS>'", path, first, 0,
                         (text.splitlines() or [""])[first - 1] if text.strip() else "",
                         hint="record with strace -f -ttt -T -o FILE CMD ARGS (-f: thread ids, "
                              "-ttt: absolute times, -T: durations)")
    for pid, (ts, name, _args, no) in sorted(b.pending.items()):
        b.out.warnings.append(f"{path}:{no}: {name} in thread {pid} never resumed (the log ends "
                              f"inside it): left out")
    # a mutex's back-to-back waits are strace's cost apart
    fevents, objects = futex_events(b.futex, b.seen,
                                    merge_gap=MERGE_GAP + 2 * (b.cost.gap + b.cost.call))
    b.out.events[:0] = objects
    b.out.events.extend(fevents)
    last = max((e["ts"] for e in b.out.events), default=0)
    for pid in sorted(b.alive):        # the log ended while they ran: end them at its end
        b.out.events.append({"kind": "thread_end", "tid": pid, "ts": last, "cpu": b.clock(pid, last)})
    b.out.events.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start"))
    return b.out


def read_strace(path: str, *, strict: bool = True, cost: StraceCost | None = None) -> StraceTrace:
    """:func:`strace_to_events` of the file at ``path``."""
    from .trace_text import require_import_memory
    require_import_memory(path, "strace")
    with open(path, encoding="utf-8", errors="replace") as fh:
        return strace_to_events(fh.read(), path, strict=strict, cost=cost)


def calibrate(calls: int = 4000) -> StraceCost | None:
    """What strace adds to a system call on this machine, now: ``dd`` copies ``calls / 2``
    single bytes (a read and a write each, microseconds of work natively) under ``strace
    -f -ttt -T``; the median ``-T`` of those calls is strace's share of a call's duration, the
    median time from one call's start to the next less that is its share of the time
    between calls.  None when strace or dd is missing or the run fails."""
    import os
    import shutil
    import statistics
    import subprocess
    import tempfile
    if shutil.which("strace") is None or shutil.which("dd") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="qpn-strace-cost-") as d:
        log = os.path.join(d, "dd.strace")
        try:
            subprocess.run(["strace", "-f", "-ttt", "-T", "-q", "-o", log, "dd", "if=/dev/zero",
                            "of=/dev/null", "bs=1", f"count={max(100, calls // 2)}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                           check=True)
            with open(log, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except (OSError, subprocess.SubprocessError):
            return None
    one = re.compile(r"^\d+\s+(\d+\.\d+) (?:read\(0|write\(1)\b.*= 1 <(\d+\.\d+)>$", re.M)
    hits = [(seconds_ns(a), seconds_ns(b)) for a, b in one.findall(text)]
    if len(hits) < 100:
        return None
    call = int(statistics.median(dur for _, dur in hits))
    step = int(statistics.median(b[0] - a[0] for a, b in zip(hits, hits[1:])))
    return StraceCost(gap=max(0, step - call), call=call)


def trace_with_strace(cmd: list[str], *, timeout: float | None = None,
                      cost: StraceCost | None | bool = True, prefix: list[str] = (),
                      cwd: str | None = None) -> tuple[StraceTrace, int]:
    """Run ``cmd`` under ``strace -f -ttt -T`` and import its log: the trace (its header
    names the program, its arguments and exit status) and the program's exit status.
    ``cost``: strace's own time per call to take off (True: :func:`calibrate` it just
    before the run; None or False: none).  ``prefix`` runs strace itself (``setsid sh -c
    ...``: the isolation of a measured run), ``cwd`` is the program's directory."""
    import os
    import shutil
    import subprocess
    import tempfile
    from qpn.errors import QPNError
    if shutil.which("strace") is None:
        raise QPNError("qpn trace --strace needs strace, which is not installed",
                       hint="install the Debian package strace (apt-get install strace)")
    with tempfile.TemporaryDirectory(prefix="qpn-strace-") as d:
        log = os.path.join(d, "run.strace")
        try:
            proc = subprocess.run([*prefix, "strace", "-f", "-ttt", "-T", "-q", "-o", log, *cmd],
                                  timeout=timeout, cwd=cwd, stdout=subprocess.DEVNULL
                                  if prefix else None)
        except subprocess.TimeoutExpired:
            raise QPNError(f"the program did not end within {timeout:g} s (--timeout)") from None
        except OSError as exc:
            raise QPNError(f"cannot run strace: {exc}") from None
        if not os.path.exists(log) or os.path.getsize(log) == 0:
            raise QPNError(f"strace wrote no log for {' '.join(cmd)!r} (exit status "
                           f"{proc.returncode}): is the command right, and may this user trace "
                           f"processes (ptrace)?")
        tr = read_strace(log, strict=False, cost=calibrate() if cost is True else cost or None)
    tr.header.program.update(argv=list(cmd), exit_code=proc.returncode)
    return tr, proc.returncode
