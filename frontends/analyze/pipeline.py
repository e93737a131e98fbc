"""The analysis pipeline: trace -> runners with structured bodies.

1. steps per thread (:mod:`.steps`), socket channels (:mod:`.sockets`);
2. the work phase, thread pools (:mod:`.threads`), each pool's steady-state
   loop or whole life (:mod:`.phases`, :mod:`.decide`);
3. hand-overs follow drops; queues with one side left in the model are
   dropped (no consumer) or fed by a source (no producer: an open workload);
4. the structure of each runner's body (:mod:`.structure`) and the GIL-free
   share of each code fragment (:mod:`.gil`).

:func:`analyze` returns an :class:`Analysis`; :mod:`.model` writes it as a
model.  A trace and options in, plain data out, with three reads outside them:
whether the program's source directory exists (elements are named after its
files), this machine's core count when the trace recorded none, and the clock
(the stages' seconds, for the benchmark).  The garbage collector is paused
while it runs (:func:`no_gc`).
"""
from __future__ import annotations

import collections
import contextlib
import gc
import operator
import os
import time
from dataclasses import dataclass, field

import numpy as np

from qpn.errors import QPNError
from qpn.frontends.pytrace.layout import is_shared

from .condqueue import cond_queues
from .contended import blocking_only, unseen_joins
from .decide import decide, finish, work_of
from .forks import forks_as_semaphores
from .futures import futures_as_semaphores
from .gil import busy, gil_free_shares
from .handoff import first_holds
from .instances import fold_per_instance, per_instance_sites, per_thread_sites
from .joins import batch_joiners, find_joins
from .naming import Sources, ident, split_site
from .objects import ObjectTable
from .phases import end_cpu_clock, propagate_drops, threads_phase, work_phase
from .sockets import SocketLinks, link_sockets
from .steps import fold, thread_steps
from .structure import Tokens, leaves
from .barrier_rounds import one_round_barriers
from .spawns import spawns_as_pool
from .schedules import schedules_as_sources
from .selects import select_waits
from .threads import Group, group_processes, merge_process_pools
from .wakeups import wake_latencies


_TOK = operator.attrgetter("tok")
_TS = operator.attrgetter("ts")
_END = operator.attrgetter("end")
_ACTION = operator.attrgetter("action")
_CPU = operator.attrgetter("cpu")


#: how the model's host cpu may share the machine's cores: any thread on any core, or
#: per-core run queues (docs/analyzer.md, Cores)
CPU_POLICIES = ("ps", "jsq-ps")


@dataclass
class Options:
    """Knobs of ``qpn build`` (times in ns)."""

    prune: float = 0.03               # drop fragments below this share of a runner's CPU / I/O
    demands: str = "fitted"           # fitted | empirical
    io_threshold: int = 50_000        # I/O faster than this is a page-cache hit
    slack: float = 0.05               # CPU share outside a steady-state loop that may be dropped
    gil: bool | None = None           # model the GIL (None: as the trace header says)
    cpu: str = "ps"                   # the host's discipline: ps | jsq-ps (CPU_POLICIES)
    source_dir: str | None = None     # the program's files (None: the cwd the trace recorded)

    def __post_init__(self):
        if self.cpu not in CPU_POLICIES:
            raise QPNError(f"--cpu {self.cpu}: the cores are shared by "
                           f"{' or '.join(CPU_POLICIES)} (qpn/disciplines)")
        # checked here, before a long trace is read for nothing
        if self.source_dir and not os.path.isdir(self.source_dir):
            raise QPNError(f"--source-dir {self.source_dir}: no such directory")


@dataclass
class Runner:
    """A pool of threads (or the main thread) and the body the model gives it."""

    name: str
    group: Group
    mode: str                         # forever | counted | omitted
    header: int | None = None
    latch: int | None = None          # forever: iterations end after this token, not at header
    items: list = field(default_factory=list)
    walks: list = field(default_factory=list)
    exits: int = 0
    warm: int = 0                     # forever: first iterations left out (a JIT's warm-up)
    iterations: int = 0
    why: str = ""
    width: int | None = None          # threads at once, where fewer (forked in rounds: forks.py)
    serial: tuple = (0, 0)            # main thread's CPU before and after its modelled run (ns)

    @property
    def size(self) -> int:
        """The number of threads of the runner (at once)."""
        return self.width or len(self.group.tids)


