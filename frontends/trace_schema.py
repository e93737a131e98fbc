"""The neutral trace format's vocabulary: event kinds, their fields, capabilities.

One table, :data:`KINDS`, says for every event kind which fields it requires and
what type each known field has; :func:`check_event` applies it.  The reader
(:mod:`frontends.trace`) calls :func:`check_event` once per line, so it is
written for speed: set operations on the key view and a few ``type() is``
tests, no per-field closures.

>>> check_event({"kind": "release", "tid": 1, "ts": 5, "obj": 7, "hold": 3}) is None
True
>>> check_event({"kind": "release", "tid": 1, "ts": 5})
"release event lacks field 'obj'"
"""
from __future__ import annotations

from dataclasses import dataclass, field

FORMAT = "qpn-trace"
VERSION = 1

#: Capabilities a header may declare; absent means false.  They tell the
#: analyzer what it may trust (e.g. without ``lock_uncontended`` a missing
#: acquire does not mean the lock was not taken).
CAPABILITIES = {
    "thread_cpu": "every event carries the thread's CPU time (cpu, ns)",
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
}

OBJECT_TYPES = frozenset({
    "lock", "rlock", "rwlock", "cond", "sem", "bsem", "barrier", "event",
    "queue", "lifo_queue", "prio_queue", "simple_queue", "pool", "future",
    "file", "socket", "disk", "gil", "monitor", "other"})
WAIT_ON = frozenset({"cond", "barrier", "join", "sleep", "gil", "event", "future",
                     "select", "other"})
IO_OPS = frozenset({"open", "close", "read", "write", "stat", "seek", "fsync",
                    "send", "recv", "accept", "connect", "other"})
REQUEST_PHASES = frozenset({"begin", "end"})

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
    _spec("thread_start", "a thread begins", name="str", parent="int", daemon="bool"),
    _spec("thread_end", "a thread ends"),
    _spec("object", "a lock, queue, pool, file ... is created; its parameters",
          ("obj", "type"), type=OBJECT_TYPES, capacity="uint", parties="uint",
          permits="int", lock="int", workers="uint", queue="int", name="str",
          path="str", order="str"),
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
          path="str", fd="int", bytes="uint", peer="str", ok="bool", calls="uint"),
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
    _spec("probe", "a PERSIK probe hit", ("probe",), probe="int"),
)}

# Extension kinds (prefix "x_") need only the common fields.
EXTENSION = _spec("x_", "an extension event")


def check_event(ev: object) -> str | None:
    """Why ``ev`` is not a valid event, or None if it is."""
    if type(ev) is not dict:
        return "an event must be a JSON object"
    kind = ev.get("kind")
    spec = KINDS.get(kind)
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
        if t is None or v is None:
            continue
        tv = type(v)
        if t == "int":
            if tv is not int:
                return f"{kind} event: {f} must be an integer, got {v!r}"
        elif t == "uint":
            if tv is not int or v < 0:
                return f"{kind} event: {f} must be an integer >= 0 (ns), got {v!r}"
        elif t == "str":
            if tv is not str:
                return f"{kind} event: {f} must be a string, got {v!r}"
        elif t == "bool":
            if tv is not bool:
                return f"{kind} event: {f} must be true or false, got {v!r}"
        elif tv is not str or v not in t:
            return f"{kind} event: {f} must be one of {', '.join(sorted(t))}; got {v!r}"
    req = ev.get("req")
    if req is not None and type(req) not in (int, str):
        return f"{kind} event: req must be an integer or a string, got {req!r}"
    if kind == "sample" and not (type(ev["stack"]) is list
                                 and all(type(s) is str for s in ev["stack"])):
        return "sample event: stack must be a list of strings (leaf first)"
    if kind == "probe" and "args" in ev and type(ev["args"]) is not list:
        return "probe event: args must be a list"
    return None
