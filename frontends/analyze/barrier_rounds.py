"""Barriers waited at in one round only: no round of the work (docs/analyzer.md).

A futex woken all at once only once reads as a barrier of the threads that happened to
wait there (frontends/futexes.py).  Among threads that repeat another synchronisation it
is no part of the work's rounds, and in a model that repeats the work it would be a
barrier never reached again.

>>> from types import SimpleNamespace as S
>>> class Objects:
...     def info(self, key): return {"type": "barrier", "parties": 2}
>>> w = {1: [S(action="await", key="b1"), S(action="await", key="b2"), S(action="await", key="b2")],
...      2: [S(action="await", key="b1"), S(action="await", key="b2"), S(action="await", key="b2")]}
>>> one_round_barriers(w, Objects())
{'b1'}
"""
from __future__ import annotations

import collections

#: operations that synchronise threads (what repeats in a work phase)
_SYNC = frozenset({"await", "put", "take", "acquire", "release", "lock", "wait", "notify",
                   "notify_all"})


def one_round_barriers(walks: dict, objects) -> set:
    """Barriers (keys) whose awaits make one round at most (no more than their parties) while
    the threads that waited there repeat other synchronisations: a synchronisation the
    program made once (at start-up, a library's word that waited in a rare case), which
    in a model that repeats the work would be a barrier never reached again.  (A trace
    with nothing repeated, e.g. cut short after one round, keeps it.)"""
    awaits: collections.Counter = collections.Counter(
        s.key for w in walks.values() for s in w if s.action == "await")
    once = {k for k, n in awaits.items() if objects.info(k).get("type") == "barrier"
            and n <= int(objects.info(k).get("parties") or 0)}
    out = set()
    for k in once:
        repeated = collections.Counter(
            (s.action, s.key) for w in walks.values() if any(x.key == k for x in w)
            for s in w if s.action in _SYNC and s.key not in once)
        if any(n >= 2 for n in repeated.values()):
            out.add(k)
    return out


__all__ = ["one_round_barriers"]
