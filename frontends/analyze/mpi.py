"""Models of MPI programs (SPMD ranks) from the traces of their ranks.

``qpn trace -- mpiexec -n 2 python prog.py`` records every rank (a process each,
:mod:`frontends.pytrace.mpipatch`); their traces are joined (:mod:`frontends.processes`)
and, when they hold ``mpi`` events, modelled here instead of by the thread analyzer:

1. **The loop.**  Each rank's MPI calls, in order, are cut at its most frequent
   collective call site (the *anchor*, e.g. the ``allreduce`` that ends an iteration);
   the most common sequence of (operation, site) between two anchors is the loop body,
   and every rank must run the same one (SPMD).  The first tenth of the iterations is
   start-up and left out.
2. **Compute.**  The CPU time between consecutive calls (``cpu`` of the next call less
   the end of the previous one), pooled over ranks and iterations, less the tracer's own
   cost per event; fragments below the prune share join the largest.
3. **Communication.**  The last rank to arrive at a collective (or at a pairwise
   exchange) does not wait for the others: its time in the call is the operation's cost.
   Per call site, the median over iterations of that rank's time is the cost, and the
   LogGP-style ``latency`` and ``per_byte`` of the communicator are fitted to all sites
   by non-negative least squares (qpn/software/mpi.py has the cost of each operation).
4. **Scaling.**  One trace cannot tell how the work depends on the number of ranks:
   the model assumes strong scaling (the problem of the traced run shared by the ranks,
   ``split_rank = 1``) and says so; ``split_rank = 0`` keeps each rank's work fixed.
   Traces at other rank counts (``qpn build A B``) measure it: a rank's compute per
   iteration is fitted as fixed + divided / ranks, and their calls' costs join the
   LogGP fit.

The model is a pool of ``ranks`` threads on the traced machine's cores, one
communicator ``world`` whose costs are CPU work on the host (ranks on one machine
exchange messages through shared memory); ``throughput('rank.begin') / ranks`` is the
rate of the loop's iterations (``throughput('world.trip')`` counts every collective).
"""
from __future__ import annotations

import os
from collections import Counter, defaultdict

import numpy as np

from qpn.errors import QPNError
from qpn.expr import Num, evaluate
from qpn.software import ast as sw
from qpn.software import mpi as software_mpi

from .fit import fit, fmt_time, _g
from .naming import ident, split_site

#: collectives (every rank takes part); the others are pairwise
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
               "alltoall")
NONBLOCKING = ("isend", "irecv")   # their posting: compute; their wait: an exchange
WARMUP = 0.1            # the share of iterations left out as start-up
PRUNE = 0.03            # fragments below this share of the loop's CPU join the largest


def has_mpi(trace) -> bool:
    """Whether a (joined) trace holds MPI calls."""
    return any(e["kind"] == "mpi" for e in trace.events)


def rounds(p: int) -> int:
    """ceil(log2 p): the rounds of a tree or recursive-doubling collective of p ranks (the
    software layer's :func:`qpn.software.mpi.rounds`)."""
    return int(software_mpi.rounds(Num(p)).value)


def cost_terms(op: str, p: int, m: float, k: int = 1) -> tuple[float, float]:
    """(a, b) with cost = a * latency + b * per_byte for ``op`` of ``m`` bytes among ``p``
    ranks: the software layer's formulas (:func:`qpn.software.mpi.cost`) at latency 1 and
    per_byte 0, then at 0 and 1.  A blocking send or receive is an exchange (``sendrecv``);
    a ``wait`` completes ``k`` receives of ``m`` bytes in all, an exchange each."""
    step = {"send": "sendrecv", "recv": "sendrecv", "wait": "sendrecv"}.get(op, op)

    def at(lat: int, per_byte: int, size: float) -> float:
        comm = sw.Comm("world", Num(p), Num(lat), Num(per_byte))
        return evaluate(software_mpi.cost(step, comm, Num(size)), {})
    if op == "wait":
        return k * at(1, 0, 0), at(0, 1, m)
    return at(1, 0, m), at(0, 1, m)


