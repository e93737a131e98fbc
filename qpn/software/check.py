"""Checks of a software layer before it is expanded; every error is located.

* names: declared once, simple (no dots), distinct from core elements;
* references: ``lock m`` needs a mutex ``m`` (``undefined mutex 'mm'``, with a
  did-you-mean), ``read lock`` an rwlock, ``take`` a blocking queue, ...;
* numbers (where parameters have values): branch probabilities are > 0 and add
  up to 1, loops run at least once, counts and sizes are positive;
* lock discipline, per thread and path: no ``unlock`` without ``lock``, no
  lock held twice (locks are not reentrant), the same locks held after every
  alternative of a branch and every iteration of a loop, none held at the end
  (or at ``return``).  Semaphores and limits may be released by another thread
  (signalling); :func:`check` reports which ones are used in balanced pairs;
* the OpenMP steps (``parallel for``, ``critical``, ``atomic``, ``single``):
  :mod:`qpn.software.omp_check`; a critical section reached while its own lock is held
  is refused with the lock discipline.

>>> import qpn
>>> try:
...     qpn.parse("software { mutex m\\n pool p size 1 { sleep exp(1)\\n unlock m } }")
... except qpn.ModelError as e:
...     print(e.message)
unlock 'm' without holding it (on this path)
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import Loc, ModelError, suggest
from ..expr import Expr, evaluate, fmt
from . import ast as sw
from .omp_check import OMP_STEPS, check_singles, check_step, nested_critical

EPS = 1e-6
#: the largest count of tokens (threads, permits, units): qpn.compile.MAX_COUNT
MAX_COUNT = 2 ** 53


class Table:
    """Software names -> declarations, with kind-checked lookup."""

    def __init__(self, decls: list, core_names: dict[str, str]):
        self.decls: dict[str, Any] = {}
        for d in decls:
            kind = sw.KIND_NAMES[type(d)]
            if "." in d.name:
                raise ModelError(f"{kind} name '{d.name}' has a dot; software names are simple "
                                 "names (they become path prefixes such as m.free)", d.loc)
            if d.name in self.decls:
                first = self.decls[d.name]
                where = f" (first declared at {first.loc})" if first.loc else ""
                raise ModelError(f"'{d.name}' is declared twice in the software layer{where}", d.loc,
                                 hint="every resource, runner and behavior needs its own name")
            if d.name in core_names:
                raise ModelError(f"'{d.name}' is already the name of a {core_names[d.name]}", d.loc,
                                 hint="software names must differ from places, transitions and queues")
            self.decls[d.name] = d

    def of(self, *types) -> list:
        """The declarations of these types, in declaration order."""
        return [d for d in self.decls.values() if isinstance(d, types)]

    def get(self, name: str, types: tuple, loc, hint: str | None = None):
        """The declaration ``name`` of one of ``types`` or a located error
        (``loc`` may be a function computing the location, called only then)."""
        kind = sw.KIND_NAMES[types[0]]
        d = self.decls.get(name)
        if d is not None and isinstance(d, types):
            return d
        if callable(loc):
            loc = loc()
        if d is None:
            cands = [x.name for x in self.of(*types)] or list(self.decls)
            raise ModelError(f"undefined {kind} '{name}'", loc,
                             expected=f"a {kind} declared in a software block",
                             did_you_mean=suggest(name, cands), hint=hint)
        if not isinstance(d, types):
            raise ModelError(f"'{name}' is a {sw.KIND_NAMES[type(d)]}, not a {kind}", loc,
                             hint=hint or _kind_hint(d))
        return d

    def default(self, types: tuple, loc: Loc | None, what: str):
        """The only declaration of a kind (``cpu exp(1 ms)`` without ``on``)."""
        kind = sw.KIND_NAMES[types[0]]
        found = self.of(*types)
        if len(found) == 1:
            return found[0]
        if not found:
            raise ModelError(f"{what} needs a {kind}, but none is declared", loc,
                             hint=f"declare one in the software block, e.g. '{kind} host'")
        raise ModelError(f"{what} does not say which {kind}: there are "
                         f"{', '.join(d.name for d in found)}", loc,
                         expected=f"'on <{kind}>' after the step")


def target_loc(st, name: str | None = None) -> Loc | None:
    """Where a step names its target (``mm`` in ``lock mm``), else the step."""
    loc = st.loc
    name = name or getattr(st, "target", None)
    text = loc.line_text() if loc is not None else None
    if not text or not name:
        return loc
    import re
    m = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w.])").search(text, max(loc.col - 1, 0) + 1)
    if m is None:
        return loc
    return Loc(loc.file, loc.line, m.start() + 1, loc.line, m.end() + 1, loc.source)


def _kind_hint(d) -> str | None:
    return {sw.Mutex: f"lock it with 'lock {d.name}'",
            sw.RwLock: f"lock it with 'read lock {d.name}' or 'write lock {d.name}'",
            sw.Semaphore: f"take permits with 'acquire {d.name}'",
            sw.Barrier: f"wait for the others with 'await {d.name}'",
            sw.Comm: f"use a collective such as 'allreduce {d.name}', or 'await {d.name}'",
            sw.Condition: f"use 'wait {d.name}' and 'notify {d.name}'",
            sw.BlockingQueue: f"use 'put {d.name}' and 'take {d.name}'",
            sw.Limit: f"use 'allocate {d.name} else {{ ... }}' and 'free {d.name}'",
            sw.Timer: f"use 'timer start {d.name}' and 'timer stop {d.name}'",
            sw.Behavior: f"run it with 'call {d.name}'"}.get(type(d))


# ------------------------------------------------------------------- numbers
class Numbers:
    """Best-effort values of expressions (None when a name has no value)."""

    def __init__(self, values: dict | None):
        self.values = values

    def value(self, e: Expr) -> float | None:
        """The expression's value with the parameters' defaults (None: not known here)."""
        if self.values is None or e is None:
            return None
        try:
            v = evaluate(e, self.values)
        except Exception:  # undefined names etc.: the core validation reports them
            return None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def whole(self, e: Expr, what: str, loc: Loc | None, minimum: int = 1) -> None:
        """A located error unless the expression is a whole number >= ``minimum`` (where
        its value is known)."""
        v = self.value(e)
        if v is None:
            return
        if math.isinf(v) or v != int(v) or v < minimum:
            raise ModelError(f"{what} must be a whole number >= {minimum}, got {_got(e, v)}",
                             getattr(e, "loc", None) or loc)
        if v > MAX_COUNT:
            raise ModelError(f"{what} must be at most 2^53 = {MAX_COUNT:,}, got {_got(e, v)}",
                             getattr(e, "loc", None) or loc,
                             hint="counts become tokens of the net: beyond 2^53 they overflow the "
                                  "marking and the simulators' sums")

    def nonnegative(self, e: Expr, what: str, loc: Loc | None) -> None:
        """A located error unless the expression is a finite number >= 0 (where known)."""
        v = self.value(e)
        if v is not None and (not math.isfinite(v) or v < 0):
            raise ModelError(f"{what} must be a number >= 0, got {_got(e, v)}",
                             getattr(e, "loc", None) or loc)


# --------------------------------------------------------------- references
def _got(e: Expr, v: float) -> str:
    """``-2`` for a literal, ``n = 0`` for an expression."""
    text = fmt(e)
    literal = text.lstrip("-").replace(".", "", 1).isdigit() or text == f"{v:g}"
    return text if literal else f"{text} = {v:g}"


def _body(runner, table: Table):
    if isinstance(runner.body, str):
        return table.get(runner.body, (sw.Behavior,), lambda: target_loc(runner, runner.body)).body
    return runner.body


def check_references(table: Table, nums: Numbers) -> None:
    """Every name a step uses exists and has the right kind; numbers in range."""
    for d in table.decls.values():
        if isinstance(d, sw.Cpu):
            nums.whole(d.cores, f"the cores of cpu '{d.name}'", d.loc)
        elif isinstance(d, sw.Disk):
            if not _is_inf(d.servers):
                nums.whole(d.servers, f"the servers of disk '{d.name}'", d.loc)
        elif isinstance(d, sw.Semaphore):
            nums.whole(d.permits, f"the permits of semaphore '{d.name}'", d.loc, 0)
        elif isinstance(d, sw.Barrier):
            nums.whole(d.parties, f"the parties of barrier '{d.name}'", d.loc)
        elif isinstance(d, sw.Comm):
            nums.whole(d.ranks, f"the ranks of comm '{d.name}'", d.loc)
            nums.nonnegative(d.latency, f"the latency of comm '{d.name}'", d.loc)
            nums.nonnegative(d.per_byte, f"the time per byte of comm '{d.name}'", d.loc)
            if d.on is not None:
                table.get(d.on, (sw.Cpu,), lambda: target_loc(d, d.on),
                          hint="'on' names the cpu whose cores copy the messages; leave it out "
                               "for a network")
        elif isinstance(d, sw.Limit):
            nums.whole(d.count, f"limit '{d.name}'", d.loc, 0)
        elif isinstance(d, sw.BlockingQueue) and d.capacity is not None:
            nums.whole(d.capacity, f"the capacity of queue '{d.name}'", d.loc)
        elif isinstance(d, sw.Condition) and d.mutex is not None:
            table.get(d.mutex, (sw.Mutex,), lambda: target_loc(d, d.mutex))
        elif isinstance(d, (sw.Pool, sw.Population)):
            nums.whole(d.size, f"the size of {sw.KIND_NAMES[type(d)]} '{d.name}'", d.loc)
        if isinstance(d, sw.RUNNERS):
            _body(d, table)
        if isinstance(d, sw.RUNNERS + (sw.Behavior,)) and isinstance(d.body, tuple):
            _steps(d.body, table, nums)


def _is_inf(e) -> bool:
    return getattr(e, "value", None) == math.inf


def _steps(steps, table: Table, nums: Numbers) -> None:
    after_return = None
    for st in steps:
        if after_return is not None:
            raise ModelError("this step can never run: it comes after 'return'", st.loc)
        _step(st, table, nums)
        if isinstance(st, sw.Return):
            after_return = st


def _step(st, table: Table, nums: Numbers) -> None:
    t = type(st)
    if t is sw.Compute:
        if st.on is not None:
            table.get(st.on, (sw.Cpu,), lambda: target_loc(st, st.on))
        else:
            table.default((sw.Cpu,), st.loc, "a cpu step")
    elif t is sw.Io:
        disk = table.get(st.on, (sw.Disk,), lambda: target_loc(st, st.on)) if st.on is not None else \
            table.default((sw.Disk,), st.loc, "an io step")
        if disk.load and st.dist is not None:
            raise ModelError(f"disk '{disk.name}' takes its service time from its load table; "
                             f"write 'io on {disk.name}'", st.loc)
        if not disk.load and st.dist is None and disk.service is None:
            raise ModelError(f"this io step has no time and disk '{disk.name}' has no 'service'",
                             st.loc, expected=f"'io exp(2 ms) on {disk.name}' or a service time "
                                              f"on the disk")
    elif t in (sw.Lock, sw.Unlock):
        if st.mode == "mutex":
            table.get(st.target, (sw.Mutex,), lambda: target_loc(st))
        else:
            table.get(st.target, (sw.RwLock,), lambda: target_loc(st),
                      hint=f"'{st.mode} lock' needs an rwlock; a mutex is locked with 'lock'")
    elif t in (sw.Acquire, sw.Release):
        table.get(st.target, (sw.Semaphore,), lambda: target_loc(st))
        nums.whole(st.count, "the number of permits", st.loc)
    elif t is sw.Await:
        table.get(st.target, (sw.Barrier, sw.Comm), lambda: target_loc(st))
    elif t is sw.Collective:
        table.get(st.comm, (sw.Comm,), lambda: target_loc(st, st.comm))
        nums.nonnegative(st.bytes, "the message size (bytes)", st.loc)
    elif t in (sw.Wait, sw.Notify):
        table.get(st.target, (sw.Condition,), lambda: target_loc(st))
    elif t in (sw.Put, sw.Take):
        q = table.get(st.target, (sw.BlockingQueue, sw.Sink), lambda: target_loc(st))
        verb = "put" if t is sw.Put else "take"
        if isinstance(q, sw.Sink):
            if t is sw.Take:
                raise ModelError(f"nothing can be taken from sink '{q.name}'", st.loc,
                                 hint="a sink is where requests leave; take from a blocking queue")
            if st.timeout is not None or st.otherwise is not None:
                raise ModelError(f"putting into sink '{q.name}' never blocks; drop the "
                                 "timeout/else", st.loc)
        elif t is sw.Put and q.capacity is None and (st.timeout is not None or st.otherwise is not None):
            raise ModelError(f"queue '{q.name}' has no capacity, so 'put' never blocks and "
                             "needs no timeout or else", st.loc,
                             hint=f"give it one: 'blocking queue {q.name} capacity 100'")
        if st.timeout is not None and st.otherwise is None:
            raise ModelError(f"'{verb} ... timeout' needs an 'else {{ ... }}' for when it times out",
                             st.loc)
        if st.otherwise is not None:
            _steps(st.otherwise, table, nums)
    elif t is sw.Allocate:
        table.get(st.target, (sw.Limit,), lambda: target_loc(st))
        nums.whole(st.count, "the number of units", st.loc)
        _steps(st.otherwise, table, nums)
    elif t is sw.Free:
        table.get(st.target, (sw.Limit,), lambda: target_loc(st))
        nums.whole(st.count, "the number of units", st.loc)
    elif t is sw.TimerStep:
        table.get(st.target, (sw.Timer,), lambda: target_loc(st))
    elif t is sw.Branch:
        total, known = 0.0, True
        for alt in st.alternatives:
            v = nums.value(alt.prob)
            if v is None:
                known = False
            elif not 0 < v <= 1:
                raise ModelError(f"a probability must be > 0 and <= 1, got {_got(alt.prob, v)}",
                                 getattr(alt.prob, "loc", None) or alt.loc)
            else:
                total += v
            _steps(alt.body, table, nums)
        if known and abs(total - 1) > EPS:
            raise ModelError(f"the probabilities of this branch add up to {total:g}, not 1",
                             st.loc, hint="give every alternative its probability; they must sum to 1")
    elif t is sw.Loop:
        if st.geometric:
            v = nums.value(st.count)
            if v is not None and not v > 1:
                raise ModelError(f"'loop about N times' repeats a geometric number of times with "
                                 f"mean N > 1, got {v:g}", getattr(st.count, "loc", None) or st.loc,
                                 hint="for an exact count write 'loop N times'")
        else:
            nums.whole(st.count, "a loop count", st.loc)
        _steps(st.body, table, nums)
    elif t is sw.Fork:
        nums.whole(st.count, "the number of forked threads", st.loc)
        for b in st.blocks:
            _steps(b.body, table, nums)
    elif t in OMP_STEPS:
        check_step(st, table, nums, _steps, target_loc)
    elif t is sw.Call:
        table.get(st.target, (sw.Behavior,), lambda: target_loc(st))


# ------------------------------------------------------------ lock discipline
class _Held:
    """What one thread holds: key -> [count, loc of the step that took it]."""

    def __init__(self, items=None):
        self.items: dict[tuple, list] = {k: list(v) for k, v in (items or {}).items()}

    def copy(self) -> "_Held":
        return _Held(self.items)

    def key(self) -> tuple:
        return tuple(sorted((k, v[0]) for k, v in self.items.items() if v[0]))

    def add(self, k, loc):
        self.items.setdefault(k, [0, loc])[0] += 1

    def remove(self, k) -> bool:
        if self.items.get(k, [0])[0] <= 0:
            return False
        self.items[k][0] -= 1
        return True

    def locks(self) -> list:
        return [(k, v) for k, v in self.items.items() if v[0] and k[0] in ("mutex", "read", "write")]


class Discipline:
    """Walks each thread's steps (calls inlined) and checks the lock discipline."""

    def __init__(self, table: Table):
        self.table = table
        self.unbalanced: set[str] = set()     # semaphores/limits used for signalling

    def runner(self, steps, loc: Loc | None, what: str, held: "_Held | None" = None) -> None:
        """Errors for a runner's body that ends holding a lock or other resource (``held``:
        the critical sections its parent holds while it waits for it)."""
        ends: list[_Held] = []
        out = self._steps(steps, held or _Held(), ends, ())
        for h in ([out] if out is not None else []) + ends:
            self._locks_free(h, f"{what} ends while holding")
            self._resources_free(h)

    def _locks_free(self, h: _Held, msg: str) -> None:
        for (kind, name), (n, loc) in h.locks():
            lock = {"mutex": "lock", "read": "read lock", "write": "write lock"}[kind]
            raise ModelError(f"{msg} '{name}', taken here", loc,
                             hint=f"every '{lock} {name}' needs a matching unlock on every path")

    def _resources_free(self, h: _Held) -> None:
        for k, (n, _loc) in h.items.items():
            if n and k[0] in ("sem", "limit"):
                self.unbalanced.add(k[1])

    def _merge(self, states: list, loc: Loc | None, what: str) -> "_Held | None":
        live = [s for s in states if s is not None]
        if not live:
            return None
        first = live[0]
        locks = sorted((k, v[0]) for k, v in first.locks())
        for s in live[1:]:
            other = sorted((k, v[0]) for k, v in s.locks())
            if other != locks:
                diff = sorted({k for k, _n in locks} ^ {k for k, _n in other}) or [locks[0][0]]
                raise ModelError(f"{what}: '{diff[0][1]}' is held on one path but not on "
                                 "another", loc, hint="lock and unlock in the same block")
            for k in set(first.items) | set(s.items):
                if first.items.get(k, [0])[0] != s.items.get(k, [0])[0]:
                    self.unbalanced.add(k[1])
        return first

    def _steps(self, steps, h: _Held | None, ends: list, stack: tuple) -> "_Held | None":
        for st in steps:
            if h is None:
                return None
            h = self._step(st, h, ends, stack)
        return h

    def _step(self, st, h: _Held, ends: list, stack: tuple) -> "_Held | None":
        t = type(st)
        if t is sw.Lock:
            key = (st.mode, st.target)
            if any(k[1] == st.target for k, _v in h.locks()):
                raise ModelError(f"'{st.target}' is already held here; locks are not reentrant",
                                 st.loc, hint="a second lock of the same lock would wait forever")
            h.add(key, st.loc)
        elif t is sw.Unlock:
            if not h.remove((st.mode, st.target)):
                lock = {"mutex": "unlock", "read": "read unlock", "write": "write unlock"}[st.mode]
                what = "" if st.mode == "mutex" else f"{st.mode} "
                raise ModelError(f"{lock} '{st.target}' without holding it (on this path)", st.loc,
                                 hint=f"'{what}lock {st.target}' must come first in the same thread")
        elif t is sw.Wait:
            cond = self.table.decls[st.target]
            if cond.mutex is not None and not any(k == ("mutex", cond.mutex) for k, _v in h.locks()):
                raise ModelError(f"'wait {st.target}' needs mutex '{cond.mutex}' held", st.loc,
                                 hint=f"condition '{st.target}' is on '{cond.mutex}': "
                                      f"'lock {cond.mutex}' before waiting")
        elif t is sw.Acquire:
            h.add(("sem", st.target, fmt(st.count)), st.loc)
        elif t is sw.Release:
            if not h.remove(("sem", st.target, fmt(st.count))):
                self.unbalanced.add(st.target)
        elif t is sw.Allocate:
            alt = self._steps(st.otherwise, h.copy(), ends, stack)
            h.add(("limit", st.target, fmt(st.count)), st.loc)
            return self._merge([h, alt], st.loc, "after 'allocate'") if alt is not None else h
        elif t is sw.Free:
            if not h.remove(("limit", st.target, fmt(st.count))):
                self.unbalanced.add(st.target)
        elif t in (sw.Put, sw.Take) and st.otherwise is not None:
            alt = self._steps(st.otherwise, h.copy(), ends, stack)
            return self._merge([h, alt], st.loc, "after the else block")
        elif t is sw.Branch:
            outs = [self._steps(a.body, h.copy(), ends, stack) for a in st.alternatives]
            return self._merge(outs, st.loc, "after this branch")
        elif t is sw.Loop:
            once = self._steps(st.body, h.copy(), ends, stack)
            if once is not None:
                self._merge([h, once], st.loc, "around this loop")
        elif t is sw.Fork:
            for b in st.blocks:
                self.runner(b.body, b.loc, "a forked thread", _criticals(h))
        elif t is sw.ParallelFor:
            self.runner(st.body, st.loc, "a thread of a parallel for", _criticals(h))
        elif t is sw.Critical:
            key = ("critical", st.name)
            if h.items.get(key, [0])[0]:
                raise nested_critical(st, h.items[key][1])
            h.add(key, st.loc)
            out = self._steps(st.body, h, ends, stack)
            if out is not None:
                out.remove(key)
            return out
        elif t is sw.Single:     # run by one thread, skipped by the others
            ran = self._steps(st.body, h.copy(), ends, stack)
            return self._merge([ran, h], st.loc, "after this single")
        elif t is sw.Call:
            if st.target in stack:
                chain = " -> ".join(stack + (st.target,))
                raise ModelError(f"behaviors call each other in a cycle: {chain}", st.loc,
                                 hint="a behavior is inlined where it is called, so it cannot "
                                      "call itself; use a loop")
            body = self.table.decls[st.target].body
            rets: list[_Held] = []
            out = self._steps(body, h, rets, stack + (st.target,))
            return self._merge(([out] if out is not None else []) + rets, st.loc,
                               f"after 'call {st.target}'")
        elif t is sw.Return:
            ends.append(h)
            return None
        return h


