"""Hierarchy -> flat net.  Element names become paths (``web.cpu``).

Each instance parameter becomes a global parameter named by its path
(``web.threads``), defined by the argument expression, so overriding
``web.threads`` on the flat net works like any other parameter.

>>> import qpn
>>> net = qpn.parse('''
... subnet Pool(n = 1) { input jobs
...   place idle init n
...   transition take : jobs, idle -> idle }
... instance a = Pool(n = 2)
... instance b = Pool()''')
>>> flat = net.flatten()
>>> sorted(p.name for p in flat.places), flat.param_values()['a.n']
(['a.idle', 'a.jobs', 'b.idle', 'b.jobs'], 2)
"""
from __future__ import annotations

from dataclasses import fields, replace
from typing import Mapping

from .distributions import Distribution, Empirical
from .expr import Expr, Ref, substitute
from .model import (Arc, Include, Instance, NetT, Param, Place, Port, Queue, QueueingPlace,
                    Service, Subnet, Term, Transition)


def _ren(e: Expr | None, m: Mapping[str, Expr]) -> Expr | None:
    return None if e is None else substitute(e, m)


def map_dist(d: Distribution, m: Mapping[str, Expr]) -> Distribution:
    """Rename references inside a distribution's arguments."""
    if isinstance(d, Empirical) or not m:
        return d
    changes = {}
    for f in fields(d):
        if f.name == "loc":
            continue
        v = getattr(d, f.name)
        if isinstance(v, tuple):
            changes[f.name] = tuple(substitute(x, m) if not isinstance(x, (int, float)) else x for x in v)
        elif v is not None and not isinstance(v, (int, float, str, bool)):
            changes[f.name] = substitute(v, m)
    return replace(d, **changes)


def _terms(terms, m):
    return tuple(Term(_ren(t.count, m), _ren(t.color, m)) for t in terms)


def _arc(a: Arc, places: Mapping[str, str], m) -> Arc:
    return Arc(places.get(a.place, a.place), _terms(a.terms, m), a.loc)


def _queue(q: Queue, name: str, m) -> Queue:
    speed = q.speed
    if isinstance(speed, tuple):
        speed = tuple(_ren(e, m) for e in speed)
    elif speed is not None:     # n, the queue's tokens, is no parameter of the subnet
        speed = _ren(speed, {k: v for k, v in m.items() if k != "n"})
    return replace(q, name=name, servers=_ren(q.servers, m), quantum=_ren(q.quantum, m),
                   switch=_ren(q.switch, m), speed=speed)


def _place(p: Place, name: str, m, queues: Mapping[str, str]) -> Place:
    common = dict(name=name, capacity=_ren(p.capacity, m), init=_terms(p.init, m))
    if isinstance(p, Port):
        return Place(colors=p.colors, doc=p.doc, loc=p.loc, **common)
    if isinstance(p, QueueingPlace):
        q = _queue(p.queue, name, m) if isinstance(p.queue, Queue) else queues.get(p.queue, p.queue)
        return replace(p, queue=q,
                       service=tuple(Service(_ren(s.color, m), map_dist(s.dist, m)) for s in p.service),
                       priority=tuple((_ren(c, m), _ren(lv, m)) for c, lv in p.priority), **common)
    return replace(p, **common)


def _transition(t: Transition, name: str, places, m) -> Transition:
    modes = tuple(replace(
        md,
        inputs=tuple(_arc(a, places, m) for a in md.inputs),
        outputs=tuple(_arc(a, places, m) for a in md.outputs),
        inhibitors=tuple(_arc(a, places, m) for a in md.inhibitors),
        guard=_ren(md.guard, m), weight=_ren(md.weight, m),
        delay=map_dist(md.delay, m) if md.delay is not None else None) for md in t.modes)
    return replace(t, name=name, modes=modes, priority=_ren(t.priority, m), servers=_ren(t.servers, m))


def _expand(inst: Instance, prefix: str, parent_map: Mapping[str, Expr],
            subnets: Mapping[str, Subnet], out: list) -> None:
    sub = subnets[inst.subnet]
    path = f"{prefix}{inst.name}"
    m: dict[str, Expr] = {}
    names: dict[str, str] = {}   # place/port names (arcs)
    queues: dict[str, str] = {}
    for p in sub.params:
        m[p.name] = Ref(f"{path}.{p.name}")
    for it in sub.items:
        if isinstance(it, Param):
            m[it.name] = Ref(f"{path}.{it.name}")
        elif isinstance(it, Place):
            names[it.name] = f"{path}.{it.name}"
        elif isinstance(it, Queue):
            queues[it.name] = f"{path}.{it.name}"
        elif isinstance(it, Instance):
            inner = subnets[it.subnet]
            for port in inner.ports:
                names[f"{it.name}.{port}"] = f"{path}.{it.name}.{port}"
    args = dict(inst.args)
    for p in sub.params:
        if p.name in args:
            value = substitute(args[p.name], parent_map)
        else:
            value = substitute(p.default, m)
        out.append(Param(f"{path}.{p.name}", value, doc=f"parameter {p.name} of {path}",
                         loc=inst.loc))
    for it in sub.items:
        if isinstance(it, Param):
            out.append(replace(it, name=f"{path}.{it.name}", value=substitute(it.value, m)))
        elif isinstance(it, Queue):
            out.append(_queue(it, queues[it.name], m))
        elif isinstance(it, Place):
            out.append(_place(it, names[it.name], m, queues))
        elif isinstance(it, Transition):
            out.append(_transition(it, f"{path}.{it.name}", names, m))
        elif isinstance(it, Instance):
            _expand(it, f"{path}.", m, subnets, out)


def flatten(net: NetT) -> NetT:
    """Flat net: includes merged, every instance expanded, subnets dropped.

    >>> import qpn
    >>> net = qpn.parse("subnet station(k = 2) {\\n  place q queue ps servers k service exp(1)\\n}\\n"
    ...                 "instance web = station(k = 4)")
    >>> [p.name for p in flatten(net).places], [p.name for p in flatten(net).params]
    (['web.q'], ['web.k'])
    """
    if net.is_flat and not any(isinstance(i, Include) for i in net.items):
        return net  # (a net with software blocks is not flat: they are expanded here)
    subnets = {s.name: s for s in net.subnets}
    out: list = []
    for it in net.all_items:
        if isinstance(it, Subnet):
            continue
        if isinstance(it, Instance):
            _expand(it, "", {}, subnets, out)
        else:
            out.append(it)
    return replace(net, items=tuple(out))
