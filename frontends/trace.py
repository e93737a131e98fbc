"""Read and write the neutral trace format (JSON lines; see docs/trace-format.md).

A trace is a header line followed by one event per line.  Events stay plain
dicts (what ``json.loads`` returns): a million small dataclass objects would
cost more than the parsing itself, and the analyzer only needs field lookups.

>>> import io, json
>>> text = ('{"kind":"header","format":"qpn-trace","version":1,"source":"demo"}\\n'
...         '{"kind":"thread_start","tid":1,"ts":0,"name":"main"}\\n'
...         '{"kind":"thread_end","tid":1,"ts":50}\\n')
>>> t = read_trace(io.StringIO(text))
>>> t.header.source, len(t.events), t.by_thread()[1][-1]["ts"]
('demo', 2, 50)

Mistakes are located: ``run.jsonl:17: error: acquire event lacks field 'obj'``.
With ``strict=False`` the reader keeps the valid part before the first bad line
and returns the problem as a warning instead.

What the events say together is checked too (:class:`.trace_timeline.Timeline`): times a clock
can read, no event detached from all others, thread lifecycles in order, threads
that never started, and text that is Unicode (no lone UTF-16 surrogate).  An
impossible event is an error at its line; with ``strict=False`` it is left out
(:attr:`TraceReader.dropped`) and a warning names its line.  ``qpn trace-check``
and ``qpn build`` read through this reader, so they apply the same rules.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from contextlib import closing
from dataclasses import dataclass, field
from operator import itemgetter
from typing import IO, Iterable, Iterator

from .trace_schema import (CAPABILITIES, FORMAT, KINDS, VERSION, EventChecker, TraceError,
                           check_event, check_header_fields)
from .trace_timeline import Timeline

__all__ = ["TraceHeader", "TraceEvent", "Trace", "TraceError", "TraceReader",
           "read_trace", "write_trace", "dump_event", "CAPABILITIES", "KINDS"]

# Characters read per chunk; a chunk is parsed by one json.loads call on
# "[l1,l2,...]", ~3x faster than one call per line.  On any error the chunk is
# re-parsed line by line to locate it.  64 KiB (~500 events) rather than more:
# the events are checked (and grouped by callers) while still in the CPU cache.
CHUNK_CHARS = 1 << 16

try:        # orjson parses a chunk ~1.4x faster than json, with less memory per event
    from orjson import loads as _loads
except ImportError:                          # pragma: no cover - orjson is a dependency
    _loads = json.loads


@dataclass
class TraceHeader:
    """The first line: where the trace comes from and what it can be trusted for."""

    source: str = "unknown"
    capabilities: dict[str, bool] = field(default_factory=dict)
    clock: str = "monotonic"
    program: dict = field(default_factory=dict)
    runtime: dict = field(default_factory=dict)
    start_ns: int | None = None
    epoch_ns: int | None = None
    version: int = VERSION
    probe_ns: int | None = None       # the recorder's own CPU per event (subtracted by the analyzer)
    probe_cond_ns: int | None = None  # the same for a lock taken through a Condition, and notify
    machine: dict = field(default_factory=dict)   # how busy the machine was (pytrace/machine.py)
    extra: dict = field(default_factory=dict)

    def machine_text(self) -> str | None:
        """How busy the machine was while tracing, in words (None: not recorded).

        >>> TraceHeader(machine={"cpus": 2, "loadavg_before": [0.2, 0.5, 0.9], "samples": 40,
        ...     "others_runnable": 0.05, "others_runnable_max": 1, "steal_share": 0.0}).machine_text()
        'load average 0.2 before; other runnable threads 0.05 on average (max 1, 40 samples) on 2 CPUs; steal 0.0%'
        """
        m = self.machine
        if not m:
            return None
        parts = []
        if m.get("loadavg_before"):
            parts.append(f"load average {m['loadavg_before'][0]:g} before")
        if m.get("others_runnable") is not None:
            parts.append(f"other runnable threads {m['others_runnable']:g} on average (max "
                         f"{m.get('others_runnable_max')}, {m.get('samples')} samples) on "
                         f"{m.get('cpus')} CPUs")
        if m.get("steal_share") is not None:
            parts.append(f"steal {100 * m['steal_share']:.1f}%")
        if m.get("python_loop_ns"):
            parts.append("Python loop " + "/".join(f"{x:.4g}" for x in m["python_loop_ns"])
                         + " ns before/after (frontends/calibrate.py)")
        return "; ".join(parts) or None

    def busy(self, others: float = 0.5, steal: float = 0.05) -> str | None:
        """A warning when the machine had other work while tracing: on average at least
        ``others`` other runnable threads (over 5 samples or more), or ``steal`` of the
        CPU time stolen."""
        m = self.machine or {}
        o, st = m.get("others_runnable"), m.get("steal_share")
        if not isinstance(m.get("samples"), int) or m["samples"] < 5:
            o = None                     # a few samples of a short run say little
        if (isinstance(o, (int, float)) and o >= others) or (isinstance(st, (int, float)) and st >= steal):
            return (f"the machine was busy while this trace was taken ({self.machine_text()}): "
                    "CPU demands and the GIL estimate may be inflated; trace on a quiet machine, "
                    "or compare several traces (qpn build a.jsonl b.jsonl)")
        return None

    def has(self, capability: str) -> bool:
        """Whether the trace declares ``capability`` (see trace_schema.CAPABILITIES)."""
        return bool(self.capabilities.get(capability, False))

    def to_dict(self) -> dict:
        """The header line's JSON object."""
        d = {"kind": "header", "format": FORMAT, "version": self.version,
             "source": self.source, "clock": self.clock, "time_unit": "ns",
             "capabilities": {k: bool(v) for k, v in sorted(self.capabilities.items())}}
        for k in ("program", "runtime", "machine"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        if self.start_ns is not None:
            d["start_ns"] = self.start_ns
        if self.epoch_ns is not None:
            d["epoch_ns"] = self.epoch_ns
        if self.probe_ns is not None:
            d["probe_ns"] = self.probe_ns
        if self.probe_cond_ns is not None:
            d["probe_cond_ns"] = self.probe_cond_ns
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: object) -> "TraceHeader":
        """Validate a parsed header line; raises ValueError with the reason."""
        if type(d) is not dict or d.get("kind") != "header":
            raise ValueError('the first line must be the header ({"kind":"header",...})')
        if d.get("format") != FORMAT:
            raise ValueError(f"header format must be {FORMAT!r}, got {d.get('format')!r}")
        version = d.get("version")
        if type(version) is not int or not 1 <= version <= VERSION:
            raise ValueError(f"unsupported trace version {version!r} (this reader knows 1..{VERSION})")
        if d.get("time_unit", "ns") != "ns":
            raise ValueError("time_unit must be 'ns'")
        caps = d.get("capabilities", {})
        if type(caps) is list and all(type(c) is str for c in caps):   # a list of names is accepted too
            caps = {c: True for c in caps}
        if type(caps) is not dict or not all(type(v) is bool for v in caps.values()):
            raise ValueError("capabilities must be an object of name: true/false "
                             "(or a list of the names that are true)")
        why = check_header_fields(d)
        if why is not None:
            raise ValueError(why)
        probe = d.get("probe_ns")
        machine = d.get("machine") or {}
        known = {"kind", "format", "version", "source", "clock", "time_unit", "capabilities",
                 "program", "runtime", "start_ns", "epoch_ns", "probe_ns", "probe_cond_ns", "machine"}
        return cls(source=str(d.get("source", "unknown")), capabilities=dict(caps),
                   clock=str(d.get("clock", "monotonic")), program=d.get("program") or {},
                   runtime=d.get("runtime") or {}, start_ns=d.get("start_ns"),
                   epoch_ns=d.get("epoch_ns"), version=version, probe_ns=probe,
                   probe_cond_ns=d.get("probe_cond_ns"), machine=machine,
                   extra={k: v for k, v in d.items() if k not in known})


