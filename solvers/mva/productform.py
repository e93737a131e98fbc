"""Product-form detection on the net itself.

:func:`product_form` reads a compiled QPN and either returns a plain queueing
network (:class:`QNModel`: stations, classes, chains, visit ratios) that MVA
can solve, or the list of reasons why the net is not a BCMP network, each
naming the element that breaks it.

Mapping.  Every compiled mode must be a *routing step*:

* an immediate mode taking exactly one token from a depository (or from an
  ordinary *junction* place emptied only by such modes) and putting at most
  one token into a queue or junction (none: a sink).  Conflicting modes on
  the same input route with probability weight / sum of weights among the
  highest priority (lower priorities never fire: the token is always taken
  by the higher one first);
* a Poisson source: timed, exponential, no input, at most one output token;
* a timed mode with one input token and at most one output token: all timed
  modes taking from the same slot form one *timed station* whose customers
  are the tokens of that slot (servers inf: IS; servers k: k exponential
  servers, rate = sum of the rates, routing by rate; servers are per mode,
  i.e. enabling degree ``min(tokens, servers)`` per mode, which is why one
  slot's modes must agree on ``servers``).  With servers inf and a single
  mode any delay distribution is allowed (IS is insensitive).

Classes are the (queue slot) and (timed station slot) pairs; a routing mode
may change the color (class switching).  Chains are the connected components
of the routing graph: with a source they are open (visits in arrivals per
second), otherwise closed with the population ``sum(m0)`` over their slots
(visit ratios relative to a reference class).  Transient slots (tokens that
start somewhere they never return to) get visit ratio 0.

>>> import qpn
>>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
>>> qn = product_form(qpn.compile_net(net, {"users": 3}))
>>> [(s.name, s.discipline) for s in qn.stations], qn.chains[0].population
([('think', 'is'), ('cpu', 'fcfs')], 3)
>>> qn.demands().round(3).tolist()
[[1.0, 1.0]]
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix, identity
from scipy.sparse.csgraph import breadth_first_order, connected_components
from scipy.sparse.linalg import spsolve

from qpn.model import IN_ORDER, ONE_AT_A_TIME
from qpn import disciplines
from qpn.colors import color_label

REL = 1e-12  # "same mean" tolerance for FCFS/RANDOM classes

#: the reason given for a queue with a 'speed' table: product form (BCMP), not for this MVA
LOAD_DEPENDENT = "a load-dependent speed"


@dataclass
class Station:
    """A service station of the product-form network: a queue, or a timed transition
    (infinite servers) that tokens of a chain pass through."""
    name: str
    element: str          # what to name in messages: "queue cpu", "transition fail", "place p"
    discipline: str       # is | ps | fcfs | lcfs-pr | random
    servers: float        # 1, k or math.inf
    queue: int | None = None  # index into compiled.queues (None: a timed-transition station)

    @property
    def delay(self) -> bool:
        """Whether the station is a delay (infinitely many servers: no queueing)."""
        return math.isinf(self.servers)


@dataclass
class QNClass:
    """A chain's visits to one station: mean service per visit and the visit ratio."""
    slot: int             # queue slot, or the token slot a timed station takes from
    station: int
    chain: int
    service: float        # mean service time per visit (s)
    visits: float         # visit ratio (closed) or visits per second (open)
    label: str
    qclass: int | None = None  # class index inside its compiled queue


@dataclass
class Chain:
    """A routing chain: a closed one keeps ``population`` tokens, an open one receives
    ``arrival_rate`` per second and sends them to a sink."""
    name: str
    closed: bool
    population: int = 0
    arrival_rate: float = 0.0
    slots: list[int] = field(default_factory=list)     # every slot a token of the chain can be in
    classes: list[int] = field(default_factory=list)   # indices into QNModel.classes
    reference: int | None = None                       # slot with visit ratio 1 (closed)
    recurrent: list[int] = field(default_factory=list)  # slots visited in steady state (closed)


