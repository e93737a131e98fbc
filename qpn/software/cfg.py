"""Control flow of a thread as a graph, and the transitions it becomes.

Steps become nodes.  A :class:`Station` is where a thread token *stays* (a CPU
burst, a disk request, waiting for a lock): a place, entered by arcs and left
by one or more :class:`Exit` transitions.  Everything between two stations
happens in zero time and is folded into the exit transition of the first:
actions (:class:`Act`: unlock, put, timer start, ...) add arcs, choices add
modes (a branch with probabilities becomes weighted modes; a counted loop
becomes guarded modes on the loop counter carried in the token's color).

:func:`emit_exit` walks from an exit to the next stations and writes one
transition with one mode per path.

>>> from qpn.software.kit import Kit, arc
>>> kit = Kit()
>>> a = Station("w.a", (), [], None); b = Station("w.b", (), [arc("n")], None)
>>> a.exits.append(Exit("w.a.done", next=Act([Alt(outs=[arc("x")], next=b)])))
>>> t = emit_exit(kit, a, a.exits[0])
>>> [x.place for x in t.modes[0].inputs], [x.place for x in t.modes[0].outputs]
(['w.a'], ['x', 'w.b', 'n'])
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Loc, ModelError
from ..expr import BinOp, Expr, Num
from ..model import Arc, Mode, Term
from .kit import Kit, arc, conj, ctx_color, ctx_vars, mul


@dataclass(eq=False)
class LoopInfo:
    """A counted loop around stations: its counter's color set and bound."""
    colorset: str
    count: Expr


@dataclass(eq=False)
class ExitMode:
    """One alternative way of leaving a station (arcs besides the thread token)."""
    name: str | None = None
    ins: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    inh: list = field(default_factory=list)


@dataclass(eq=False)
class Exit:
    """A transition that takes the thread out of a station."""
    name: str
    modes: list = field(default_factory=lambda: [ExitMode()])
    next: "object | None" = None     # continue the walk here (None: modes place the thread)
    delay: object | None = None      # a distribution: a timed exit (timeouts)
    servers: Expr | None = None
    loc: Loc | None = None


@dataclass(eq=False)
class Station:
    """A place where a thread stays; ``entry`` arcs are produced when it enters, and it
    enters only while the ``entry_inh`` places are empty."""
    place: str
    ctx: tuple
    entry: list
    loc: Loc | None
    exits: list = field(default_factory=list)
    cycle_error: str | None = None   # message if a zero-time path leads straight back here
    entry_inh: list = field(default_factory=list)


@dataclass(eq=False)
class Alt:
    """One outcome of an action: arcs, an optional weight (probability) and guard."""
    name: str | None = None
    weight: Expr | None = None
    ins: list = field(default_factory=list)
    outs: list = field(default_factory=list)
    inh: list = field(default_factory=list)
    next: object = None


@dataclass(eq=False)
class Act:
    """Zero-time actions with alternative outcomes (usually one)."""
    alts: list
    loc: Loc | None = None


@dataclass(eq=False)
class LoopEnter:
    """An exit that enters a loop (and sets its counter, for a counted one)."""
    loop: LoopInfo | None            # None: a geometric loop (no counter)
    body: object = None
    start: Expr | None = None        # the counter's first value (None: 1; a shorter run)


@dataclass(eq=False)
class LoopBack:
    """End of a loop body: again or out."""
    loop: LoopInfo | None
    count: Expr
    body: object = None
    after: object = None
    loc: Loc | None = None


@dataclass(eq=False)
class End:
    """The thread's run ends: produce ``outs`` (e.g. into a join place) and vanish."""
    outs: list = field(default_factory=list)


@dataclass
class Path:
    """One zero-time path: mode-name parts, weight, guards and the arcs of each
    action in order (``segments`` of (inputs, outputs, inhibitors))."""
    names: list
    weight: Expr | None
    guards: list
    segments: list
    stations: list