def _criticals(h: _Held) -> _Held:
    """The critical sections held in ``h`` (a thread started now cannot take them)."""
    return _Held({k: v for k, v in h.items.items() if k[0] == "critical" and v[0]})


def _shape(body) -> tuple[int, list]:
    """How deep steps with blocks nest in ``body`` (0: none), and its calls with the number
    of such steps around each.  Iterative: a program built without the parser may nest
    beyond the recursion limit."""
    height, calls = 0, []
    stack = [(body, 0)]
    while stack:
        steps, depth = stack.pop()
        for st in steps:
            if type(st) is sw.Call:
                calls.append((depth, st))
            inner = sw.bodies(st)
            if inner:
                height = max(height, depth + 1)
                stack.extend((b, depth + 1) for b in inner)
    return height, calls


def check_nesting(table: Table) -> None:
    """Steps nest at most MAX_BLOCK_DEPTH deep with the behaviors they call inlined (a
    call is one more level, its behavior's steps nest below it): a located error at the
    call where the limit is crossed.  The parser checks each block alone; this follows the
    calls (a chain of behaviors each calling the next), once per behavior."""
    limit = sw.MAX_BLOCK_DEPTH
    shapes = {name: _shape(d.body) for name, d in table.decls.items() if isinstance(d, sw.Behavior)}
    deep: dict[str, int] = {}     # behavior -> levels of steps with its calls inlined

    def total(depth: int, st) -> int:
        return depth + 1 + deep.get(st.target, 0)

    for root in shapes:
        if root in deep:
            continue
        path, on_path = [root], {root}
        todo = [iter(shapes[root][1])]
        while todo:
            item = next(todo[-1], None)
            if item is None:
                name = path.pop()
                on_path.discard(name)
                todo.pop()
                height, calls = shapes[name]
                deep[name] = max([height] + [total(d, st) for d, st in calls
                                             if st.target in shapes])
                continue
            target = item[1].target
            if target in shapes and target not in deep and target not in on_path:
                path.append(target)      # (a cycle is reported by the lock discipline)
                on_path.add(target)
                todo.append(iter(shapes[target][1]))
    for runner in table.of(*sw.RUNNERS):
        body = runner.body if isinstance(runner.body, tuple) else \
            getattr(table.decls.get(runner.body), "body", ())
        height, calls = _shape(body)
        base, chain = 0, []
        while True:
            known = [(d, st) for d, st in calls if st.target in shapes]
            best = max(known, key=lambda c: total(*c), default=None)
            if best is None or base + total(*best) <= limit:
                break
            depth, st = best
            chain.append(st.target)
            if base + depth + 1 > limit or base + depth + 1 + shapes[st.target][0] > limit or \
                    st.target in chain[:-1]:
                names = " -> ".join(chain if len(chain) <= 6 else chain[:3] + ["..."] + chain[-2:])
                raise ModelError(
                    f"steps nested too deep: with the behaviors it calls inlined ({names}), "
                    f"{sw.KIND_NAMES[type(runner)]} '{runner.name}' nests steps with blocks "
                    f"(and calls) more than {limit} levels deep here; the limit is {limit}",
                    target_loc(st, st.target),
                    expected=f"at most {limit} levels of blocks and calls one inside another",
                    hint="behaviors are inlined where they are called, so a chain of calls nests "
                         "like blocks: call the behaviors one after another instead of each "
                         "from the one before")
            base += depth + 1
            height, calls = shapes[st.target]


def check(table: Table, nums: Numbers) -> set[str]:
    """Run every check; the names of semaphores/limits used for signalling."""
    check_references(table, nums)
    check_nesting(table)
    check_singles(table)
    disc = Discipline(table)
    for d in table.of(*sw.RUNNERS):
        disc.runner(_body(d, table), d.loc, f"a thread of {sw.KIND_NAMES[type(d)]} '{d.name}'")
    return disc.unbalanced