@dataclass
class Route:
    """One routing step: ``mode`` moves a token from ``src`` to ``dst``.

    ``src`` None: a source with ``rate`` arrivals per second; ``dst`` None: a
    sink.  ``kind`` is 'immediate' (prob = weight share), 'timed' (prob = rate
    share) or 'source'.
    """
    mode: int
    src: int | None
    dst: int | None
    kind: str
    prob: float = 0.0
    rate: float = 0.0


@dataclass
class QNModel:
    """The queueing network :func:`product_form` reads out of a compiled net: stations,
    chains, their classes and routes, and the visit ratios MVA needs.

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> qn = product_form(qpn.compile_net(net))
    >>> [s.name for s in qn.stations], [(ch.name, ch.closed, ch.population) for ch in qn.chains]
    (['think', 'cpu'], [('think', True, 2)])
    >>> [(k.label, k.visits, k.service) for k in qn.classes]
    [('think', 1.0, 1.0), ('cpu', 1.0, 1.0)]
    """
    stations: list[Station]
    classes: list[QNClass]
    chains: list[Chain]
    routes: list[Route]
    slot_visits: np.ndarray   # [nchains, nslots]
    mode_visits: np.ndarray   # [nchains, nmodes]: firings per unit chain throughput
    timed_slots: dict[int, list[int]] = field(default_factory=dict)  # station slot -> its modes

    def demands(self) -> np.ndarray:
        """Service demand per (chain, station): sum of visits x mean service.

        >>> import qpn
        >>> qn = product_form(qpn.compile_net(qpn.load("models/mm1.qpn")))
        >>> qn.demands().tolist()          # open chain: arrivals per second x service time
        [[0.8]]
        """
        d = np.zeros((len(self.chains), len(self.stations)))
        for k in self.classes:
            d[k.chain, k.station] += k.visits * k.service
        return d

    @property
    def closed(self) -> list[int]:
        """Indices of the closed chains."""
        return [i for i, c in enumerate(self.chains) if c.closed]

    @property
    def open(self) -> list[int]:
        """Indices of the open chains."""
        return [i for i, c in enumerate(self.chains) if not c.closed]


def _dedupe(xs: list[str]) -> list[str]:
    return list(dict.fromkeys(xs))


def _in_arrival_order(discipline: str) -> bool:
    """Whether one server of ``discipline`` finishes tokens in their arrival order (a
    FIFO depository behind it then releases them as they finish)."""
    s = disciplines.get(discipline).scheduling
    return s.serves == "first" and s.order == "arrival"


def _place_name(c, s: int) -> str:
    return c.places[c.slot_place[s]].name


def slot_name(c, s: int) -> str:
    """``cpu(a)``-style label of a slot (no depository/queue suffix)."""
    col = color_label(c.slot_color[s])
    return _place_name(c, s) + (f"({col})" if col else "")


def _queue_element(c, qi: int) -> str:
    q = c.queues[qi]
    places = {c.places[p].name for p in q.places}
    return f"place {places.pop()}" if len(places) == 1 else f"queue {q.name}"


