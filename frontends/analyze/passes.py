"""The passes of an analysis (:func:`.pipeline.analyze`), in their order, over one
:class:`Pass` (the state they share: each reads what earlier passes set and sets its own
fields), and the helpers each uses.

1. :func:`read_threads`: the events by thread, rewritten by the passes over events
   (select waits, kernel-side blocking, unseen joins, spawned threads, schedules,
   futures, condition queues, forks), the object table and the main thread;
2. :func:`walk_threads`: each thread's steps (:mod:`.steps`);
3. :func:`link_threads`: socket channels, barriers met in one round only;
4. :func:`work_phase_of`: the work phase and per-instance folding, each thread's tokens;
5. :func:`find_runners`: thread pools and process pools as runners;
6. :func:`decide_runners`: each runner's steady-state loop or whole life, hand-overs
   followed by drops, sources;
7. :func:`finish_runners`: bodies, the main thread's serial part, joins;
8. :func:`gil_of`: the GIL-free share of each fragment and the hand-over wake-ups.
"""
from __future__ import annotations

import collections
import operator
import os
import time
from dataclasses import dataclass, field

from qpn.errors import QPNError
from qpn.frontends.pytrace.layout import is_shared

from .barrier_rounds import one_round_barriers
from .condqueue import cond_queues
from .contended import blocking_only, unseen_joins
from .decide import decide, finish, work_of
from .forks import forks_as_semaphores
from .futures import futures_as_semaphores
from .instances import fold_per_instance, per_instance_sites, per_thread_sites
from .joins import batch_joiners, find_joins
from .leaf_shares import gil_shares
from .naming import Sources, ident, split_site
from .objects import ObjectTable
from .phases import end_cpu_clock, propagate_drops, threads_phase, work_phase
from .runners import Options, Runner
from .schedules import schedules_as_sources
from .selects import select_waits
from .sockets import link_sockets
from .spawns import spawns_as_pool
from .steps import fold, thread_steps
from .structure import Tokens
from .threads import Group, group_processes, merge_process_pools
from .wakeups import wake_latencies

_TOK = operator.attrgetter("tok")
_TS = operator.attrgetter("ts")
_END = operator.attrgetter("end")
_ACTION = operator.attrgetter("action")


@dataclass
class Pass:
    """The state the passes of one analysis share (fields set by the pass named)."""

    trace: object
    opt: Options
    timings: dict
    warnings: list
    has_cpu: bool
    # read_threads
    by: dict = field(default_factory=dict)             # tid -> its events, rewritten
    selecting: frozenset = frozenset()
    object_events: list = field(default_factory=list)
    partial: list = field(default_factory=list)        # header notes of the rewrites
    inferred_joins: int = 0
    plan_notes: list = field(default_factory=list)
    handed: list = field(default_factory=list)
    forked: list = field(default_factory=list)
    objects: ObjectTable | None = None
    info: dict = field(default_factory=dict)           # tid -> its thread_start event
    main: int | None = None
    procs: dict = field(default_factory=dict)          # tid -> process
    # walk_threads
    tokens: Tokens = field(default_factory=Tokens)
    join_evs: dict = field(default_factory=dict)
    probe: int = 0
    walks: dict = field(default_factory=dict)          # tid -> its steps
    # link_threads
    links: object = None
    # work_phase_of
    phase: tuple | None = None
    phase_by: str = "hand-overs"
    notes: list = field(default_factory=list)
    sigs: dict = field(default_factory=dict)           # tid -> token counts in the work phase
    # find_runners
    runners: list = field(default_factory=list)
    # decide_runners
    pairs: list = field(default_factory=list)
    end_cpu: dict = field(default_factory=dict)
    joiners: dict = field(default_factory=dict)
    external: dict = field(default_factory=dict)
    # finish_runners
    joins: list = field(default_factory=list)
    # gil_of
    gil: bool = False
    shares: dict = field(default_factory=dict)
    wakeups: dict = field(default_factory=dict)