@dataclass
class TraceEvent:
    """A typed view of one event, for code that builds traces.

    >>> TraceEvent("release", tid=3, ts=10, fields={"obj": 9, "hold": 4}).to_dict()
    {'kind': 'release', 'tid': 3, 'ts': 10, 'obj': 9, 'hold': 4}
    """

    kind: str
    tid: int
    ts: int
    cpu: int | None = None
    site: str | None = None
    dur: int | None = None
    fields: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The event line's JSON object (fields left out when None)."""
        d = {"kind": self.kind, "tid": self.tid, "ts": self.ts}
        for k in ("cpu", "site", "dur"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        d.update(self.fields)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TraceEvent":
        """An event from a parsed line (validated by the reader before)."""
        rest = {k: v for k, v in d.items() if k not in ("kind", "tid", "ts", "cpu", "site", "dur")}
        return cls(d["kind"], d["tid"], d["ts"], d.get("cpu"), d.get("site"), d.get("dur"), rest)


@dataclass
class Trace:
    """A whole trace in memory: header, events (dicts, file order), warnings."""

    header: TraceHeader
    events: list[dict]
    path: str = "<trace>"
    warnings: list[str] = field(default_factory=list)
    complete: bool = True
    #: tid -> process name, in a trace joined from several processes (frontends/processes.py)
    processes: dict = field(default_factory=dict)

    def by_thread(self) -> dict[int, list[dict]]:
        """Events of each thread, sorted by ts (stable: file order breaks ties)."""
        out: dict[int, list[dict]] = {}
        for ev in self.events:
            lst = out.get(ev["tid"])
            if lst is None:
                lst = out[ev["tid"]] = []
            lst.append(ev)
        key = itemgetter("ts")
        for lst in out.values():
            lst.sort(key=key)
        return out

    def of_kind(self, *kinds: str) -> list[dict]:
        """The events of the given kinds, in trace order."""
        ks = set(kinds)
        return [e for e in self.events if e["kind"] in ks]

    def objects(self) -> dict[int, dict]:
        """``obj`` id -> its latest ``object`` event (ids may be reused after GC)."""
        return {e["obj"]: e for e in self.events if e["kind"] == "object"}

    def thread_names(self) -> dict[int, str]:
        """Thread id -> the name its ``thread_start`` event gave."""
        return {e["tid"]: e.get("name", "") for e in self.events if e["kind"] == "thread_start"}


class TraceReader:
    """Stream the events of a trace file, validating each line.

    ``header`` is read on construction; iterating yields event dicts, and
    :meth:`chunks` the same events as lists (cheaper per event).  In lenient
    mode (``strict=False``) reading stops quietly at the first bad line and
    ``warnings``/``complete`` say what happened.
    """

    def __init__(self, source: str | os.PathLike | IO[str], *, strict: bool = True):
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            self._fh: IO[str] = _open_text(self.path)
            self._own = True
        else:
            self.path = getattr(source, "name", "<trace>")
            if not isinstance(self.path, str):
                self.path = "<trace>"
            self._fh, self._own = source, False
        self.strict = strict
        self._checker = EventChecker()       # learns this trace's event shapes
        self.warnings: list[str] = []
        self.complete = True
        self.count = 0
        self.lineno = 1
        self._timeline = Timeline(self.path)
        self.dropped: list[dict] = []        # lenient: impossible events, to leave out
        first = self._readline_or_lines(lambda: self._fh.readline(), 1)
        try:
            if first.startswith("\ufeff"):
                first = first[1:]              # a byte-order mark
            if not first.strip():
                raise ValueError("empty trace: the first line must be the header")
            if (bad := _not_utf8(first, self.path, 1)) is not None:
                raise bad
            try:
                obj = json.loads(first)
            except json.JSONDecodeError as exc:
                raise TraceError(f"invalid JSON in the header: {exc.msg}", self.path, 1,
                                 exc.colno, first.rstrip("\n")) from None
            except (ValueError, RecursionError) as exc:
                raise TraceError(f"invalid JSON in the header: {_json_why(exc)}", self.path, 1,
                                 0, first.rstrip("\n")[:200]) from None
            if (bad := _lone_surrogate(obj, first, self.path, 1)) is not None:
                raise bad
            self.header = TraceHeader.from_dict(obj)
        except ValueError as exc:
            self.close()
            raise TraceError(str(exc), self.path, 1, 0, first.rstrip("\n")[:200]) from None

    def _readline_or_lines(self, read, line: int):
        """``read()``, with a damaged compressed file as a located error."""
        try:
            return read()
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            self.close()
            raise TraceError(f"the compressed trace is damaged or cut short ({exc})", self.path,
                             line) from None

    def close(self) -> None:
        """Close the file if the reader opened it."""
        if self._own:
            self._fh.close()

    def __enter__(self) -> "TraceReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[dict]:
        with closing(self.chunks()) as chunks:
            for chunk in chunks:
                yield from chunk

    def _fail(self, err: TraceError) -> None:
        if self.strict:
            raise err
        self.complete = False
        self.warnings.append(f"{err.location}: {err.message}; kept the {self.count} "
                             f"valid event(s) before it and ignored the rest")

    def chunks(self) -> Iterator[list[dict]]:
        """The events as lists of a few thousand, in file order; closes the file
        at the end.  Cheaper than iterating for 10^6 events: a generator step
        per event costs ~0.4 us, a sixth of reading."""
        try:
            yield from self._chunks()
            tl = self._timeline
            tl.finish(self.count)           # found at the end: lenient drops what is impossible
            err, warnings, drops = tl.report(self.strict)
            if err is not None:
                raise err
            self.warnings += warnings
            self.dropped = [tl.event(p) for p in drops]
        finally:
            self.close()

    def _chunks(self) -> Iterator[list[dict]]:
        fh = self._fh
        while True:
            start = self.lineno + 1          # number of the chunk's first line
            try:
                chunk = self._readline_or_lines(lambda: fh.readlines(CHUNK_CHARS), start)
            except TraceError as exc:
                if self.strict:
                    raise
                self.warnings.append(f"{exc.location}: {exc.message}; the events before it are kept")
                self.complete = False
                return
            if not chunk:
                return
            self.lineno += len(chunk)
            events, lines, err = None, None, None
            if chunk[-1].endswith("\n"):
                # one big string per chunk, not three ("[" + ... + "]"): each
                # may cost fresh pages, a page fault per 4 KiB
                first, last = chunk[0], chunk[-1]
                chunk[0] = "[" + first
                chunk[-1] += "]"
                text = ",".join(chunk)
                chunk[-1], chunk[0] = last, first
                try:
                    # (not ASCII: a byte that is not UTF-8 is a lone surrogate; find it below)
                    events = (_loads(text) if (text.isascii() or _utf8(text)) and
                              (_loads is not json.loads or not _SURROGATE.search(text)) else None)
                except (ValueError, RecursionError):
                    events = None
                if events is not None and len(events) != len(chunk):
                    events = None            # a line held two values: locate it below
            if events is None:
                events, lines, err = self._slow(chunk, start)
            timeline = self._timeline
            timeline.chunk(self.count, events, start, lines)
            i = self._checker.first_invalid(events, timeline)
            if i is not None and lines is None and _loads is not json.loads:
                # json's reading is the reference: orjson reads an integer beyond
                # 64 bits as a float, which the check may reject where json's int passes.
                # The events before i read alike: the timeline has seen them.
                try:
                    events = json.loads(text)
                except (ValueError, RecursionError):
                    events, lines, err = self._slow(chunk, start)
                timeline.chunk(self.count, events, start, lines)
                i = self._checker.first_invalid(events, timeline, min(i, len(events)))
            if i is not None:
                self.count += i
                if i:
                    yield events[:i]
                ev = events[i]
                line = start + i if lines is None else lines[i]
                self._fail(TraceError(check_event(ev), self.path, line, 0,
                                      json.dumps(ev)[:200] if type(ev) is dict else str(ev)))
                return
            self.count += len(events)
            if events:
                yield events
            if err is not None:
                self._fail(err)
                return

    def _slow(self, chunk: list[str], start: int):
        """Parse line by line: skip blank lines, stop at the first bad one.

        Returns (events, their line numbers, the error or None).
        """
        out, nums = [], []
        for i, line in enumerate(chunk):
            no = start + i
            if not line.strip():
                continue
            if (bad := _not_utf8(line, self.path, no)) is not None:
                return out, nums, bad
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:
                if not line.endswith("\n") and i == len(chunk) - 1:
                    return out, nums, TraceError(
                        "truncated last line (the trace was cut off)", self.path, no, 0, line,
                        hint="--lenient keeps the events before it")
                return out, nums, TraceError(f"invalid JSON: {_json_why(exc)}", self.path, no,
                                             getattr(exc, "colno", 0), line.rstrip("\n"))
            if "\\u" in line and (bad := _lone_surrogate(obj, line, self.path, no)) is not None:
                return out, nums, bad
            out.append(obj)
            nums.append(no)
        return out, nums, None


def _utf8(text: str) -> bool:
    """Whether ``text`` (read with surrogateescape) came from valid UTF-8."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _not_utf8(line: str, path: str, no: int) -> "TraceError | None":
    """The located error for a line holding bytes that are not UTF-8, or None."""
    if line.isascii() or _utf8(line):
        return None
    col = next(i for i, ch in enumerate(line) if "\udc80" <= ch <= "\udcff")
    byte = ord(line[col]) - 0xDC00
    shown = line.rstrip("\n").encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return TraceError(f"the line is not UTF-8 text: byte 0x{byte:02x} cannot be decoded",
                      path, no, col + 1, shown, hint="a trace is JSON lines in UTF-8; "
                      "--lenient keeps the events before this line")


# a JSON escape of a UTF-16 surrogate (a run of backslashes of odd length before the u)
_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(obj: object, line: str, path: str, no: int) -> "TraceError | None":
    """The located error for a parsed line whose strings hold a lone UTF-16 surrogate
    (JSON ``"\\ud800"`` not followed by a low half): that is not Unicode text, and
    writing it anywhere (a model, a report) fails.  None if there is none."""
    found = _surrogate_in(obj, "")
    if found is None:
        return None
    where, ch = found
    col = 0
    for m in _SURROGATE.finditer(line):
        esc = m.group()[-6:]
        code = int(esc[2:], 16)
        if code == ord(ch):
            nxt = line[m.end():m.end() + 6]
            if code >= 0xDC00 or not re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", nxt):
                col = m.end() - 6 + 1
                break
    kind = obj.get("kind") if type(obj) is dict else None
    what = (f"{kind} event: " if type(kind) is str and kind.isprintable() and kind != "header"
            else "header: " if kind == "header" else "")
    return TraceError(f"{what}{where} is not Unicode text: it holds a lone UTF-16 surrogate "
                      f"\\u{ord(ch):04x}", path, no, col, line.rstrip("\n").encode(
                          "utf-8", "backslashreplace").decode("utf-8"),
                      hint="a JSON \\ud800-\\udfff escape is half of a pair (high, then "
                           "low): text cut in the middle of a character, or bytes written as "
                           "text; --lenient keeps the events before this line")


def _surrogate_in(obj: object, where: str):
    """(the field, the character) of the first lone surrogate in ``obj``'s strings, or None."""
    if type(obj) is str:
        if obj.isascii():
            return None
        try:
            obj.encode("utf-8")
            return None
        except UnicodeEncodeError as exc:
            return (where or "a string"), obj[exc.start]
    if type(obj) is dict:
        for k, v in obj.items():
            name = f"field {k!r}" if not where else f"{where}[{k!r}]"
            if (found := _surrogate_in(k, f"a field name in {where or 'the line'}")) is not None:
                return found
            if (found := _surrogate_in(v, name)) is not None:
                return found
    elif type(obj) is list:
        for i, v in enumerate(obj):
            if (found := _surrogate_in(v, f"{where}[{i}]")) is not None:
                return found
    return None


def _json_why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return getattr(exc, "msg", None) or str(exc).split(";")[0]


def _open_text(path: str) -> IO[str]:
    """The trace file as text; a gzip file (the magic bytes say so, whatever its name) is
    read through gzip.  surrogateescape: a byte that is not UTF-8 reaches the checks (a
    located error) instead of raising UnicodeDecodeError mid-chunk."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="\n")
    return open(path, encoding="utf-8", errors="surrogateescape", newline="\n")


def read_trace(source: str | os.PathLike | IO[str], *, strict: bool = True) -> Trace:
    """Read a whole trace.  ``strict=False``: keep the valid prefix, warn about the rest.

    >>> import os, tempfile
    >>> from qpn.frontends.analyze.synth import batch_trace, write
    >>> path = os.path.join(tempfile.mkdtemp(), "b.jsonl")
    >>> write(batch_trace(tasks=10, workers=2), path)
    73
    >>> len(read_trace(path).events), sorted(read_trace(path).by_thread())[:1]
    (73, [100])
    """
    reader = TraceReader(source, strict=strict)
    events: list[dict] = []
    for chunk in reader.chunks():
        events += chunk
    if reader.dropped:                   # lenient: impossible events (the warnings name them)
        events = without(events, reader.dropped)
    return Trace(reader.header, events, reader.path, reader.warnings, reader.complete)


def without(events: list, dropped: list) -> list:
    """``events`` less the event objects in ``dropped`` (:attr:`TraceReader.dropped`)."""
    ids = set(map(id, dropped))
    return [e for e in events if id(e) not in ids]


def dump_event(ev: dict) -> str:
    """One event as a compact JSON line (without the newline)."""
    return json.dumps(ev, separators=(",", ":"))


def write_trace(path: str | os.PathLike, header: TraceHeader,
                events: Iterable[dict | TraceEvent], *, validate: bool = True) -> int:
    """Write a trace atomically (temp file + rename); returns the number of events.

    With ``validate`` every event is checked first, so a writer never produces
    a file the reader rejects.
    """
    from qpn.fileio import write_atomic
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    lines = [dumps(header.to_dict())]
    for n, ev in enumerate(events, 2):
        if isinstance(ev, TraceEvent):
            ev = ev.to_dict()
        if validate:
            why = check_event(ev)
            if why is not None:
                raise TraceError(f"refusing to write an invalid event: {why}",
                                 os.fspath(path), n, 0, str(ev)[:200])
        lines.append(dumps(ev))
    lines.append("")
    write_atomic(path, "\n".join(lines))
    return len(lines) - 2
