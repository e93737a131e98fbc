"""Thread pools and library functions from stack samples (thesis §5.2).

Stack samples form a call trie whose leaves count, per thread, how often the
leaf's code location was seen.  Threads that run the same code form a pool:

1. the tuple map: for each leaf, the set of threads that executed it maps to
   the sum of their counts (tuples seen at several leaves add up);
2. clean-up: a tuple whose threads are all in a larger tuple with a much larger
   count (>= ``ratio`` times) is spurious (rare samples missed a thread) and
   is merged into it, counts added.

>>> leaves = [{"tr4": 384, "tr5": 276}, {"tr4": 12}, {"tr5": 25}]
>>> [(sorted(threads), count) for threads, count in detect_pools(leaves)]
[(['tr4', 'tr5'], 697)]
"""
from __future__ import annotations

import collections
from typing import Hashable, Iterable, Mapping, Sequence


def tuple_map(leaves: Iterable[Mapping[Hashable, int]]) -> dict[frozenset, int]:
    """Step 1: thread tuple -> total count over the leaves it executed."""
    out: dict[frozenset, int] = collections.defaultdict(int)
    for leaf in leaves:
        threads = frozenset(t for t, n in leaf.items() if n > 0)
        if threads:
            out[threads] += sum(leaf.values())
    return dict(out)


def merge_spurious(tmap: Mapping[frozenset, int], ratio: float = 10.0) -> dict[frozenset, int]:
    """Step 2: merge each tuple into the largest-count proper superset whose count
    is at least ``ratio`` times its own; repeat until nothing changes."""
    out = dict(tmap)
    changed = True
    while changed:
        changed = False
        for small in sorted(out, key=lambda t: (out[t], sorted(map(str, t)))):
            hosts = [big for big in out if small < big and out[big] >= ratio * out[small]]
            if hosts:
                host = max(hosts, key=lambda t: (out[t], sorted(map(str, t))))
                out[host] += out.pop(small)
                changed = True
                break
    return out


def detect_pools(leaves: Iterable[Mapping[Hashable, int]],
                 ratio: float = 10.0) -> list[tuple[frozenset, int]]:
    """Pools as (threads, count), largest count first."""
    merged = merge_spurious(tuple_map(leaves), ratio)
    return sorted(merged.items(), key=lambda kv: (-kv[1], sorted(map(str, kv[0]))))


def leaves_from_samples(events: Iterable[dict]) -> list[dict]:
    """Leaf counts from neutral ``sample`` events (stack leaf first).

    A trie leaf is a whole call path, so two samples share a leaf when their
    stacks are equal.
    """
    counts: dict[tuple, collections.Counter] = {}
    for e in events:
        if e["kind"] == "sample":
            counts.setdefault(tuple(e["stack"]), collections.Counter())[e["tid"]] += 1
    return [dict(c) for c in counts.values()]


def library_functions(stacks: Iterable[Sequence[str]]) -> set[str]:
    """Functions called from more than one distinct caller (stack leaf first)."""
    callers: dict[str, set] = collections.defaultdict(set)
    for stack in stacks:
        for callee, caller in zip(stack, stack[1:]):
            callers[callee].add(caller)
    return {f for f, cs in callers.items() if len(cs) > 1}