def start(trace, opt: Options) -> Pass:
    """A pass state for ``trace``, with the warnings its header calls for."""
    h = trace.header
    warnings = list(trace.warnings)
    busy_note = h.busy()
    if busy_note:
        warnings.append(busy_note)
    has_cpu = h.has("thread_cpu") or h.has("cpu_from_gaps")
    if not has_cpu:
        warnings.append("the trace has no thread CPU times (capability thread_cpu): the wall "
                        "time between operations stands in for CPU demand")
    elif not h.has("thread_cpu"):
        warnings.append("the trace has no thread CPU times (capability thread_cpu): the time "
                        "outside the recorded calls and waits, less the tracer's own, stands "
                        "in for CPU demand (true when each thread had a core: trace a "
                        "configuration with no more busy threads than cores)")
    return Pass(trace, opt, {"_t": time.perf_counter()}, warnings, has_cpu)


def read_threads(p: Pass) -> None:
    trace, h = p.trace, p.trace.header
    by, p.selecting = select_waits(trace.by_thread())   # a select wait is the recv's: selects.py
    _tick(p.timings, 'by_thread')
    p.object_events = object_events = [e for e in trace.events if e["kind"] == "object"]
    by, p.partial = blocking_only(by, object_events, h.capabilities)  # kernel-side: contended.py
    by, p.inferred_joins = unseen_joins(by, h.capabilities)
    by, spawned = spawns_as_pool(by)                        # a thread per item: spawns.py
    by, planned, p.plan_notes = schedules_as_sources(by)    # sleeps that keep a plan: schedules.py
    by, waited = futures_as_semaphores(by, object_events)   # future waits: see futures.py
    by, items, p.handed = cond_queues(by, object_events)    # condition + container: condqueue.py
    p.procs = getattr(trace, "processes", {})               # tid -> process (frontends/processes.py)
    by, p.forked = forks_as_semaphores(by, p.procs)         # forks.py
    p.by = by
    p.objects = ObjectTable(object_events + spawned + planned + waited + items + p.forked)
    p.info = info = {e["tid"]: e for e in trace.events if e["kind"] == "thread_start"}
    p.main = h.program.get("pid") if h.program.get("pid") in by else next(
        (t for t, e in info.items() if e.get("name") == "MainThread"), None)
    _tick(p.timings, 'objects')


def walk_threads(p: Pass) -> None:
    h = p.trace.header
    p.join_evs = {tid: [] for tid in p.by}
    p.probe = (h.probe_ns or 0) if p.has_cpu else 0
    probe_cond = h.probe_cond_ns if p.has_cpu else None
    probe_queue = h.extra.get("probe_queue_ns") if p.has_cpu else None
    cond_locks = frozenset(e["lock"] for e in p.object_events
                           if e.get("type") == "cond" and "lock" in e)
    p.walks = {tid: thread_steps(evs, p.objects, thread_cpu=p.has_cpu, tokens=p.tokens,
                                 joins=p.join_evs[tid], probe_ns=p.probe, probe_cond_ns=probe_cond,
                                 cond_locks=cond_locks, probe_queue_ns=probe_queue)
               for tid, evs in p.by.items()}
    _tick(p.timings, 'steps')


def link_threads(p: Pass) -> None:
    p.links = links = link_sockets(p.walks, processes=p.procs)
    p.tokens.assign(links.rewritten)
    once = one_round_barriers(p.walks, p.objects)         # barrier_rounds.py
    if once:
        p.partial.append("# Barriers waited at in one round only (start-up or shut-down, not "
                         "repeated): " + ", ".join(sorted(str(p.objects.info(k).get("name") or k)
                                                          for k in once)) + ", left out.")
    p.walks = {tid: fold(w, lambda s: s.action != "sock" and not (
                   s.action == "await" and s.key in once), discard_leading=False, in_place=True)
               if "sock" in map(_ACTION, w) or once else w for tid, w in p.walks.items()}
    _tick(p.timings, 'sockets')


def work_phase_of(p: Pass) -> None:
    phase, p.phase_by = work_phase(p.walks), "hand-overs"
    if phase is None:
        phase, p.phase_by = threads_phase(p.walks, p.main), "threads"
    p.phase = phase
    lo, hi = phase if phase is not None else (float("-inf"), float("inf"))
    inst = per_instance_sites(p.objects, phase)
    p.walks, notes = fold_per_instance(p.walks, inst, per_thread_sites(p.objects, p.walks,
                                                                       skip=inst))
    if p.inferred_joins:
        p.partial.append(f"# Joins inferred: {p.inferred_joins} thread(s) that only computed, "
                         "ended and were never seen joined (a join that did not block makes no "
                         "call), joined by their parent at its first event after their end.")
    p.notes = p.partial + p.plan_notes + _handed_notes(p.handed) + notes
    for tid, w in p.walks.items():      # how often each thread did each token in the phase
        i, j = _inside(w, lo, hi)
        for s in w[:i]:
            s.out = True
        for s in w[j:]:
            s.out = True
        p.sigs[tid] = collections.Counter(map(_TOK, w[i:j]))


