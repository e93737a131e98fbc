"""The neutral trace format's vocabulary: event kinds, their fields, capabilities.

One table, :data:`KINDS`, says for every event kind which fields it requires and
what type each known field has; :func:`check_event` applies it and says what is
wrong.  The reader (:mod:`frontends.trace`) checks millions of events, so it
gives whole lists to an :class:`EventChecker` instead: the same verdicts, from
code generated per event shape, ~2.5x faster.  :func:`first_invalid` uses one.

>>> check_event({"kind": "release", "tid": 1, "ts": 5, "obj": 7, "hold": 3}) is None
True
>>> check_event({"kind": "release", "tid": 1, "ts": 5})
"release event lacks field 'obj'"
>>> first_invalid([{"kind": "thread_end", "tid": 1, "ts": 5}, {"kind": "thread_end", "tid": 1}])
1
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from qpn.errors import QPNError


class TraceError(QPNError):
    """A malformed trace: ``file:line[:col]: error: what`` and the offending line."""

    def __init__(self, message: str, path: str = "<trace>", line: int = 0,
                 col: int = 0, text: str | None = None, *, hint: str | None = None):
        self.message, self.path, self.line, self.col, self.text = message, path, line, col, text
        self.hint = hint
        loc = f"{path}:{line}" + (f":{col}" if col else "")
        out = f"{loc}: error: {message}"
        if text is not None:
            shown = text if len(text) <= 160 else text[:157] + "..."
            out += f"\n {line} | {shown}"
        if hint:
            out += f"\nhint: {hint}"
        super().__init__(out)

    @property
    def location(self) -> str:
        """``path:line`` of the bad line."""
        return f"{self.path}:{self.line}"


FORMAT = "qpn-trace"
VERSION = 1

#: Capabilities a header may declare; absent means false.  They tell the
#: analyzer what it may trust (e.g. without ``lock_uncontended`` a missing
#: acquire does not mean the lock was not taken).
CAPABILITIES = {
    "thread_cpu": "every event carries the thread's CPU time (cpu, ns)",
    "cpu_from_gaps": "events carry an estimate of the thread's CPU time (cpu, ns): the time "
                     "outside its blocking calls (less the tracer's cost), true while it had a "
                     "core of its own",
    "lock_hold": "release events carry hold times",
    "lock_uncontended": "uncontended acquisitions are recorded too",
    "sched_slices": "cpu events give scheduler slices (core, dur)",
    "disk_requests": "disk events give device requests",
    "gil": "wait events with on=gil give GIL waits",
    "queue_items": "put/get events carry item ids",
    "file_io": "io events for files (path, bytes, dur)",
    "socket_io": "io events for sockets",
    "sites": "events carry the code location (site) of the call",
    "samples": "sample events carry stack samples",
    "probes": "probe events from a PERSIK-style instrumented program",
    "asyncio_tasks": "asyncio tasks are threads of their own (thread_start with task: true, "
                     "virtual thread ids); the event loop is an object of type loop",
}

OBJECT_TYPES = frozenset({
    "lock", "rlock", "rwlock", "cond", "sem", "bsem", "barrier", "event",
    "queue", "lifo_queue", "prio_queue", "simple_queue", "pool", "future",
    "file", "socket", "disk", "gil", "monitor", "comm", "loop", "other"})
WAIT_ON = frozenset({"cond", "barrier", "join", "sleep", "gil", "event", "future",
                     "select", "other"})
IO_OPS = frozenset({"open", "close", "read", "write", "stat", "seek", "fsync",
                    "send", "recv", "accept", "connect", "other"})
REQUEST_PHASES = frozenset({"begin", "end"})
MPI_OPS = frozenset({"send", "recv", "sendrecv", "barrier", "bcast", "reduce", "allreduce",
                     "gather", "scatter", "allgather", "alltoall", "isend", "irecv", "wait"})

#: Times in a trace come from 64-bit clocks: a larger one is a corrupt field, not
#: a time to compute with (ids may be any integer: they are only compared).
INT_LIMIT = 1 << 63
#: Thread ids are what an OS or a runtime hands out: signed or unsigned 64-bit
#: integers (pthread idents, Java thread ids); anything wider is a corrupt field.
TID_LIMITS = (-INT_LIMIT, 1 << 64)

# Fields that are times (their unit is said in errors) and sizes.
_NS_FIELDS = frozenset({"ts", "dur", "cpu", "cpu_dur", "hold", "timeout", "requested", "queue_dur"})

# Fields every event may carry, with their types ("uint" = integer >= 0).
COMMON = {"kind": "str", "tid": "int", "ts": "int", "cpu": "uint", "site": "str",
          "dur": "uint", "cpu_dur": "uint", "req": "id", "obj": "int"}


@dataclass(frozen=True)
class KindSpec:
    """Required fields and field types of one event kind."""

    name: str
    required: frozenset
    ints: tuple          # integer fields (any sign)
    uints: tuple         # integer fields that must be >= 0
    strs: tuple
    bools: tuple
    enums: tuple         # (field, allowed values)
    doc: str
    # field -> "int" | "uint" | "str" | "bool" | allowed values: what check_event reads,
    # looping over the event's few fields rather than over every field the kind may have
    types: dict = field(default_factory=dict, compare=False)


def _spec(kind: str, doc: str, required: tuple = (), /, **fields) -> KindSpec:
    types = dict(COMMON)
    types.update(fields)
    enums = tuple((f, t) for f, t in types.items() if isinstance(t, frozenset))
    return KindSpec(
        kind, frozenset(("kind", "tid", "ts") + tuple(required)),
        tuple(f for f, t in types.items() if t == "int"),
        tuple(f for f, t in types.items() if t == "uint"),
        tuple(f for f, t in types.items() if t == "str" and f != "kind"),
        tuple(f for f, t in types.items() if t == "bool"),
        enums, doc, {f: t for f, t in types.items() if f != "kind" and t != "id"})   # req: below


KINDS: dict[str, KindSpec] = {s.name: s for s in (
    _spec("thread_start", "a thread begins", name="str", parent="int", daemon="bool",
          task="bool", loop="int"),
    _spec("thread_end", "a thread ends"),
    _spec("object", "a lock, queue, pool, file ... is created; its parameters",
          ("obj", "type"), type=OBJECT_TYPES, capacity="uint", parties="uint",
          permits="int", lock="int", workers="uint", queue="int", name="str",
          path="str", order="str", rank="uint", processes="bool"),
    _spec("acquire", "a lock/semaphore is acquired; dur = wait before acquiring",
          ("obj",), contended="bool", ok="bool", timeout="int", count="uint"),
    _spec("release", "a lock/semaphore is released; hold = ns since acquired",
          ("obj",), hold="uint", count="uint"),
    _spec("wait", "a blocking wait that is not a lock acquisition", ("on",),
          on=WAIT_ON, ok="bool", timeout="int", target="int", requested="uint"),
    _spec("notify", "a condition/event is signalled", ("obj",), on=WAIT_ON,
          all="bool", waiters="uint"),
    _spec("put", "an item enters a queue; dur = time blocked", ("obj", "item"),
          item="int", size="uint", ok="bool"),
    _spec("get", "an item leaves a queue; dur = time blocked", ("obj",),
          item="int", size="uint", ok="bool"),
    _spec("io", "file or socket I/O by the thread", ("op",), op=IO_OPS,
          path="str", fd="int", bytes="uint", peer="str", ok="bool", calls="uint",
          conn="int", local="str"),
    _spec("disk", "a block-device request", ("op", "bytes"), op="str", bytes="uint",
          dev="str", sector="uint", queue_dur="uint"),
    _spec("cpu", "a scheduler slice: the thread ran for dur", ("dur",), core="int"),
    _spec("wakeup", "the thread wakes thread target", ("target",), target="int"),
    _spec("task", "a unit of work run by a pool thread", ("dur",), item="int",
          func="str", pool="int"),
    _spec("span", "a named interval of one thread (request handling etc.)",
          ("name",), name="str"),
    _spec("request", "a request begins or ends (may cross threads)",
          ("req", "phase"), phase=REQUEST_PHASES, name="str"),
    _spec("sample", "a stack sample, leaf first", ("stack",)),
    _spec("counter", "a sampled counter value", ("name", "value"), name="str"),
    _spec("mark", "a free-form marker", ("name",), name="str", text="str"),
    _spec("feature", "the thread's next item has this value of a named feature (rows, "
          "items ...): its demand may be fitted on it", ("name", "value"), name="str"),
    _spec("probe", "a PERSIK probe hit", ("probe",), probe="int"),
    _spec("mpi", "an MPI call of one rank (obj: its communicator); dur includes waiting for "
          "the other ranks, cpu_dur the CPU spent in the call", ("op", "obj"), op=MPI_OPS,
          bytes="uint", peer="int", count="uint"),
)}

# The header's objects and the types of the fields readers use ("num" = a finite
# number >= 0, "strs"/"nums"/"ints" = lists of them).  Other fields are kept, unread.
HEADER_OBJECTS = {
    "program": {"argv": "strs", "pid": "int", "ppid": "int", "children": "strs",
                "processes": "strs", "hosts": "strs",
                "host_cpus": "ints", "cwd": "str",
                "executable": "str", "exit_code": "int", "end": "str", "cpu_ns": "uint"},
    "runtime": {"implementation": "str", "version": "str", "gil": "bool", "jit": "bool",
                "switch_interval_ns": "uint", "cpus": "uint", "affinity": "uint"},
    "machine": {"cpus": "uint", "loadavg_before": "nums", "loadavg_after": "nums",
                "samples": "uint", "others_runnable": "num", "others_runnable_max": "num",
                "steal_share": "num", "python_loop_ns": "nums", "host": "str"},
}
HEADER_FIELDS = {"source": "str", "clock": "str", "start_ns": "int", "epoch_ns": "int",
                 "probe_ns": "uint", "probe_cond_ns": "uint"}
_WANTED = {"int": "an integer of 64 bits", "uint": "an integer >= 0", "str": "a string",
           "bool": "true or false", "num": "a finite number >= 0",
           "strs": "a list of strings", "nums": "a list of finite numbers >= 0",
           "ints": "a list of integers"}


def _is(t: str, v: object) -> bool:
    if t == "int":
        return type(v) is int and -INT_LIMIT <= v < INT_LIMIT
    if t == "uint":
        return type(v) is int and 0 <= v < INT_LIMIT
    if t == "str":
        return type(v) is str
    if t == "bool":
        return type(v) is bool
    if t == "num":      # v == v: not NaN (json reads NaN and Infinity)
        return type(v) in (int, float) and v == v and 0 <= v < float("inf")
    if t in ("strs", "nums", "ints"):
        return type(v) is list and all(_is(t[:-1] if t != "nums" else "num", x) for x in v)
    raise ValueError(t)


def check_header_fields(d: dict) -> str | None:
    """Why the optional fields of header ``d`` are unusable, or None (the format,
    version and capabilities are checked by TraceHeader.from_dict)."""
    for f, t in HEADER_FIELDS.items():
        v = d.get(f)
        if f in d and not _is(t, v):
            return f"header field {f} must be {_WANTED[t]}, got {_shown(v)}"
    for f, fields in HEADER_OBJECTS.items():
        obj = d.get(f)
        if f not in d or obj is None:
            continue
        if type(obj) is not dict:
            return f"header field {f} must be an object, got {_shown(obj)}"
        for g, t in fields.items():
            if g in obj and obj[g] is not None and not _is(t, obj[g]):
                return f"header field {f}.{g} must be {_WANTED[t]}, got {_shown(obj[g])}"
    return None


# Extension kinds (prefix "x_") need only the common fields.
EXTENSION = _spec("x_", "an extension event")


def check_event(ev: object) -> str | None:
    """Why ``ev`` is not a valid event, or None if it is."""
    if type(ev) is not dict:
        return "an event must be a JSON object"
    kind = ev.get("kind")
    spec = KINDS.get(kind) if type(kind) is str else None     # a list kind: unhashable
    if spec is None:
        if type(kind) is str and kind.startswith("x_"):
            spec = EXTENSION
        elif kind == "header":
            return "a second header (the header must be the first line only)"
        elif kind is None:
            return "event lacks field 'kind'"
        else:
            from qpn.errors import suggest
            near = suggest(str(kind), KINDS)
            return f"unknown event kind {kind!r}" + (f" (did you mean {near!r}?)" if near else "")
    keys = ev.keys()
    if not spec.required <= keys:
        missing = sorted(spec.required - keys)
        return f"{kind} event lacks field {missing[0]!r}"
    types = spec.types
    for f, v in ev.items():
        t = types.get(f)
        if t is None:
            continue
        # null is not "absent": readers do ev.get(f, 0) + ... (an absent field is left out)
        tv = type(v)
        if t == "int":
            if tv is not int or (f in _NS_FIELDS and not -INT_LIMIT <= v < INT_LIMIT):
                return f"{kind} event: {f} must be an integer{_bits(v)}{_unit(f)}, got {_shown(v)}"
            if f == "tid" and not TID_LIMITS[0] <= v < TID_LIMITS[1]:
                return f"{kind} event: tid must be an integer of 64 bits, got {_shown(v)}"
        elif t == "uint":
            if tv is not int or v < 0 or (f in _NS_FIELDS and v >= INT_LIMIT):
                return f"{kind} event: {f} must be an integer >= 0{_bits(v)}{_unit(f)}, got {_shown(v)}"
        elif t == "str":
            if tv is not str:
                return f"{kind} event: {f} must be a string, got {_shown(v)}"
        elif t == "bool":
            if tv is not bool:
                return f"{kind} event: {f} must be true or false, got {_shown(v)}"
        elif tv is not str or v not in t:
            return f"{kind} event: {f} must be one of {', '.join(sorted(t))}; got {_shown(v)}"
    if "req" in ev:
        req = ev["req"]
        if type(req) is not int and type(req) is not str:
            return f"{kind} event: req must be an integer or a string, got {_shown(req)}"
    if kind == "sample" and not _str_list(ev["stack"]):
        return "sample event: stack must be a list of strings (leaf first)"
    if kind == "probe" and "args" in ev and type(ev["args"]) is not list:
        return "probe event: args must be a list"
    return None


def _unit(f: str) -> str:
    return " (ns)" if f in _NS_FIELDS else ""


def _bits(v: object) -> str:
    return " of 64 bits" if type(v) is int and abs(v) >= INT_LIMIT else ""


def _shown(v: object) -> str:
    """A field's value as it reads in the file (JSON: null, true), shortened."""
    import json
    try:
        text = json.dumps(v, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _str_list(x: object) -> bool:
    return type(x) is list and all(type(s) is str for s in x)


# --- EventChecker: check_event for many events, faster ----------------------
# check_event loops over an event's fields with a branch per type (~1 us per
# event, as much as parsing it).  But a trace has few *shapes* (kind + key set),
# so EventChecker runs a scanner generated from the shapes seen so far: per
# shape one straight-line test such as ``type(ev['tid']) is int and ...``.
# ``len(ev) == n`` plus a successful ``ev[f]`` for each of the shape's n keys
# proves the key set (so the required fields are there), and the field tests
# are derived from the same KINDS tables as check_event's.  The scanner only
# vouches for events: whatever it cannot vouch for (a new shape, a None value,
# an error) goes to check_event, whose verdict stands, and valid new shapes are
# learned (the scanner regenerated) for the events after them.
#
# With a *timeline* (the reader's checks of time and thread lifecycles,
# frontends/trace.py: _Timeline) a second scanner also vouches only for what
# the timeline needs not see: an event whose thread is running (``tid in
# live``), whose ts is not below the previous event's and below ``lim`` (no
# long jump ahead), and that is not a thread_start or thread_end.  Everything
# else goes to ``timeline.see(ev, i)`` once check_event has accepted it.  In a
# file sorted by ts (what the tracers write) that is a few events per thread:
# the checks cost two comparisons and a set lookup per event.


def _field_test(spec: KindSpec, f: str, enums: dict, timeline: bool = False) -> str:
    """An expression true if field ``f`` of ``ev`` is present and check_event
    would accept its value (None, also accepted there, is left to check_event).
    ``timeline``: the tid must be in ``live`` and ts in ``[last, lim)`` (and is kept in t)."""
    get = f"ev[{f!r}]"                 # repr: keys from a file are only ever literals
    t = spec.types.get(f)
    if f == "tid":
        if timeline:                   # (live holds only tids check_event accepted)
            return f"(type(d := {get}) is int and d in live)"
        return f"(type(v := {get}) is int and TID0 <= v < TID1)"
    if f == "ts" and timeline:         # (0 <= last and lim <= the timeline's bound)
        return f"(type(t := {get}) is int and last <= t < lim)"
    if t in ("str", "bool") or (t == "int" and f not in _NS_FIELDS):
        return f"type({get}) is {t}"
    if t == "int":
        return f"(type(v := {get}) is int and -LIMIT <= v < LIMIT)"
    if t == "uint":
        return f"(type(v := {get}) is int and 0 <= v{' < LIMIT' if f in _NS_FIELDS else ''})"
    if isinstance(t, frozenset):
        return f"(type(v := {get}) is str and v in {enums.setdefault(t, f'E{len(enums)}')})"
    if f == "req":
        return f"type({get}) in ID"
    if (spec.name, f) == ("sample", "stack"):
        return f"_str_list({get})"
    if (spec.name, f) == ("probe", "args"):
        return f"type({get}) is list"
    return f"{f!r} in ev"              # a field of any type: only its presence counts


#: Kinds the timeline's scanner never vouches for: the timeline sees each one.
_MARKS = frozenset({"thread_start", "thread_end"})


class EventChecker:
    """:func:`check_event` for whole lists of events, ~2.5x faster (see above).

    >>> EventChecker().first_invalid([{"kind": "thread_end", "tid": 1, "ts": 5}] * 3) is None
    True
    """

    MAX_SHAPES = 100       # bounds the generated code for traces with ever-new shapes
    MAX_FIELDS = 40
    BATCH = 128            # events left to check_event before learning their shapes

    def __init__(self) -> None:
        self._shapes: dict[str, dict[int, list[frozenset]]] = {}    # kind -> len -> key sets
        self._n_shapes = 0
        self._new = 0                  # shapes learned since the last _compile
        self._seen: Counter = Counter()     # (kind, len) -> count: the order of the tests
        self._lock = threading.Lock()
        self._scan = self._compile()
        self._scan_t = None            # the timeline's scanner, compiled when first used

    def first_invalid(self, events: Sequence[object], timeline=None, start: int = 0) -> int | None:
        """The index of the first event check_event rejects, or None if all are valid
        (from index ``start`` on).

        ``timeline``: an object with ``live`` (a set of tids), ``last``, ``lim`` (ints),
        ``streaming`` (whether it wants events) and ``see(ev, i)``, called for every
        valid event the timeline's scanner could not vouch for, in order, while
        ``streaming`` holds (see above); the events from the first invalid one on are
        not shown to it."""
        i: int | None = start
        left = self.BATCH
        try:
            while True:
                if timeline is not None and timeline.streaming:
                    if self._scan_t is None:
                        self._scan_t = self._compile(True)
                    i, timeline.last = self._scan_t(events, i, timeline.last, timeline.lim,
                                                    timeline.live)
                else:
                    i = self._scan(events, i)
                if i is None:
                    return None
                ev = events[i]
                if check_event(ev) is not None:
                    return i
                self._learn(ev)
                if timeline is not None:
                    timeline.see(ev, i)
                i += 1
                left -= 1
                if not left:           # compiling costs ~1 ms: learn in batches
                    self._recompile(events, i)
                    left = self.BATCH
        finally:
            self._recompile(events, 0)

    def _learn(self, ev: dict) -> None:
        keys = frozenset(ev)
        if self._n_shapes >= self.MAX_SHAPES or len(keys) > self.MAX_FIELDS:
            return
        with self._lock:
            known = self._shapes.setdefault(ev["kind"], {}).setdefault(len(keys), [])
            if keys not in known:      # (a known shape here had a None value)
                known.append(keys)
                self._n_shapes += 1
                self._new += 1

    def _recompile(self, events: Sequence, i: int) -> None:
        if not self._new:
            return
        with self._lock:
            for ev in events[i:i + 1000]:      # a sample of what comes: common kinds first
                if type(ev) is dict and type(kind := ev.get("kind")) is str:
                    self._seen[kind, len(ev)] += 1
            self._new = 0
            self._scan = self._compile()
            if self._scan_t is not None:
                self._scan_t = self._compile(True)

    def _compile(self, timeline: bool = False) -> Callable:
        """The scanner: ``scan(events, i)`` is the index of the first event from
        ``i`` on that it cannot vouch for, or None.  With ``timeline``:
        ``scan(events, i, last, lim, live)`` is that index and the ts of the last
        event it vouched for (``last`` if none)."""
        enums: dict = {}
        shapes, seen = self._shapes, self._seen
        ret = "i, last" if timeline else "i"
        # builtins as locals, common kinds first: ~10% faster
        out = [("def scan(evs, i, last, lim, live, type=type, int=int, str=str, bool=bool, "
                "dict=dict, len=len):") if timeline else
               "def scan(evs, i, type=type, int=int, str=str, bool=bool, dict=dict, len=len):",
               "    try:",
               "        for i in range(i, len(evs)):",
               "            ev = evs[i]",
               f"            if type(ev) is not dict: return {ret}",
               "            k = ev['kind']",
               "            n = len(ev)"]
        kinds = [k for k in shapes if not (timeline and k in _MARKS)]
        for i, kind in enumerate(sorted(kinds, key=lambda k: -sum(seen[k, n] for n in shapes[k]))):
            spec = KINDS.get(kind, EXTENSION)
            out.append(f"            {'elif' if i else 'if'} k == {kind!r}:")
            by_len = sorted(shapes[kind].items(), key=lambda item: -seen[kind, item[0]])
            for j, (n, key_sets) in enumerate(by_len):
                common = frozenset.intersection(*key_sets)
                alts = [" and ".join([f"{f!r} in ev" for f in sorted(keys - common)]  # no KeyError
                                     + [_field_test(spec, f, enums, timeline)
                                        for f in sorted(keys) if f != "kind"])
                        for keys in key_sets]
                out.append(f"                {'elif' if j else 'if'} n == {n}:")
                out.append(f"                    if not ({' or '.join(f'({a})' for a in alts)}): "
                           f"return {ret}")
            out.append(f"                else: return {ret}")
        out.append(f"            else: return {ret}" if kinds else f"            return {ret}")
        if timeline:                   # every vouched shape has ts (required): t is bound
            out.append("            last = t")
        out += ["    except (KeyError, TypeError):", f"        return {ret}",
                f"    return {'None, last' if timeline else 'None'}"]
        ns = {"LIMIT": INT_LIMIT, "TID0": TID_LIMITS[0], "TID1": TID_LIMITS[1], "ID": (int, str),
              "_str_list": _str_list, **{name: t for t, name in enums.items()}}
        exec("\n".join(out), ns)      # noqa: S102 -- the source is built above from literals
        return ns["scan"]


_checker = EventChecker()


def first_invalid(events: Sequence[object]) -> int | None:
    """The index of the first event :func:`check_event` rejects, or None if all
    are valid: the same verdicts, faster on many events (a shared EventChecker)."""
    return _checker.first_invalid(events)