def _ranks(trace) -> tuple[dict, int]:
    """{tid: rank} of the ranks' main threads and the communicator's size."""
    comm_rank, size = {}, None
    for e in trace.events:
        if e["kind"] == "object" and e.get("type") == "comm" and e.get("name", "world") == "world":
            comm_rank[e["obj"]] = e.get("rank", 0)
            size = e.get("parties", size)
    ranks = {}
    for e in trace.events:
        if e["kind"] == "mpi" and e["obj"] in comm_rank:
            ranks.setdefault(e["tid"], comm_rank[e["obj"]])
    if not ranks or size is None:
        raise QPNError("qpn build: the trace has MPI calls but no communicator "
                       "(trace the program with qpn trace, which records COMM_WORLD)")
    return ranks, int(size)


def _loop(calls: list) -> tuple[tuple, list]:
    """(body signature, [iteration: list of calls]) of one rank's calls."""
    sites = Counter((c["op"], c.get("site")) for c in calls if c["op"] in COLLECTIVES)
    if not sites:
        sites = Counter((c["op"], c.get("site")) for c in calls)
    anchor = max(sites, key=lambda k: (sites[k], k[1] or ""))
    cuts = [i for i, c in enumerate(calls) if (c["op"], c.get("site")) == anchor]
    its = [calls[a + 1:b + 1] for a, b in zip(cuts, cuts[1:])]
    sigs = [tuple((c["op"], c.get("site")) for c in it) for it in its]
    if not sigs:
        return (), []
    body = Counter(sigs).most_common(1)[0][0]
    return body, [it for it, sig in zip(its, sigs) if sig == body]


def analyze_mpi(trace, probe_ns: float = 0.0) -> dict:
    """The loop of the ranks, its fragments' CPU and its calls' costs (see the module)."""
    ranks, size = _ranks(trace)
    by_tid = defaultdict(list)
    for e in trace.events:
        # posting a non-blocking call is part of the computation around it; its wait is
        # the exchange
        if e["kind"] == "mpi" and e["tid"] in ranks and e["op"] not in NONBLOCKING:
            by_tid[e["tid"]].append(e)
    loops = {}
    for tid, calls in by_tid.items():
        loops[tid] = _loop(calls)
    bodies = {b for b, _ in loops.values()}
    if len(bodies) != 1 or not next(iter(bodies)):
        raise QPNError("qpn build: the MPI ranks do not all run one loop of calls (SPMD): "
                       + "; ".join(f"rank {ranks[t]}: " + ", ".join(f"{o}@{s}" for o, s in b[:6])
                                   for t, (b, _) in sorted(loops.items(), key=lambda x: ranks[x[0]]))
                       + " (qpn models SPMD programs: every rank repeats the same calls)")
    body = next(iter(bodies))
    n = min(len(its) for _, its in loops.values())
    skip = int(n * WARMUP)
    k = len(body)
    cpu = [[] for _ in range(k)]        # CPU before call i (the fragment ending at call i)
    dur = [[] for _ in range(k)]        # per iteration: {rank: (start, dur, cpu_dur)}
    for i in range(k):
        dur[i] = [dict() for _ in range(n - skip)]
    for tid, (_, its) in loops.items():
        r = ranks[tid]
        prev_end = None
        for j, it in enumerate(its[:n]):
            for i, c in enumerate(it):
                start_cpu = c.get("cpu")
                if prev_end is not None and start_cpu is not None and j >= skip:
                    cpu[i].append(max(0.0, start_cpu - prev_end - probe_ns))
                if j >= skip:
                    dur[i][j - skip][r] = (c["ts"], c.get("dur", 0), c.get("cpu_dur", 0))
                prev_end = None if start_cpu is None else start_cpu + (c.get("cpu_dur") or 0)
    calls = []
    for i, (op, site) in enumerate(body):
        last = []
        for per in dur[i]:
            if len(per) == len(ranks):
                ts, d, _ = max(per.values(), key=lambda x: x[0])
                last.append(d if op in COLLECTIVES else min(x[1] for x in per.values()))
        made = [it[i] for _, its in loops.values() for it in its[skip:n]]   # call i's
        sizes = [c.get("bytes") or 0 for c in made]
        counts = [c.get("count", 1) for c in made]
        calls.append({"op": op, "site": site, "bytes": int(np.median(sizes)) if sizes else 0,
                      "cost": float(np.median(last)) if last else 0.0, "n": len(last),
                      "count": int(round(float(np.median(counts)))) if counts else 1,
                      "cpu": cpu[i]})
    return {"ranks": size, "iterations": n, "warmup": skip, "body": calls,
            "rank_of": ranks}


