"""Import a Java Flight Recorder recording into the neutral trace format.

``qpn trace --jfr -o run.jsonl -- java ARGS`` adds
``-XX:StartFlightRecording=filename=F,settings=frontends/jfr/qpn.jfc`` to the command
(the settings record every event below, threshold 0 and with stack traces: the JDK's
defaults drop waits under 20 ms) and reads the recording back with ``jfr print --json``.
A recording made by hand the same way is read by ``qpn import-jfr run.json -o run.jsonl``
(the output of ``jfr print --json --stack-depth 8 run.jfr``).

========================  ==============================================================
JFR event                 neutral trace
========================  ==============================================================
``jdk.ThreadStart/End``   ``thread_start`` (``name``: the Java name, ``parent``, ``site``),
                          ``thread_end``
``jdk.FileRead/Write``    ``io`` (``read``/``write``, ``path``, ``bytes``, ``dur``)
``jdk.FileForce``         ``io`` (``fsync``)
``jdk.SocketRead/Write``  ``io`` (``recv``/``send``, ``peer``, ``bytes``)
``jdk.ThreadSleep``       ``wait`` (``on: sleep``, ``requested``)
``jdk.JavaMonitorEnter``  ``acquire`` (``contended``) of the monitor (``obj``: its address)
``jdk.JavaMonitorWait``   ``wait`` (``on: cond``) on the monitor
``jdk.ThreadPark``        ``wait`` (``on: cond``) on the parked object (a lock's or a
                          queue's condition, a future): an ``object`` named by its class
========================  ==============================================================

Threads are the operating system's (``osThreadId``), as in perf and strace traces; the
JVM's own (thread groups ``system`` and ``InnocuousThreadGroup``: reference handling,
cleaners, JFR) are left out.  JFR
records a monitor only when a thread blocked on it and a park only when it parked: the
header lacks ``lock_uncontended`` and the analyzer leaves those objects out of the model
(docs/analyzer.md).  It has no CPU time per event: each event carries an estimate, the
thread's time outside its recorded waits and I/O since it started (``cpu_from_gaps``).
A site is the innermost frame outside the JDK (``java.``, ``javax.``, ``jdk.``, ``sun.``):
``Class.method:line``.

>>> doc = {"recording": {"events": [
...   {"type": "jdk.FileRead", "values": {"startTime": "2026-01-01T00:00:00.000001Z",
...    "duration": "PT0.000050S", "eventThread": {"osThreadId": 7, "javaName": "main"},
...    "path": "/d/f", "bytesRead": 4096, "stackTrace": {"frames": [
...      {"method": {"type": {"name": "App"}, "name": "load"}, "lineNumber": 12}]}}}]}}
>>> [(e["kind"], e.get("op"), e.get("bytes"), e.get("dur"), e.get("site")) for e in jfr_to_events(doc).events]
[('thread_start', None, None, None, None), ('io', 'read', 4096, 50000, 'App.load:12'), ('thread_end', None, None, None, None)]
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime

from .trace import TraceError, TraceHeader

#: the settings file qpn ships (threshold 0, stack traces)
JFC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jfr", "qpn.jfc")
#: the events read
EVENTS = ("jdk.ThreadStart", "jdk.ThreadEnd", "jdk.FileRead", "jdk.FileWrite", "jdk.FileForce",
          "jdk.SocketRead", "jdk.SocketWrite", "jdk.ThreadSleep", "jdk.JavaMonitorEnter",
          "jdk.JavaMonitorWait", "jdk.ThreadPark")
_IO = {"jdk.FileRead": ("read", "bytesRead"), "jdk.FileWrite": ("write", "bytesWritten"),
       "jdk.FileForce": ("fsync", None), "jdk.SocketRead": ("recv", "bytesRead"),
       "jdk.SocketWrite": ("send", "bytesWritten")}
_JDK = ("java/", "javax/", "jdk/", "sun/", "java.", "javax.", "jdk.", "sun.")
_DURATION = re.compile(r"^-?PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$")


@dataclass
class JfrTrace:
    """The events of a recording, its header, and what a lenient read left out."""
    header: TraceHeader
    events: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _ns_since_epoch(text: str) -> int:
    """``2026-11-27T14:31:22.311724458Z`` -> ns since 1970 (datetime keeps microseconds:
    the nanoseconds are taken from the text)."""
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$", text)
    if not m:
        raise ValueError(f"not a time: {text!r}")
    base = datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3)))
    return int(base.timestamp()) * 1_000_000_000 + int((m.group(2) or "0").ljust(9, "0"))


def _duration_ns(text: str) -> int:
    m = _DURATION.match(text or "")
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    h, mi, s = m.groups()
    return max(0, round(((int(h or 0) * 60 + int(mi or 0)) * 60 + float(s or 0)) * 1e9))


def _site(values: dict) -> str | None:
    stack = values.get("stackTrace")
    frames = stack.get("frames") if isinstance(stack, dict) else None
    for f in frames if isinstance(frames, list) else ():
        method = f.get("method") if isinstance(f, dict) else None
        typ = method.get("type") if isinstance(method, dict) else None
        cls = typ.get("name") if isinstance(typ, dict) else None
        if isinstance(cls, str) and cls and not cls.startswith(_JDK):
            line = f.get("lineNumber")
            return f"{cls.replace('/', '.')}.{method.get('name', '?')}:" \
                   f"{line if isinstance(line, int) else 0}"
    return None


def _tid(thread) -> int | None:
    tid = (thread or {}).get("osThreadId") if isinstance(thread, dict) else None
    return tid if isinstance(tid, int) and 0 < tid < 1 << 31 else None


#: thread groups of the JVM's own threads (reference handling, cleaners, JFR, signals)
JVM_GROUPS = frozenset({"system", "InnocuousThreadGroup"})


def _jvm_own(thread) -> bool:
    group = ((thread or {}).get("group") or {}) if isinstance(thread, dict) else {}
    return isinstance(group, dict) and group.get("name") in JVM_GROUPS


class _Reader:
    """The events of a recording's threads, read one JFR event at a time."""

    def __init__(self):
        self.evs: list[dict] = []
        self.jvm: set = set()                        # the JVM's own threads (left out)
        self.objects: dict[int, dict] = {}
        self.names: dict[int, str] = {}
        self.starts: dict[int, dict] = {}
        self.ends: dict[int, int] = {}

    def read(self, typ: str, v: dict, ts: int, dur: int) -> None:
        if typ == "jdk.ThreadStart":
            self.thread_start(v, ts)
            return
        if typ == "jdk.ThreadEnd":
            tid = _tid(v.get("thread"))
            if tid is not None:
                self.ends[tid] = ts
            return
        tid = _tid(v.get("eventThread"))
        if tid is None or tid in self.jvm or _jvm_own(v.get("eventThread")):
            return
        name = (v.get("eventThread") or {}).get("javaName")
        if isinstance(name, str):
            self.names.setdefault(tid, name)
        ev = {"tid": tid, "ts": ts, "dur": dur}
        site = _site(v)
        if site:
            ev["site"] = site
        if typ in _IO:
            op, key = _IO[typ]
            ev.update(kind="io", op=op, ok=True)
            if isinstance(v.get("path"), str):
                ev["path"] = v["path"]
            if key and isinstance(v.get(key), int) and v[key] >= 0:
                ev["bytes"] = v[key]
            if typ.startswith("jdk.Socket") and v.get("host") is not None:
                ev["peer"] = f"{v.get('host') or v.get('address')}:{v.get('port')}"
        elif typ == "jdk.ThreadSleep":
            ev.update(kind="wait", on="sleep", ok=True)
            t = v.get("time")
            if isinstance(t, str):
                try:
                    ev["requested"] = _duration_ns(t)
                except ValueError:
                    pass
        elif typ in ("jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark"):
            if not self.blocked(typ, v, ev):
                return                               # a park without an object
        else:
            return
        self.evs.append(ev)

    def thread_start(self, v: dict, ts: int) -> None:
        thread = v.get("thread")
        tid = _tid(thread)
        if _jvm_own(thread):
            self.jvm.add(tid)
            return
        if tid is None:
            return
        ev = {"kind": "thread_start", "tid": tid, "ts": ts}
        name = (thread or {}).get("javaName")
        if isinstance(name, str):
            ev["name"] = self.names[tid] = name
        parent = _tid(v.get("parentThread"))
        if parent is not None:
            ev["parent"] = parent
        site = _site(v)
        if site:
            ev["site"] = site
        self.starts[tid] = ev

    def blocked(self, typ: str, v: dict, ev: dict) -> bool:
        """A monitor enter, monitor wait or park into ``ev``; False for a park without an
        object (``LockSupport.park()``)."""
        addr = v.get("address")
        cls = v.get("monitorClass") if typ != "jdk.ThreadPark" else v.get("parkedClass")
        cname = ((cls or {}).get("name") or "object").replace("/", ".") \
            if isinstance(cls, dict) else "object"
        if not isinstance(addr, int) or not 0 < addr < 1 << 63:
            return False
        kind = "lock" if typ == "jdk.JavaMonitorEnter" else "cond"
        if addr not in self.objects or self.objects[addr]["type"] != kind:
            self.objects[addr] = {"kind": "object", "tid": ev["tid"], "ts": ev["ts"], "obj": addr,
                                  "type": kind, "name": f"{cname.rsplit('.', 1)[-1]}_{addr:x}"}
        if kind == "lock":
            ev.update(kind="acquire", obj=addr, contended=True, ok=True)
        else:
            ev.update(kind="wait", on="cond", obj=addr, ok=not v.get("timedOut", False))
        return True