@dataclass
class Analysis:
    """Everything the model writer needs."""

    trace: object
    options: Options
    objects: ObjectTable
    tokens: Tokens
    runners: list
    links: SocketLinks
    sources: Sources
    gil: bool
    shares: dict                      # leaf id -> GIL-free share
    queue_flow: dict                  # queue key -> flow facts
    external: dict                    # queue key -> sorted arrival times (ns)
    phase: tuple | None
    warnings: list = field(default_factory=list)
    traced_sites: frozenset = frozenset()
    timings: dict = field(default_factory=dict)     # seconds per stage
    joins: list = field(default_factory=list)       # joins.Join: batches that wait for a pool
    probe_ns: int = 0                 # the tracer's own CPU per event, taken off the fragments
    notes: list = field(default_factory=list)       # header lines: what was read how
    phase_by: str = "hand-overs"      # what bounds the work phase: hand-overs | threads
    wakeups: dict = field(default_factory=dict)     # process -> wake-up times, ns (wakeups.py)
    selecting: frozenset = frozenset()              # threads that waited in select (selects.py)


@contextlib.contextmanager
def no_gc():
    """Pause the cyclic garbage collector: the analysis makes millions of small,
    acyclic objects, and collections triggered by their allocation would
    rescan them all again and again (half the run time on 10^6 events)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def analyze(trace, options: Options | None = None) -> Analysis:
    """Analyze a :class:`frontends.trace.Trace` into runners with structured bodies."""
    with no_gc():
        return _analyze(trace, options)


def _analyze(trace, options: Options | None) -> Analysis:
    opt = options or Options()
    timings: dict = {"_t": time.perf_counter()}
    h = trace.header
    warnings = list(trace.warnings)
    busy = h.busy()
    if busy:
        warnings.append(busy)
    has_cpu = h.has("thread_cpu") or h.has("cpu_from_gaps")
    if not has_cpu:
        warnings.append("the trace has no thread CPU times (capability thread_cpu): the wall "
                        "time between operations stands in for CPU demand")
    elif not h.has("thread_cpu"):
        warnings.append("the trace has no thread CPU times (capability thread_cpu): the time "
                        "outside the recorded calls and waits, less the tracer's own, stands "
                        "in for CPU demand (true when each thread had a core: trace a "
                        "configuration with no more busy threads than cores)")
    by, selecting = select_waits(trace.by_thread())   # a select wait is the recv's: selects.py
    _tick(timings, 'by_thread')
    object_events = [e for e in trace.events if e["kind"] == "object"]
    by, partial = blocking_only(by, object_events, h.capabilities)  # kernel-side: contended.py
    by, inferred_joins = unseen_joins(by, h.capabilities)
    by, spawned = spawns_as_pool(by)                        # a thread per item: spawns.py
    by, planned, plan_notes = schedules_as_sources(by)      # sleeps that keep a plan: schedules.py
    by, waited = futures_as_semaphores(by, object_events)      # future waits: see futures.py
    by, items, handed = cond_queues(by, object_events)       # condition + container: condqueue.py
    by, forked = forks_as_semaphores(by, getattr(trace, "processes", {}))   # forks.py
    objects = ObjectTable(object_events + spawned + planned + waited + items + forked)
    info = {e["tid"]: e for e in trace.events if e["kind"] == "thread_start"}
    main = h.program.get("pid") if h.program.get("pid") in by else next(
        (t for t, e in info.items() if e.get("name") == "MainThread"), None)
    _tick(timings, 'objects')
    tokens = Tokens()
    join_evs: dict = {tid: [] for tid in by}
    probe = (h.probe_ns or 0) if has_cpu else 0
    probe_cond = h.probe_cond_ns if has_cpu else None
    probe_queue = h.extra.get("probe_queue_ns") if has_cpu else None
    cond_locks = frozenset(e["lock"] for e in object_events if e.get("type") == "cond" and "lock" in e)
    walks = {tid: thread_steps(evs, objects, thread_cpu=has_cpu, tokens=tokens, joins=join_evs[tid],
                               probe_ns=probe, probe_cond_ns=probe_cond, cond_locks=cond_locks,
                               probe_queue_ns=probe_queue)
             for tid, evs in by.items()}
    _tick(timings, 'steps')
    procs = getattr(trace, "processes", {})          # tid -> process (frontends/processes.py)
    links = link_sockets(walks, processes=procs)
    tokens.assign(links.rewritten)
    once = one_round_barriers(walks, objects)         # barrier_rounds.py
    if once:
        partial.append("# Barriers waited at in one round only (start-up or shut-down, not "
                     "repeated): " + ", ".join(sorted(str(objects.info(k).get("name") or k)
                                                      for k in once)) + ", left out.")
    walks = {tid: fold(w, lambda s: s.action != "sock" and not (
                 s.action == "await" and s.key in once), discard_leading=False, in_place=True)
             if "sock" in map(_ACTION, w) or once else w for tid, w in walks.items()}
    _tick(timings, 'sockets')
    phase, phase_by = work_phase(walks), "hand-overs"
    if phase is None:
        phase, phase_by = threads_phase(walks, main), "threads"
    lo, hi = phase if phase is not None else (float("-inf"), float("inf"))
    inst = per_instance_sites(objects, phase)
    walks, notes = fold_per_instance(walks, inst, per_thread_sites(objects, walks, skip=inst))
    if inferred_joins:
        partial.append(f"# Joins inferred: {inferred_joins} thread(s) that only computed, ended "
                       "and were never seen joined (a join that did not block makes no call), "
                       "joined by their parent at its first event after their end.")
    notes = partial + plan_notes + _handed_notes(handed) + notes
    sigs = {}                          # tid -> how often it did each token in the work phase
    for tid, w in walks.items():
        i, j = _inside(w, lo, hi)
        for s in w[:i]:
            s.out = True
        for s in w[j:]:
            s.out = True
        sigs[tid] = collections.Counter(map(_TOK, w[i:j]))
    groups = group_processes(sigs, info, main, procs)
    if procs:                          # a process pool's workers: one pool of processes
        toks = tokens.tokens
        def joint(t):              # a take of a channel between processes, a fork's start
            a, key = toks[t][0], toks[t][1]
            obj = key[0] if isinstance(key, tuple) else key
            return a == "take" and is_shared(obj) or a == "acquire" and isinstance(obj, int) \
                and objects.info(key).get("fork") == "start"
        groups = merge_process_pools(groups, sigs, procs, joint)
    runners = [Runner(_runner_name(g, objects), g, "counted") for g in groups]
    for o in forked:                   # a pool forked in rounds: a round's threads at once
        for r in runners:
            if set(o["children"]) & set(r.group.tids):
                r.width = min(r.size, o["width"])
    _tick(timings, 'pools')
    for r in runners:                  # all its work lies in start-up or shut-down
        if not any(sigs[t] for t in r.group.tids):
            r.mode, r.why = "omitted", "works only before or after the work phase"
            for t in r.group.tids:
                for s in walks[t]:
                    s.drop = True
    pairs = pair_items(walks)
    end_cpu = end_cpu_clock(by) if has_cpu else {}
    jit = bool((h.runtime or {}).get("jit"))
    joiners = batch_joiners(walks, join_evs, phase)
    _tick(timings, 'items')
    for _ in range(3):                 # drops can make another runner a steady loop
        # a thread that waits for the work it handed out runs a batch: its whole run
        changed = [decide(r, walks, opt.slack, end_cpu, jit) for r in runners if r.mode == "counted"
                   and not any(t in joiners for t in r.group.tids)]
        if not propagate_drops(pairs) and not any(changed):
            break
    for r in runners:                  # whole-life runners: only their work phase
        if r.mode == "counted":
            for t in r.group.tids:
                for s in walks[t]:
                    if s.out:
                        s.drop = True
    propagate_drops(pairs)
    external = _balance(runners, walks, opt, warnings, links.outside)
    _tick(timings, 'decide')
    for r in runners:
        finish(r, walks)
        if r.group.main and r.mode == "counted" and has_cpu:
            r.serial = _serial_cpu(r, walks, by, end_cpu)
    joins = find_joins(runners, joiners)
    _tick(timings, 'structure')
    if all(r.mode == "omitted" for r in runners):
        raise QPNError(f"{trace.path}: nothing to model: no thread does any work the model "
                       f"can describe ({len(trace.events)} events, {len(by)} threads)"
                       + "".join(f"\nwarning: {w}" for w in trace.warnings))
    gil = h.runtime.get("gil", False) if opt.gil is None else opt.gil
    cores = int(h.runtime.get("cpus") or os.cpu_count() or 1)
    interval = float(h.runtime.get("switch_interval_ns") or 5e6)
    shares = {}
    if gil and has_cpu:                # a GIL per process: each one's threads share it
        for proc in dict.fromkeys(r.group.process for r in runners):
            shares.update(_gil_shares([r for r in runners if r.group.process == proc],
                                      {t: w for t, w in walks.items()
                                       if procs.get(t) == proc}, cores, interval))
    # the GIL's hand-over to a waiting thread takes a wake-up: seen across processes only
    wakeups = wake_latencies(trace.events, procs, phase) if gil and len(set(procs.values())) > 1 \
        else {}
    _tick(timings, 'gil')
    # every step's token is numbered; socket operations left the walks (folded
    # or rewritten as queue operations with tokens of their own)
    sites = {t[2] for t in tokens.tokens if t[0] != "sock"}
    traced = frozenset((p, n or 0) for p, n in map(split_site, sites) if p)
    return Analysis(trace, opt, objects, tokens, runners, links, _sources(h, opt, sites, warnings),
                    bool(gil), shares, _queue_flow(pairs), external, phase, warnings,
                    traced, _tick(timings, "rest"), joins, probe, notes, phase_by, wakeups,
                    selecting)


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


#: an operation that waited this long (ns) released the GIL (see gil.py, ``fresh``)
BLOCKED = 10_000


def _gil_shares(runners, walks, cores: int, interval: float) -> dict:
    """GIL-free share per leaf, from the CPU clocks of all threads."""
    leaf_id: dict = {}
    by_ev: dict = {}
    for r in runners:
        for lf in leaves(r.items):
            k = leaf_id.setdefault(id(lf), len(leaf_id))
            for s in lf.steps:
                by_ev[id(s.ev)] = k
    a, b, c, kl, fresh, hold = [], [], [], [], [], []
    ea, eb, ec = [], [], []
    holds = first_holds(walks)
    for w in walks.values():
        blocked = True                 # a thread starts without the GIL
        for s in w:
            if s.cpu is not None:
                a.append(s.start)
                b.append(s.ts)
                c.append(s.cpu)
                kl.append(by_ev.get(id(s.ev), -1))
                fresh.append(blocked)
                hold.append(holds.get(s, np.nan))
                if s.own_cpu and s.dur:
                    ea.append(s.ts)
                    eb.append(s.end)
                    ec.append(s.own_cpu)
            blocked = s.dur - s.own_cpu >= BLOCKED
    clock: list = []
    decided: list = []
    f = gil_free_shares(np.array(a, float), np.array(b, float), np.array(c, float),
                        np.array(kl, dtype=np.int64), len(leaf_id),
                        extra=(np.array(ea, float), np.array(eb, float), np.array(ec, float)),
                        cores=cores, interval=interval, fresh=np.array(fresh, bool),
                        hold=np.array(hold, float),
                        clock=clock, decided=decided)
    out = {}
    for r in runners:
        for lf in leaves(r.items):
            out[id(lf)] = float(f[leaf_id[id(lf)]])
            out[("gil_decided", id(lf))] = bool(decided[0][leaf_id[id(lf)]])
            if lf.action == "io":      # file I/O waits that the GIL explains are not device time
                st = lf.steps
                qa = np.array([s.ts for s in st], float)
                qb = np.array([s.end for s in st], float)
                held = busy(clock[0], qa, qb) - np.array([s.own_cpu for s in st], float)
                out[("gil_wait", id(lf))] = np.maximum(held, 0.0).tolist()
    return out


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
