"""From step sequences to a structured program: sequences, loops and branches.

The probabilistic call graph of a thread pool has the code fragments (step
tokens) as nodes and counts of "b followed a" as edges.  A model language
without ``goto`` needs it as structured code, so this module recovers the
structure directly from the walks (the step sequences of the pool's threads,
or the iterations of a loop):

1. Strongly connected components of the graph are loops.  A walk passes
   through the components in topological order, so it splits into segments,
   one per component.
2. If every walk passes the same components in the same order, the result is
   that sequence: a one-step component is a *leaf*, a cyclic one a *loop*
   whose iterations start at its header (the token walks enter it by) and whose
   body is structured recursively from all iterations.
3. Otherwise the walks agree on a prefix and a suffix of components and differ
   in between: a *branch* whose alternatives group the walks by what they do
   there, weighted by how many walks took each (probabilities from counts).

Every leaf keeps the steps that fell on it, so a token reached in two places
gives two leaves with their own statistics (context splitting by position).

>>> from qpn.frontends.analyze.steps import Step
>>> T = Tokens()
>>> def walk(text):
...     w = [Step(1, a, None, None, {"ts": 0}, 0, 0, 0, 0, 0) for a in text.split()]
...     T.assign(w)
...     return w
>>> items = structure([walk("take lock unlock put take lock unlock put take")])
>>> show(items)
'loop[3]{take branch{2:(lock unlock put) 1:()}}'
>>> show(structure([walk("put put put take take take")]))
'loop[3]{put} loop[3]{take}'
>>> show(structure([walk(" ".join(["put put put take take take"] * 4))]))
'loop[4]{loop[3]{put} loop[3]{take}}'
"""
from __future__ import annotations

import collections
import operator
from dataclasses import dataclass, field
from typing import Sequence

from .steps import Step


@dataclass(eq=False)
class Leaf:
    """One model step: an operation at one place of the structure."""

    token: tuple
    steps: list = field(default_factory=list)
    prev: str | None = None   # site of the step before it, when the walks show it

    @property
    def action(self) -> str:
        """The leaf's operation (take, lock, cpu, ...)."""
        return self.token[0]


@dataclass(eq=False)
class Loop:
    """A loop: ``counts`` = iterations per entry, ``iterations[i]`` = the walks of entry i."""

    body: list
    counts: list
    header: int
    iterations: list = field(default_factory=list)
    latch: int | None = None          # iterations end after this token (a barrier's rounds)


@dataclass(eq=False)
class Branch:
    """Alternatives with the number of walks that took each."""

    alts: list            # [(count, items)]


class Tokens:
    """Interns step tokens as small ints (``Step.tok``)."""

    def __init__(self):
        self.ids: dict[tuple, int] = {}
        self.tokens: list[tuple] = []

    def assign(self, steps) -> None:
        """Number the steps' (action, object, site) tokens, new ones in order of appearance."""
        ids, toks = self.ids, self.tokens
        for s in steps:
            t = (s.action, s.key, s.site)
            i = ids.get(t)
            if i is None:
                i = ids[t] = len(toks)
                toks.append(t)
            s.tok = i


_TOK = operator.attrgetter("tok")


def _scc(keys) -> tuple[dict, set]:
    """Tarjan's algorithm (iterative) on the graph of consecutive tokens.

    ``keys`` are token sequences.  Returns (token -> component id, set of
    cyclic components).
    """
    succ: dict[int, set] = collections.defaultdict(set)
    nodes: dict[int, None] = {}
    selfloop = set()
    for k in keys:
        nodes.update(dict.fromkeys(k))
        for a, b in zip(k, k[1:]):
            succ[a].add(b)
            if a == b:
                selfloop.add(a)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set = set()
    stack: list = []
    comp: dict[int, int] = {}
    sizes: list[int] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for u in it:
                if u not in index:
                    index[u] = low[u] = counter
                    counter += 1
                    stack.append(u)
                    on.add(u)
                    work.append((u, iter(succ.get(u, ()))))
                    advanced = True
                    break
                if u in on and index[u] < low[v]:
                    low[v] = index[u]
            if advanced:
                continue
            work.pop()
            if work:
                p = work[-1][0]
                if low[v] < low[p]:
                    low[p] = low[v]
            if low[v] == index[v]:
                cid = len(sizes)
                n = 0
                while True:
                    u = stack.pop()
                    on.discard(u)
                    comp[u] = cid
                    n += 1
                    if u == v:
                        break
                sizes.append(n)
    cyclic = {c for c, n in enumerate(sizes) if n > 1}
    cyclic |= {comp[t] for t in selfloop}
    return comp, cyclic


