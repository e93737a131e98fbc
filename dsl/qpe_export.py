"""qpn models written as QPME ``.qpe`` files (QPME 2.x XML).

The model is unfolded first (parameters evaluated, subnets flattened, every
color binding a mode of its own), because QPME's modes name their colors.

* Each qpn color value becomes a QPME color; plain tokens become the color
  ``token``.  Places list only the colors they can hold.
* Queues become QPME queues (``is``, ``fcfs``, ``ps``, ``random``; ``prio``
  without preemption, its priorities mirrored because QPME serves the lowest
  value first); a shared queue stays one queue used by several places.
* qpn weighs modes, QPME chooses a transition by its weight and then a mode.
  A transition that competes for tokens with others (an immediate transition of
  the same priority shares an input place) is written as one QPME transition per
  mode (``name.mode`` when it has several), weighted by the mode's weight, with
  firing weight 1, which is exact.  Other transitions keep their modes, with the
  weights as firing weights.

Refused with the location of the qpn element: round robin and ``lcfs-pr``
queues, preemptive priorities, ``departure in-order``, inhibitor arcs, capacities
of places holding several colors, delays other than exponential on timed
transitions, timed transitions with several servers, service distributions
QPME has no equivalent for.
"""
from __future__ import annotations

import math
from collections import defaultdict
from xml.sax.saxutils import quoteattr

from qpn import disciplines
from qpn.colors import color_label
from qpn.compile import CompiledNet
from qpn.errors import ModelError
from qpn.model import IN_ORDER

STRATEGY = {d.name: d.qpme for d in disciplines.all_disciplines() if d.qpme}
XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _gamma(alpha: float, mean: float) -> tuple[tuple[str, float], ...]:
    """QPME's Gamma(alpha, lambda) has mean alpha/lambda and scv 1/alpha."""
    return ("alpha", alpha), ("lambda", alpha / mean)


#: distribution kind -> (QPME's distribution-function, its parameters (SimQPN's names) and values)
_QPME_DIST = {
    "exp": ("Exponential", lambda d: (("lambda", 1 / d.mean_),)),
    "det": ("Deterministic", lambda d: (("p1", d.value),)),
    "uniform": ("Uniform", lambda d: (("min", d.lo), ("max", d.hi))),
    "normal": ("Normal", lambda d: (("mean", d.mu), ("stdDev", d.sigma))),
    "gamma": ("Gamma", lambda d: _gamma(1 / d.scv_, d.mean_)),
    "erlang": ("Gamma", lambda d: _gamma(d.k, d.mean_)),
}


def _dist_attrs(d, where, loc) -> str:
    """QPME's attributes for a service distribution."""
    k = d.kind
    if k in _QPME_DIST:
        function, params = _QPME_DIST[k]
        return f'distribution-function="{function}"' + "".join(f' {a}="{_n(v)}"' for a, v in params(d))
    raise ModelError(f"{where}: QPME has no {k}(...) distribution", loc,
                     hint="QPME knows exponential, deterministic, uniform, normal and gamma (erlang) times")


def _competing(c: CompiledNet) -> set[int]:
    """Transitions (index) sharing an input place with another immediate one of equal priority."""
    takers = defaultdict(set)
    pre = c.pre.tocsr()
    for j, m in enumerate(c.modes):
        if m.kind == "immediate":
            for s in pre.indices[pre.indptr[j]:pre.indptr[j + 1]]:
                takers[(int(c.slot_place[s]), m.priority)].add(m.tindex)
    return {t for s in takers.values() if len(s) > 1 for t in s}