def _walk(node, ctx: list, acc: Path, seen: tuple, out: list) -> None:
    if isinstance(node, Station):
        if len(ctx) != len(node.ctx):  # pragma: no cover - construction guarantees it
            raise AssertionError(f"context of {node.place}")
        seg = ([], [arc(node.place, 1, ctx_color(ctx))] + list(node.entry), list(node.entry_inh))
        out.append(Path(acc.names, acc.weight, acc.guards, acc.segments + [seg],
                        acc.stations + [node]))
        return
    if isinstance(node, End):
        out.append(Path(acc.names, acc.weight, acc.guards, acc.segments + [([], list(node.outs), [])],
                        acc.stations))
        return
    if any(x is node for x in seen):
        loop = next((x for x in reversed(seen) if isinstance(x, LoopBack)), node)
        raise ModelError("this loop can go round without any time passing: every path through "
                         "its body needs a step that waits or takes time", getattr(loop, "loc", None),
                         hint="add a cpu, io or sleep step to the loop body")
    seen = seen + (node,)
    if isinstance(node, Act):
        for alt in node.alts:
            _walk(alt.next, ctx, _extend(acc, alt.name, alt.weight, None, alt), seen, out)
    elif isinstance(node, LoopEnter):
        first = node.start if node.start is not None else Num(1)
        _walk(node.body, ctx + [first] if node.loop is not None else ctx, acc, seen, out)
    elif isinstance(node, LoopBack):
        if node.loop is None:  # geometric: continue with probability 1 - 1/count
            again = BinOp("-", Num(1), BinOp("/", Num(1), node.count))
            stop = BinOp("/", Num(1), node.count)
            _walk(node.body, ctx, _extend(acc, "again", again, None), seen, out)
            _walk(node.after, ctx, _extend(acc, "exit", stop, None), seen, out)
        else:
            v = ctx[-1]
            _walk(node.body, ctx[:-1] + [BinOp("+", v, Num(1))],
                  _extend(acc, "again", None, BinOp("<", v, node.count)), seen, out)
            _walk(node.after, ctx[:-1], _extend(acc, "exit", None, BinOp("==", v, node.count)),
                  seen, out)
    else:  # pragma: no cover
        raise TypeError(f"unknown control-flow node {node!r}")


def _extend(acc: Path, name, weight, guard, alt: Alt | None = None) -> Path:
    return Path(acc.names + ([name] if name else []),
                acc.weight if weight is None else (weight if acc.weight is None else mul(acc.weight, weight)),
                acc.guards + ([guard] if guard is not None else []),
                acc.segments + ([(alt.ins, alt.outs, alt.inh)] if alt else []), list(acc.stations))


# ------------------------------------------------------------ arc arithmetic
def _lin(e: Expr) -> dict:
    """A count as a linear combination {symbol or 1: coefficient}."""
    if isinstance(e, Num) and e.unit is None and isinstance(e.value, int):
        return {1: e.value}
    return {e: 1}


def _expr(comb: dict) -> Expr | None:
    parts = []
    for sym, k in comb.items():
        if k == 0:
            continue
        if sym == 1:
            parts.append(Num(k))
        else:
            parts.append(sym if k == 1 else BinOp("*", Num(k), sym))
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = BinOp("+", out, p)
    return out


def _after(a: Arc, bal: dict) -> Arc:
    """Inhibitor ``a`` of a later action, as a test of the marking before the whole
    sequence: the tokens that earlier actions took from its place count as gone (``await
    b`` twice in a row: the second entry waits until ``b.go`` is empty *after* the
    first took its token, i.e. holds at most 1 before)."""
    terms = []
    for t in a.terms:
        left = bal.get((a.place, t.color), {})
        taken = -left.get(1, 0) if set(left) <= {1} else 0
        c = t.count
        if taken > 0:
            whole = isinstance(c, Num) and isinstance(c.value, int) and c.unit is None
            c = Num(c.value + taken) if whole else BinOp("+", c, Num(taken))
        terms.append(Term(c, t.color))
    return Arc(a.place, tuple(terms), a.loc)


def combine(segments: list) -> tuple[list, list, list]:
    """Arcs of a sequence of zero-time actions fired as one transition.

    A token produced by an earlier action and consumed by a later one (``lock m``
    then ``unlock m``) cancels out; the inputs are what the sequence needs up
    front, the outputs what it leaves behind.  A test arc within one action
    (``10 q.items -> 10 q.items``) stays.  An inhibitor of a later action counts
    the tokens earlier ones took (:func:`_after`).

    >>> a = [([arc("m.free")], [arc("m.held")], []), ([arc("m.held")], [arc("m.free")], [])]
    >>> ins, outs, _ = combine(a)
    >>> [x.place for x in ins], [x.place for x in outs]
    (['m.free'], ['m.free'])
    >>> _, _, inh = combine([([arc("b.go")], [], []), ([], [], [arc("b.go")])])
    >>> inh[0].terms[0].count.value
    2
    """
    order: list = []
    bal: dict = {}
    need: dict = {}
    inh: list = []
    locs: dict = {}

    def key_of(a, t):
        k = (a.place, t.color)
        if k not in bal:
            order.append(k)
            bal[k], need[k] = {}, {}
            locs[k] = a.loc
        return k

    for ins, outs, inhs in segments:
        for a in ins:
            for t in a.terms:
                k = key_of(a, t)
                for sym, c in _lin(t.count).items():
                    bal[k][sym] = bal[k].get(sym, 0) - c
                    need[k][sym] = max(need[k].get(sym, 0), -bal[k][sym])
        for a in outs:
            for t in a.terms:
                k = key_of(a, t)
                for sym, c in _lin(t.count).items():
                    bal[k][sym] = bal[k].get(sym, 0) + c
        for a in inhs:
            inh.append(_after(a, bal))
    ins_out, outs_out = [], []
    for k in order:
        e = _expr(need[k])
        if e is not None:
            ins_out.append(arc(k[0], e, k[1], locs[k]))
    for k in order:
        left = {sym: need[k].get(sym, 0) + bal[k].get(sym, 0) for sym in set(need[k]) | set(bal[k])}
        e = _expr({sym: left[sym] for sym in sorted(left, key=lambda s: (s != 1, str(s)))})
        if e is not None:
            outs_out.append(arc(k[0], e, k[1], locs[k]))
    return ins_out, outs_out, inh