def find_runners(p: Pass) -> None:
    groups = group_processes(p.sigs, p.info, p.main, p.procs)
    if p.procs:                        # a process pool's workers: one pool of processes
        toks, objects = p.tokens.tokens, p.objects

        def joint(t):              # a take of a channel between processes, a fork's start
            a, key = toks[t][0], toks[t][1]
            obj = key[0] if isinstance(key, tuple) else key
            return a == "take" and is_shared(obj) or a == "acquire" and isinstance(obj, int) \
                and objects.info(key).get("fork") == "start"
        groups = merge_process_pools(groups, p.sigs, p.procs, joint)
    p.runners = [Runner(_runner_name(g, p.objects), g, "counted") for g in groups]
    for o in p.forked:                 # a pool forked in rounds: a round's threads at once
        for r in p.runners:
            if set(o["children"]) & set(r.group.tids):
                r.width = min(r.size, o["width"])
    _tick(p.timings, 'pools')


def decide_runners(p: Pass) -> None:
    walks, runners = p.walks, p.runners
    for r in runners:                  # all its work lies in start-up or shut-down
        if not any(p.sigs[t] for t in r.group.tids):
            r.mode, r.why = "omitted", "works only before or after the work phase"
            for t in r.group.tids:
                for s in walks[t]:
                    s.drop = True
    p.pairs = pairs = pair_items(walks)
    p.end_cpu = end_cpu_clock(p.by) if p.has_cpu else {}
    jit = bool((p.trace.header.runtime or {}).get("jit"))
    p.joiners = joiners = batch_joiners(walks, p.join_evs, p.phase)
    _tick(p.timings, 'items')
    for _ in range(3):                 # drops can make another runner a steady loop
        # a thread that waits for the work it handed out runs a batch: its whole run
        changed = [decide(r, walks, p.opt.slack, p.end_cpu, jit) for r in runners
                   if r.mode == "counted" and not any(t in joiners for t in r.group.tids)]
        if not propagate_drops(pairs) and not any(changed):
            break
    for r in runners:                  # whole-life runners: only their work phase
        if r.mode == "counted":
            for t in r.group.tids:
                for s in walks[t]:
                    if s.out:
                        s.drop = True
    propagate_drops(pairs)
    p.external = _balance(runners, walks, p.opt, p.warnings, p.links.outside)
    _tick(p.timings, 'decide')


def finish_runners(p: Pass) -> None:
    for r in p.runners:
        finish(r, p.walks)
        if r.group.main and r.mode == "counted" and p.has_cpu:
            r.serial = _serial_cpu(r, p.walks, p.by, p.end_cpu)
    p.joins = find_joins(p.runners, p.joiners)
    _tick(p.timings, 'structure')
    if all(r.mode == "omitted" for r in p.runners):
        trace = p.trace
        raise QPNError(f"{trace.path}: nothing to model: no thread does any work the model "
                       f"can describe ({len(trace.events)} events, {len(p.by)} threads)"
                       + "".join(f"\nwarning: {w}" for w in trace.warnings))


def gil_of(p: Pass) -> None:
    h, runners, procs = p.trace.header, p.runners, p.procs
    p.gil = gil = h.runtime.get("gil", False) if p.opt.gil is None else p.opt.gil
    cores = int(h.runtime.get("cpus") or os.cpu_count() or 1)
    interval = float(h.runtime.get("switch_interval_ns") or 5e6)
    if gil and p.has_cpu:              # a GIL per process: each one's threads share it
        for proc in dict.fromkeys(r.group.process for r in runners):
            p.shares.update(gil_shares([r for r in runners if r.group.process == proc],
                                        {t: w for t, w in p.walks.items()
                                         if procs.get(t) == proc}, cores, interval))
    # the GIL's hand-over to a waiting thread takes a wake-up: seen across processes only
    p.wakeups = wake_latencies(p.trace.events, procs, p.phase) \
        if gil and len(set(procs.values())) > 1 else {}
    _tick(p.timings, 'gil')