def _mode_structure(c) -> tuple[list[str], dict[int, list[int]], list[tuple]]:
    """Check every mode is a routing step; consumers of each token slot."""
    # reasons in order, each once (a colored net repeats one per mode: 10^5 copies and a
    # sum over a place's slots per mode made this quadratic); passive resources first
    first: dict[str, None] = {}
    later: dict[str, None] = {}
    pre, post = c.pre.tocsr(), c.post.tocsr()
    consumers: dict[int, list[int]] = {}
    steps: list[tuple] = []  # (mode, src or None, dst or None)
    marked = [not p.queueing and c.m0[p.slots].sum() > 0 for p in c.places]
    for m, mode in enumerate(c.modes):
        ins = pre.indices[pre.indptr[m]:pre.indptr[m + 1]]
        nin = int(pre.data[pre.indptr[m]:pre.indptr[m + 1]].sum())
        outs = post.indices[post.indptr[m]:post.indptr[m + 1]]
        nout = int(post.data[post.indptr[m]:post.indptr[m + 1]].sum())
        t = f"transition {mode.transition}"
        if nin > 1:
            for s in ins:
                pi = c.slot_place[s]
                if marked[pi]:
                    first[f"place {c.places[pi].name}: a passive resource: tokens wait in an "
                          f"ordinary place with initial tokens (taken together with "
                          f"other tokens by transition {mode.transition})"] = None
            later[f"{t}: synchronizes {nin} tokens (not a routing step)"] = None
        if nout > 1:
            later[f"{t}: produces {nout} tokens (a fork, not a routing step)"] = None
        if nin == 0 and mode.kind == "immediate":
            later[f"{t}: an immediate transition without inputs fires infinitely often"] = None
        if nin == 0 and mode.kind == "timed" and not mode.delay.is_exponential():
            later[f"{t}: a source with a non-exponential delay ({mode.delay.kind}) "
                  f"is not a Poisson arrival stream"] = None
        if nin <= 1 and nout <= 1:
            src = int(ins[0]) if nin else None
            steps.append((m, src, int(outs[0]) if nout else None))
            if src is not None:
                consumers.setdefault(src, []).append(m)
    for m in sorted(set(c.inh_mode.tolist())):
        later[f"transition {c.modes[m].transition}: inhibitor arc"] = None
    for p in c.places:
        if p.capacity is not None:
            later[f"place {p.name}: capacity"] = None
    return list(reversed(first)) + list(later), consumers, steps


def _slot_kinds(c, consumers):
    """Classify token slots: vanishing (immediate) or timed station; reasons."""
    reasons: list[str] = []
    prob = np.zeros(len(c.modes))
    timed: dict[int, list[int]] = {}
    station_mean: dict[int, float] = {}
    station_servers: dict[int, float] = {}
    for s, ms in consumers.items():
        kinds = {c.modes[m].kind for m in ms}
        where = f"place {_place_name(c, s)}"
        if len(kinds) > 1:
            reasons.append(f"{where}: taken both by immediate and timed transitions")
            continue
        if kinds == {"immediate"}:
            top = max(c.modes[m].priority for m in ms)
            act = [m for m in ms if c.modes[m].priority == top]
            w = np.array([c.modes[m].weight for m in act], dtype=float)
            prob[act] = w / w.sum()
            continue
        servers = {c.modes[m].servers for m in ms}
        names = sorted({c.modes[m].transition for m in ms})
        if len(servers) > 1:
            reasons.append(f"{where}: taken by timed transitions with different servers "
                           f"({', '.join(names)})")
            continue
        srv = servers.pop()
        general = len(ms) == 1 and math.isinf(srv)
        bad = [m for m in ms if not c.modes[m].delay.is_exponential()]
        if bad and not general:
            mm = c.modes[bad[0]]
            what = "a race of several timed transitions" if len(ms) > 1 else f"servers {srv}"
            reasons.append(f"transition {mm.transition}: a non-exponential delay "
                           f"({mm.delay.kind}) with {what} is not a product-form station")
            continue
        means = np.array([c.modes[m].delay.mean() for m in ms], dtype=float)
        if np.any(means <= 0):
            reasons.append(f"transition {names[0]}: zero delay")
            continue
        rates = 1.0 / means
        prob[ms] = rates / rates.sum()
        timed[s] = list(ms)
        station_mean[s] = 1.0 / rates.sum()
        station_servers[s] = srv
    return reasons, prob, timed, station_mean, station_servers


def _routing(c, steps, prob):
    """Slot-level transfer matrix P (nslots x nslots), exit vector, sources."""
    ns = c.nslots
    rows, cols, vals = [], [], []
    exit_ = np.zeros(ns)
    lam = np.zeros(ns)
    routes: list[Route] = []
    for m, src, dst in steps:
        mode = c.modes[m]
        if src is None:
            rate = 1.0 / mode.delay.mean()
            routes.append(Route(m, None, dst, "source", rate=rate))
            if dst is not None:
                lam[dst] += rate
            continue
        routes.append(Route(m, src, dst, mode.kind, prob=prob[m]))
        if prob[m] == 0:
            continue
        if dst is None:
            exit_[src] += prob[m]
        else:
            rows.append(src)
            cols.append(dst)
            vals.append(prob[m])
    for q in c.queues:  # a service completion moves the token to its depository
        rows += list(q.classes)
        cols += list(q.dslots)
        vals += [1.0] * len(q.classes)
    P = csr_matrix((vals, (rows, cols)), shape=(ns, ns))
    P.sum_duplicates()
    return P, exit_, lam, routes