def fit_loggp(calls: list, p: int, more: tuple = ()) -> tuple[float, float]:
    """(latency, per_byte) in ns and ns/byte fitted to the calls' costs (non-negative least
    squares; latency alone when every call moves the same bytes); ``more``: (calls, ranks)
    of traces at other rank counts, fitted together."""
    from scipy.optimize import nnls
    rows = [(cost_terms(c["op"], q, c["bytes"], c.get("count", 1)), c["cost"])
            for cs, q in ((calls, p), *more) for c in cs]
    rows = [((a, b), y) for (a, b), y in rows if a or b]
    if not rows:
        return 0.0, 0.0
    A = np.array([ab for ab, _ in rows], dtype=float)
    y = np.array([v for _, v in rows], dtype=float)
    if np.linalg.matrix_rank(A) < 2:
        lat = float(np.dot(A[:, 0], y) / np.dot(A[:, 0], A[:, 0])) if A[:, 0].any() else 0.0
        return max(lat, 0.0), 0.0
    x, _ = nnls(A, y)
    return float(x[0]), float(x[1])


def fit_split(loops: list, p: int) -> tuple[float, float, float] | None:
    """(split, fixed ns, divided ns) of a rank's compute per iteration from (ranks, compute
    ns) at two or more rank counts: compute = fixed + divided / ranks (least squares, both
    >= 0); split is the divided share at ``p`` ranks (what ``split_rank`` means).  None
    with one rank count.

    >>> split, fixed, divided = fit_split([(1, 911.0), (2, 490.0)], 2)
    >>> round(fixed), round(divided), round(split, 3)
    (69, 842, 0.859)
    """
    from scipy.optimize import nnls
    if len({q for q, _ in loops}) < 2:
        return None
    A = np.array([[1.0, 1.0 / q] for q, _ in loops])
    y = np.array([c for _, c in loops], dtype=float)
    (fixed, divided), _ = nnls(A, y)
    at = fixed + divided / p
    return (float(divided / p / at) if at > 0 else 1.0), float(fixed), float(divided)