def sources_and_sites(p: Pass) -> tuple[Sources, frozenset]:
    """The program's sources, and the traced (file, line) sites: every step's token is
    numbered; socket operations left the walks (folded or rewritten as queue operations
    with tokens of their own)."""
    sites = {t[2] for t in p.tokens.tokens if t[0] != "sock"}
    traced = frozenset((f, n or 0) for f, n in map(split_site, sites) if f)
    return _sources(p.trace.header, p.opt, sites, p.warnings), traced


# ------------------------------------------------------------------ helpers
def _handed_notes(handed: list) -> list[str]:
    """Header lines for the hand-overs through a condition and a container."""
    out = []
    for f in handed:
        if f.get("batch"):
            out.append(f"# Hand-over in batches through the condition created at {f['site']} and "
                       f"a container: the notifying threads' {f['items']} passes through their "
                       f"block are releases of a semaphore of items (suffix _items), and the "
                       f"{f['blocks']} passes of the waiting thread take {f['batch']} each "
                       f"({f['notifies']} notifies: only when enough were waiting).")
            continue
        out.append(f"# Hand-over through the condition created at {f['site']} and a container: "
                   f"its {f['notifies']} notifies are releases of a semaphore of items "
                   f"(suffix _items), and the {f['blocks']} passes of the waiting threads "
                   f"through their lock block acquire one each, waiting or not.")
    return out


def _sources(header, opt: Options, sites: set, warnings: list) -> Sources:
    """The program's source files, which model elements are named after."""
    where = opt.source_dir or header.program.get("cwd")
    if where and not os.path.isdir(where):          # only the recorded cwd can be missing
        if any((split_site(x)[0] or "").endswith(".py") for x in sites):
            warnings.append(f"the program's files are not at {where} (the working directory "
                            f"the trace recorded): model elements are named after line numbers; "
                            f"--source-dir DIR says where they are")
    return Sources(where, tuple((header.program.get("argv") or [])[:1]))


def _tick(timings: dict, what: str) -> dict:
    """Record the seconds since the last tick under ``what`` (for the benchmark)."""
    now = time.perf_counter()
    timings[what] = timings.get(what, 0.0) + now - timings["_t"]
    timings["_t"] = now
    return timings


def _runner_name(g: Group, objects: ObjectTable) -> str:
    """``main``, the thread-name stem, or ``worker`` for an executor's threads; in a
    trace of several processes, the name of the group's process before it (``back_main``
    for another process's main thread)."""
    if g.main:
        return "main"
    name = None
    for key in objects.by_type("pool"):
        pname = objects.info(key).get("name")
        if pname and all(n.startswith(pname) for n in g.thread_names):
            name = "worker"
    if name is None:
        name = "main" if g.process and set(g.thread_names) == {"MainThread"} else g.name
    if g.process and not name.startswith(g.process):    # not 'front_front'
        name = f"{g.process}_{name}"
    return ident(name, "threads")


def _inside(w: list, lo, hi) -> tuple[int, int]:
    """The steps of a walk (sorted by ts) between ``lo`` and ``hi``: w[i:j]."""
    i = 0
    while i < len(w) and w[i].ts < lo:
        i += 1
    j = len(w)
    while j > i and w[j - 1].ts > hi:
        j -= 1
    return i, j


def pair_items(walks: dict) -> list[tuple]:
    """(put step, take step) of each queue hand-over.

    As ``trace_query.match_items`` pairs events: takes in completion order,
    each with the earliest unmatched put of the same queue and item id (ids
    are unique only among live objects).
    """
    puts: dict = {}
    gets = []
    hands = ("put", "take")
    for s in [s for w in walks.values() for s in w if s.action in hands]:
        item = s.item
        if item is None:
            continue
        if s.action == "put":
            k = (s.key, item)
            q = puts.get(k)
            if q is None:
                puts[k] = [s]
            else:
                q.append(s)
        else:
            gets.append(s)
    for q in puts.values():
        if len(q) > 1:
            q.sort(key=_TS, reverse=True)
    gets.sort(key=_END)
    pairs = []
    for g in gets:
        q = puts.get((g.key, g.item))
        if q:
            pairs.append((q.pop(), g))
    return pairs


#: operations a thread can wait in (a runner that only releases would release without end)
_BLOCKING = frozenset({"acquire", "take", "await", "lock", "wait", "io", "sleep", "put"})