def _scc_closed(P, exit_, idx: np.ndarray) -> list[np.ndarray]:
    """Strong components of the sub-graph ``idx``; those no token leaves."""
    sub = P[idx][:, idx]
    n, lab = connected_components(sub, directed=True, connection="strong")
    out_rows = P[idx].sum(axis=1).A1 - sub.sum(axis=1).A1  # flow to slots outside idx
    leaves = np.zeros(n, dtype=bool)
    coo = sub.tocoo()
    leaves[lab[coo.row[lab[coo.row] != lab[coo.col]]]] = True
    leaves[lab[(exit_[idx] > 0) | (out_rows > 1e-15)]] = True
    closed = [np.flatnonzero(lab == k) for k in range(n) if not leaves[k]]
    return sorted(closed, key=lambda members: members[0])  # deterministic messages


def _traffic(P, idx: np.ndarray, arrivals: np.ndarray | None, ref: int = 0) -> np.ndarray:
    """Visits v = arrivals + P^T v over the slots ``idx`` (sparse).

    Without arrivals (a closed chain's recurrent slots) the system is
    singular by one; the equation of ``ref`` is replaced by ``v[ref] = 1``.
    """
    A = (identity(len(idx), format="csr") - P[idx][:, idx].T).tolil()
    if arrivals is None:
        arrivals = np.zeros(len(idx))
        arrivals[ref] = 1.0
        A[ref, :] = 0.0
        A[ref, ref] = 1.0
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # a singular A: the visits are not finite, said below
        return np.atleast_1d(spsolve(A.tocsc(), arrivals))


def _visits_beyond_floats(c, v: np.ndarray, idx) -> str | None:
    """A reason when the visit ratios did not come out finite: a routing probability
    below the rounding of 1 (weight 1e-320 beside 2: 2e320 visits per cycle, campaign 49)
    makes the traffic equations singular in floating point."""
    if np.all(np.isfinite(v)):
        return None
    return (f"place {slot_name(c, idx[0])}: the visit ratios do not fit in floating point (a "
            "routing probability below the rounding of 1: weights more than 1e16 apart)")