def repeat_prefix(sig: list) -> tuple[int, int]:
    """(b, k): the longest start of ``sig`` made of k >= 2 copies of one block of b items
    (the inner loop of an iteration whose collective comes every k passes); (0, 0) if none.

    >>> repeat_prefix(["w"] * 10), repeat_prefix(["a", "b", "a", "b", "c"]), repeat_prefix(["a", "b"])
    ((1, 10), (2, 2), (0, 0))
    """
    best = (0, 0)
    for b in range(1, len(sig) // 2 + 1):
        k = 1
        while sig[k * b:(k + 1) * b] == sig[:b]:
            k += 1
        if k >= 2 and b * k > best[0] * best[1]:
            best = (b, k)
    return best


def _entries(calls: list, block: int, k: int) -> list:
    """(call, site before it, times per iteration) of the loop's body: a repeated block
    once, its passes pooled, then the rest."""
    out = []
    for j in range(block):
        same = [calls[r * block + j] for r in range(k)]
        merged = dict(same[0])
        merged["cpu"] = [x for c in same for x in c["cpu"]]
        merged["cost"] = float(np.median([c["cost"] for c in same]))
        merged["n"] = sum(c["n"] for c in same)
        prev = calls[j - 1]["site"] if j else calls[block - 1]["site"]
        out.append((merged, prev, k))
    for i in range(block * k, len(calls)):
        out.append((calls[i], calls[i - 1]["site"], 1))
    return out


def _unique(names: list) -> list:
    """``names`` with a suffix _2, _3 ... on repeats."""
    seen: Counter = Counter()
    out = []
    for nm in names:
        seen[nm] += 1
        out.append(nm if seen[nm] == 1 else f"{nm}_{seen[nm]}")
    return out


def _fragment_name(prev: str | None, site: str | None) -> str:
    return f"cpu_{split_site(prev)[1]}_{split_site(site)[1]}"


def _others(others: tuple, body: list, warnings: list) -> list:
    """The analyses of traces at other rank counts whose loop is the model's."""
    sig = [(c["op"], c["site"]) for c in body]
    out = []
    for t in others:
        try:
            o = analyze_mpi(t, float(getattr(t.header, "probe_ns", 0) or 0))
        except QPNError as exc:
            warnings.append(f"{os.path.basename(t.path or '?')}: not used: {exc}")
            continue
        if [(c["op"], c["site"]) for c in o["body"]] != sig:
            warnings.append(f"{os.path.basename(t.path or '?')}: not used: its ranks' loop "
                            "differs from the first trace's")
            continue
        out.append(o)
    return out


def write_mpi_model(trace, *, name: str | None = None, prune: float = PRUNE,
                    others: tuple = (), warnings: list | None = None) -> tuple[str, dict]:
    """The model text of an MPI program's joined trace and facts about it; ``others``:
    traces of the same program at other rank counts, which tell how the compute divides
    among the ranks and fit the communication costs with the first."""
    h = trace.header
    probe = float(getattr(h, "probe_ns", 0) or 0)
    a = analyze_mpi(trace, probe)
    p, calls = a["ranks"], a["body"]
    more = _others(others, calls, warnings if warnings is not None else [])
    lat, per_byte = fit_loggp(calls, p, tuple((o["body"], o["ranks"]) for o in more))
    loop_of = lambda an: sum(float(np.mean(c["cpu"])) for c in an["body"] if c["cpu"])   # noqa: E731
    split = fit_split([(a["ranks"], loop_of(a))] + [(o["ranks"], loop_of(o)) for o in more], p)
    cores = int((h.runtime or {}).get("cpus") or (h.machine or {}).get("cpus") or 1)
    block, k = repeat_prefix([(c["op"], c["site"]) for c in calls[:-1]])
    entries = _entries(calls, block, k)         # (call, site before it, times per iteration)
    total = [float(np.mean(c["cpu"])) if c["cpu"] else 0.0 for c, _, _ in entries]
    weight = [t * m for t, (_, _, m) in zip(total, entries)]
    loop_cpu = sum(weight) or 1.0
    keep = [w >= prune * loop_cpu for w in weight]
    big = int(np.argmax(weight))
    keep[big] = True
    extra = sum(w for w, kp in zip(weight, keep) if not kp) / entries[big][2]
    argv = " ".join(h.program.get("argv") or []) or "?"
    net = ident(name or os.path.splitext(os.path.basename(trace.path or "mpi"))[0], "mpi")
    out = [f"# Model of the MPI program `{argv}`, built by `qpn build` from "
           f"{os.path.basename(trace.path or '?')}:",
           f"# {p} ranks (a process each, traced by qpn trace), {cores} CPUs; "
           f"{a['iterations']} iterations of the loop, the first {a['warmup']} left out as start-up.",
           "# The loop (the same in every rank): "
           + ", ".join(f"{c['op']} at {_short(c['site'])}" for c in calls) + ".",
           f"# Communication (LogGP, fitted to the last rank's time in each call): latency "
           f"{fmt_time(lat)}, {_g(per_byte)} ns per byte; as CPU work of the host (shared memory).",
           "# A rank's passes through the loop below per second: throughput('rank.begin') / "
           "ranks (throughput('world.trip') counts every collective)"
           + (f"; a pass holds {k} repeats of the calls between two {calls[-1]['op']}s." if block
              else "."),
           ]
    if split is None:
        out += ["# Assumptions (what this trace cannot tell; a param of the same name changes it):",
                "#   split_rank: the ranks share one problem (strong scaling: mpiexec -n N with "
                "the same arguments); 0 = each rank's work stays as traced (weak scaling); "
                "a trace at another rank count beside this one (qpn build A B) measures it"]
    else:
        ranks_seen = sorted({p} | {o["ranks"] for o in more})
        out.append(f"# How the compute divides (traces at {', '.join(map(str, ranks_seen))} ranks): "
                   f"{fmt_time(split[1])} + {fmt_time(split[2])} / ranks per rank and iteration; "
                   f"split_rank = {_g(split[0])}, the divided share at {p} ranks.")
    out += ["", f"net {net}", "",
            f"# MPI ranks (the traced run had {p})", f"param ranks = {p}", "",
            "# CPU cores (runtime.cpus)", f"param cores = {cores}", "",
            "# 1: the traced work is shared by the ranks; 0: each rank's work is fixed",
            f"param split_rank = {1 if split is None else _g(split[0])}",
            f"param work_rank = 1 - split_rank + split_rank * {p} / ranks", ""]
    names = _unique([_fragment_name(prev, c["site"]) for c, prev, _ in entries])
    frags = {i: names[i] for i in range(len(entries)) if keep[i] and total[i] > 0}
    out.append("# speed-up factor of each code fragment (1 = as traced; 2 = twice as fast)")
    out += [f"param speedup_{nm} = 1" for nm in frags.values()]
    out += ["", "software {", "    # the machine's cores, shared by the ranks",
            "    cpu host cores cores ps", "",
            f"    # MPI_COMM_WORLD: collectives synchronize all ranks, then cost "
            "rounds x (latency + bytes x per_byte)",
            f"    comm world ranks ranks latency {fmt_time(lat)} per_byte {_g(per_byte)} ns on host",
            "", "    # one rank per thread; the loop of the traced ranks",
            "    pool rank size ranks {"]
    for i, (c, prev, times) in enumerate(entries):
        pad = "            " if i < block else "        "
        if i == 0 and block:
            out.append(f"        # the calls between two {calls[-1]['op']}s repeat {k} times")
            out.append(f"        loop {k} times {{")
        nm = frags.get(i)
        if nm is not None:
            f = fit(c["cpu"])
            mean = total[i] + (extra if i == big else 0.0)
            note = f" (+{fmt_time(extra)} of pruned fragments)" if i == big and extra else ""
            out.append(f"{pad}# {_short(prev)} -> {_short(c['site'])}: {f.describe()}{note}")
            out.append(f"{pad}cpu {_dist(f, mean, nm)} on host as {nm}")
        what = (f"{c['op']} of {c['count']} receive(s)" if c["op"] == "wait" else c["op"])
        out.append(f"{pad}# {what} at {_short(c['site'])}: {c['bytes']} bytes, cost "
                   f"{fmt_time(c['cost'])} (median of {c['n']} calls)")
        out += [f"{pad}{line}" for line in _steps(c)]
        if block and i == block - 1:
            out.append("        }")
    out += ["    }", "}", ""]
    info = {"runners": {"rank": {"mode": "forever", "size": p, "size_param": "ranks"}},
            "mpi": {"ranks": p, "latency_ns": lat, "per_byte_ns": per_byte,
                    "split": None if split is None else split[0],
                    "iterations": a["iterations"],
                    "calls": [{k: v for k, v in c.items() if k != "cpu"} for c in calls]}}
    return "\n".join(out), info


def _steps(call: dict) -> list[str]:
    """The model's steps for one traced call: a collective as it is, ``MPI_Barrier`` as
    ``await``, a blocking send or receive as one exchange, and the wait for non-blocking
    calls as one exchange per receive it completed (none without a neighbour)."""
    op, nb = call["op"], call["bytes"]
    if op == "barrier":
        return ["await world"]
    if op in ("send", "recv", "sendrecv"):
        return [f"sendrecv world {nb}"]
    if op == "wait":
        k = call["count"]
        return [f"sendrecv world {round(nb / k)}"] * k if k else []
    return [f"{op} world {nb}"]


def _short(site: str | None) -> str:
    """``file.py:LINE`` of a site (the full path is in the header's command line)."""
    path, line = split_site(site)
    return f"{os.path.basename(path or '?')}:{line}"


def _dist(f, mean: float, nm: str) -> str:
    from qpn.dsl.printing import fmt_dist
    from qpn.expr import Ref
    scale = mean / f.mean if f.mean else 1.0      # the pruned fragments' CPU added
    return fmt_dist(f.dist(f"speedup_{nm}", scale=scale, factor=Ref("work_rank")))
