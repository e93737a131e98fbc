"""Thread pools: threads that behave alike.

Threads belong to one pool when they were started at the same code location
and do the same operations on the same objects at the same sites (the same
set of step tokens).  A thread whose tokens are a subset of a pool's is a
member that saw less work (an idle worker, one that got no stop marker):
it joins the pool, as the thesis merges a spurious thread tuple into the
superset with the larger count (``frontends/pools.py``).  Threads of one start
site and name whose token sets mostly agree (each saw a branch the other did
not) are one pool too.  The main thread is always a runner of its own.

>>> info = {1: {"name": "MainThread"}, 2: {"name": "worker-0", "site": "p.py:9"},
...         3: {"name": "worker-1", "site": "p.py:9"}, 4: {"name": "worker-2", "site": "p.py:9"}}
>>> sigs = {1: {"a"}, 2: {"b", "c"}, 3: {"b", "c"}, 4: {"b"}}
>>> [(g.name, g.tids) for g in group_threads(sigs, info, main=1)]
[('main', [1]), ('worker', [2, 3, 4])]
>>> sigs = {1: {"a"}, 2: {"take", "hash", "put", "rare"}, 3: {"take", "hash", "put", "other"}}
>>> [(g.name, g.tids) for g in group_threads(sigs, info, main=1)]
[('main', [1]), ('worker', [2, 3])]
>>> counts = {1: {"a": 1}, 2: {"take": 20, "hash": 20, "evict": 1, "clear": 1},
...           3: {"take": 20, "hash": 20, "log": 1, "close": 1}}   # as sets: alike by 2 of 6
>>> [(g.name, g.tids) for g in group_threads(counts, info, main=1)]
[('main', [1]), ('worker', [2, 3])]
>>> counts[3] = {"take": 3, "hash": 3, "log": 1}                    # got little of the work
>>> [(g.name, g.tids) for g in group_threads(counts, info, main=1)]
[('main', [1]), ('worker', [2, 3])]
>>> sigs = {1: {"a"}, 2: {"take", "hash"}, 3: {"put", "read"}}
>>> [(g.name, g.tids) for g in group_threads(sigs, info, main=1)]
[('main', [1]), ('worker', [2]), ('worker', [3])]
>>> stem("ThreadPoolExecutor-0_2"), stem("Thread-3 (serve)"), stem("client-1")
('ThreadPoolExecutor', 'serve', 'client')
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_TARGET = re.compile(r"\(([A-Za-z_]\w*)\)\s*$")
_TAIL = re.compile(r"[\d_\-.\s]+$")


def stem(name: str) -> str:
    """A thread name without its number (``worker-3`` -> ``worker``)."""
    m = _TARGET.search(name or "")
    if m:                                  # Python's default 'Thread-3 (target)'
        return m.group(1)
    s = _TAIL.sub("", name or "")
    return s or "thread"


@dataclass
class Group:
    """Threads that form one runner of the model."""

    name: str
    tids: list
    main: bool = False
    thread_names: list = field(default_factory=list)
    start_site: str | None = None
    process: str | None = None         # its process, in a trace of several (processes.py)
    processes: tuple = ()              # a pool of processes: each thread's own (one each)


def group_processes(signatures: dict, info: dict, main, processes: dict) -> list[Group]:
    """:func:`group_threads` within each process of a trace of several (``processes``:
    tid -> process name; ``main``: the root process's main thread): a pool never
    spans processes, and each group knows its process."""
    if not processes:
        return group_threads(signatures, info, main)
    out = []
    for proc in dict.fromkeys(processes.get(t) for t in sorted(signatures)):
        mine = {t: s for t, s in signatures.items() if processes.get(t) == proc}
        for g in group_threads(mine, info, main if main in mine else None):
            g.process = proc
            out.append(g)
    return out


def merge_process_pools(groups: list, signatures: dict, processes: dict, shared_take) -> list:
    """Groups of one thread each, in processes of their own (a process pool's workers,
    forked or spawned alike, or worker processes started to compute a share each), that did
    the same work and take from a channel shared by processes or start at one fork (a
    pool's work queue, the fork's start: ``shared_take(token)`` is true for such a token),
    as one pool of processes; the others as they were.

    >>> g = [Group("main", [1], True, process="p"), Group("main", [7], False, process="p_7"),
    ...      Group("main", [8], False, process="p_8")]
    >>> sig = {1: {"a": 1}, 7: {"t99": 5}, 8: {"t99": 4}}
    >>> out = merge_process_pools(g, sig, {1: "p", 7: "p_7", 8: "p_8"}, lambda t: t == "t99")
    >>> [(x.name, x.tids, x.processes) for x in out]
    [('main', [1], ()), ('worker', [7, 8], ('p_7', 'p_8'))]
    """
    per_process: dict = {}
    for t, p in processes.items():
        per_process[p] = per_process.get(p, 0) + 1
    alone = [g for g in groups if len(g.tids) == 1 and not g.main and g.process
             and per_process.get(g.process) == 1]
    # alike: the same joint token, and tokens that mostly agree (one worker saw a rare path
    # the other did not: the last task's put cut short by the pool's end)
    def joints(sig) -> frozenset:           # the joint tokens it did often (not a last one)
        counts = sig if isinstance(sig, dict) else {t: 1 for t in sig}
        top = max(counts.values(), default=0)
        return frozenset(t for t, n in counts.items() if shared_take(t) and n >= 0.1 * top)

    cands = [g for g in alone if joints(signatures[g.tids[0]])]
    clusters: list = []
    for g in cands:
        sig = signatures[g.tids[0]]
        for c in clusters:
            ref = signatures[c[0].tids[0]]
            if joints(sig) == joints(ref) and _alike(sig, ref) >= ALIKE:
                c.append(g)
                break
        else:
            clusters.append([g])
    out, merged = [], set()
    for gs in clusters:
        if gs:                     # (one alone too: a pool of one process is the same pool)
            tids = sorted(t for g in gs for t in g.tids)
            procs = tuple(processes[t] for t in tids)
            out.append(Group("worker", tids, False, [n for g in gs for n in g.thread_names],
                             gs[0].start_site, None, procs))
            merged.update(id(g) for g in gs)
    return [g for g in groups if id(g) not in merged] + out


def group_threads(signatures: dict, info: dict, main=None) -> list[Group]:
    """Pools from per-thread tokens; ``info[tid]`` has ``name`` and ``site``.  A
    signature is a thread's set of tokens, or a mapping token -> how often the thread
    did it, which weighs the similarity of groups that neither contains the other."""
    groups: dict[tuple, list] = {}
    for tid in sorted(signatures):
        if tid == main:
            continue
        key = (info.get(tid, {}).get("site"), frozenset(signatures[tid]))
        groups.setdefault(key, []).append(tid)
    # merge a group into a superset group of the same start site (more work seen)
    keys = sorted(groups, key=lambda k: (len(k[1]), len(groups[k])))
    merged = True
    while merged:
        merged = False
        for small in keys:
            hosts = [big for big in keys if big is not small and big[0] == small[0]
                     and small[1] <= big[1] and big in groups and small in groups
                     and (small[1] < big[1] or len(groups[big]) >= len(groups[small]))
                     and _same_stem(groups[small], groups[big], info)]
            if hosts:
                host = max(hosts, key=lambda k: (len(groups[k]), len(k[1])))
                groups[host].extend(groups.pop(small))
                keys.remove(small)
                merged = True
                break
    _merge_alike(groups, info, signatures)
    out = []
    if main is not None and main in signatures:
        out.append(Group("main", [main], True, [info.get(main, {}).get("name", "MainThread")],
                         info.get(main, {}).get("site")))
    for key in sorted(groups, key=lambda k: min(groups[k])):
        tids = sorted(groups[key])
        names = [info.get(t, {}).get("name", "") for t in tids]
        out.append(Group(stem(_common(names)), tids, False, names, key[0]))
    return out


ALIKE = 0.6      # Jaccard similarity of two groups' token sets that makes them one pool


def _alike(a, b) -> float:
    """Weighted Jaccard similarity of two threads' signatures (token -> count, or sets),
    each taken as shares of all it did (see :func:`_similarity`)."""
    def shares(sig):
        if isinstance(sig, dict):
            whole = sum(sig.values()) or 1
            return {t: n / whole for t, n in sig.items()}
        return {t: 1 for t in sig}
    sa, sb = shares(a), shares(b)
    toks = set(sa) | set(sb)
    hi = sum(max(sa.get(t, 0), sb.get(t, 0)) for t in toks)
    return sum(min(sa.get(t, 0), sb.get(t, 0)) for t in toks) / hi if hi else 0.0


def _similarity(a: tuple, b: tuple, groups: dict, signatures: dict) -> float:
    """Jaccard similarity of two groups' tokens, weighted by how often their threads did
    each: the sum of minima over the sum of maxima of the per-thread mean shares.  A
    thread's counts are taken as shares of all it did, so how much work a thread got
    does not matter, only what it did with it: on a busy machine one of two identical
    workers can take most of the requests, and raw counts then call them different
    pools.  A token set counts each token once (the plain Jaccard index)."""
    def mean(key):
        tot: dict = {}
        for t in groups[key]:
            sig = signatures[t]
            if isinstance(sig, dict):
                whole = sum(sig.values()) or 1
                pairs = ((tok, n / whole) for tok, n in sig.items())
            else:
                pairs = ((x, 1) for x in sig)
            for tok, n in pairs:
                tot[tok] = tot.get(tok, 0) + n / len(groups[key])
        return tot
    ma, mb = mean(a), mean(b)
    toks = set(ma) | set(mb)
    hi = sum(max(ma.get(k, 0), mb.get(k, 0)) for k in toks)
    return sum(min(ma.get(k, 0), mb.get(k, 0)) for k in toks) / hi if hi else 0.0


def _merge_alike(groups: dict, info: dict, signatures: dict) -> None:
    """Merge groups of the same start site and thread-name stem whose tokens mostly agree
    (:func:`_similarity` >= ALIKE): identical workers that each took a rare path the other
    did not (one evicted a cache, the other wrote the log) are one pool, not one-thread
    pools that change from trace to trace.  Different roles started by one loop (a
    producer and a consumer) share few tokens and stay apart."""
    merged = True
    while merged:
        merged = False
        keys = sorted(groups, key=lambda k: min(groups[k]))
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                if a[0] != b[0] or not _same_stem(groups[a], groups[b], info):
                    continue
                if _similarity(a, b, groups, signatures) >= ALIKE:
                    key = (a[0], a[1] | b[1])
                    tids = groups.pop(a) + groups.pop(b)
                    groups.setdefault(key, []).extend(tids)
                    merged = True
                    break
            if merged:
                break


def _same_stem(a: list, b: list, info: dict) -> bool:
    sa = {stem(info.get(t, {}).get("name", "")) for t in a}
    sb = {stem(info.get(t, {}).get("name", "")) for t in b}
    return bool(sa & sb)


def _common(names: list[str]) -> str:
    """The longest common prefix of the names, or the first name's stem."""
    if not names:
        return "thread"
    if len(names) == 1:
        return names[0]
    p = names[0]
    for n in names[1:]:
        while not n.startswith(p):
            p = p[:-1]
    m = _TARGET.search(names[0])
    if m and all(_TARGET.search(n) and _TARGET.search(n).group(1) == m.group(1) for n in names):
        return names[0]
    return p if stem(p) != "thread" else names[0]