def product_form(compiled) -> "QNModel | list[str]":
    """A :class:`QNModel` of ``compiled``, or the reasons it is not product form.

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> qn = product_form(qpn.compile_net(net))
    >>> type(qn).__name__, qn.closed, qn.demands().tolist()
    ('QNModel', [0], [[1.0, 1.0]])
    >>> [r.split(":")[0] for r in product_form(qpn.compile_net(qpn.load("models/mutex.qpn")))]
    ['place lock', 'transition acquire', 'transition release']
    """
    c = compiled
    reasons, consumers, steps = _mode_structure(c)
    r2, prob, timed, smean, sservers = _slot_kinds(c, consumers)
    reasons += r2
    for qi, q in enumerate(c.queues):
        if disciplines.get(q.discipline).product_form is None:
            reasons.append(f"queue {q.name}: {q.discipline} is not product form")
    for p in c.places:
        if p.departure in ONE_AT_A_TIME:
            reasons.append(f"place {p.name}: departure {p.departure} (one token available at a time)")
        if p.queueing and p.departure == IN_ORDER:
            q = c.queues[p.queue]
            if not (_in_arrival_order(q.discipline) and q.servers == 1):
                reasons.append(f"place {p.name}: departure in-order on a {q.discipline} queue with "
                               f"servers {q.servers} (finished tokens wait for earlier ones)")
    if reasons:
        return _dedupe(reasons)
    P, exit_, lam, routes = _routing(c, steps, prob)
    ns = c.nslots
    # slots that ever hold a token: reachable from initial tokens and sources
    root = ns
    seeds = np.flatnonzero((c.m0 > 0) | (lam > 0))
    G = csr_matrix((np.ones(P.nnz + len(seeds)),
                    (np.r_[P.tocoo().row, [root] * len(seeds)], np.r_[P.tocoo().col, seeds])),
                   shape=(ns + 1, ns + 1))
    active = np.zeros(ns, dtype=bool)
    if len(seeds):
        order = breadth_first_order(G, root, directed=True, return_predecessors=False)
        active[order[order < ns]] = True
    is_queue = np.asarray(c.slot_is_queue, dtype=bool)
    node = is_queue.copy()
    node[list(timed)] = True
    for s in np.flatnonzero(active & ~node):
        if s not in consumers:
            p = c.places[c.slot_place[s]]
            where = "its depository" if p.queueing else "it"
            reasons.append(f"place {slot_name(c, s)}: no transition takes tokens from {where}")
    if reasons:
        return _dedupe(reasons)
    # chains: weakly connected components of the routing graph over active slots
    aidx = np.flatnonzero(active)
    sub = P[aidx][:, aidx]
    ncomp, comp = connected_components(sub, directed=True, connection="weak")
    chains: list[Chain] = []
    slot_visits = []
    for k in range(ncomp):
        idx = aidx[comp == k]
        members = set(idx.tolist())
        srcs = sorted({c.modes[r.mode].transition for r in routes
                       if r.src is None and r.dst is not None and r.dst in members})
        v = np.zeros(ns)
        closed_sccs = _scc_closed(P, exit_, idx)
        if srcs:
            if closed_sccs:
                s = idx[closed_sccs[0][0]]
                reasons.append(f"place {slot_name(c, s)}: tokens from source "
                               f"{', '.join(srcs)} can never leave (a cycle without exit)")
                continue
            v[idx] = _traffic(P, idx, lam[idx])
            why = _visits_beyond_floats(c, v[idx], idx)
            if why:
                reasons.append(why)
                continue
            chains.append(Chain(" + ".join(srcs), False, arrival_rate=float(lam[idx].sum()),
                                slots=idx.tolist()))
        else:
            pop = int(c.m0[idx].sum())
            if len(closed_sccs) != 1:
                names = [slot_name(c, idx[cs[0]]) for cs in closed_sccs] or \
                    [slot_name(c, s) for s in idx[:1]]
                why = "tokens leave through a sink and no source refills them" if not closed_sccs \
                    else f"tokens end up in {len(closed_sccs)} separate cycles ({', '.join(names)})"
                reasons.append(f"place {names[0]}: a closed chain where {why}")
                continue
            rec = idx[closed_sccs[0]]
            stations_in = [s for s in rec if node[s]]
            if not stations_in:
                names = sorted({c.modes[r.mode].transition for r in routes if r.src in set(rec)})
                reasons.append(f"transition {names[0]}: immediate transitions loop forever "
                               f"(a timeless trap)")
                continue
            with_tokens = [s for s in stations_in if c.m0[s] > 0]
            ref = (with_tokens or stations_in)[0]
            v[rec] = _traffic(P, rec, None, int(np.flatnonzero(rec == ref)[0]))
            why = _visits_beyond_floats(c, v[rec], rec)
            if why:
                reasons.append(why)
                continue
            chains.append(Chain(slot_name(c, ref), True, population=pop, slots=idx.tolist(),
                                reference=int(ref), recurrent=rec.tolist()))
        slot_visits.append(v)
    if reasons:
        return _dedupe(reasons)
    # a source without output (a pure timed event) is a chain of its own
    free = [r for r in routes if r.src is None and r.dst is None]
    for r in free:
        chains.append(Chain(c.modes[r.mode].transition, False, arrival_rate=r.rate))
        slot_visits.append(np.zeros(ns))
    V = np.array(slot_visits).reshape(len(chains), ns)
    MV = np.zeros((len(chains), len(c.modes)))
    chain_of = {s: ci for ci, ch in enumerate(chains) for s in ch.slots}
    for r in routes:
        if r.src is None and r.dst is not None:
            MV[chain_of[r.dst], r.mode] = r.rate
        elif r.src is not None and r.src in chain_of:
            MV[chain_of[r.src], r.mode] = V[chain_of[r.src], r.src] * r.prob
    for k, r in enumerate(free):
        MV[len(chains) - len(free) + k, r.mode] = r.rate
    return _build(c, chains, routes, V, MV, chain_of, timed, smean, sservers)