def _segments(key: tuple, comp: dict) -> tuple[tuple, list]:
    """(components passed, index where each starts) of a token sequence."""
    sig, starts = [], []
    prev = None
    for i, t in enumerate(key):
        c = comp[t]
        if c != prev:
            sig.append(c)
            starts.append(i)
            prev = c
    return tuple(sig), starts


def _group(walks) -> dict:
    """Walks grouped by their token sequence (the work is done once per sequence)."""
    groups: dict = {}
    for w in walks:
        groups.setdefault(tuple(map(_TOK, w)), []).append(w)
    return groups


def structure(walks: Sequence[Sequence[Step]]) -> list:
    """The structured program (leaves, loops, branches) the walks follow."""
    groups = _group(walks)
    if not any(groups):
        return []
    comp, cyclic = _scc(groups)
    segs = {k: _segments(k, comp) for k in groups}
    sigs = {sg for sg, _ in segs.values()}
    if len(sigs) == 1:
        sig = sigs.pop()
        items = []
        for j, c in enumerate(sig):
            if c not in cyclic:                # one step: no need to slice
                steps = []
                before: collections.Counter = collections.Counter()
                for k, ws in groups.items():
                    a = segs[k][1][j]
                    steps.extend([w[a] for w in ws])
                    if a > 0:
                        before[ws[0][a - 1].site] += len(ws)
                prev = before.most_common(1)[0][0] if before else None
                items.append(Leaf(steps[0].token, steps, prev))
                continue
            parts = []
            for k, ws in groups.items():
                starts = segs[k][1]
                a = starts[j]
                b = starts[j + 1] if j + 1 < len(starts) else len(k)
                parts.extend([w[a:b] for w in ws])
            items.append(_loop(parts))
        return items
    # the walks differ: common prefix and suffix of components, branch between
    first = next(iter(segs.values()))[0]
    allsigs = [sg for sg, _ in segs.values()]
    m = min(len(sg) for sg in allsigs)
    p = 0
    while p < m and all(sg[p] == first[p] for sg in allsigs):
        p += 1
    q = 0
    while q < m - p and all(sg[len(sg) - 1 - q] == first[len(first) - 1 - q] for sg in allsigs):
        q += 1
    pre, suf = [], []
    alts: dict[tuple, list] = {}
    for k, ws in groups.items():
        sg, starts = segs[k]
        a = starts[p] if p < len(starts) else len(k)
        b = starts[len(sg) - q] if len(sg) - q < len(starts) else len(k)
        pre.extend([w[:a] for w in ws])
        suf.extend([w[b:] for w in ws])
        alts.setdefault(sg[p:len(sg) - q], []).extend([w[a:b] for w in ws])
    branch = sorted(((len(ws), structure(ws)) for ws in alts.values()), key=lambda a: -a[0])
    return structure(pre) + [Branch(branch)] + structure(suf)


