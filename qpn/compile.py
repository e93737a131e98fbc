"""Compile a flat net with parameter values into unfolded arrays.

Colors are unfolded: every (place, color) gets a *token slot* (for a queueing
place: its depository) and every (queueing place, color) also a *queue slot*.
A marking is an integer vector over all slots.  Every mode of every
transition, for every binding of its variables that satisfies its guard,
becomes one compiled mode with ``pre`` (consumed from token slots) and
``post`` (produced into token or queue slots) rows.  Queues serve their queue
slots and move tokens to the matching depository slot.

This is the one representation the CTMC generator, the simulator and the
structural analysis share.

>>> import qpn
>>> net = qpn.parse("place a init 2\\nplace b\\ntransition t : a -> 2 b")
>>> c = compile_net(net)
>>> c.m0.tolist(), c.pre.toarray().tolist(), c.post.toarray().tolist()
([2, 0], [[1, 0]], [[0, 2]])
"""
from __future__ import annotations

import itertools
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from . import disciplines
from .colors import ColorIndex, color_count, color_label, color_values
from .distributions import Distribution
from .errors import Loc, ModelError
from .expr import Expr, Num, Ref, TupleExpr, evaluate, fmt, refs
from .model import EnumColors, Queue, QueueingPlace, RecordColors, Transition
from .net import Net
from .params import param_values

MAX_BINDINGS = 1_000_000
#: slots and color bindings a net may unfold into: compiling costs 10-30 us for each,
#: and the analyses and the simulator's statistics grow with them (a counted loop of
#: 8,192 rounds, 49,000 of them, took 73 s and 15 GB to simulate).  Beyond it, compiling
#: is refused with the estimate (QPN_EXPANSION_LIMIT raises it); loading checks a sample
MAX_EXPANSION = 20_000
EXPANSION_ENV = "QPN_EXPANSION_LIMIT"
CHECKED_SAMPLE = 1_000


def expansion_limit() -> int:
    """The unfolding limit: QPN_EXPANSION_LIMIT if set (a whole number), else MAX_EXPANSION."""
    text = os.environ.get(EXPANSION_ENV, "").strip().replace("_", "")
    if not text:
        return MAX_EXPANSION
    if not text.isdigit():
        raise ModelError(f"{EXPANSION_ENV} must be a whole number, got {text!r}")
    return int(text)


#: the most servers a queue that places each token on one of them (jsq-ps) may have
MAX_PLACED_SERVERS = 4096
#: token counts at which a queue's 'speed' expression in n is evaluated (the last value
#: holds for more tokens)
SPEED_POINTS = 4096


@dataclass
class CompiledPlace:
    """A place unfolded: its colors and the slot of each (two per color if queueing)."""
    name: str
    colors: list                  # color values; [None] for plain tokens
    queueing: bool
    capacity: int | None
    slots: list[int]              # token (depository) slot per color
    qslots: list[int] | None      # queue slot per color (queueing places)
    queue: int | None             # index into CompiledNet.queues
    departure: str = "normal"
    loc: Loc | None = None


@dataclass
class CompiledQueue:
    """A queue with numbers for its parameters: discipline, servers, the service
    distribution and priority of each class (queue slot) it serves."""
    name: str
    discipline: str
    servers: float                # math.inf for infinitely many
    quantum: float | None
    switch: float
    preemptive: bool
    classes: list[int] = field(default_factory=list)   # queue slots served
    dslots: list[int] = field(default_factory=list)    # depository slot of each class
    service: list[Distribution] = field(default_factory=list)
    priority: list[float] = field(default_factory=list)
    places: list[int] = field(default_factory=list)    # place index of each class
    speed: np.ndarray | None = None   # capacity with n = 1, 2, ... tokens (the last for more)

    @property
    def peak(self) -> float:
        """The most service capacity the queue has: its servers, or its speed table's
        largest entry (utilization is the share of it in use; servers k = speed [1 .. k]).

        >>> CompiledQueue("db", "ps", 1.0, None, 0.0, True, speed=np.array([1.0, 2.5, 1.8])).peak
        2.5
        """
        return self.servers if self.speed is None else float(self.speed.max())

    def capacity(self, n):
        """The queue's total service capacity with ``n`` tokens present (array-wise):
        ``min(n, servers)``, or its ``speed`` table (its last entry beyond its end).

        >>> q = CompiledQueue("db", "ps", 1.0, None, 0.0, True, speed=np.array([1.0, 1.5, 1.8]))
        >>> q.capacity(np.arange(6)).tolist()
        [0.0, 1.0, 1.5, 1.8, 1.8, 1.8]
        """
        n = np.asarray(n)
        if self.speed is None:
            return np.minimum(n, self.servers).astype(float)
        i = np.clip(n - 1, 0, len(self.speed) - 1).astype(np.int64)
        return np.where(n > 0, self.speed[i], 0.0)