def jfr_to_events(doc, path: str = "<jfr>", *, strict: bool = True) -> JfrTrace:
    """The neutral events of ``jfr print --json`` output (parsed JSON)."""
    out = JfrTrace(TraceHeader(source="jfr", clock="realtime",
                               capabilities={"thread_cpu": False, "cpu_from_gaps": True,
                                             "file_io": True, "socket_io": True, "sites": True},
                               runtime={"implementation": "hotspot", "gil": False, "jit": True,
                                        "cpus": os.cpu_count() or 1}))
    try:
        records = doc["recording"]["events"]
        if not isinstance(records, list):
            raise TypeError
    except (KeyError, TypeError):
        raise TraceError("not a 'jfr print --json' document: expected "
                         "{\"recording\": {\"events\": [...]}}", path, 1, 0, "",
                         hint="print the recording with jfr print --json --stack-depth 8 run.jfr") from None
    r = _Reader()

    def bad(msg: str, what: str) -> None:
        if strict:
            raise TraceError(what, path, 1, 0, "", hint="print the recording with jfr print "
                                                        "--json --stack-depth 8 run.jfr")
        out.warnings.append(f"{path}: {msg}; left out")

    for i, rec in enumerate(records):
        try:
            typ, v = rec["type"], rec["values"]
            ts = _ns_since_epoch(v["startTime"])
            dur = _duration_ns(v["duration"]) if "duration" in v else 0
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"event {i}: {exc.__class__.__name__}: {exc}"
            bad(msg, f"a JFR event without its type, time or duration ({msg})")
            continue
        try:
            r.read(typ, v, ts, dur)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            msg = f"event {i} ({typ}): a field of an unexpected type ({exc})"
            bad(msg, msg)
    evs, objects, names, starts, ends = r.evs, r.objects, r.names, r.starts, r.ends
    if not evs and not starts:
        raise TraceError("no event of the recording's threads here", path, 1, 0, "",
                         hint=f"record with -XX:StartFlightRecording=settings={JFC}")
    # every thread starts (at its start event or its first event) and ends; its CPU
    # estimate is the time outside its recorded waits and I/O
    by: dict[int, list] = {}
    for e in evs:
        by.setdefault(e["tid"], []).append(e)
    last = max([e["ts"] + e.get("dur", 0) for e in evs] + list(ends.values()) or [0])
    for tid in set(by) | set(starts):
        mine = sorted(by.get(tid, []), key=lambda e: e["ts"])
        start = starts.get(tid) or {"kind": "thread_start", "tid": tid,
                                    "ts": mine[0]["ts"] if mine else last,
                                    **({"name": names[tid]} if tid in names else {})}
        if mine and mine[0]["ts"] < start["ts"]:
            # JFR stamps a ThreadStart when it commits it, and a thread started while
            # the recording starts (JFR's own) can block before that: it ran from then
            start["ts"] = mine[0]["ts"]
        start["cpu"] = 0
        busy, at = 0, start["ts"]
        for e in mine:
            busy += max(0, e["ts"] - at)
            e["cpu"] = busy
            at = max(at, e["ts"] + e.get("dur", 0))
        end = max(ends.get(tid, last), at)
        busy += max(0, end - at)
        out.events.append(start)
        out.events.extend(mine)
        out.events.append({"kind": "thread_end", "tid": tid, "ts": end, "cpu": busy})
    out.events[:0] = sorted(objects.values(), key=lambda o: o["ts"])
    out.events.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start", e["kind"] == "thread_end"))
    first = min(e["ts"] for e in out.events)
    out.header.start_ns = first
    main = next((t for t, n in names.items() if n == "main"), None)
    out.header.program = {"pid": main} if main is not None else {}
    return out