def walk(node, ctx: list) -> list[Path]:
    """Every zero-time path from ``node`` to the next stations (or the end)."""
    out: list[Path] = []
    _walk(node, list(ctx), Path([], None, [], [], []), (), out)
    return out


def thread_arc(station: Station) -> Arc:
    """The input arc taking a thread out of ``station`` (binding its loop counters)."""
    return arc(station.place, 1, ctx_color(ctx_vars(len(station.ctx))))


def _mode_name(parts: list) -> str | None:
    parts = [p for p in parts if p]
    return "_".join(parts) if parts else None


def emit_exit(kit: Kit, station: Station, ex: Exit) -> object:
    """Write the transition of one exit (one mode per exit mode and walk path)."""
    vars_ = ctx_vars(len(station.ctx))
    paths = walk(ex.next, vars_) if ex.next is not None else [Path([], None, [], [], [])]
    if ex.delay is None and _gated(ex, paths):
        # the next station may be entered only once the place this exit takes from is
        # empty (a barrier's releases: 'await b' again, at once): the thread waits for
        # that in between, or the last releases of a round would block each other
        mid = Station(f"{station.place}.left", station.ctx, [], ex.loc)
        kit.place(mid.place, colors=kit_colors(kit, station), loc=ex.loc)
        emit_exit(kit, mid, Exit(f"{mid.place}.enter", next=ex.next, loc=ex.loc))
        paths = walk(mid, vars_)
    for p in paths:
        if station.cycle_error and ex.delay is None and p.stations and p.stations[-1] is station:
            raise ModelError(station.cycle_error, station.loc,
                             hint="every run needs a step that waits or takes time "
                                  "(cpu, io, sleep, take, lock, ...)")
    modes = []
    for em in ex.modes:
        for p in paths:
            ins, outs, inh = combine([([thread_arc(station)] + em.ins, em.outs, em.inh)] + p.segments)
            modes.append(Mode(_mode_name([em.name] + p.names), tuple(ins), tuple(outs), tuple(inh),
                              conj(p.guards), p.weight if ex.delay is None else None, ex.delay,
                              loc=ex.loc))
    if ex.delay is not None and len(modes) > 1:
        # timed modes would race; take the time first, then choose in zero time
        mid = Station(f"{station.place}.timedout", station.ctx, [], ex.loc)
        kit.place(mid.place, colors=kit_colors(kit, station), loc=ex.loc)
        inner = Exit(f"{mid.place}.done", modes=ex.modes, next=ex.next, loc=ex.loc)
        emit_exit(kit, mid, inner)
        modes = [Mode(None, (thread_arc(station),), (thread_arc(mid),), (), None, None, ex.delay,
                      loc=ex.loc)]
    _check_names(modes, ex)
    if ex.delay is not None:
        return kit.transition(ex.name, modes, kind="timed", servers=ex.servers, loc=ex.loc)
    return kit.transition(ex.name, modes, loc=ex.loc)


def _gated(ex: Exit, paths: list) -> bool:
    """Whether a path after the exit enters a station only while a place is empty that
    the exit itself takes from."""
    taken = {a.place for em in ex.modes for a in em.ins}
    return any(a.place in taken for p in paths for seg in p.segments for a in seg[2])


def kit_colors(kit: Kit, station: Station) -> str | None:
    """The color set of a station's place (None: plain tokens)."""
    p = kit._places.get(station.place)
    return p.colors if p is not None else None


def _check_names(modes: list, ex: Exit) -> None:
    if len(modes) == 1:
        return
    seen = set()
    for i, m in enumerate(modes):
        name = m.name or f"m{i + 1}"
        while name in seen:
            name += "_"
        seen.add(name)
        if name != m.name:
            modes[i] = Mode(name, m.inputs, m.outputs, m.inhibitors, m.guard, m.weight, m.delay,
                            loc=m.loc)


__all__ = ["LoopInfo", "Exit", "ExitMode", "Station", "Alt", "Act", "LoopEnter", "LoopBack",
           "End", "walk", "emit_exit", "thread_arc", "combine"]
