"""Several traces of one program: what one trace cannot tell, and how stable it is.

``qpn build a.jsonl b.jsonl ... -o model.qpn`` builds the model from the first
trace and reads the others for two things:

* **divided work** -- a pool whose threads loop without taking work items
  (lock-step rounds, barriers) does, per iteration, either the same work at any
  pool size or a share of a fixed amount (``n / threads`` rows each).  One
  trace cannot tell them apart; traces at two pool sizes can.  With ``W(n)`` a
  thread's CPU per iteration at ``n`` threads, ``W(n) = a + b / n`` is fitted by
  least squares over all the traces (the same fit whichever comes first), and
  the divided share at the first trace's size ``n0``, ``s = (b / n0) / W(n0)``,
  clipped to [0, 1], becomes the default of the model's ``split_<pool>``
  parameter;
* **spread** -- traces of the same configuration should give the same model:
  pool sizes, and each pool's CPU per iteration and GIL-free share within
  their stated spread;
* **averages** -- the CPU of one trace carries the machine's speed and the GIL
  hand-overs of that moment.  Traces of the same configuration (the same
  runners and sizes) pool their samples: each CPU step of the first trace's
  model is fitted from its samples in all of them (matched by runner, operation,
  site and the site before it; where the same code sits in several places of a
  body -- reached in two branches -- the places are matched by their number of
  samples, busiest to busiest, so a rare path's few samples stay its own), and its
  GIL-free share is their CPU-weighted mean.

>>> fit_split([(2, 4.0), (1, 8.0), (4, 2.0)], n0=2)
1.0
>>> fit_split([(2, 4.0), (1, 4.2)], n0=2)
0.05
>>> fit_split([(1, 4.2), (2, 4.0)], n0=2)        # the same traces in the other order
0.05
>>> fit_split([(2, 4.0), (2, 4.1)], n0=2) is None
True
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .blocks import cpu_sum
from .structure import leaves


@dataclass
class PoolFacts:
    """One pool in one trace."""

    size: int
    work: float            # CPU ns per iteration of one thread
    gil_free: float        # CPU-weighted GIL-free share of its fragments
    divisible: bool        # runs without taking work items


@dataclass
class Across:
    """What the traces say together: fitted splits, spreads, header lines."""

    splits: dict = field(default_factory=dict)      # pool -> (share, comment)
    lines: list = field(default_factory=list)       # header comments
    info: dict = field(default_factory=dict)
    #: step_key -> for each *other* trace of the first one's configuration, its places of
    #: that code as [(CPU samples, GIL-free share)], busiest first
    pooled: dict = field(default_factory=dict)
    same: int = 1                                   # traces of the first one's configuration
    #: id(leaf) of the first trace's CPU steps -> its rank among the places of its code
    rank: dict = field(default_factory=dict)

    def samples(self, runner: str, leaf, xs: list, share: float) -> tuple[list, float, int]:
        """A CPU step's samples and GIL-free share over every trace of the configuration;
        the number of traces they come from."""
        k = self.rank.get(id(leaf))
        more = [places[k] for places in self.pooled.get(step_key(runner, leaf), ())
                if k is not None and k < len(places)]
        if not more:
            return xs, share, 1
        allx = list(xs) + [x for ys, _ in more for x in ys]
        cpu = [(sum(xs), share)] + [(sum(ys), sh) for ys, sh in more]
        tot = sum(c for c, _ in cpu)
        return allx, (sum(c * sh for c, sh in cpu) / tot if tot > 0 else share), 1 + len(more)


def pool_facts(an) -> dict[str, PoolFacts]:
    """Each modelled pool of an analysis (the main thread left out)."""
    out = {}
    for r in an.runners:
        # a pool that runs its body once per thread (threads forked and joined: its whole
        # run) has one iteration per thread
        runs = r.iterations if r.mode == "forever" else len(r.group.tids)
        if r.mode == "omitted" or r.group.main or runs <= 0:
            continue
        lvs = leaves(r.items)
        cpu = sum(cpu_sum(lf) for lf in lvs)
        free = sum(cpu_sum(lf) * an.shares.get(id(lf), 0.0) for lf in lvs)
        out[r.name] = PoolFacts(r.size, cpu / runs, free / cpu if cpu > 0 else 0.0,
                                not any(lf.action == "take" for lf in lvs))
    return out


def step_key(runner: str, leaf) -> tuple:
    """A step's name in any trace of the program: runner, operation, site, site before it
    (an object's address differs from run to run)."""
    return (runner, leaf.token[0], leaf.token[2], leaf.prev)


def cpu_steps(an) -> dict:
    """step_key -> the places of that code in the modelled runners, busiest first: for each,
    (its leaf, CPU samples, GIL-free share).  A key has several places when the same code
    between the same two sites is reached in several places of a body (two branches)."""
    parts: dict = {}
    for r in an.runners:
        if r.mode == "omitted":
            continue
        for lf in leaves(r.items):
            xs = [st.cpu for st in lf.steps if st.cpu is not None]
            if xs:
                share = an.shares.get(id(lf), 0.0) if an.gil else 0.0
                parts.setdefault(step_key(r.name, lf), []).append((lf, xs, share))
    return {key: sorted(ps, key=lambda p: -len(p[1])) for key, ps in parts.items()}


def configuration(an) -> tuple:
    """The runners and their sizes: traces with the same one are repeats."""
    return tuple(sorted((r.name, r.size) for r in an.runners if r.mode != "omitted"))


def fit_split(points: list[tuple[int, float]], n0: int) -> float | None:
    """The divided share ``s`` at pool size ``n0`` from (pool size, work per iteration and
    thread) points: ``W(n) = a + b / n`` fitted by least squares over every point (in any
    order: the fit does not depend on which trace came first), ``s = (b / n0) / W(n0)``,
    clipped to [0, 1]; None when every point has the same size."""
    ns = {n for n, _ in points}
    if len(ns) < 2:
        return None
    xs = [1.0 / n for n, _ in points]
    ys = [w for _, w in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    w0 = a + b / n0
    if w0 <= 0:
        return None
    return round(min(1.0, max(0.0, (b / n0) / w0)), 2)


def across(analyses: list, names: list[str]) -> Across:
    """Compare the analyses of several traces (``names``: their files); the first is the
    model's."""
    res = Across()
    facts = [pool_facts(an) for an in analyses]
    base = facts[0]
    res.info = {"traces": list(names), "pools": {}}
    for pool, f0 in base.items():
        seen = [(i, f[pool]) for i, f in enumerate(facts) if pool in f]
        sizes = [f.size for _, f in seen]
        works = [f.work for _, f in seen]
        frees = [f.gil_free for _, f in seen]
        entry = {"traces": [names[i] for i, _ in seen], "sizes": sizes, "work_ns": works,
                 "gil_free": frees}
        res.info["pools"][pool] = entry
        same = [f for _, f in seen if f.size == f0.size]
        if len(same) > 1:
            lo, hi = min(f.work for f in same), max(f.work for f in same)
            glo, ghi = min(f.gil_free for f in same), max(f.gil_free for f in same)
            entry["work_spread"] = (hi - lo) / lo if lo > 0 else 0.0
            res.lines.append(
                f"#   pool '{pool}' at {f0.size} threads in {len(same)} traces: CPU per iteration "
                f"{lo / 1e6:.3g}-{hi / 1e6:.3g} ms (spread {100 * entry['work_spread']:.0f}%), "
                f"GIL-free share {glo:.2f}-{ghi:.2f}")
        if not f0.divisible:
            continue
        s = fit_split(list(zip(sizes, works)), f0.size)
        if s is None:
            continue
        entry["split"] = s
        pts = ", ".join(f"{w / 1e6:.3g} ms at {n}" for n, w in zip(sizes, works))
        res.splits[pool] = (s, f"share of the work per iteration of pool '{pool}' that the program "
                               f"divides among its threads, fitted from {len(seen)} traces "
                               f"(CPU per iteration and thread: {pts} threads)")
        res.lines.append(f"#   pool '{pool}': divided share of its work {s:g}, from traces at "
                         f"{', '.join(map(str, sorted(set(sizes))))} threads")
    conf = configuration(analyses[0])
    repeats = [an for an in analyses[1:] if configuration(an) == conf]
    if repeats:
        mine = cpu_steps(analyses[0])
        res.rank = {id(lf): i for places in mine.values() for i, (lf, _, _) in enumerate(places)}
        for an in repeats:
            for key, places in cpu_steps(an).items():
                if key in mine:
                    res.pooled.setdefault(key, []).append([(xs, sh) for _, xs, sh in places])
        res.same = 1 + len(repeats)
        res.info["averaged_over"] = res.same
        res.lines.append(f"#   CPU steps fitted from the samples of {res.same} traces of this "
                         "configuration (same runners and sizes)")
    if res.lines:
        res.lines.insert(0, f"# Across {len(analyses)} traces ({', '.join(names)}):")
    return res


__all__ = ["Across", "PoolFacts", "across", "configuration", "cpu_steps", "fit_split", "pool_facts"]