def _build(c, chains, routes, V, MV, chain_of, timed, smean, sservers):
    """Stations and classes of the active slots; per-discipline checks."""
    reasons: list[str] = []
    stations: list[Station] = []
    classes: list[QNClass] = []
    for qi, q in enumerate(c.queues):
        act = [j for j, s in enumerate(q.classes) if s in chain_of]
        if not act:
            continue
        el = _queue_element(c, qi)
        dists = [q.service[j] for j in act]
        means = np.array([d.mean() for d in dists], dtype=float)
        same_exp = all(d.is_exponential() for d in dists) and \
            np.allclose(means, means[0], rtol=REL, atol=0)
        disc, srv = q.discipline, q.servers
        d = disciplines.get(disc)
        if q.speed is not None:
            # product form holds (BCMP), but this MVA takes a capacity of min(n, servers) only
            reasons.append(f"{el}: {LOAD_DEPENDENT} (product form, but this MVA takes servers only; "
                           f"the CTMC or the simulator solve it)")
        elif math.isinf(srv):
            pass  # no queueing at all: an IS station whatever the discipline says
        elif d.product_form == "exponential":
            if not all(d.is_exponential() for d in dists):
                bad = next(d for d in dists if not d.is_exponential())
                reasons.append(f"{el}: {disc.upper()} with non-exponential service ({bad.kind})")
            elif not same_exp:
                reasons.append(f"{el}: {disc.upper()} with class-dependent service times")
        elif d.product_form == "any" and not d.shares_service and srv > 1 and not same_exp:
            # BCMP's type-4 station (LCFS-PR) keeps product form for any service with one server
            reasons.append(f"{el}: {disc.upper()} with {srv} servers needs exponential service "
                           f"with the same mean for every class")
        si = len(stations)
        stations.append(Station(q.name, el, "is" if math.isinf(srv) else disc, srv, qi))
        for j in act:
            s = q.classes[j]
            ch = chain_of[s]
            classes.append(QNClass(s, si, ch, float(means[act.index(j)]), float(V[ch, s]),
                                   slot_name(c, s), j))
    for s in sorted(timed):
        if s not in chain_of:
            continue
        names = sorted({c.modes[m].transition for m in timed[s]})
        name = names[0] if len(names) == 1 else slot_name(c, s)
        el = f"transition {name}" if len(names) == 1 else f"place {name}"
        srv = sservers[s]
        si = len(stations)
        stations.append(Station(name, el, "is" if math.isinf(srv) else "fcfs", srv, None))
        ch = chain_of[s]
        classes.append(QNClass(s, si, ch, smean[s], float(V[ch, s]), slot_name(c, s)))
    if reasons:
        return _dedupe(reasons)
    for ci, ch in enumerate(chains):
        ch.classes = [k for k, cl in enumerate(classes) if cl.chain == ci]
    qn = QNModel(stations, classes, chains, routes, V, MV, {s: timed[s] for s in timed})
    D = qn.demands()
    for ci in qn.closed:
        if chains[ci].population > 0 and D[ci].sum() <= 0:
            return [f"place {chains[ci].name}: a closed chain with zero total service time "
                    f"(its tokens would circulate infinitely fast)"]
    return qn


__all__ = ["product_form", "QNModel", "Station", "QNClass", "Chain", "Route", "slot_name"]
