"""Write an :class:`~frontends.analyze.pipeline.Analysis` as a readable model.

The model is a ``software { ... }`` block (docs/software-layer.md) with
``param``s for what users vary -- pool sizes, cores, arrival rates, loop
counts and a speed-up factor per code fragment -- and a comment above every
number saying where it came from (sample sizes, means, SCVs, counts).  The
:class:`Writer` builds the software layer's objects (:mod:`qpn.software.ast`), each
with its comment as ``doc``; :mod:`.emit` puts them in a net and prints it with the
language's printer.

GIL (CPython): every fragment runs on ``cpu host cores C`` (C =
``runtime.cpus``); the ones (or the part of one) that hold the GIL do so between
``lock gil`` and ``unlock gil``, ``mutex gil`` being the GIL: one thread runs Python
at a time, on a core (docs/analyzer.md, the GIL).

>>> from qpn.expr import fmt
>>> [fmt(p) for p in probs([120, 3])]
['120 / 123', '3 / 123']
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace

from qpn.distributions import Empirical
from qpn.expr import BinOp, Num, Ref
from qpn.software import ast as sw

from . import joins, pruned
from .exprs import atom, total
from .features import input_sizes, size_fit, size_steps
from .fit import fit, number
from .naming import RESERVED, Names, ident, split_site
from .diskio import file_io
from .tasks import loop_of, loop_overheads
from .comments import doc, documented, probs
from .objects import kind_of
from .peers import peer_waits
from .blocks import Ctx as _Ctx
from .blocks import cpu_sum as _cpu_sum
from .blocks import io_sum as _io_sum
from .blocks import lock_comment as _lock_comment
from .blocks import walk_locks as _walk_locks
from .blocks import per_thread_note
from .assumptions import barrier_parties, serial_work, sleep_times
from .loops import write_loop
from .plan import write_runners
from .reproduce import walk_steps
from .structure import Leaf, Loop, leaves

STATION = frozenset({"take", "lock", "acquire", "await", "wait", "cpu", "io", "sleep"})
SUFFIX = {"mutex": "m", "semaphore": "sem", "barrier": "b", "condition": "cv", "queue": "q"}
#: trace operations that are one step on one object
OPERATIONS = {"take": sw.Take, "put": sw.Put, "unlock": sw.Unlock, "acquire": sw.Acquire,
              "release": sw.Release, "await": sw.Await, "wait": sw.Wait}


@dataclass
class ModelText:
    """The model, side files (path relative to the model -> text) and facts for reports."""

    text: str
    side_files: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)


class Writer:
    """Collects declarations and params while the runners' bodies are written."""

    def __init__(self, an, *, name: str, samples_dir: str | None, across=None):
        self.an = an
        self.across = across                   # .across.Across: what other traces said
        self.opt = an.options
        self.names = Names()
        self.names.used.update(("gil", "host", "disk"))     # the model's own resources
        self.names.used.update(f"gil_{p}" for p in set(getattr(an.trace, "processes", {})
                                                       .values()))
        self.net = ident(name, "model")
        if self.net in RESERVED:               # `net service`: a keyword is no name
            self.net += "_model"
        self.samples_dir = samples_dir
        self.side: dict = {}
        self.params: list = []                 # (name, value expression, comment)
        self.decls: dict = {}                  # key -> (order, declaration)
        self.objnames: dict = {}
        self.cpus: set = set()
        self.gil = "gil"                       # the GIL of the runner being written
        self.host = "host"                     # the cores of the runner being written
        self.host_of, self.host_cores = _hosts(an.trace)
        self.loop_params: dict = {}
        self.disk = False
        self.disk_busy: list = []              # (start, end) of device accesses
        self.size_param: dict = {}
        self.work_param: dict = {}             # pool name -> param scaling its CPU demands
        self.sizes = input_sizes(an.trace.events)     # per thread: its inputs' bytes
        self.share_params: dict = {}           # (input, size) -> the param of its share
        self.forked: dict = {}                 # fork semaphore (forks.py) -> the children's runner
        self.assumptions: list = []            # (param, what it assumes): in the header
        self.origin: dict = {}                 # id(software step) -> the leaf it was written for
        self.pools: dict = {}                  # runner name -> (its sw.Pool, the Runner)
        self.arrivals: dict = {}               # source queue name -> arrival times (ns)
        self.relays: dict = {}                 # plan key -> (client, queue key, its put times)
        self.handlers: dict = {}               # event-loop runner -> channel key -> its pool
        self.aloop = None                      # the asyncio loop of the runner being written
        self.loop_names: dict = {}             # ("loop", id) -> its mutex's name
        self.loop_cost = loop_overheads(an)    # loop id -> (factor, own, tasks', loop tid)
        self.counted: set = set()              # queues whose items are handed over in bursts
        self.burst_n: dict = {}                # such a queue -> the items of its batch
        self.peer_waits = peer_waits(an, self.assumptions)   # condition waits left out
        self.info: dict = {"runners": {}, "objects": {}, "params": {}, "loops": [],
                           "branches": [], "steps": {}, "sources": {}, "open_loop": {}}
        h = an.trace.header
        self.cores = int(h.runtime.get("cpus") or os.cpu_count() or 1)
        self.quantum = int(h.runtime.get("switch_interval_ns") or 5_000_000)

    # ------------------------------------------------------------ params
    def param(self, base: str, value, comment: str | None = None, *, expr=None) -> str:
        """A new parameter (a unique name from ``base``) with its value (a number, or
        ``expr`` the expression that ``value`` writes) and comment; its name."""
        name = self.names.unique(base)
        self.params.append((name, expr if expr is not None else number(str(value)), comment))
        self.info["params"][name] = value
        return name

    # ----------------------------------------------------------- objects
    def obj(self, key) -> str:
        """The declared name of a queue or sync object (declared on first use)."""
        if key in self.objnames:
            return self.objnames[key]
        an = self.an
        if isinstance(key, tuple) and key and key[0] in ("accept", "reply", "recv"):
            base = {"accept": "backlog", "reply": "replies", "recv": "requests"}[key[0]]
            kind, info = "queue", {}
        else:
            info = an.objects.info(key)
            kind = kind_of(info.get("type", "lock"))
            line = split_site(info.get("site"))[1]
            base = an.sources.object_name(info.get("site")) or (
                f"{info.get('name_type') or info.get('type') or kind}_{line}" if line
                else info.get("type") or kind)
            base += info.get("name_suffix", "")          # a pool's completions (futures.py)
        base = ident(base)
        if base in RESERVED:
            base = f"{base}_{SUFFIX.get(kind, 'x')}"
        name = self.names.unique(base)
        self.objnames[key] = name
        self._declare(key, name, kind, info)
        return name

    def _declare(self, key, name, kind, info) -> None:
        site = info.get("site")
        where = f" created at {site}" if site else ""
        typ = info.get("type", kind)
        lines = []
        facts = {"kind": kind, "type": typ, "site": site}
        if kind == "queue":
            flow = self.an.queue_flow.get(key, {})
            cap = info.get("capacity")
            if key[0] == "accept":
                lines.append("# the OS accept queue of listening socket "
                             + (f"fd {key[1]}" if isinstance(key[1], int) else str(key[1])))
            elif key[0] == "reply":
                lines.append(f"# replies sent at {key[1]} and received by the requesting thread")
            elif key[0] == "recv":
                lines.append(f"# requests from clients outside the trace, on the connections "
                             f"they keep open, received at {key[1]}")
            else:
                lines.append(f"# {info['why']}" if info.get("why") else f"# {typ}{where}")
            if flow.get("items"):
                onward = ", ".join(f"{n} on to {self.obj(k)}" for k, n in flow["onward"].items())
                lines.append(f"# {flow['items']} item{'s' if flow['items'] != 1 else ''} handed over"
                             + (f" ({onward}: requests)" if onward else "")
                             + (f"; {flow['dropped']} stop markers not modelled"
                                if flow["dropped"] else ""))
            decl = sw.BlockingQueue(name, capacity=number(str(cap)) if cap else None)
            facts["capacity"] = cap
        elif kind == "mutex":
            lines.append(f"# {typ}{where}")
            decl = sw.Mutex(name)
        elif kind == "semaphore":
            permits = info.get("permits", 1)
            lines.append(f"# {info['why']}" if info.get("why") else f"# {typ}{where}, {permits} permits")
            decl = sw.Semaphore(name, number(str(permits)))
            facts["permits"] = permits
        elif kind == "barrier":
            parties = info.get("parties", 2)
            terms, note = barrier_parties(self, key, parties)
            lines.append(f"# barrier{where}, {parties} parties" + note)
            decl = sw.Barrier(name, total(terms))
            facts["parties"] = parties
            facts["parties_expr"] = " + ".join(terms)
            if self.opt.cpu == "ps" and not any(p == "--cpu" for p, _ in self.assumptions):
                # measured: 3 threads of equal work per round took 2x, not PS's 1.5x (docs/analyzer.md)
                self.assumptions.append(("--cpu", (
                    f"every thread shares every core (ps); with more threads than cores at "
                    f"barrier {name}, a round may wait for the busiest core: `qpn build --cpu "
                    f"jsq-ps` models per-core run queues")))
        elif kind == "condition":
            lk = info.get("lock")
            m = self.obj(self.an.objects.key(lk, info.get("ts", 0))) if lk is not None else None
            lines.append(f"# condition{where}")
            decl = sw.Condition(name, m)
        else:
            lines.append(f"# {typ}{where} (used as a mutex)")
            decl = sw.Mutex(name)
        self.decls[key] = (len(self.decls), replace(decl, doc=doc(lines)))
        self.info["objects"][name] = facts

    # ----------------------------------------------------------- runners
    def runners(self) -> list:
        """The sources and runners of the model (:func:`.plan.write_runners`)."""
        return write_runners(self)

    def source(self, key, times, why: str | None = None) -> list:
        """An open source putting into the queue ``key`` at the fitted rate of the arrival
        ``times`` (a ``rate_`` parameter)."""
        q = self.obj(key)
        inter = [b - a for a, b in zip(times, times[1:]) if b >= a]
        if len(inter) < 1:
            return []
        # a first gap that no Poisson stream of the others' rate gives (its longest of n
        # gaps exceeds m (ln n + ln 1000) once in a thousand) is no part of the stream: an
        # arrival before the load began (a readiness probe's connection, seconds early)
        while len(inter) > 2:
            m = sum(inter[1:]) / (len(inter) - 1)
            if inter[0] <= m * (math.log(len(inter) - 1) + math.log(1000)):
                break
            inter, times = inter[1:], times[1:]
        f = fit(inter)
        rate = 1e9 / f.mean if f.mean > 0 else 1.0
        p = self.param(f"rate_{q}", float(f"{rate:.4g}"),
                       f"arrivals per second into '{q}' (open workload, {len(times)} arrivals)")
        self.info["sources"][q] = {"rate": rate, "n": len(times), "scv": f.scv, "param": p}
        self.arrivals[q] = list(times)         # the response timers' start (responses.py)
        name = self.names.unique(f"arrivals_{q}")
        why = why or f"completions of the takes from '{q}', nobody in the trace puts there"
        return [sw.Source(name, f.dist(mean=BinOp("/", Num(1), Ref(p))), (sw.Put(q),),
                          doc=f"open workload: {f.describe()} between arrivals ({why})")]

    def runner(self, r) -> sw.Pool:
        """A runner's lines: a header comment (threads, steady state, pruning) and its pool
        with the body."""
        ctx = _Ctx(r)
        # a GIL per process in a model of several (frontends/processes.py)
        # (a pool of processes: each worker its own GIL, which nobody else wants: none)
        self.gil = f"gil_{r.group.process}" if r.group.process else \
            None if r.group.processes else "gil"
        self.host = self.host_of.get(r.group.process, "host")     # traces of several machines
        self.aloop = self._loop(r)             # asyncio tasks: their loop's mutex (tasks.py)
        lvs = leaves(r.items)
        ctx.cpu_total = sum(_cpu_sum(lf) for lf in lvs)
        ctx.io_total = sum(_io_sum(lf) for lf in lvs)
        if r.mode == "forever" and lvs:       # the body repeats: its first step follows its last
            ctx.last_site = lvs[-1].token[2]
        ctx.bad_mutex = self._bad_mutexes(r.items)
        ctx.receiver = pruned.receiver(self, r, lvs, ctx)
        g = r.group
        names = ", ".join(g.thread_names[:4]) + (", ..." if len(g.thread_names) > 4 else "")
        head = []
        if g.main:
            head.append(f"# the main thread ({names})")
        else:
            head.append(f"# thread pool '{r.name}': {r.size} thread{'s' if r.size != 1 else ''} "
                        + (f"at a time, {len(g.tids)} in all " if r.size < len(g.tids) else "")
                        + f"({names})"
                        + (f", started at {g.start_site}" if g.start_site else ""))
        if r.mode == "forever":
            hdr = self.an.tokens.tokens[r.header]
            head.append("# steady state: the loop starting" + (f" at {hdr[2]}" if hdr[2] else "") + f" ({hdr[0]}), "
                        f"{r.iterations} iterations"
                        + (f"; {r.exits} last iteration(s) leaving the loop not modelled"
                           if r.exits else "")
                        + (f"; the first {r.warm} (the JIT's warm-up, warmup.py) left out"
                           if r.warm else ""))
            cycle = "one iteration of the loop"
        else:
            head.append("# its whole run (the model repeats it); predicted run time = "
                        f"{r.size} / throughput of {r.name}.begin")
            cycle = "the whole run"
        join = next((j for j in self.an.joins if j.pool is r), None)   # from the take on
        body = joins.pool_body(self, r, join, ctx) if join else self.items(r.items, ctx)
        labelled = {st.label: self.origin[id(st)] for st in walk_steps(body)
                    if isinstance(st, sw.Compute) and st.label and id(st) in self.origin}
        body, took = pruned.take_pruned(self, body, ctx)
        for st in walk_steps(body):            # steps the pruned CPU rewrote: the same leaf
            if isinstance(st, sw.Compute) and id(st) not in self.origin and st.label in labelled:
                self.origin[id(st)] = labelled[st.label]
        body += [st for j in self.an.joins if j.waiter is r for st in joins.waiter_steps(self, j)]
        if g.main and r.mode == "counted":
            before, after = serial_work(self, r, self._on("host"))
            body = before + body + after
        size = "1" if g.main else self.size_param[r.name]
        if ctx.pruned:
            head.append(f"# pruned: {ctx.pruned} fragment(s) below {100 * self.opt.prune:g}% "
                        f"of the runner's CPU and I/O time, {100 * ctx.pruned_share:.1f}% in all")
            head += took
        self.info["runners"][r.name] = {
            "mode": r.mode, "size": r.size, "size_param": None if g.main else size,
            "threads": list(g.tids), "thread_names": list(g.thread_names), "cycle": cycle,
            "iterations": r.iterations, "exits": r.exits}
        self.info["steps"][r.name] = ctx.steps
        pool = sw.Pool(r.name, atom(size), tuple(body), doc=doc(head))
        self.pools[r.name] = (pool, r)
        return pool

    def _bad_mutexes(self, items) -> set:
        """Mutexes whose lock/unlock do not pair up on every path (left out)."""
        keys = {lf.token[1] for lf in leaves(items) if lf.action in ("lock", "unlock")}
        bad = set()
        for k in keys:
            if _walk_locks(items, k, False, self._cond_mutex) is not False:
                bad.add(k)
        return bad

    def _cond_mutex(self, cond_key):
        info = self.an.objects.info(cond_key)
        lk = info.get("lock")
        return None if lk is None else self.an.objects.key(lk, info.get("ts", 0))

    # ------------------------------------------------------------- items
    def items(self, items, ctx, plan: set | None = None) -> list:
        """The steps of a sequence of leaves, loops and branches."""
        plan = self._plan(items, ctx) if plan is None else plan
        out: list = []
        for it in items:
            if isinstance(it, Leaf):
                got = self.leaf(it, ctx, force=id(it) in plan)
                for st in walk_steps(got):     # which leaf each step came from (reproduce.py)
                    self.origin[id(st)] = it
                out += got
                ctx.last_site = it.token[2]
            elif isinstance(it, Loop):
                out += self.loop(it, ctx)
            else:
                out += self.branch(it, ctx)
        return out

    def _plan(self, items, ctx) -> set:
        """Leaves whose CPU step must stay so the block always takes time."""
        straight = [it for it in items if isinstance(it, Leaf)]
        for it in items:
            if isinstance(it, Loop):
                return set()                       # the loop body has its own station
        for lf in straight:
            if self._station(lf, ctx) or (self._keeps_cpu(lf, ctx) and _cpu_sum(lf) > 0):
                return set()
        if not straight:
            return set()
        best = max(straight, key=_cpu_sum)
        return {id(best)}

    def _station(self, lf, ctx) -> bool:
        a = lf.action
        if a == "put":
            key = lf.token[1]
            return bool(self.an.objects.info(key).get("capacity")) and not isinstance(key[0], str)
        if a in ("lock", "wait") and lf.token[1] in ctx.bad_mutex:
            return False
        if a == "wait" and lf.token[1] in self.peer_waits:
            return False
        if a == "io":
            return self._keeps_io(lf, ctx)
        return a in STATION

    def _keeps_cpu(self, lf, ctx) -> bool:
        total = ctx.cpu_total + ctx.io_total
        return total > 0 and _cpu_sum(lf) >= self.opt.prune * total

    def _keeps_io(self, lf, ctx) -> bool:
        total = ctx.cpu_total + ctx.io_total
        return total > 0 and _io_sum(lf) >= self.opt.prune * total

    def leaf(self, lf, ctx, force=False, part: str = "all") -> list:
        """A leaf's fragment and operation; ``part`` "cpu" or "op": one of them."""
        out: list = []
        a, key, site = lf.token
        if a == "io":
            return self.io(lf, ctx)
        if part != "op" and _cpu_sum(lf) > 0:
            if force or self._keeps_cpu(lf, ctx):
                out += self.cpu(lf, ctx)
            else:
                ctx.prune(_cpu_sum(lf), _cpu_sum(lf))
        if part == "cpu":
            return out
        if a in ("lock", "unlock", "wait") and key in ctx.bad_mutex:
            return out
        if a == "wait" and (self._cond_mutex(key) in ctx.bad_mutex or key in self.peer_waits):
            return out
        if a in OPERATIONS and key in self.forked and self.forked[key] is not ctx.runner:
            # the forking thread starts and joins as many threads as the pool has
            size = self.size_param.get(self.forked[key].name)     # (the main thread's: 1)
            out.append(OPERATIONS[a](self.obj(key), Ref(size) if size else number("1"),
                                     doc=f"{'fork' if a == 'release' else 'join'}: one permit "
                                         f"per thread of pool '{self.forked[key].name}'"))
        elif a == "acquire" and self.an.objects.info(key).get("batch"):
            k = self.an.objects.info(key)["batch"]
            out.append(sw.Acquire(self.obj(key), Num(k), doc=(
                f"a batch of {k} items per pass: the items the other threads handed over, "
                "per pass of this one through its block (condqueue.py)")))
        elif a in OPERATIONS:
            out.append(OPERATIONS[a](self.obj(key)))
        elif a == "lock":
            out.append(sw.Lock(self.obj(key), doc=doc([_lock_comment(lf)])))
        elif a in ("notify", "notify_all"):
            out.append(sw.Notify(self.obj(key), all=a == "notify_all"))
        elif a == "sleep":
            xs, note = sleep_times(lf.steps)
            f = fit(xs)
            name = self.names.unique(f"sleep_{split_site(site)[1] or ''}")
            out.append(sw.Sleep(f.dist(), name, doc=f"{site}: {f.describe()}{note}"))
        return out

    def cpu(self, lf, ctx) -> list:
        """The CPU steps of a fragment: fitted (or measured) demand, GIL-bound and GIL-free
        parts, its speed-up parameter and a comment saying where it came from."""
        xs = [s.cpu for s in lf.steps if s.cpu is not None]
        loop_factor = self._loop_factor(ctx.runner)
        if loop_factor != 1.0:                 # an asyncio task: its share of the loop's work
            xs = [x * loop_factor for x in xs]
        # an asyncio task's code runs on its loop's thread, in Python: holding the GIL
        share = self.an.shares.get(id(lf), 0.0) if self.an.gil and not self.aloop else 0.0
        traces = 1
        if self.across is not None:
            xs, share, traces = self.across.samples(ctx.runner.name, lf, xs, share)
        f = fit(xs)
        by_size = size_fit(self.sizes, [s for s in lf.steps if s.cpu is not None]) \
            if traces == 1 and self.opt.demands != "empirical" else None
        prev = lf.prev or ctx.last_site
        site = lf.token[2]
        nm = self.an.sources.fragment_name(prev, site, self.an.traced_sites)
        p0, l0 = split_site(prev)
        p1, l1 = split_site(site)
        base = nm or (f"cpu_{l0}_{l1}" if l0 and p0 == p1 else f"cpu_{l1 or 'x'}")
        name = self.names.unique(base)
        where = (f"{prev} -> :{l1}" if prev and p0 == p1 else f"{prev} -> {site}" if prev
                 else f"before {site}" if site else "between two operations")
        note = (f"; {100 * share:.0f}% ran without the GIL" if 0 < share < 1 else
                "; ran without the GIL" if share >= 1 else "; holds the GIL" if self.an.gil else "")
        if self.an.gil and share <= 0 and not self.an.shares.get(("gil_decided", id(lf)), True) \
                and self._keeps_cpu(lf, ctx):
            note = ("; holds the GIL: ASSUMED, it never ran beside enough of the other threads' "
                    "Python work for the trace to tell")
            self.assumptions.append((name, f"fragment {name} ({where}) holds the GIL (no evidence "
                                           "either way: trace at a higher load to decide)"))
        ctx.steps.append({"name": name, "mean": f.mean, "scv": f.scv, "n": f.n,
                          "gil_free": share, "site": site, "prev": prev, "traces": traces})
        if traces > 1:
            note += f"; samples of {traces} traces"
        comment = [f"# {where}: {f.describe()}{note}"]
        spread = per_thread_note(lf, ctx.runner.group)
        if spread:
            comment.append(spread)
        out: list = []
        if self.opt.demands == "empirical":
            parts = [(1 - share, "gil", name), (share, "host", name + "_nogil")]
            for frac, cpu, nm2 in parts:
                if frac <= 0:
                    continue
                path, samples = self._samples(nm2, [x * frac for x in xs])
                out += self._compute(Empirical(samples, unit="us", source=path), cpu, nm2)
            return documented(out, comment)
        sp = self.param(f"speedup_{name}", 1, None)
        ctx.speedups.append(sp)
        k = self.work_param.get(ctx.runner.name)
        k = Ref(k) if k else None
        if by_size is not None:                # a demand per size class: features.py
            parts: list = []
            steps = size_steps(self, by_size, name, share, sp, k, parts)
            if lf is ctx.receiver:             # it takes the pruned CPU: see runner()
                ctx.received = (parts, len(xs))
            return documented(steps, comment)
        if lf is ctx.receiver:                 # it takes the pruned CPU: see runner()
            ctx.received = ([(f, share, sp, k, name)], len(xs))
        return documented(out + self.split(f, share, sp, k, name), comment)

    def split(self, f, share: float, sp: str, k, name: str, scale: float = 1.0) -> list:
        """A fitted demand's steps (its mean times ``scale``): GIL-bound and GIL-free
        parts by ``share``."""
        if share <= 0:
            return self._compute(f.dist(sp, scale=scale, factor=k), "gil", name)
        if share >= 1:
            return self._compute(f.dist(sp, scale=scale, factor=k), "host", name)
        return (self._compute(f.dist(sp, scale=scale * (1 - share), factor=k), "gil", name)
                + self._compute(f.dist(sp, scale=scale * share, factor=k), "host",
                                name + "_nogil"))

    def _compute(self, dist, which: str, name: str) -> list:
        """A CPU step: on the host's cores, and for Python code (``which`` "gil") holding
        the GIL, a lock whose holder runs on a core like any other thread (the model's GIL
        was a server of its own until 2026-11-27: a third core for Python on two)."""
        if which != "gil" or not self.an.gil or self.gil is None:
            steps = [sw.Compute(dist, self._on("host" if which == "gil" else which), name)]
        else:
            self.cpus.add(self.gil)
            steps = [sw.Lock(self.gil), sw.Compute(dist, self._on("host"), name),
                     sw.Unlock(self.gil)]
        if self.aloop:                         # a task's code: one task at a time on its loop
            steps = [sw.Lock(self.aloop)] + steps + [sw.Unlock(self.aloop)]
        return steps

    def _loop_factor(self, r) -> float:
        """The share of its loop's own work a task's CPU steps carry (1: none, or no task)."""
        loop = loop_of(self.an, r)
        return self.loop_cost.get(loop, (1.0,))[0] if loop is not None else 1.0

    def _loop(self, r) -> str | None:
        """The mutex of the event loop whose tasks runner ``r``'s threads are (declared on
        first use), or None."""
        loop = loop_of(self.an, r)
        if loop is None:
            return None
        key = ("loop", loop)
        if key not in self.decls:
            name = self.names.unique("event_loop" if r.group.process is None
                                     else f"event_loop_{r.group.process}")
            self.decls[key] = (len(self.decls), sw.Mutex(name, doc=(
                "the asyncio event loop: it runs one step of one task at a time, on its "
                "thread (which holds the GIL meanwhile);\na task holds it for each piece of "
                "its code and lets it go at each await (tasks.py)")))
            self.loop_names[key] = name
        return self.loop_names[key]

    def _on(self, which: str) -> str | None:
        """The cpu a step runs on: ``which`` with a GIL, else the host (not named)."""
        if not self.an.gil:
            self.cpus.add(self.host)
            return None if self.host == "host" else self.host
        if which == "host":
            which = self.host
        self.cpus.add(which)
        return which

    def _samples(self, name: str, xs) -> tuple[str, tuple]:
        """A side file of samples in us (path relative to the model) and its values."""
        rel = f"{self.samples_dir or self.net + '_samples'}/{name}.txt"
        texts = [f"{x / 1000:.3f}" for x in xs]
        self.side[rel] = "".join(t + "\n" for t in texts)
        return rel, tuple(float(t) for t in texts)

    def io(self, lf, ctx) -> list:
        """A file operation (:func:`.diskio.file_io`)."""
        return file_io(self, lf, ctx)

    def loop(self, lp, ctx) -> list:
        """A loop (:func:`.loops.write_loop`)."""
        return write_loop(self, lp, ctx)

    def branch(self, br, ctx) -> list:
        """A branch over the alternatives kept (rare and light ones pruned), probabilities
        from their counts."""
        total = ctx.cpu_total + ctx.io_total
        keep = []
        for n, alt in br.alts:
            lvs = leaves(alt)
            share = sum(_cpu_sum(lf) + _io_sum(lf) for lf in lvs) / total if total else 0
            hands = any(lf.action in ("put", "take", "await") for lf in lvs)
            p = n / sum(c for c, _ in br.alts)
            if p < self.opt.prune and share < self.opt.prune and not hands:
                ctx.prune(sum(_cpu_sum(lf) + _io_sum(lf) for lf in lvs),
                          sum(_cpu_sum(lf) for lf in lvs))
                continue
            keep.append((n, alt))
        if not keep:
            keep = [max(br.alts, key=lambda a: a[0])]
        if len(keep) == 1:
            return self.items(keep[0][1], ctx)
        ps = probs([n for n, _ in keep])
        self.info["branches"].append({"runner": ctx.runner.name, "counts": [n for n, _ in keep]})
        comment = f"{sum(n for n, _ in keep)} passes: " + ", ".join(
            f"{n} took alternative {i + 1}" for i, (n, _) in enumerate(keep))
        start = ctx.last_site
        alts = []
        for p, (_, alt) in zip(ps, keep):
            ctx.last_site = start
            alts.append(sw.Alternative(p, tuple(self.items(alt, ctx))))
        return [sw.Branch(tuple(alts), doc=comment)]


def _hosts(trace) -> tuple[dict, dict]:
    """In a trace joined from several machines (frontends/processes.py): process -> the
    name of its machine's cores (``host_NAME``), and those names -> their cores."""
    prog = getattr(trace, "header", None) and trace.header.program or {}
    procs, hosts = prog.get("processes") or [], prog.get("hosts") or []
    if len(set(hosts)) < 2 or len(hosts) != len(procs):
        return {}, {}
    cores = prog.get("host_cpus") or [None] * len(hosts)
    names = {h: "host_" + ident(h, "machine") for h in hosts}
    return ({p: names[h] for p, h in zip(procs, hosts)},
            {names[h]: c for h, c in zip(hosts, cores)})

