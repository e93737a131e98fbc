"""Pruning shortens the model, not its demand: the CPU of the fragments pruning leaves
out goes into a kept fragment (docs/analyzer.md, Pruning).

The model writer (model.py) picks the :func:`receiver` before it writes a runner, notes
what the receiver's cpu step was written from, and after the body :func:`take_pruned`
rewrites that step with the pruned fragments' CPU added.
"""
from __future__ import annotations

from dataclasses import replace

from qpn.distributions import Det
from qpn.software import ast as sw

from .blocks import cpu_sum as _cpu_sum
from .fit import fmt_time, time_num


def take_pruned(w, body: list, ctx) -> tuple[list, list]:
    """``body`` with the receiver's demand raised by the pruned fragments' CPU, and a
    header line saying so."""
    got = ctx.received
    if ctx.pruned_cpu <= 0:
        return body, []
    part = f"{100 * ctx.pruned_cpu / ctx.cpu_total:.1f}% of the runner's"
    if not got:                            # no kept fragment: a step of its own
        r = ctx.runner
        passes = r.iterations if r.mode == "forever" else len(r.group.tids)
        if not passes:
            return body, []
        steps = w._compute(Det(time_num(ctx.pruned_cpu / passes)), "gil",
                           w.names.unique("cpu_pruned"))
        return body + steps, [f"# their CPU ({part}) is the step cpu_pruned at the end: "
                              "pruning shortens the model, not its demand"]
    parts, n = got                         # [(fit, GIL-free share, speed-up, factor, label)]
    extra = ctx.pruned_cpu / n             # ns per execution of the receiver
    new, scales = {}, []
    for f, share, sp, k, name in parts:
        scale = 1 + extra / f.mean if f.mean > 0 else 1.0
        scales.append(scale)
        new.update({st.label: st for st in w.split(f, share, sp, k, name, scale)
                    if isinstance(st, sw.Compute)})
    how = (f"x {scales[0]:.4g}" if len(scales) == 1 else
           f"+{fmt_time(extra)} per execution")
    return [_swap(st, new) for st in body], [
        f"# their CPU ({part}) is in the demand of {', '.join(p[4] for p in parts)} ({how}): "
        "pruning shortens the model, not its demand"]


def receiver(w, r, lvs, ctx):
    """The fragment that takes the CPU of the fragments pruning leaves out: the
    largest kept one that holds the GIL, preferably one that runs on every pass
    (pruning shortens the model, not its demand; a step of its own would add a GIL
    acquisition per pass that the program does not make)."""
    passes = r.iterations if r.mode == "forever" else len(r.group.tids)
    kept = [lf for lf in lvs if _cpu_sum(lf) > 0 and w._keeps_cpu(lf, ctx)]
    bound = [lf for lf in kept if w.an.shares.get(id(lf), 0.0) < 1] or kept
    every = [lf for lf in bound if sum(1 for s in lf.steps if s.cpu is not None) >= passes]
    return max(every or bound, key=_cpu_sum, default=None)


def _swap(node, new: dict):
    """``node`` with its cpu steps labelled as a key of ``new`` replaced (nested too)."""
    if isinstance(node, sw.Compute):
        return replace(new[node.label], doc=node.doc) if node.label in new else node
    if isinstance(node, (sw.Alternative, sw.Block, sw.Loop)):
        return replace(node, body=tuple(_swap(x, new) for x in node.body))
    if isinstance(node, sw.Branch):
        return replace(node, alternatives=tuple(_swap(a, new) for a in node.alternatives))
    if isinstance(node, sw.Fork):
        return replace(node, blocks=tuple(_swap(b, new) for b in node.blocks))
    return node