def qpn_to_qpe(c: CompiledNet) -> str:
    """The QPME XML of a compiled net.

    Parameters
    ----------
    c : the net compiled with its parameter values (:func:`qpn.compile_net`)

    Returns
    -------
    The text of a ``.qpe`` file.
    """
    colors: dict[str, str] = {}
    def color_id(v) -> str:
        name = color_label(v) or "token"
        if name not in colors:
            colors[name] = f"_c{len(colors) + 1}"
        return colors[name]

    if c.inh.nnz:
        g = int(c.inh_mode[0])
        raise ModelError(f"transition '{c.modes[g].transition}': QPME has no inhibitor arcs",
                         c.modes[g].loc, hint="model the condition with a complementary place")
    qplaces = defaultdict(list)
    for i, p in enumerate(c.places):
        if p.queue is not None:
            qplaces[p.queue].append(i)
    queues, qprio = [], {}
    for qi, q in enumerate(c.queues):
        loc = c.places[qplaces[qi][0]].loc if qplaces[qi] else None
        if q.discipline not in STRATEGY:
            raise ModelError(f"queue '{q.name}': QPME has no {q.discipline} queues", loc,
                             expected=", ".join(STRATEGY))
        d = disciplines.get(q.discipline)
        if q.speed is not None:
            raise ModelError(f"queue '{q.name}': QPME has no load-dependent queues ('speed')", loc,
                             hint="export a net whose queues have servers, or simulate it in qpn")
        if d.takes_priority and q.preemptive:
            raise ModelError(f"queue '{q.name}': QPME's PRIO queues do not preempt", loc,
                             hint="write 'queue prio nonpreemptive' if that is meant")
        if math.isinf(q.servers) and not d.infinite_servers:
            raise ModelError(f"queue '{q.name}': infinitely many servers with {q.discipline}", loc)
        servers = 1 if d.infinite_servers else int(q.servers)
        queues.append(f'    <queue id="_q{qi + 1}" name={quoteattr(q.name)} '
                      f'number-of-servers="{servers}" strategy="{STRATEGY[q.discipline]}"/>')
        if d.takes_priority:
            top = max(q.priority) if q.priority else 0
            for k, s in enumerate(q.classes):
                qprio[s] = top - q.priority[k]
    service = {}   # queue slot -> distribution
    for q in c.queues:
        for k, s in enumerate(q.classes):
            service[s] = q.service[k]
    places, ref_of = [], {}   # ref_of: token slot -> color-ref id
    nref = 0
    for i, p in enumerate(c.places):
        if p.departure == IN_ORDER:
            raise ModelError(f"place '{p.name}': QPME has no in-order departure (its FIFO offers "
                             f"one token at a time: qpn's 'departure fifo')", p.loc)
        if p.capacity is not None and len(p.colors) > 1:
            raise ModelError(f"place '{p.name}': QPME limits each color's count, qpn the total of "
                             f"{len(p.colors)} colors", p.loc)
        kind = "queueing" if p.queueing else "ordinary"
        head = (f'    <place {XSI} departure-discipline="{p.departure.upper()}" id="_p{i + 1}" '
                f'name={quoteattr(p.name)}'
                + (f' queue-ref="_q{p.queue + 1}"' if p.queueing else "") + f' xsi:type="{kind}-place">')
        refs = []
        for k, v in enumerate(p.colors):
            nref += 1
            rid = f"_r{nref}"
            ref_of[p.slots[k]] = rid
            if p.qslots is not None:
                ref_of[p.qslots[k]] = rid
            attrs = (f'color-id="{color_id(v)}" id="{rid}" '
                     f'initial-population="{int(c.m0[p.slots[k]] + (c.m0[p.qslots[k]] if p.qslots else 0))}" '
                     f'maximum-capacity="{p.capacity or 0}"')
            if p.queueing:
                qs = p.qslots[k]
                where = f"place '{p.name}'" + (f" color {color_label(v)}" if v is not None else "")
                attrs += (f' {_dist_attrs(service[qs], where, p.loc)} priority="{_n(qprio.get(qs, 0))}"'
                          f' ranking="0"')
            refs.append(f'        <color-ref {XSI} {attrs} xsi:type="{kind}-color-reference"/>')
        places += [head, "      <color-refs>", *refs, "      </color-refs>", "    </place>"]
    competing = _competing(c)
    by_t = defaultdict(list)
    for j, m in enumerate(c.modes):
        by_t[m.tindex].append(j)
    pre, post = c.pre.tocsr(), c.post.tocsr()
    trans, nid = [], 0
    for ti, js in sorted(by_t.items()):
        m0 = c.modes[js[0]]
        # a competing transition's weight decides in QPME: each of its modes becomes a transition
        # of its own (name.mode when there are several) weighted by the mode's weight
        own = m0.kind == "immediate" and ti in competing
        groups = [[j] for j in js] if own else [js]
        for group in groups:
            nid += 1
            name = m0.transition + (f".{_mode_name(c.modes[group[0]])}" if len(groups) > 1 else "")
            trans += _transition(c, group, name, nid, own, ref_of, pre, post)
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<net qpme-version="2.1.0">', "  <colors>"]
    out += [f'    <color id="{cid}" name={quoteattr(name)} real-color="#000000"/>' for name, cid in colors.items()]
    out += ["  </colors>", "  <queues>", *queues, "  </queues>", "  <places>", *places, "  </places>",
            "  <transitions>", *trans, "  </transitions>", "</net>"]
    return "\n".join(out) + "\n"


def _mode_name(m) -> str:
    parts = [m.mode] if m.mode else []
    parts += [f"{k}={color_label(v)}" for k, v in m.binding.items()]
    return "_".join(parts) or "mode"


def _transition(c, group, name, nid, own, ref_of, pre, post) -> list[str]:
    m0 = c.modes[group[0]]
    tid = f"_t{nid}"
    if m0.kind == "timed":
        if m0.servers != 1:
            raise ModelError(f"transition '{m0.transition}': QPME's timed transitions have one server",
                             m0.loc)
        head = (f'    <transition {XSI} id="{tid}" name={quoteattr(name)} priority="0" '
                f'xsi:type="timed-transition">')
    else:
        weight = c.modes[group[0]].weight if own else 1.0
        head = (f'    <transition {XSI} id="{tid}" name={quoteattr(name)} '
                f'priority="{_n(m0.priority)}" weight="{_n(weight)}" xsi:type="immediate-transition">')
    modes, conns, k = [], [], 0
    for j in group:
        m = c.modes[j]
        mid = f"{tid}_m{j + 1}"
        if m.kind == "timed":
            if m.delay is None or not m.delay.is_exponential():
                raise ModelError(f"transition '{m.transition}': QPME's timed transitions have "
                                 f"exponential delays", m.loc)
            attr = f'mean-firing-delay="{_n(m.delay.mean_)}"'
        else:
            attr = f'firing-weight="{_n(1.0 if own else m.weight)}"'
        modes.append(f'        <mode {attr} id="{mid}" name={quoteattr(_mode_name(m))} real-color="#000000"/>')
        for mat, incoming in ((pre, True), (post, False)):
            arcs = list(zip(mat.indices[mat.indptr[j]:mat.indptr[j + 1]],
                            mat.data[mat.indptr[j]:mat.indptr[j + 1]]))
            if not incoming:    # in the order written: SimQPN queues one firing's tokens so
                at = {s: i for i, s in enumerate(m.out_order)}
                arcs.sort(key=lambda a: at.get(int(a[0]), len(at)))
            for s, n in arcs:
                k += 1
                a, b = (ref_of[int(s)], mid) if incoming else (mid, ref_of[int(s)])
                conns.append(f'        <connection count="{int(n)}" id="{mid}_x{k}" source-id="{a}" '
                             f'target-id="{b}"/>')
    return [head, "      <modes>", *modes, "      </modes>", "      <connections>", *conns,
            "      </connections>", "    </transition>"]
