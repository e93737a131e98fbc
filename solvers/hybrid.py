"""Hybrid evaluation: a subnet replaced by its flow-equivalent server, the rest solved.

An instance of a subnet with one input and one output port is solved alone, closed by
a short circuit (what leaves its output port re-enters its input port), at populations
n = 1 .. K: its throughput X(n) is the capacity with n tokens inside of one
load-dependent queue (``queue ps speed [X(1), ..., X(K)]``, service exp(1)) that takes
the instance's place (Chandy, Herzog and Woo's flow-equivalent server, Norton's theorem
of queueing networks).  The whole net is then solved with that queue in place of the
subnet: by the simulator, say, with no events inside the subnet, or exactly by the CTMC
with far fewer states.  Exact when the net is product form; otherwise an approximation
whose error is that of the decomposition (the subnet's state beyond its population is
taken as in isolation).  The result says which parts were replaced, by what, and how
their throughputs were found.

>>> import qpn
>>> from qpn.solvers import solve
>>> net = qpn.load("models/hybrid.qpn")
>>> fes = flow_equivalent(net, "web", population=3, method="ctmc")
>>> [round(x, 4) for x in fes.throughput]
[4.1667, 5.5556, 6.25]
>>> res = solve_hybrid(net, ["web"], method="ctmc")
>>> exact = solve(net, "ctmc")
>>> abs(res.get("throughput", "reply") - exact.get("throughput", "reply")) < 1e-9
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from qpn.errors import ModelError, SolverError
from qpn.model import Instance, Place, Port, Queue, Subnet, Transition

#: populations at which an open net's subnet is solved when no population is given (the
#: last throughput holds for more tokens)
OPEN_POPULATION = 64
#: the closing place and transitions added around the subnet solved alone
CUSTOMERS, ENTER, LEAVE, POP = "__fes_customers", "__fes_enter", "__fes_leave", "__fes_n"


@dataclass
class FlowEquivalent:
    """A subnet instance's throughput by population: what replaces it.

    ``throughput[n-1]`` is X(n) (tokens per second leaving its output port with n tokens
    inside, alone); ``ci`` the simulator's half-widths (None: exact); ``method`` the
    method that solved the subnet alone; ``population`` why K is what it is."""
    instance: str
    input: str                      # flat name of its input port
    output: str                     # flat name of its output port
    colors: str | None              # the ports' color set (one color) or None
    throughput: list[float]
    method: str
    ci: list[float] | None = None
    population: str = ""
    approximate: bool = False       # an approximate MVA (the Linearizer) solved it

    def describe(self) -> str:
        """One line for a result's explanation."""
        k = len(self.throughput)
        how = "approximate" if self.approximate else "exact" if self.ci is None else \
            f"simulated, CI up to {max(c / x for c, x in zip(self.ci, self.throughput) if x > 0):.1%}"
        return (f"hybrid: {self.instance} replaced by a flow-equivalent server: its throughput "
                f"X(n) = {_short(self.throughput)} /s for n = 1..{k} tokens inside "
                f"({self.method} on the subnet alone, {how}; {self.population})")


def _short(xs: list[float]) -> str:
    if len(xs) <= 6:
        return ", ".join(f"{x:.4g}" for x in xs)
    return ", ".join(f"{x:.4g}" for x in xs[:3]) + ", ..., " + f"{xs[-1]:.4g}"


def _instance(net, path: str) -> tuple[Instance, Subnet]:
    subnets = {s.name: s for s in net.subnets}
    inst = {i.name: i for i in net.instances}
    if path not in inst:
        raise ModelError(f"hybrid: no instance named '{path}'", None,
                         expected=", ".join(sorted(inst)) or "an instance of a subnet (the net has none)")
    i = inst[path]
    return i, subnets[i.subnet]


def _ports(inst: Instance, sub: Subnet) -> tuple[Port, Port]:
    ins = [p for p in sub.ports.values() if p.direction == "input"]
    outs = [p for p in sub.ports.values() if p.direction == "output"]
    if len(ins) != 1 or len(outs) != 1:
        raise ModelError(f"hybrid: instance '{inst.name}' of {sub.name} has {len(ins)} input and "
                         f"{len(outs)} output ports: a flow-equivalent server has one of each", inst.loc)
    if ins[0].colors != outs[0].colors:
        raise ModelError(f"hybrid: {sub.name}'s ports carry different colors ({ins[0].colors} and "
                         f"{outs[0].colors})", inst.loc)
    return ins[0], outs[0]