def _balance(runners, walks, opt, warnings, outside: dict | None = None) -> dict:
    """Omit runners without work; drop queues nobody takes from; find sources: a queue
    nobody in the trace puts into, and an accept queue whose connections came mostly from
    outside the trace (``outside``: its accepts of connections no traced thread made),
    whatever traced threads also connected there (a readiness probe, a health check)."""
    total = sum(work_of(walks[t]) for r in runners for t in r.group.tids) or 1.0
    external: dict = {}
    for _ in range(3):
        sides: dict = collections.defaultdict(lambda: ([], []))
        acquirers: dict = collections.defaultdict(set)      # semaphore -> runners acquiring
        for r in runners:
            if r.mode != "omitted":
                for t in r.group.tids:
                    for s in walks[t]:
                        if s.action == "acquire" and not s.drop:
                            acquirers[s.key].add(id(r))
        for r in runners:
            if r.mode == "omitted":
                continue
            kept = [s for t in r.group.tids for s in walks[t] if not s.drop]
            n = len(kept)
            cpu = work_of(kept)
            hands = [s for s in kept if s.action == "put" or s.action == "take"]
            for s in hands:
                sides[s.key][s.action == "take"].append(s)
            # a barrier await synchronizes with the other parties, a release gives permits
            # another runner waits for (a fork's start): a runner that does either is part
            # of the work however little CPU it uses (left out, the others would wait for
            # it forever)
            waits = any(s.action in _BLOCKING for s in kept)
            meets = any(s.action == "await" or waits and s.action == "release"
                        and acquirers.get(s.key, set()) - {id(r)} for s in kept)
            if not n or (not hands and not meets and cpu < opt.prune * total):
                r.why = ("no work in the steady state" if not n else
                         f"{100 * cpu / total:.1f}% of the CPU and I/O time and no hand-overs")
                r.mode = "omitted"
                for t in r.group.tids:
                    for s in walks[t]:
                        s.drop = True
        changed = False
        for key, (puts, takes) in sides.items():
            puts = [s for s in puts if not s.drop]
            takes = [s for s in takes if not s.drop]
            if puts and not takes:
                for s in puts:
                    s.drop = True
                changed = True
            elif takes and puts and len(outs := [s for s in (outside or {}).get(key, ())
                                                  if not s.drop]) >= max(3, len(puts)):
                external[key] = sorted(s.end for s in outs)      # both: the outside's part
            elif takes and not puts:
                if len(takes) >= 3:            # fed from outside the trace: a source
                    external[key] = sorted(s.end for s in takes)
                else:                          # too few to say how fast: leave them out
                    for s in takes:
                        s.drop = True
                    changed = True
        if not changed:
            break
    return external


def _serial_cpu(r: Runner, walks: dict, by: dict, end_cpu: dict) -> tuple[int, int]:
    """The main thread's CPU before the first and after the last step its whole run keeps
    (ns): start-up and shut-down, or serial work each run repeats (preparing the data,
    checking the output); one trace cannot tell which."""
    (tid,) = r.group.tids
    kept = [s for s in walks[tid] if not s.drop]
    start = by[tid][0].get("cpu") if by[tid] and by[tid][0]["kind"] == "thread_start" else None
    if not kept or start is None or kept[0].ev.get("cpu") is None:
        return (0, 0)
    first, last = kept[0], kept[-1]
    before = first.ev["cpu"] - start           # the first step's fragment is start-up too
    after = end_cpu.get(tid, 0) - (last.ev.get("cpu") or 0) - (last.own_cpu or 0) \
        if tid in end_cpu and last.ev.get("cpu") is not None else 0
    return max(0, before), max(0, after)


def _queue_flow(pairs) -> dict:
    """Per queue: items handed over, dropped (stop markers), passed on to other queues."""
    flow: dict = collections.defaultdict(lambda: {"items": 0, "dropped": 0,
                                                  "onward": collections.Counter()})
    got: dict = {}
    for p, g in pairs:
        f = flow[p.key]
        f["items"] += 1
        if p.drop:
            f["dropped"] += 1
        got[(g.tid, g.item)] = p.key
    for p, _g in pairs:
        src = got.get((p.tid, p.item))
        if src is not None and p.key != src:
            flow[src]["onward"][p.key] += 1
    return dict(flow)
