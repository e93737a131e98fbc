"""Code fragments and probabilistic call graphs from probe sequences (thesis §5.4.2).

A code fragment (CF) is the stretch between two consecutive probe hits of a
thread; the end probe of one CF starts the next.  Pairs that a static analysis
instrumented (start probe, its end probe) are I/O, sync, c_in or c_out CFs; the
pairs between them are computation (``cpu``) CFs.

Context splitting keeps distinct call paths apart:

* library entry/exit probes (``library={500: 501}``) are not CF boundaries; the
  stack of open library probes at a CF's start prefixes its id;
* a CF that starts at a probe inside shared library code (``context_probes``,
  e.g. the file natives 1013/1014) is prefixed with the last probe outside it.

>>> from qpn.frontends.persik import Probe
>>> ps = [Probe(27, 0, 9), Probe(28, 5), Probe(29, 105, 9), Probe(30, 107)]
>>> [(cf.name, cf.duration, cf.cls) for cf in code_fragments(ps)]
[('27_28', 5, 'op'), ('28_29', 100, 'cpu'), ('29_30', 2, 'op')]
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .persik import Probe


@dataclass(frozen=True)
class CF:
    """One execution of a code fragment."""

    id: tuple                 # (library prefix..., [context], start probe, end probe)
    start_ts: int
    end_ts: int
    cls: str                  # cpu, io, sync, in, out, or op (instrumented, class unknown)
    obj: int | None = None    # object id reported by the start probe
    args: tuple = ()

    @property
    def duration(self) -> int:
        """The fragment's duration (ns)."""
        return self.end_ts - self.start_ts

    @property
    def name(self) -> str:
        """PERSIK block naming: ``500_28_1013_1014``."""
        return "_".join(str(p) for p in self.id)


def infer_class(start: Probe, end: Probe, context_probes: frozenset) -> str:
    """Without a schema: an instrumented pair is ``(p, p+1)`` whose start probe
    reports an object id (every sync, c_in, c_out and I/O start probe does,
    Table 5.2); it is ``io`` if it lies in shared library code."""
    if end.probe == start.probe + 1 and start.obj is not None:
        return "io" if start.probe in context_probes else "op"
    return "cpu"


def code_fragments(probes: Sequence[Probe], *, schema: Mapping[int, tuple] | None = None,
                   context_probes: Iterable[int] = (),
                   library: Mapping[int, int] | None = None,
                   warnings: list | None = None) -> list[CF]:
    """The CF sequence of one thread.

    ``schema`` maps a start probe to ``(end probe, class)`` for the instrumented
    CFs (from the static analysis); without it :func:`infer_class` decides.
    """
    context = frozenset(context_probes)
    library = dict(library or {})
    exits = {v: k for k, v in library.items()}
    stack: list[int] = []
    out: list[CF] = []
    prev: Probe | None = None
    prev_stack: tuple = ()
    last_outside: int | None = None      # last probe not in shared library code
    prev_context: int | None = None      # last_outside when prev was hit
    for p in probes:
        if p.probe in library:
            stack.append(p.probe)
            continue
        if p.probe in exits:
            entry = exits[p.probe]
            if entry in stack:
                while stack.pop() != entry:
                    pass
            elif warnings is not None:
                warnings.append(f"library exit probe {p.probe} without its entry {entry}")
            continue
        if prev is not None:
            if schema is not None:
                end, cls = schema.get(prev.probe, (None, "cpu"))
                cls = cls if end == p.probe else "cpu"
            else:
                cls = infer_class(prev, p, context)
            ctx = (prev_context,) if prev.probe in context and prev_context is not None else ()
            out.append(CF(prev_stack + ctx + (prev.probe, p.probe), prev.ts, p.ts, cls,
                          prev.obj, prev.args))
        if p.probe not in context:
            last_outside = p.probe
        prev, prev_stack, prev_context = p, tuple(stack), last_outside
    return out