def _loop(parts: list) -> Loop:
    """A cyclic component's parts (one per entry) as a loop.

    Iterations start at the header, the token the parts mostly begin with --
    unless some token of the loop is rarer than the header: then the loop is
    an outer loop around an inner one sharing its header (``(b c)^3 d``
    repeated), and iterations end after the rarest token that leads back to
    the header (the latch, ``d``).
    """
    groups = _group(parts)
    heads: collections.Counter = collections.Counter()
    counts_of: collections.Counter = collections.Counter()
    follows: collections.Counter = collections.Counter()
    for k, ps in groups.items():
        heads[k[0]] += len(ps)
        n = len(ps)
        for i, t in enumerate(k):
            counts_of[t] += n
            if i + 1 < len(k) and k[i + 1] == k[0]:
                follows[t] += n
    h = heads.most_common(1)[0][0]
    # rounds closed by a barrier around an inner loop (each thread's share of a round's
    # tasks, then the barrier): the barrier ends an iteration, whatever rarer step (taken
    # once, on the way in) the parts also hold -- unless it is rarer than the header only
    # by the parts' last passes
    awaits = {st.tok for ps in parts for st in ps if st.action == "await"}
    ends = {t: c for t, c in counts_of.items()
            if t in awaits and t != h and follows[t] and counts_of[h] - c > len(parts)}
    latch = rounds = min(ends, key=lambda t: (ends[t], -follows[t])) if ends else None
    low = min(counts_of.values())
    if latch is None and low < counts_of[h]:
        rare = [t for t, c in counts_of.items() if c == low and follows[t]]
        if rare:
            latch = max(rare, key=lambda t: follows[t])
    back = round_end(groups, h) if latch is None else None
    counts, iterations, flat = [], [], []
    for k, ps in groups.items():
        if back is not None:
            cuts = [0] + round_starts(k, h, back) + [len(k)]
        elif latch is None:
            cuts = [0] + [i for i in range(1, len(k)) if k[i] == h] + [len(k)]
        else:
            cuts = [0] + [i + 1 for i in range(len(k) - 1) if k[i] == latch] + [len(k)]
        spans = list(zip(cuts, cuts[1:]))
        for part in ps:
            its = [part[a:b] for a, b in spans]
            counts.append(len(its))
            iterations.append(its)
            flat.extend(its)
    return Loop(structure(flat), counts, h, iterations, rounds)


def round_starts(toks, h, back) -> list[int]:
    """Where rounds begin in a token sequence: at the header ``h`` right after ``back``
    (the token that ends a round, :func:`round_end`)."""
    return [i for i in range(1, len(toks)) if toks[i] == h and toks[i - 1] == back]


def round_end(groups: dict, h) -> object:
    """The token after which rounds of runs end, when the header repeats itself: ``(a^12
    b^12)`` repeated (submit 12 tasks, wait for 12 results) is a loop of rounds, each a
    loop of a's and one of b's -- not a loop of a's with a rare branch into 12 b's, which
    would wait for results of tasks not yet submitted.  The round ends where another token
    leads back to the header; accepted only if (nearly) every round is the same sequence.
    """
    back: collections.Counter = collections.Counter()
    selfloop = False
    for k, ps in groups.items():
        for i in range(len(k) - 1):
            if k[i + 1] == h:
                if k[i] == h:
                    selfloop = True
                else:
                    back[k[i]] += len(ps)
    if not selfloop or len(back) != 1:
        return None
    (t, _), = back.items()
    rounds: collections.Counter = collections.Counter()
    for k, ps in groups.items():
        cuts = [0] + round_starts(k, h, t) + [len(k)]
        for a, b in zip(cuts, cuts[1:]):
            rounds[tuple(k[a:b])] += len(ps)
    total = sum(rounds.values())
    typical, top = rounds.most_common(1)[0]
    # a round repeats the header (a run), and (nearly) every round is the same sequence
    return t if (total >= 3 and typical.count(h) >= 2
                 and top >= 0.9 * (total - len(groups))) else None


def leaves(items) -> list[Leaf]:
    """All leaves of a structure, in program order."""
    out = []
    for it in items:
        if isinstance(it, Leaf):
            out.append(it)
        elif isinstance(it, Loop):
            out.extend(leaves(it.body))
        else:
            for _, alt in it.alts:
                out.extend(leaves(alt))
    return out


def show(items, name=lambda leaf: leaf.steps[0].action) -> str:
    """A compact text form (for tests and debugging)."""
    out = []
    for it in items:
        if isinstance(it, Leaf):
            out.append(name(it))
        elif isinstance(it, Loop):
            cs = sorted(set(it.counts))
            out.append(f"loop[{','.join(map(str, cs))}]{{{show(it.body, name)}}}")
        else:
            out.append("branch{" + " ".join(f"{n}:({show(a, name)})" for n, a in it.alts) + "}")
    return " ".join(out)
