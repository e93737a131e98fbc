"""The program's synchronization objects and queues, recovered by meaning.

``object`` events say what each lock, semaphore, barrier, condition and queue
is and how it was configured (``capacity``, ``parties``, ``permits``, the
condition's ``lock``).  Object ids may be reused after an object is freed, so
each ``object`` event starts a new *generation*; an operation refers to the
generation alive at its time.  Objects used but never announced (created
before tracing began, or by untraced code) get a generation of their own with
the type inferred from their use.

>>> evs = [{"kind": "object", "tid": 1, "ts": 0, "obj": 7, "type": "queue", "capacity": 8},
...        {"kind": "put", "tid": 1, "ts": 5, "obj": 7, "item": 1},
...        {"kind": "object", "tid": 1, "ts": 9, "obj": 7, "type": "lock"},
...        {"kind": "acquire", "tid": 1, "ts": 12, "obj": 7}]
>>> t = ObjectTable(evs)
>>> [t.info(t.key(7, ts))["type"] for ts in (5, 12)]
['queue', 'lock']
>>> kind_of("bsem"), kind_of("rlock"), kind_of("simple_queue")
('semaphore', 'mutex', 'queue')
"""
from __future__ import annotations

import bisect
from typing import Iterable

#: object type -> what the model makes of it
KINDS = {"lock": "mutex", "rlock": "mutex", "monitor": "mutex", "rwlock": "rwlock",
         "sem": "semaphore", "bsem": "semaphore", "barrier": "barrier", "cond": "condition",
         "event": "event", "queue": "queue", "lifo_queue": "queue", "prio_queue": "queue",
         "simple_queue": "queue", "pool": "pool", "future": "future", "file": "file",
         "socket": "socket", "disk": "disk", "gil": "gil"}


def kind_of(obj_type: str | None) -> str:
    """What a trace object type means for the model (``other`` if nothing)."""
    return KINDS.get(obj_type or "", "other")


class ObjectTable:
    """Objects by id and generation; ``key(obj, ts)`` names the one alive at ``ts``."""

    def __init__(self, events: Iterable[dict]):
        self._gens: dict[int, list] = {}       # obj -> [(ts, key)] sorted
        self._info: dict[tuple, dict] = {}
        for ev in events:
            if ev["kind"] == "object":
                obj = ev["obj"]
                gens = self._gens.setdefault(obj, [])
                key = (obj, len(gens) + 1)
                gens.append((ev["ts"], key))
                self._info[key] = ev
        for gens in self._gens.values():
            gens.sort(key=lambda g: g[0])
        #: obj -> (ts, key) of objects announced once (the common case, looked up inline)
        self.single = {obj: gens[0] for obj, gens in self._gens.items() if len(gens) == 1}

    def key(self, obj: int, ts: int) -> tuple:
        """The generation of ``obj`` alive at ``ts`` (``(obj, 0)``: never announced)."""
        one = self.single.get(obj)
        if one is not None and ts >= one[0]:
            return one[1]
        gens = self._gens.get(obj)
        if not gens:
            return (obj, 0)
        if len(gens) == 1:
            return gens[0][1] if ts >= gens[0][0] else (obj, 0)
        i = bisect.bisect_right(gens, (ts, (float("inf"),))) - 1
        return gens[i][1] if i >= 0 else (obj, 0)

    def info(self, key: tuple) -> dict:
        """The ``object`` event of a generation ({} if it was never announced)."""
        return self._info.get(key, {})

    def type(self, key: tuple, default: str = "other") -> str:
        """The object's type as the trace named it (``default`` if never seen)."""
        return self._info.get(key, {}).get("type", default)

    def keys(self) -> list[tuple]:
        """Every object's key, in order of first appearance."""
        return list(self._info)

    def by_type(self, *types: str) -> list[tuple]:
        """The keys of the objects of these types."""
        return [k for k, ev in self._info.items() if ev.get("type") in types]
