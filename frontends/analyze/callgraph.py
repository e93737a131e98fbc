"""The probabilistic call graph of a runner, for reading (``qpn build --pcg``).

Nodes are step tokens ``(action, object, site)`` -- a code fragment and the
operation ending it; edges count "b followed a" over the runner's walks, and
p(a, b) = count(a, b) / count(a, .) (thesis Eq. 5.1).  The model itself is
written from the structure recovered in :mod:`.structure`; this listing shows
the graph it was recovered from.

>>> from qpn.frontends.analyze.steps import Step
>>> w = [Step(1, a, "q", f"p.py:{i % 2}", {"ts": i}, i, 100, 100, 0, 0)
...      for i, a in enumerate(["take", "put", "take", "put", "take"])]
>>> g = call_graph([w])
>>> print(format_call_graph(g, lambda key: key), end="")
take q @p.py:0  x3  cpu mean 100 ns  -> put q @p.py:1 1
put q @p.py:1  x2  cpu mean 100 ns  -> take q @p.py:0 1
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

from .fit import fmt_time


@dataclass
class CallGraph:
    """Fragments (by token) with their counts and CPU, and how often each follows another."""
    nodes: dict = field(default_factory=dict)            # token -> [count, cpu sum, cpu n]
    edges: collections.Counter = field(default_factory=collections.Counter)

    def successors(self, node) -> dict:
        """The fragments that follow ``node``, with their probabilities."""
        outs = {b: n for (a, b), n in self.edges.items() if a == node}
        total = sum(outs.values())
        return {b: n / total for b, n in outs.items()} if total else {}


def call_graph(walks) -> CallGraph:
    """The call graph of a runner's walks (threads' step sequences or iterations)."""
    g = CallGraph()
    for w in walks:
        prev = None
        for s in w:
            t = (s.action, s.key, s.site)
            rec = g.nodes.get(t)
            if rec is None:
                rec = g.nodes[t] = [0, 0, 0]
            rec[0] += 1
            if s.cpu is not None:
                rec[1] += s.cpu
                rec[2] += 1
            if prev is not None:
                g.edges[(prev, t)] += 1
            prev = t
    return g


def format_call_graph(g: CallGraph, name_of) -> str:
    """One line per node: count, mean CPU of the fragment before it, successors."""
    def label(t):
        action, key, site = t
        return f"{action} {name_of(key) if key is not None else ''} @{site}".replace("  ", " ")
    lines = []
    for t, (n, cpu, k) in g.nodes.items():
        succ = ", ".join(f"{label(b)} {p:.3g}" for b, p in
                         sorted(g.successors(t).items(), key=lambda x: -x[1]))
        mean = fmt_time(cpu / k) if k else "?"
        lines.append(f"{label(t)}  x{n}  cpu mean {mean}  -> {succ or 'end'}")
    return "\n".join(lines) + ("\n" if lines else "")
