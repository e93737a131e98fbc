"""``qpn check``: structural analysis of a net, as located diagnostics.

* P- and T-invariants (exact integer Farkas), boundedness by covering P-invariants;
* timeless traps: immediate transitions that can fire forever in zero time;
* dead transitions and reachable deadlocks (small nets, by reachability);
* elements not connected; colors that never reach a place.

>>> import qpn
>>> rep = qpn.check(qpn.parse("place a init 1\\nplace b\\n"
...     "transition t1 : a -> b\\ntransition t2 : b -> a"))
>>> [str(i) for i in rep.p_invariants], [e.code for e in rep.errors]
(['a + b = 1'], ['timeless-trap'])
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .. import resources
from ..colors import color_label
from ..compile import CompiledNet, compile_net
from ..errors import Loc
from ..model import QueueingPlace
from ..net import Net
from .semiflows import TooManySemiflows, p_semiflows, t_semiflows

MAX_INVARIANT_SIZE = 3000   # slots or modes; beyond, invariants are skipped
MAX_REACH_MARKINGS = 20_000


@dataclass
class Diagnostic:
    """One finding of the structural check, located where the model says so."""
    severity: str          # 'error' | 'warning' | 'info'
    code: str
    message: str
    loc: Loc | None = None

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        return f"{where}{self.severity}: {self.message}"


@dataclass
class Invariant:
    """A P-invariant (weighted token count that no firing changes) or a T-invariant
    (firing counts that reproduce a marking), as weights by name."""
    weights: dict[str, int]     # "place" or "place(color)" -> weight
    tokens: int | None = None   # weighted token count (P-invariants)

    def __str__(self) -> str:
        terms = [(f"{w} " if w != 1 else "") + name for name, w in self.weights.items()]
        s = " + ".join(terms)
        return f"{s} = {self.tokens}" if self.tokens is not None else s


@dataclass
class StructureReport:
    """What :func:`check` found: diagnostics, invariants, boundedness."""
    net: Net
    diagnostics: list[Diagnostic] = field(default_factory=list)
    p_invariants: list[Invariant] = field(default_factory=list)
    t_invariants: list[Invariant] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)
    open_net: bool = False
    markings: int | None = None

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics of severity 'error'."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        """The diagnostics of severity 'warning'."""
        return [d for d in self.diagnostics if d.severity == "warning"]

    @property
    def bounded(self) -> bool | None:
        """True if P-invariants cover every place, False if some place is uncovered, None
        when the check could not tell (no invariants computed)."""
        return None if not self.p_invariants and self.uncovered == [] else not self.uncovered

    def add(self, severity, code, message, loc=None):
        """Record a diagnostic."""
        self.diagnostics.append(Diagnostic(severity, code, message, loc))


def _merged(c: CompiledNet):
    """Incidence over (place, color) units: queue and depository merged."""
    unit_of = np.empty(c.nslots, dtype=np.int64)
    labels: list[str] = []
    places: list[int] = []
    for pi, p in enumerate(c.places):
        for k, col in enumerate(p.colors):
            u = len(labels)
            labels.append(p.name + (f"({color_label(col)})" if col is not None else ""))
            places.append(pi)
            unit_of[p.slots[k]] = u
            if p.qslots is not None:
                unit_of[p.qslots[k]] = u
    n = len(labels)
    # a sparse fold: a dense (modes x slots) @ (slots x units) product of a 61-place,
    # 77-color net ran for minutes in numpy's integer matmul
    fold = sp.csr_matrix((np.ones(c.nslots, dtype=np.int64), (np.arange(c.nslots), unit_of)),
                         shape=(c.nslots, n))
    if len(c.modes):
        resources.require(f"the incidence matrix ({n:,} places x colors by {len(c.modes):,} "
                          "modes)", 8.0 * n * len(c.modes))
        C = np.asarray(((c.post - c.pre) @ fold).T.toarray(), dtype=np.int64)
    else:
        C = np.zeros((n, 0), dtype=np.int64)
    m0 = np.asarray(fold.T @ c.m0, dtype=np.int64)
    return C, m0, labels, places


def _mode_labels(c: CompiledNet) -> list[str]:
    return [m.label for m in c.modes]


def check_net(net: Net, params=None) -> StructureReport:
    """Analyse ``net`` (flattened and unfolded with its parameter values)."""
    flat = net.flatten()
    c = compile_net(flat, params)
    rep = StructureReport(net)
    C, m0, labels, unit_place = _merged(c)
    rep.open_net = any(c.pre[i].nnz == 0 for i in range(len(c.modes)))
    _connectivity(flat, rep)
    _never_produced(c, C, m0, labels, unit_place, rep)
    if max(len(labels), len(c.modes)) <= MAX_INVARIANT_SIZE:
        _invariants(c, C, m0, labels, unit_place, rep)
    else:
        rep.add("info", "skipped", f"invariants skipped: {len(labels)} places x {len(c.modes)} "
                "modes is beyond the structural-analysis size limit")
    _traps(c, rep)
    if c.modes and c.nslots <= 400 and len(c.modes) <= 2000:
        _reachability(c, rep)
    return rep


def bounded_places(c: CompiledNet) -> set[str]:
    """Names of the places a positive P-invariant covers: their token counts are bounded
    whatever happens (empty when the net is beyond the invariants' size limit).

    >>> import qpn
    >>> sorted(bounded_places(qpn.compile_net(qpn.parse("place a init 1\\nplace b\\n"
    ...     "transition t1 : a -> b delay exp(1)\\ntransition t2 : b -> a delay exp(1)"))))
    ['a', 'b']
    """
    C, m0, labels, unit_place = _merged(c)
    if max(len(labels), len(c.modes)) > MAX_INVARIANT_SIZE:
        return set()
    try:
        pf = p_semiflows(C)
    except TooManySemiflows:
        return set()
    covered = np.zeros(len(labels), dtype=bool)
    for y in pf:
        covered |= np.asarray(y) > 0
    names = {c.places[unit_place[i]].name for i in range(len(labels))}
    return names - {c.places[unit_place[i]].name for i in np.flatnonzero(~covered)}


def _connectivity(flat: Net, rep: StructureReport) -> None:
    import networkx as nx
    g = nx.Graph()
    for p in flat.places:
        g.add_node(("p", p.name))
    for t in flat.transitions:
        g.add_node(("t", t.name))
        arcs = [a for m in t.modes for a in (m.inputs + m.outputs + m.inhibitors)]
        if not arcs:
            rep.add("warning", "isolated", f"transition '{t.name}' has no arcs", t.loc)
        for a in arcs:
            g.add_edge(("t", t.name), ("p", a.place))
    for p in flat.places:
        if g.degree(("p", p.name)) == 0:
            rep.add("warning", "isolated", f"place '{p.name}' is not connected to any transition", p.loc)
    for p in flat.places:  # places served by one shared queue interact through its servers
        if isinstance(p, QueueingPlace) and isinstance(p.queue, str):
            g.add_edge(("p", p.name), ("q", p.queue))
    comps = [c for c in nx.connected_components(g) if len(c) > 1]
    if len(comps) > 1:
        sizes = sorted((len(c) for c in comps), reverse=True)
        names = [sorted(n for _k, n in comp)[0] for comp in comps]
        rep.add("warning", "disconnected", f"the net has {len(comps)} unconnected parts "
                f"(sizes {sizes}; e.g. around {', '.join(repr(n) for n in names[:4])})")


def _never_produced(c, C, m0, labels, unit_place, rep) -> None:
    produced = np.asarray((c.post.sum(axis=0))).ravel()
    unit_prod = np.zeros(len(labels), dtype=np.int64)
    for s in range(c.nslots):
        pass
    consumed_by: dict[int, list[int]] = {}
    pre = c.pre.tocsc()
    for pi, p in enumerate(c.places):
        for k, col in enumerate(p.colors):
            slots = [p.slots[k]] + ([p.qslots[k]] if p.qslots is not None else [])
            u = None
            prod = sum(produced[s] for s in slots)
            if prod > 0 or any(c.m0[s] > 0 for s in slots):
                continue
            users = sorted({c.modes[i].transition for i in pre[:, p.slots[k]].nonzero()[0]})
            what = f"color {color_label(col)} never reaches place '{p.name}'" if col is not None \
                else f"place '{p.name}' never receives a token"
            if users:
                rep.add("warning", "never-produced",
                        f"{what}, so {', '.join(repr(u) for u in users)} cannot take it", p.loc)
            elif col is not None and len(p.colors) > 1:
                continue  # an unused color of a shared color set is fine
            else:
                rep.add("info", "never-produced", what, p.loc)


def _invariants(c, C, m0, labels, unit_place, rep) -> None:
    try:
        pf = p_semiflows(C)
    except TooManySemiflows as exc:
        rep.add("info", "skipped", f"P-invariants skipped: {exc}")
        pf = None
    if pf is not None:
        covered = np.zeros(len(labels), dtype=bool)
        for y in pf:
            w = {labels[i]: v for i, v in enumerate(y) if v}
            rep.p_invariants.append(Invariant(w, int(sum(int(v) * int(m0[i]) for i, v in enumerate(y)))))
            covered |= np.asarray(y) > 0
        # a place with a capacity is bounded by it (like a complementary place)
        unc = sorted({c.places[unit_place[i]].name for i in np.flatnonzero(~covered)
                      if c.places[unit_place[i]].capacity is None})
        rep.uncovered = unc
        if unc:
            sev = "info" if rep.open_net else "warning"
            why = "open net: fed by sources" if rep.open_net else "may be unbounded"
            locs = {p.name: p.loc for p in c.places}
            rep.add(sev, "uncovered", f"not covered by a P-invariant ({why}): {', '.join(unc)}",
                    locs.get(unc[0]))
    try:
        tf = t_semiflows(C)
    except TooManySemiflows as exc:
        rep.add("info", "skipped", f"T-invariants skipped: {exc}")
        return
    names = _mode_labels(c)
    for x in tf:
        rep.t_invariants.append(Invariant({names[i]: v for i, v in enumerate(x) if v}))


def _traps(c: CompiledNet, rep: StructureReport) -> None:
    """Immediate modes that can fire forever without time passing."""
    import networkx as nx
    imm = [i for i, m in enumerate(c.modes) if m.kind == "immediate"]
    if not imm:
        return
    pre = c.pre.tocsr()
    post = c.post.tocsr()
    ordinary = ~c.slot_is_queue & np.array([not c.places[p].queueing for p in c.slot_place], dtype=bool)
    g = nx.DiGraph()
    for i in imm:
        g.add_node(("m", i))
        for s in pre[i].indices:
            if ordinary[s]:
                g.add_edge(("s", s), ("m", i))
        for s in post[i].indices:
            if ordinary[s]:
                g.add_edge(("m", i), ("s", s))
    groups = []
    for comp in nx.strongly_connected_components(g):
        modes = sorted(i for k, i in comp if k == "m")
        if len(comp) > 1 and modes:
            groups.append(modes)
    for i in imm:  # an immediate mode with no inputs fires forever on its own
        if pre[i].nnz == 0:
            groups.append([i])
    reported = set()
    capped = set(c.cap.indices.tolist()) if c.cap is not None else set()
    for modes in groups:
        D = (post[modes] - pre[modes]).toarray().T   # slots x modes
        rows = np.flatnonzero(np.any(D != 0, axis=1))
        # firing forever may pile tokens up (a slack per place), except in a place with a
        # capacity: it fills, and a loop that needs room there stops (a producer's puts
        # into a bounded queue are not a trap)
        free = [k for k, r in enumerate(rows) if r not in capped]
        A = np.hstack([D[rows], -np.eye(len(rows), dtype=np.int64)[:, free]])
        try:
            flows = t_semiflows(A)
        except TooManySemiflows:
            continue
        for x in flows:
            sup = [modes[k] for k in range(len(modes)) if x[k]]
            if not sup:
                continue
            trans = sorted({c.modes[i].transition for i in sup})
            key = tuple(trans)
            if key in reported:
                continue
            reported.add(key)
            loc = next((t.loc for t in rep.net.flatten().transitions if t.name == trans[0]), None)
            exit_ = _exit_mode(c, pre, post, sup, modes, imm, capped)
            if exit_ is not None:
                # a retry loop: each round leaves with positive probability, so it repeats
                # forever with probability 0 (the solvers resolve it in zero time)
                rep.add("info", "timeless-loop", "immediate transitions "
                        f"{', '.join(repr(t) for t in trans)} may repeat in zero time, but each round "
                        f"can leave the loop by {c.modes[exit_].label!r}: not a trap", loc)
                continue
            inhibited = any(int(mi) in sup for mi in c.inh_mode)
            sev = "warning" if inhibited else "error"
            extra = " unless their inhibitor arcs stop them" if inhibited else ""
            rep.add(sev, "timeless-trap", "timeless trap: immediate transitions "
                    f"{', '.join(repr(t) for t in trans)} can fire forever in zero time{extra}",
                    loc)


def _exit_mode(c: CompiledNet, pre, post, loop: list[int], group: list[int], imm: list[int],
               capped: set) -> int | None:
    """An immediate mode outside the loop's strongly connected ``group`` (so it cannot lead
    back into it in zero time) that is enabled whenever some loop mode is (it needs no
    more tokens, has no inhibitor and puts nothing into a place with a capacity) and
    competes with it (priority at least the loop mode's): None if there is none."""
    inhibited = {int(mi) for mi in c.inh_mode}
    inside = set(group)
    for m in loop:
        need = pre[m].toarray().ravel()
        for e in imm:
            if e in inside or e in inhibited or pre[e].nnz == 0:
                continue
            if c.modes[e].priority < c.modes[m].priority or capped & set(post[e].indices.tolist()):
                continue
            if np.all(pre[e].toarray().ravel() <= need):
                return e
    return None


def _reachability(c: CompiledNet, rep: StructureReport) -> None:
    from .reachability import explore
    r = explore(c, MAX_REACH_MARKINGS)
    if not r.complete:
        rep.add("info", "skipped", f"dead-transition check skipped: more than "
                f"{MAX_REACH_MARKINGS} reachable markings")
        return
    rep.markings = r.markings
    tlocs = {t.name: t.loc for t in rep.net.flatten().transitions}
    dead_modes: dict[str, list[int]] = {}
    all_modes: dict[str, list[int]] = {}
    for i, m in enumerate(c.modes):
        all_modes.setdefault(m.transition, []).append(i)
        if not r.ever_enabled[i]:
            dead_modes.setdefault(m.transition, []).append(i)
    for t, dead in dead_modes.items():
        if len(dead) == len(all_modes[t]):
            rep.add("warning", "dead", f"transition '{t}' can never fire "
                    f"(checked all {r.markings} reachable markings)", tlocs.get(t))
    for m in r.deadlocks[:1]:
        marked = [c.slot_label(s) + (f"={m[s]}" if m[s] != 1 else "") for s in np.flatnonzero(m)]
        rep.add("warning", "deadlock", "the net can reach a marking where nothing can happen: "
                + (", ".join(marked) if marked else "(empty)"))