@dataclass
class CompiledMode:
    """One binding of one mode of one transition: a row of ``pre`` and ``post``."""
    transition: str
    mode: str | None
    binding: dict
    kind: str                     # 'immediate' | 'timed'
    weight: float
    priority: float
    delay: Distribution | None
    servers: float
    tindex: int
    loc: Loc | None = None
    #: the slots the mode puts tokens into, in the order its output arcs are written: one
    #: firing's tokens enter their places (a FCFS queue's line) in this order
    out_order: tuple = ()

    @property
    def label(self) -> str:
        """``transition.mode[x=a]``: how results and messages name the mode."""
        s = self.transition
        if self.mode:
            s += f".{self.mode}"
        if self.binding:
            s += "[" + ",".join(f"{k}={color_label(v)}" for k, v in self.binding.items()) + "]"
        return s


@dataclass
class CompiledNet:
    """The arrays every solver reads: slots, initial marking, incidence (``pre``,
    ``post``), inhibitor groups, capacities, and the compiled places, queues and modes."""
    net: Net
    params: dict[str, Any]
    places: list[CompiledPlace]
    queues: list[CompiledQueue]
    modes: list[CompiledMode]
    slot_place: np.ndarray        # place index of each slot
    slot_color: list              # color value of each slot
    slot_is_queue: np.ndarray     # True for queue slots
    m0: np.ndarray
    pre: Any                      # scipy.sparse.csr_matrix (modes x slots)
    post: Any
    inh: Any                      # csr (groups x slots) of 0/1; group g inhibits mode inh_mode[g]
    inh_threshold: np.ndarray
    inh_mode: np.ndarray
    cap: Any                      # csr (places with capacity x slots) of 0/1
    cap_limit: np.ndarray
    transitions: list[str] = field(default_factory=list)

    @property
    def nslots(self) -> int:
        """The number of slots (token and queue slots)."""
        return len(self.slot_color)

    def place_index(self, name: str) -> int:
        """The index of place ``name`` in :attr:`places` (KeyError if none)."""
        for i, p in enumerate(self.places):
            if p.name == name:
                return i
        raise KeyError(name)

    def slot_label(self, s: int) -> str:
        """``place(color):queue`` or ``:depository``: how messages name slot s."""
        p = self.places[self.slot_place[s]]
        c = color_label(self.slot_color[s])
        part = "queue" if self.slot_is_queue[s] else ("depository" if p.queueing else "")
        name = p.name + (f"({c})" if c else "")
        return f"{name}:{part}" if part else name

    def is_exponential(self) -> bool:
        """Whether every delay and service time is exponential."""
        return all(m.delay is None or m.delay.is_exponential() for m in self.modes) and \
            all(d.is_exponential() for q in self.queues for d in q.service)


#: the largest token count, capacity, server count or arc multiplicity: markings are int64
#: vectors and the simulators add counts up in float64, exact up to 2^53
MAX_COUNT = 2 ** 53
#: the largest weight of an immediate mode: weights are summed into probabilities
MAX_WEIGHT = 1e100