@dataclass
class PCG:
    """Probabilistic call graph: CF nodes, transition counts, start/end counts."""

    nodes: dict = field(default_factory=dict)        # id -> class
    durations: dict = field(default_factory=dict)    # id -> [ns, ...]
    edges: collections.Counter = field(default_factory=collections.Counter)
    starts: collections.Counter = field(default_factory=collections.Counter)
    ends: collections.Counter = field(default_factory=collections.Counter)

    def successors(self, node: tuple) -> dict[tuple, float]:
        """p(node, next) = count(node, next) / sum over next' (Eq. 5.1)."""
        outs = {b: n for (a, b), n in self.edges.items() if a == node}
        total = sum(outs.values())
        return {b: n / total for b, n in outs.items()} if total else {}

    def prob(self, a: tuple, b: tuple) -> float:
        """The probability that fragment ``b`` follows ``a``."""
        return self.successors(a).get(b, 0.0)

    def terminal(self) -> set:
        """CFs with no successor: the thread stops after them."""
        has_out = {a for a, _ in self.edges}
        return {n for n in self.nodes if n not in has_out}


def build_pcg(sequences: Iterable[Sequence[CF]]) -> PCG:
    """The naive PCG of one thread (or a pool: pass every member's sequence)."""
    g = PCG()
    for seq in sequences:
        for i, cf in enumerate(seq):
            g.nodes.setdefault(cf.id, cf.cls)
            g.durations.setdefault(cf.id, []).append(cf.duration)
            if i:
                g.edges[(seq[i - 1].id, cf.id)] += 1
        if seq:
            g.starts[seq[0].id] += 1
            g.ends[seq[-1].id] += 1
    return g


def io_bytes(cf: CF) -> int:
    """Bytes of an I/O CF: the last integer argument of its start probe (0 if none)."""
    nums = [a for a in cf.args if isinstance(a, int)]
    return nums[-1] if nums else 0


def insignificant(seq: Sequence[CF], threshold: float = 0.03) -> set:
    """Ids of CFs to prune in the work phase (§5.4.2, default t = 3%).

    Computation CFs whose total time is below ``threshold`` of the thread's
    computation time; I/O CFs whose operation count and bytes are both below
    ``threshold`` of the thread's I/O.
    """
    cpu_total = sum(cf.duration for cf in seq if cf.cls == "cpu")
    io = [cf for cf in seq if cf.cls == "io"]
    io_ops, io_b = len(io), sum(io_bytes(cf) for cf in io)
    per_cpu: collections.Counter = collections.Counter()
    per_ops: collections.Counter = collections.Counter()
    per_b: collections.Counter = collections.Counter()
    for cf in seq:
        if cf.cls == "cpu":
            per_cpu[cf.id] += cf.duration
        elif cf.cls == "io":
            per_ops[cf.id] += 1
            per_b[cf.id] += io_bytes(cf)
    drop = {i for i, d in per_cpu.items() if cpu_total and d < threshold * cpu_total}
    drop |= {i for i, n in per_ops.items()
             if n < threshold * io_ops and per_b[i] <= threshold * io_b}
    return drop


def prune(seq: Sequence[CF], threshold: float = 0.03) -> list[CF]:
    """The CF sequence without its insignificant CFs (see :func:`insignificant`)."""
    drop = insignificant(seq, threshold)
    return [cf for cf in seq if cf.id not in drop]


def parse_library(text: str) -> dict[int, int]:
    """``"500:501,502:503"`` -> ``{500: 501, 502: 503}``."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        a, _, b = part.partition(":")
        out[int(a)] = int(b)
    return out


def format_pcg(g: PCG) -> str:
    """A readable listing: node, class, count, mean duration, successors."""
    lines = []
    for node, cls in g.nodes.items():
        ds = g.durations[node]
        succ = ", ".join(f"{'_'.join(map(str, b))} {p:.3g}"
                         for b, p in sorted(g.successors(node).items(), key=lambda x: -x[1]))
        lines.append(f"{'_'.join(map(str, node))} [{cls}] x{len(ds)} "
                     f"mean {sum(ds) / len(ds):.0f} ns -> {succ or 'end'}")
    return "\n".join(lines) + ("\n" if lines else "")