def read_jfr_json(path: str, *, strict: bool = True) -> JfrTrace:
    """:func:`jfr_to_events` of a ``jfr print --json`` file.  A file cut short (a copy
    stopped, a disk full) is an error at the line where it stops; with ``strict=False``
    the events complete before it are kept, with a warning."""
    from .trace_text import require_import_memory
    require_import_memory(path, "jfr print --json")
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        kept = None if strict else _complete_events(text)
        if kept is None:
            raise TraceError(f"not JSON: {exc.msg}", path, exc.lineno, exc.colno,
                             lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else "",
                             hint="print the recording with jfr print --json --stack-depth 8 "
                                  "run.jfr") from None
        tr = jfr_to_events({"recording": {"events": kept}}, path, strict=False)
        tr.warnings.insert(0, f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}): the "
                              f"{len(kept)} events before it are kept")
        return tr
    return jfr_to_events(doc, path, strict=strict)


def _complete_events(text: str) -> list | None:
    """The complete event objects at the start of a ``jfr print --json`` text cut short,
    or None when it is not one."""
    m = re.search(r'"events"\s*:\s*\[', text)
    if m is None:
        return None
    dec, at, out = json.JSONDecoder(), m.end(), []
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            ev, at = dec.raw_decode(text, at)
        except json.JSONDecodeError:
            return out
        out.append(ev)