def _inside(it, prefix: str) -> bool:
    """Whether a flat item is a place, transition or queue of the instance at ``prefix``."""
    return isinstance(it, (Place, Transition, Queue)) and it.name.startswith(prefix)


def _text(flat, items, extra: list[str]) -> str:
    from qpn.dsl.printer import print_net
    return print_net(replace(flat, items=tuple(items), doc="", trailer="")) + "\n".join(extra) + "\n"


def _one_color(flat, colors: str | None, inst: Instance) -> str | None:
    """The one value of the ports' color set ('' for plain tokens)."""
    if colors is None:
        return None
    from qpn.colors import color_values
    vals = color_values(flat.colorset_map[colors], flat.colorset_map, flat.param_values())
    if len(vals) != 1:
        raise ModelError(f"hybrid: instance '{inst.name}''s ports carry {len(vals)} colors of "
                         f"'{colors}': a flow-equivalent server by total population needs one (with "
                         f"several, throughputs by population vector: not done)", inst.loc)
    return str(vals[0])


def _population(flat, prefix: str, colors: str | None, population: int | None) -> tuple[int, str]:
    """K: given, or the tokens of the ports' colors outside the subnet in a net without
    sources (no more can be inside), or OPEN_POPULATION for an open net."""
    if population is not None:
        if population < 1:
            raise SolverError(f"hybrid: the population must be at least 1, got {population}")
        return population, f"populations up to {population}, as given"
    from qpn.compile import compile_net
    c = compile_net(flat)
    pre = c.pre.tocsr()
    sources = [m.transition for j, m in enumerate(c.modes) if m.kind == "timed" and pre[j].nnz == 0]
    if sources:
        return OPEN_POPULATION, (f"an open net (source {sources[0]}): populations up to "
                                 f"{OPEN_POPULATION}, the last throughput beyond")
    total = 0
    for cp, p in zip(c.places, c.net.places):     # compiled in the net's order
        if p.name.startswith(prefix) or p.colors != colors:
            continue
        total += int(c.m0[list(cp.slots) + list(cp.qslots or [])].sum())
    if total < 1:
        raise SolverError(f"hybrid: no tokens outside {prefix[:-1]} can enter it; give a population")
    return total, f"populations up to {total}, the tokens that can enter"


def flow_equivalent(net, instance: str, *, population: int | None = None, method: str = "auto",
                    options: dict | None = None, **params) -> FlowEquivalent:
    """The throughput of ``instance`` alone at populations 1..K (its flow-equivalent server).

    Parameters
    ----------
    net : qpn.Net
        The model holding the instance (``instance NAME = Subnet(...)`` at the top level).
    instance : str
        The instance to replace: a subnet with one input and one output port of one color.
    population : int, optional
        K, the most tokens the subnet is solved for (default: the tokens that can enter it
        in a closed net, OPEN_POPULATION in an open one).
    method, options, **params
        How the subnet alone is solved (``auto``: MVA or the CTMC where they apply),
        and the values of the net's parameters.

    Returns
    -------
    FlowEquivalent
    """
    from qpn.solvers import solve
    inst, sub = _instance(net, instance)
    pin, pout = _ports(inst, sub)
    flat = net.flatten()
    prefix = instance + "."
    color = _one_color(flat, pin.colors, inst)
    K, why = _population(flat, prefix, pin.colors, population)
    keep = [it for it in flat.items if not isinstance(it, (Place, Transition, Queue)) or _inside(it, prefix)]
    cin, cout = prefix + pin.name, prefix + pout.name
    typ = f" : {pin.colors}" if pin.colors else ""
    arc = "(x)" if pin.colors else ""
    extra = [f"param {POP} = 1",
             f"place {prefix}{CUSTOMERS}{typ} init {POP}{' ' + color if color else ''}",
             f"transition {prefix}{ENTER} : {prefix}{CUSTOMERS}{arc} -> {cin}{arc}",
             f"transition {prefix}{LEAVE} : {cout}{arc} -> {prefix}{CUSTOMERS}{arc}"]
    import qpn
    alone = qpn.parse(_text(flat, keep, extra), f"<{instance} alone>")
    xs, cis, used, approximate = [], [], None, False
    for n in range(1, K + 1):
        res = solve(alone, method, options=options, **{**params, POP: n})
        cell = res.cell("throughput", prefix + LEAVE)
        xs.append(float(cell.value))
        cis.append(cell.ci)
        used = res.method_label
        approximate |= used != res.method       # (the label names an approximate MVA)
    if any(not (x > 0 and math.isfinite(x)) for x in xs):
        bad = next(n for n, x in enumerate(xs, 1) if not (x > 0 and math.isfinite(x)))
        raise SolverError(f"hybrid: {instance} alone has throughput {xs[bad - 1]} with {bad} "
                          f"token(s) inside: it does not give its tokens back")
    exact = all(c is None for c in cis)
    return FlowEquivalent(instance, cin, cout, pin.colors, xs, used,
                          None if exact else [float(c or 0.0) for c in cis], why, approximate)


