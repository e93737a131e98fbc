"""Text summary of a net for ``qpn show``."""
from __future__ import annotations

from .colors import color_label, color_values
from .expr import fmt
from .model import EnumColors, QueueingPlace
from .net import Net


def _fmt_num(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def summarize(net: Net, report=None) -> str:
    """``qpn show``'s text: the flat net's size, parameters, colors and queues, and the
    structural report's findings when given."""
    flat = net.flatten()
    values = flat.param_values()
    out = [f"net {net.name}"]
    if net.path:
        out[0] += f"  ({net.path})"
    out.append(f"  {len(flat.places)} places ({sum(isinstance(p, QueueingPlace) for p in flat.places)} "
               f"queueing), {len(flat.transitions)} transitions, {len(net.subnets)} subnets, "
               f"{len(net.instances)} instances")
    if net.params:
        out.append("\nparameters")
        for p in net.params:
            out.append(f"  {p.name:<20} = {_fmt_num(values[p.name]):<12} {fmt(p.value)}")
        extra = [p for p in flat.params if p.name not in {q.name for q in net.params}]
        for p in extra:
            out.append(f"  {p.name:<20} = {_fmt_num(values[p.name]):<12} {fmt(p.value)}")
    if flat.colorsets:
        out.append("\ncolor sets")
        for cs in flat.colorsets:
            vals = color_values(cs, flat.colorset_map, {**values, **{v: v for c in flat.colorsets
                                                                     if isinstance(c, EnumColors)
                                                                     for v in c.values}})
            shown = ", ".join(color_label(v) for v in vals[:8]) + (", ..." if len(vals) > 8 else "")
            out.append(f"  {cs.name:<20} {len(vals)} colors: {shown}")
    from qpn.dsl.printer import fmt_arc, fmt_dist, fmt_marking, fmt_qspec
    env = dict(values)
    out.append("\nplaces")
    for p in flat.places:
        cs = f" : {p.colors}" if p.colors else ""
        extra = []
        if isinstance(p, QueueingPlace):
            q = flat.queue_map[p.queue_name]
            shared = f"on {q.name}: " if isinstance(p.queue, str) else ""
            extra.append(shared + fmt_qspec(q))
        if p.capacity is not None:
            extra.append(f"capacity {fmt(p.capacity)}")
        if p.init:
            extra.append(f"init {fmt_marking(p)}")
        if getattr(p, "departure", "normal") != "normal":
            extra.append(f"departure {p.departure}")
        out.append(f"  {p.name + cs:<24} {'; '.join(extra)}".rstrip())
        if isinstance(p, QueueingPlace):
            for sv in p.service:
                who = f"{fmt(sv.color)}: " if sv.color is not None else ""
                try:
                    m, c = sv.dist.mean(env), sv.dist.scv(env)
                    stats = f"mean {m:.6g} s, scv {c:.4g}"
                except Exception:  # a parameter without a value: show the formula only
                    stats = ""
                out.append(f"  {'':<24}   service {who}{fmt_dist(sv.dist)}  [{stats}]")
    out.append("\ntransitions")
    for t in flat.transitions:
        for m in t.modes:
            ins = ", ".join(fmt_arc(a) for a in m.inputs) or "(source)"
            outs = ", ".join(fmt_arc(a) for a in m.outputs) or "(sink)"
            if m.delay is not None:
                what = f"delay {fmt_dist(m.delay)}"
            else:
                what = f"weight {fmt(m.weight) if m.weight is not None else '1'}"
            if m.guard is not None:
                what += f" when {fmt(m.guard)}"
            if m.inhibitors:
                what += " unless " + ", ".join(fmt_arc(a) for a in m.inhibitors)
            name = t.name + (f".{m.name}" if m.name else "")
            kind = t.kind + (f" prio {fmt(t.priority)}" if t.priority is not None else "")
            if t.servers is not None:
                kind += f" x{fmt(t.servers)}"
            out.append(f"  {name:<24} {kind:<10} {ins} -> {outs}; {what}")
    if report is not None:
        if report.p_invariants:
            out.append("\nP-invariants")
            out += [f"  {inv}" for inv in report.p_invariants]
        if report.t_invariants:
            out.append("\nT-invariants")
            out += [f"  {inv}" for inv in report.t_invariants[:20]]
            if len(report.t_invariants) > 20:
                out.append(f"  ... {len(report.t_invariants) - 20} more")
    return "\n".join(out) + "\n"