def trace_with_jfr(cmd: list[str], *, timeout: float | None = None, prefix: list[str] = (),
                   cwd: str | None = None) -> tuple[JfrTrace, int]:
    """Run a ``java`` command with a flight recording (:data:`JFC`) and import it."""
    import shutil
    import subprocess
    import tempfile
    from qpn.errors import QPNError
    if not cmd or os.path.basename(cmd[0]) != "java":
        raise QPNError("qpn trace --jfr runs a java command: qpn trace --jfr -o run.jsonl -- "
                       "java -cp CLASSES Main ARGS")
    if shutil.which("jfr") is None:
        raise QPNError("qpn trace --jfr needs the jfr tool of a JDK (Debian: openjdk-17-jdk)")
    with tempfile.TemporaryDirectory(prefix="qpn-jfr-") as d:
        rec = os.path.join(d, "run.jfr")
        run = [cmd[0], f"-XX:StartFlightRecording=filename={rec},settings={JFC}", *cmd[1:]]
        try:
            proc = subprocess.run([*prefix, *run], timeout=timeout, cwd=cwd,
                                  stdout=subprocess.DEVNULL if prefix else None,
                                  stderr=subprocess.PIPE, text=True)
        except subprocess.TimeoutExpired:
            raise QPNError(f"the program did not end within {timeout:g} s (--timeout)") from None
        if not os.path.exists(rec):
            raise QPNError(f"the JVM wrote no recording: {proc.stderr.strip()[-400:]}")
        p = subprocess.run(["jfr", "print", "--json", "--stack-depth", "8", "--events",
                            ",".join(EVENTS), rec], capture_output=True, text=True)
        if p.returncode != 0:
            raise QPNError(f"jfr print failed: {p.stderr.strip()[-400:]}")
        tr = jfr_to_events(json.loads(p.stdout), rec, strict=False)
    tr.header.program.update(argv=list(cmd), exit_code=proc.returncode)
    return tr, proc.returncode