def replace_with(net, fes: list[FlowEquivalent]):
    """The flat net with each instance of ``fes`` replaced by its load-dependent queue: its
    input port becomes ``queue ps speed [X(1), ...]`` with service exp(1), moved on to its
    output port by an immediate transition; everything else inside it is dropped."""
    import qpn
    flat = net.flatten()
    outputs = {f.output for f in fes}
    # the instances' places, transitions and queues go, but their output ports (the input
    # ports come back as the load-dependent queues)
    keep = [it for it in flat.items
            if not any(_inside(it, f.instance + ".") for f in fes) or it.name in outputs]
    extra = []
    for f in fes:
        typ = f" : {f.colors}" if f.colors else ""
        arc = "(x)" if f.colors else ""
        speed = ", ".join(repr(x) for x in f.throughput)
        extra += [f"place {f.input}{typ} queue ps speed [{speed}] service exp(1)",
                  f"transition {f.instance}.__fes : {f.input}{arc} -> {f.output}{arc}"]
    return qpn.parse(_text(flat, keep, extra), f"<{net.name} with {', '.join(f.instance for f in fes)} "
                                                 f"replaced>")


def instance_rows(res, instance: str, input_port: str) -> None:
    """Add the instance's own rows to ``res``: ``tokens`` (all its places' tokens) and
    ``residence`` (its response time: those tokens / the arrivals at its input port), so a
    whole net's result and a hybrid one compare on the subnet.  A simulated sum's
    half-width is the sum of the parts' (conservative: the parts are correlated)."""
    prefix = instance + "."
    parts = [r for r in res.rows if r.measure == "tokens" and not r.color and r.element.startswith(prefix)]
    if not parts:
        return
    tokens = sum(r.value for r in parts)
    cis = [r.ci for r in parts]
    ci = None if any(c is None for c in cis) else sum(cis)
    res.add("tokens", instance, tokens, ci=ci)
    arr = res.cell("arrivals", input_port)
    if arr.value > 0:
        rel = None if ci is None or arr.ci is None else \
            (ci / tokens if tokens > 0 else 0.0) + arr.ci / arr.value
        res.add("residence", instance, tokens / arr.value,
                ci=None if rel is None else rel * tokens / arr.value, n=arr.n)


def solve_hybrid(net, instances: list[str], method: str = "auto", options: dict | None = None, *,
                 population: int | None = None, subnet_method: str = "auto", **params):
    """Solve ``net`` with each of ``instances`` replaced by its flow-equivalent server.

    Parameters
    ----------
    net : qpn.Net
    instances : list of str
        Instances to replace (see :func:`flow_equivalent`).
    method, options
        How the rest is solved (``des`` simulates it).
    population, subnet_method
        K and the method for the subnets alone.
    **params
        The net's parameter values.

    Returns
    -------
    Result
        The solved net's result; the replaced instances' input ports hold the subnets'
        tokens (their residence is the subnet's response time).  Its explanation starts
        with one line per replaced instance and one naming what was solved by ``method``.
    """
    from qpn.solvers import solve
    fes = [flow_equivalent(net, name, population=population, method=subnet_method, **params)
           for name in instances]
    res = solve(replace_with(net, fes), method, options=options, **params)
    rest = "simulated" if res.method == "des" else f"solved by {res.method}"
    res.explanation[:0] = [f.describe() for f in fes] + [
        f"hybrid: the rest of the net {rest}; {', '.join(f.input for f in fes)} hold the replaced "
        f"subnets' tokens"]
    for f in fes:
        instance_rows(res, f.instance, f.input)
    res.info["hybrid"] = {f.instance: {"throughput": f.throughput, "method": f.method, "ci": f.ci,
                                       "population": f.population} for f in fes}
    res.info["hybrid_inputs"] = {f.instance: f.input for f in fes}
    return res


__all__ = ["FlowEquivalent", "flow_equivalent", "replace_with", "solve_hybrid", "instance_rows",
           "OPEN_POPULATION"]
