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
import zlib
from contextlib import closing
from dataclasses import dataclass, field
from operator import itemgetter
from typing import IO, Iterable, Iterator

from qpn import resources

from .trace_schema import (CAPABILITIES, FORMAT, KINDS, VERSION, EventChecker, TraceError,
                           check_event, check_header_fields)
from .trace_text import (LINE_ENV, _SURROGATE, _json_why, _lone_surrogate, _not_utf8, _sizes,
                         _utf8, line_limit)
from .trace_timeline import Timeline

__all__ = ["TraceHeader", "TraceEvent", "Trace", "TraceError", "TraceReader",
           "read_trace", "write_trace", "dump_event", "CAPABILITIES", "KINDS"]

# Characters read per chunk; a chunk is parsed by one json.loads call on
# "[l1,l2,...]", ~3x faster than one call per line.  On any error the chunk is
# re-parsed line by line to locate it.  64 KiB (~500 events) rather than more:
# the events are checked (and grouped by callers) while still in the CPU cache.
CHUNK_CHARS = 1 << 16

#: What the events read hold in memory (the dicts and their values, as read): about
#: EVENT_BYTES per event and CHAR_BYTES per character of text.  Measured on
#: suites/rwcache (100 MB, 747,422 events: 440 MB held; the estimate 487 MB), on
#: suites/sentinel_pipeline (62 MB: 304 MB; 277 MB), on 100 MB of 41-character
#: events (837 MB; 939 MB) and of 1,040-character events (137 MB; 340 MB).
EVENT_BYTES, CHAR_BYTES = 250, 3
#: a compressed trace that expands more than this many times is suspect (the
#: bundled .jsonl.gz traces expand 5 to 13 times)
BOMB_RATIO = 100

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

    def __init__(self, source: str | os.PathLike | IO[str], *, strict: bool = True,
                 analysis: tuple[str, float] | None = None):
        self._max_line = line_limit()
        # what the caller does with the events and how many times their memory it holds
        # again meanwhile ("building a model from", 1.3): part of the projection
        self._analysis = analysis
        self._memory = resources.memory_limit()     # read once: reading lowers what is available
        self._disk, self._text_size, self._gzip = 0, 0, None
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            self._fh: IO[str] = _open_text(self.path)
            self._own = True
            self._disk, self._text_size, self._gzip = _sizes(self._fh, self.path)
        else:
            self.path = getattr(source, "name", "<trace>")
            if not isinstance(self.path, str):
                self.path = "<trace>"
            self._fh, self._own = source, False
        self._tail = ""              # the start of a line not read to its end yet
        self._chars = 0              # characters of the whole lines read so far
        self.strict = strict
        self._checker = EventChecker()       # learns this trace's event shapes
        self.warnings: list[str] = []
        self.complete = True
        self.count = 0
        self.lineno = 1
        self._timeline = Timeline(self.path)
        self.dropped: list[dict] = []        # lenient: impossible events, to leave out
        first = self._readline_or_lines(lambda: self._fh.readline(self._max_line + 1), 1)
        if len(first) - first.endswith("\n") > self._max_line:
            self.close()
            raise self._too_long(first, 1)
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

    def _too_long(self, start: str, line: int) -> TraceError:
        """The error for a line longer than the limit (``start``: its beginning)."""
        n = self._max_line
        return TraceError(f"line longer than {n:,} bytes ({resources.format_size(n)}): "
                          "not a trace event", self.path, line, 0, start[:200],
                          hint=f"a trace holds one short JSON object per line (the largest "
                               f"line of the bundled traces has 1,094 bytes); if this line is "
                               f"meant to be read, raise the limit with {LINE_ENV}=SIZE "
                               f"(e.g. {LINE_ENV}={resources.round_size(n * 4)})"
                               + ("" if self.strict else "; --lenient keeps the events before it"))

    def _lines(self) -> tuple[list[str], bool]:
        """The next whole lines, about CHUNK_CHARS of text, without their newlines, and
        whether the last one ended with a newline (False only for a last line cut off).

        Never holds a line longer than the limit whole: such a line is refused (a
        :class:`TraceError` at its number) once its first limit + 1 characters are read.
        """
        fh, limit = self._fh, self._max_line
        parts = [self._tail] if self._tail else []
        size = len(self._tail)
        while True:
            more = fh.read(CHUNK_CHARS)
            if not more:                        # the end: a last line without newline
                self._tail = ""
                if not parts:
                    return [], True
                last = "".join(parts)
                if len(last) > limit:
                    raise self._too_long(last, self.lineno + 1)
                self._chars += len(last)
                return [last], False
            if "\n" not in more:
                size += len(more)
                if size > limit:
                    raise self._too_long(parts[0] if parts else more, self.lineno + 1)
                parts.append(more)
                continue
            parts.append(more)
            text = "".join(parts) if len(parts) > 1 else more
            lines = text.split("\n")
            self._tail = lines.pop()          # "" when the text ends with a newline
            self._chars += len(text) - len(self._tail)
            # only the first line can span several reads; a limit below a chunk (tests)
            # needs every line looked at
            if len(lines[0]) > limit or (limit < CHUNK_CHARS and max(map(len, lines)) > limit):
                i = next(i for i, line in enumerate(lines) if len(line) > limit)
                raise self._too_long(lines[i], self.lineno + 1 + i)
            return lines, True

    def _text_expected(self) -> int:
        """Characters of text the whole file holds, as far as is known now: a plain file's
        size; for a gzip file, the text read so far scaled by the share of the compressed
        file it took (read ahead makes that share larger, the estimate lower), at least."""
        if self._gzip is None:
            return max(self._text_size, self._chars)
        try:
            consumed = self._gzip.tell()
        except (OSError, ValueError):
            consumed = 0
        if consumed <= 0:
            return self._chars
        return max(self._chars, round(self._chars * self._disk / consumed))

    def _check_memory(self, new: int) -> None:
        """Refuse (a located TraceError) when the events of the whole trace, projected
        from what was read so far and the size of the text to come, would need more than
        the memory limit.  ``new``: events read but not counted yet."""
        held = EVENT_BYTES * (self.count + new) + CHAR_BYTES * self._chars
        size = self._text_expected()
        need = held * size / max(self._chars, 1) * (1 + (self._analysis or ("", 0.0))[1])
        limit, source = self._memory
        if need <= limit:
            return
        read = resources.format_size(self._chars)
        if self._gzip is not None:
            ratio = size / max(self._disk, 1)
            whole = (f"the compressed file ({resources.format_size(self._disk)}) expands to "
                     f"about {resources.format_size(size)} of text, {ratio:,.0f} times its "
                     f"size (judged from the {read} read)")
        elif self._text_size:
            whole = f"the file holds {resources.format_size(size)} of text"
        else:
            whole = f"{read} of text read so far"
        hint = (f"raise the limit with {resources.OPTION} SIZE or {resources.ENV}=SIZE (e.g. "
                f"{resources.OPTION} {resources.round_size(need * 1.25)}) on a machine that has it")
        if self._gzip is not None and size > BOMB_RATIO * self._disk:
            hint += (f"; a trace compressed more than {BOMB_RATIO} times is unusual (the "
                     "bundled ones: 5 to 13 times): this file may be a compression bomb")
        self.close()
        doing, extra = (f"{self._analysis[0]} this trace", " and their analysis") \
            if self._analysis else ("reading this trace", "")
        raise TraceError(f"{doing} would need about {resources.format_size(need)} "
                         f"for its events{extra}, above the memory limit of "
                         f"{resources.format_size(limit)} ({source}): {whole}; its first "
                         f"{self.count + new:,} events took {resources.format_size(held)}",
                         self.path, self.lineno, hint=hint)

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
        while True:
            start = self.lineno + 1          # number of the chunk's first line
            try:
                chunk, whole = self._readline_or_lines(self._lines, start)
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
            if whole:
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
                events, lines, err = self._slow(chunk, start, whole)
            self._check_memory(len(events))
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
                    events, lines, err = self._slow(chunk, start, whole)
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

    def _slow(self, chunk: list[str], start: int, whole: bool = True):
        """Parse line by line: skip blank lines, stop at the first bad one.  ``whole``:
        whether the last line ended with a newline.

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
                if not whole and i == len(chunk) - 1:
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