def _big(v: int | float) -> str:
    """A large count for a message (6 digits; an int beyond the floats by its size).

    >>> _big(2 ** 60), _big(10 ** 400)
    ('1.15292e+18', 'about 1e400')
    """
    return f"{v:.6g}" if v <= sys.float_info.max else f"about 1e{int(math.log10(v))}"


def _int(v: Any, what: str, loc, *, minimum: int = 0, allow_inf: bool = False) -> int | float:
    if allow_inf and isinstance(v, float) and math.isinf(v) and v > 0:
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            (isinstance(v, float) and (not v.is_integer() or math.isinf(v))):
        raise ModelError(f"{what} must be a whole number, got {v!r}", loc)
    if v > MAX_COUNT:
        raise ModelError(f"{what} must be at most 2^53 = {MAX_COUNT:,}, got {_big(v)}", loc,
                         hint="counts beyond it overflow the marking and the simulators' sums")
    v = int(v)
    if v < minimum:
        raise ModelError(f"{what} must be >= {minimum}, got {v}", loc)
    return v


def _num(v: Any, what: str, loc, *, positive=False, nonneg=False,
         maximum: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        raise ModelError(f"{what} must be a number, got {v!r}", loc)
    if positive and not v > 0:
        raise ModelError(f"{what} must be > 0, got {v}", loc)
    if nonneg and v < 0:
        raise ModelError(f"{what} must be >= 0, got {v}", loc)
    if v > maximum:
        raise ModelError(f"{what} must be at most {maximum:g}, got {v:g}", loc)
    return v


class _Compiler:
    def __init__(self, net: Net, params: Mapping[str, Any]):
        self.net = net
        self.params = dict(params)
        self.colorsets = net.colorset_map
        self.env: dict[str, Any] = dict(self.params)
        for cs in self.colorsets.values():
            if isinstance(cs, EnumColors):
                for v in cs.values:
                    self.env[v] = v
        self.cvalues: dict[str, list] = {}
        self.cindex: dict[str, ColorIndex] = {}
        self.sample: int | None = None     # bindings per mode to check (None: all)
        self.place_colors = {p.name: p.colors for p in net.places}

    def values_of(self, csname: str | None) -> list:
        if csname is None:
            return [None]
        if csname not in self.cvalues:
            self.cvalues[csname] = color_values(self.colorsets[csname], self.colorsets, self.env)
        return self.cvalues[csname]

    def count_of(self, csname: str | None) -> int:
        """The number of colors of a set, counted without listing them unless listed."""
        if csname is None:
            return 1
        if csname in self.cvalues:
            return len(self.cvalues[csname])
        return color_count(self.colorsets[csname], self.colorsets, self.env)

    def index_of(self, csname: str) -> ColorIndex:
        """Color -> its index in the color set (computed, not a table of every color)."""
        ix = self.cindex.get(csname)
        if ix is None:
            ix = self.cindex[csname] = ColorIndex(self.colorsets[csname], self.colorsets, self.env)
        return ix

    def ev(self, e: Expr, env=None) -> Any:
        if type(e) is Num and e.unit is None:
            return e.value
        return evaluate(e, env if env is not None else self.env)

    # ------------------------------------------------------------ places
    def compile_places(self):
        places, slot_place, slot_color, slot_q = [], [], [], []
        queue_index: dict[str, int] = {}
        queues: list[CompiledQueue] = []
        for q in self.net.queues:
            queue_index[q.name] = len(queues)
            queues.append(self.compile_queue(q))
        # validating a net too large to unfold (a sample of bindings): slots are numbers
        # only, no per-slot arrays (a counted loop of 10^6 rounds took 2.3 s to refuse)
        sampled = self.sample is not None
        nslots = 0
        for pi, p in enumerate(self.net.places):
            colors = self.values_of(p.colors)
            cap = None
            if p.capacity is not None:
                cap = _int(self.ev(p.capacity), f"the capacity of '{p.name}'", p.loc, minimum=1,
                           allow_inf=True)
                cap = None if cap == math.inf else cap
            slots = range(nslots, nslots + len(colors)) if sampled else \
                list(range(nslots, nslots + len(colors)))
            nslots += len(colors)
            if not sampled:
                for c in colors:
                    slot_place.append(pi)
                    slot_color.append(c)
                    slot_q.append(False)
            qslots = None
            qi = None
            if isinstance(p, QueueingPlace):
                qslots = range(nslots, nslots + len(colors)) if sampled else \
                    list(range(nslots, nslots + len(colors)))
                nslots += len(colors)
                if not sampled:
                    for c in colors:
                        slot_place.append(pi)
                        slot_color.append(c)
                        slot_q.append(True)
                if isinstance(p.queue, Queue):
                    qi = len(queues)
                    queues.append(self.compile_queue(p.queue))
                else:
                    qi = queue_index[p.queue]
                self.add_classes(queues[qi], p, pi, colors, slots, qslots)
            places.append(CompiledPlace(p.name, colors, qslots is not None, cap, slots, qslots, qi,
                                        getattr(p, "departure", "normal"), p.loc))
        m0 = np.zeros(0 if sampled else nslots, dtype=np.int64)
        for cp, p in zip(places, self.net.places):
            total = 0
            for t in p.init:
                n = _int(self.ev(t.count), f"the initial marking of '{p.name}'", p.loc)
                idx = self.color_index(p.colors, t.color, self.env, p.loc, f"initial marking of '{p.name}'")
                # initial tokens of a queueing place start in its queue
                target = cp.qslots[idx] if cp.queueing else cp.slots[idx]
                total += n
                if total > MAX_COUNT:     # several init terms: each in range, their sum not
                    raise ModelError(f"the initial marking of '{p.name}' must be at most 2^53 = "
                                     f"{MAX_COUNT:,} tokens, got {_big(total)}", p.loc)
                if not sampled:
                    m0[target] += n
            if cp.capacity is not None and total > cp.capacity:
                raise ModelError(f"place '{p.name}' starts with {total} tokens but its capacity is "
                                 f"{cp.capacity}", p.loc)
        return places, queues, np.asarray(slot_place, dtype=np.int64), slot_color, \
            np.asarray(slot_q, dtype=bool), m0

    def compile_queue(self, q: Queue) -> CompiledQueue:
        servers = _int(self.ev(q.servers), f"'servers' of queue '{q.name}'", q.loc, minimum=1,
                       allow_inf=True)
        quantum = None
        if q.quantum is not None:
            quantum = _num(self.ev(q.quantum), f"the quantum of queue '{q.name}'", q.loc, positive=True)
        switch = 0.0
        if q.switch is not None:
            switch = _num(self.ev(q.switch), f"the switch cost of queue '{q.name}'", q.loc, nonneg=True,
                          maximum=1e100)
        disc = q.discipline
        d = disciplines.find(disc)
        if getattr(d, "infinite_servers", False):
            servers = math.inf
        if d is not None and d.scheduling.serves == "cores" and not servers <= MAX_PLACED_SERVERS:
            # each arrival scans the servers for the least loaded one
            raise ModelError(f"queue '{q.name}': {disc} places each token on one of its servers: "
                             f"it needs servers 1 to {MAX_PLACED_SERVERS} (a machine's cores), "
                             f"not {servers:g}", q.loc)
        return CompiledQueue(q.name, disc, servers, quantum, switch, q.preemptive,
                             speed=None if q.speed is None else self.speed_table(q))

    def speed_table(self, q: Queue) -> np.ndarray:
        """The capacity of a load-dependent queue with n = 1, 2, ... tokens: its table, or
        its expression in n at n = 1 .. SPEED_POINTS."""
        what = f"the speed of queue '{q.name}'"
        if isinstance(q.speed, tuple):
            vals = [_num(self.ev(e), f"{what} with {i + 1} token{'s' if i else ''}", q.loc,
                         positive=True, maximum=1e300) for i, e in enumerate(q.speed)]
        else:
            env = dict(self.env)
            vals = []
            for n in range(1, SPEED_POINTS + 1):
                env["n"] = n
                vals.append(_num(evaluate(q.speed, env), f"{what} at n = {n}", q.loc,
                                 positive=True, maximum=1e300))
        return np.asarray(vals, dtype=float)

    def add_classes(self, cq: CompiledQueue, p: QueueingPlace, pi: int, colors, slots, qslots):
        by_color: dict[Any, Distribution] = {}
        default = None
        for s in p.service:
            if s.color is None:
                default = s.dist
            else:
                by_color[self.color_value(p.colors, s.color, self.env, p.loc)] = s.dist
        prio_default = 0.0
        prio: dict[Any, float] = {}
        for c, lv in p.priority:
            v = _num(self.ev(lv), f"a priority level of '{p.name}'", p.loc)
            if c is None:
                prio_default = v
            else:
                prio[self.color_value(p.colors, c, self.env, p.loc)] = v
        bound_once: dict[int, Distribution] = {}   # every color binds in the same env
        if self.sample is not None:     # validating only: every color has a time, a sample binds
            if default is None:
                missing = next((c for c in colors if c not in by_color), None)
                if missing is not None:
                    raise ModelError(f"queueing place '{p.name}' has no service time for color "
                                     f"'{color_label(missing)}'", p.loc)
            colors = colors[:self.sample]
        for c, s, qs in zip(colors, slots, qslots):
            d = by_color.get(c, default)
            if d is None:
                raise ModelError(f"queueing place '{p.name}' has no service time for color "
                                 f"'{color_label(c)}'", p.loc)
            bound = bound_once.get(id(d))
            if bound is None:
                bound = bound_once[id(d)] = d.bind(self.env)
                bound.check(self.env)
            cq.classes.append(qs)
            cq.dslots.append(s)
            cq.service.append(bound)
            cq.priority.append(prio.get(c, prio_default))
            cq.places.append(pi)

    # ------------------------------------------------------------ colors
    def color_value(self, csname, e: Expr, env, loc, what="color"):
        v = self.ev(e, env)
        if csname is not None and (self.values_of(csname) is None or v not in self.index_of(csname)):
            raise ModelError(f"{what}: color {color_label(v)} is not in color set '{csname}'", loc,
                             expected=_describe_set(self.values_of(csname)))
        return v

    def color_index(self, csname, e: Expr | None, env, loc, what) -> int:
        if csname is None:
            return 0
        v = self.color_value(csname, e, env, loc, what)
        return self.index_of(csname)[v]

    # -------------------------------------------------------- transitions
    def variables(self, mode) -> dict[str, str]:
        """Binding variables of a mode -> color set name (from its input patterns)."""
        out: dict[str, str] = {}
        consts = self.env

        def pat(e, csname):
            if isinstance(e, Ref):
                if e.name not in consts and "." not in e.name:
                    out.setdefault(e.name, csname)
            elif isinstance(e, TupleExpr):
                cs = self.colorsets.get(csname)
                if isinstance(cs, RecordColors):
                    for item, (_f, sub) in zip(e.items, cs.fields):
                        pat(item, sub)
        for a in mode.inputs:
            csname = self.place_colors[a.place]
            if csname is not None:
                for t in a.terms:
                    pat(t.color, csname)
        return out

    def expansion(self) -> list[tuple[int, str, Any]]:
        """(size, what, loc) of every place (its slots) and mode (its variable bindings,
        guards not applied): what compiling will enumerate, counted before doing it."""
        out = []
        for p in self.net.places:
            n = self.count_of(p.colors) * (2 if isinstance(p, QueueingPlace) else 1)
            out.append((n, f"place '{p.name}'", p.loc))
        for t in self.net.transitions:
            for m in t.modes:
                n = 1
                for cs in self.variables(m).values():
                    n *= self.count_of(cs)
                out.append((n, f"transition '{t.name}'", m.loc or t.loc))
        return out

    def check_expansion(self, limit: int, refuse: bool) -> bool:
        """Whether the net unfolds within ``limit`` slots and bindings.  When it does not:
        a ModelError with the estimate, located at the largest part (``refuse``), else
        False (the caller then checks a sample of each mode's bindings)."""
        parts = self.expansion()
        total = sum(n for n, _w, _l in parts)
        if total <= limit:
            return True
        if not refuse:
            return False
        parts.sort(key=lambda x: -x[0])
        top = ", ".join(f"{w} {n:,}" for n, w, _l in parts[:3])
        raise ModelError(f"the net unfolds into {total:,} slots and color bindings, more than the "
                         f"limit of {limit:,} ({top}): compiling, analysing and simulating it "
                         "would take minutes and gigabytes", parts[0][2],
                         hint="use smaller color sets or parameters (--set NAME=VALUE) or a "
                              f"probabilistic loop instead of a counted one; {EXPANSION_ENV}=N "
                              "raises the limit")

    def bindings(self, t: Transition, mode):
        vars_ = self.variables(mode)
        if not vars_:
            yield {}, self.env
            return
        names = list(vars_)
        domains = [self.values_of(vars_[n]) for n in names]
        total = 1
        for d in domains:
            total *= len(d)
        if total > MAX_BINDINGS:
            raise ModelError(f"transition '{t.name}' has {total} variable bindings (limit "
                             f"{MAX_BINDINGS})", mode.loc or t.loc,
                             hint="use fewer variables or smaller color sets")
        combos = itertools.product(*domains)
        if self.sample is not None:       # validating a net too large to unfold: a sample
            combos = itertools.islice(combos, self.sample)
        for combo in combos:
            b = dict(zip(names, combo))
            env = dict(self.env)
            for n, v in b.items():
                env[n] = v
                cs = self.colorsets.get(vars_[n])
                if isinstance(cs, RecordColors):
                    for (f, _s), x in zip(cs.fields, v):
                        env[f"{n}.{f}"] = x
            if mode.guard is not None:
                g = evaluate(mode.guard, env)
                if not isinstance(g, bool):
                    raise ModelError(f"the guard of '{t.name}' must be true or false, got {g!r}",
                                     mode.loc or t.loc)
                if not g:
                    continue
            yield b, env

    def compile_transitions(self, places: list[CompiledPlace]):
        pidx = {p.name: i for i, p in enumerate(places)}
        modes: list[CompiledMode] = []
        pre_r, pre_c, pre_v = [], [], []
        post_r, post_c, post_v = [], [], []
        inh_rows: list[list[int]] = []
        inh_thr: list[int] = []
        inh_mode: list[int] = []
        for ti, t in enumerate(self.net.transitions):
            prio = 0.0
            if t.priority is not None:
                prio = _num(self.ev(t.priority), f"the priority of '{t.name}'", t.loc)
            servers = 1
            if t.servers is not None:
                servers = _int(self.ev(t.servers), f"'servers' of '{t.name}'", t.loc, minimum=1,
                               allow_inf=True)
            for m in t.modes:
                for binding, env in self.bindings(t, m):
                    row = len(modes)
                    out_order: dict[int, None] = {}
                    weight = 1.0
                    delay = None
                    if t.kind == "immediate":
                        if m.weight is not None:
                            weight = _num(self.ev(m.weight, env), f"the weight of '{t.name}'",
                                          m.loc or t.loc, nonneg=True, maximum=MAX_WEIGHT)
                            if weight == 0:     # a branch given no share (a mix without
                                continue        # that class): the mode never fires
                    else:
                        delay = m.delay.bind(env)
                        delay.check(env)
                    for arcs, rows, cols, vals, role in (
                            (m.inputs, pre_r, pre_c, pre_v, "input"),
                            (m.outputs, post_r, post_c, post_v, "output")):
                        for a in arcs:
                            cp = places[pidx[a.place]]
                            csname = self.place_colors[a.place]
                            for term in a.terms:
                                n = _int(self.ev(term.count, env), f"the multiplicity of arc "
                                         f"'{a.place}' in '{t.name}'", a.loc or m.loc or t.loc)
                                if n == 0:
                                    continue
                                ci = self.color_index(csname, term.color, env, a.loc or m.loc or t.loc,
                                                      f"{role} '{a.place}' of '{t.name}'")
                                slot = cp.qslots[ci] if (role == "output" and cp.queueing) else cp.slots[ci]
                                rows.append(row)
                                cols.append(slot)
                                vals.append(n)
                                if role == "output":
                                    out_order.setdefault(slot, None)
                    for a in m.inhibitors:
                        cp = places[pidx[a.place]]
                        csname = self.place_colors[a.place]
                        for term in a.terms:
                            n = _int(self.ev(term.count, env), f"the inhibitor threshold of "
                                     f"'{a.place}' in '{t.name}'", a.loc or m.loc or t.loc, minimum=1)
                            ci = self.color_index(csname, term.color, env, a.loc or m.loc or t.loc,
                                                  f"inhibitor '{a.place}' of '{t.name}'")
                            group = [cp.slots[ci]] + ([cp.qslots[ci]] if cp.queueing else [])
                            inh_rows.append(group)
                            inh_thr.append(n)
                            inh_mode.append(row)
                    modes.append(CompiledMode(t.name, m.name, binding, t.kind, weight, prio, delay,
                                              servers if t.kind == "timed" else 1, ti, m.loc or t.loc,
                                              tuple(out_order)))
        return modes, (pre_r, pre_c, pre_v), (post_r, post_c, post_v), inh_rows, inh_thr, inh_mode


def _describe_set(values: list) -> str:
    if len(values) > 8:
        return ", ".join(color_label(v) for v in values[:4]) + ", ..., " + color_label(values[-1])
    return ", ".join(color_label(v) for v in values)


def _csr(coo, shape):
    from scipy.sparse import csr_matrix
    r, c, v = coo
    return csr_matrix((np.asarray(v, dtype=np.int64), (np.asarray(r, dtype=np.int64),
                                                      np.asarray(c, dtype=np.int64))), shape=shape)


def compile_net(net: Net, params: Mapping[str, Any] | None = None, *,
                check_only: bool = False) -> CompiledNet | None:
    """Unfold ``net`` (flattened if needed) with parameter values.

    ``params`` overrides parameters (like ``net.with_params``).  With
    ``check_only`` every value is checked but no arrays are built.
    """
    if not net.is_flat:
        net = net.flatten()
    if params:
        net = net.with_params(**params)
    values = param_values(net)
    comp = _Compiler(net, values)
    if not comp.check_expansion(expansion_limit(), refuse=not check_only):
        comp.sample = CHECKED_SAMPLE
    places, queues, slot_place, slot_color, slot_q, m0 = comp.compile_places()
    modes, pre, post, inh_rows, inh_thr, inh_mode = comp.compile_transitions(places)
    if check_only:
        return None
    nslots = len(slot_color)
    nmodes = len(modes)
    r, c = [], []
    for g, group in enumerate(inh_rows):
        for s in group:
            r.append(g)
            c.append(s)
    inh = _csr((r, c, [1] * len(r)), (len(inh_rows), nslots))
    cap_places = [p for p in places if p.capacity is not None]
    r, c = [], []
    for g, p in enumerate(cap_places):
        for s in p.slots + (p.qslots or []):
            r.append(g)
            c.append(s)
    cap = _csr((r, c, [1] * len(r)), (len(cap_places), nslots))
    return CompiledNet(
        net=net, params=values, places=places, queues=queues, modes=modes,
        slot_place=slot_place, slot_color=slot_color, slot_is_queue=slot_q, m0=m0,
        pre=_csr(pre, (nmodes, nslots)), post=_csr(post, (nmodes, nslots)),
        inh=inh, inh_threshold=np.asarray(inh_thr, dtype=np.int64),
        inh_mode=np.asarray(inh_mode, dtype=np.int64),
        cap=cap, cap_limit=np.asarray([p.capacity for p in cap_places], dtype=np.int64),
        transitions=[t.name for t in net.transitions])


__all__ = ["compile_net", "CompiledNet", "CompiledPlace", "CompiledQueue", "CompiledMode", "fmt", "refs"]
