"""The CTMC solver: exact steady state (and transient) of a queueing Petri net.

>>> import qpn
>>> res = qpn.solve(qpn.load("models/mutex.qpn"), method="ctmc")
>>> round(res.get("utilization", "critical"), 6) > 0
True
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from qpn.model import IN_ORDER, ONE_AT_A_TIME
from qpn import disciplines, progress, resources
from qpn.errors import QPNError, SolverError

from ..measures import derive, to_result
from ..options import Flag, SolverOptions, choice, mapping, option, optional, positive, whole
from ..result import Result
from .explore import Explorer, StateSpace
from .linalg import generator, steady_state, transient
from .spec import CTMCSpec, build_spec

#: default cap on tangible states (a time budget more than a memory one); the memory
#: limit (qpn.resources) lowers it on machines that cannot hold that many
DEFAULT_LIMIT = 2_000_000


@dataclass
class CTMC:
    """A generated chain: the spec, the state space and its generator.

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> ctmc = build(qpn.compile_net(net))          # two jobs: 0, 1 or 2 at the cpu
    >>> ctmc.n, ctmc.Q.shape
    (3, (3, 3))
    """
    spec: CTMCSpec
    space: StateSpace
    Q: object

    @property
    def n(self) -> int:
        """The number of tangible states."""
        return self.Q.shape[0]


#: the population cut-off an open net starts from (doubled while the mass at it is not negligible)
START_CUTOFF = 60
STEADY_METHODS = ("auto", "direct", "gauss-seidel", "bicgstab", "gmres", "power")


@dataclass(frozen=True)
class CTMCOptions(SolverOptions):
    """Options of the CTMC solver."""
    label = "CTMC"
    limit: int | None = option(None, f"refuse chains beyond this many tangible states (default "
                                     f"{DEFAULT_LIMIT:,}, lowered to what memory holds)",
                               optional(whole(1, "a whole number")),
                               flag=Flag(metavar="N", help=f"CTMC: refuse beyond this many states "
                                                           f"(default {DEFAULT_LIMIT:,})"))
    cutoff: int | None = option(None, f"population cut-off of open nets (default adaptive: "
                                      f"{START_CUTOFF}, doubled until the mass at it is below "
                                      f"'truncation')",
                                optional(whole(1, "a whole number")),
                                flag=Flag(metavar="N", help="CTMC: population cut-off of open nets "
                                                            "(default adaptive)"))
    truncation: float = option(1e-10, "adaptive cut-off: stop when the probability of the "
                                      "cut-off states is below this", positive())
    max_cutoff: int = option(2000, "adaptive cut-off: no more doubling once the cut-off has "
                                   "reached this (the result warns of the mass left there)",
                             whole(1, "a whole number"))
    det_order: int = option(20, "phases of the Erlang that stands for a deterministic delay",
                            whole(1, "a whole number"))
    rr: str | None = option(None, "'ps': solve round robin queues as processor sharing (the "
                                  "limit of a small quantum)", optional(choice("ps")))
    steady: str = option("auto", "steady-state method", choice(*STEADY_METHODS))
    predicates: dict = option(None, "probabilities of marking predicates over place totals "
                                    "(name -> expression, e.g. idle: 'lock == 1')", mapping(),
                              factory=dict)

    @property
    def first_cutoff(self) -> int:
        """The population cut-off to start from: ``cutoff``, or the adaptive start."""
        return START_CUTOFF if self.cutoff is None else self.cutoff


def build(compiled, options: dict | CTMCOptions | None = None) -> CTMC:
    """Generate the CTMC of a compiled net (refusing if it is estimated too large).

    >>> import qpn
    >>> ctmc = build(qpn.compile_net(qpn.load("models/mutex.qpn")), {"limit": 1000})
    >>> ctmc.n                                       # 0..5 threads at the lock
    6
    """
    o = CTMCOptions.of(options)
    cutoff = o.first_cutoff
    key = _probe_key(o, cutoff)
    found = compiled.__dict__.get("_ctmc_probes", {}).pop(key, None)   # auto counted it already
    if found is not None:
        spec, space = found
    else:
        spec = build_spec(compiled, cutoff=cutoff, det_order=o.det_order, rr=o.rr)
        # asked for by name: a longer look before a loose bound refuses (8.5e11 for QPME's
        # ispass03, which has 63,271 states)
        space = probe(spec, o.limit, seconds=NAMED_PROBE_SECONDS)
    if space is None:
        limit = check_size(spec, o.limit)
        space = Explorer(spec, limit).run()
    Q = generator(space.src, space.dst, space.rate, len(space.states))
    return CTMC(spec, space, Q)


#: states a bounded exploration may generate to count exactly when the bound is too high,
#: and the time it may take, as a budget of states: PROBE_RATE states a second (a budget
#: of states, not of time, so that neither a busy nor a slow machine changes the answer:
#: auto chose the CTMC or the simulator for one model by the load); longer when the CTMC
#: was asked for by name (--method ctmc) than when auto considers it.  CPU time of
#: PROBE_BACKSTOP times the seconds (PROBE_SECONDS at least: the first probe of a process
#: imports what it needs) stops a chain whose vanishing markings cost far more than its
#: states.
PROBE_STATES = 250_000
PROBE_SECONDS = 2.0
NAMED_PROBE_SECONDS = 10.0
PROBE_RATE = PROBE_STATES / PROBE_SECONDS
PROBE_BACKSTOP = 4.0


def _probe_key(o: CTMCOptions, cutoff: int) -> tuple:
    return (cutoff, o.det_order, o.rr, o.limit)


def keep_probe(compiled, o: CTMCOptions, cutoff: int, spec: CTMCSpec, space) -> None:
    """Hand a probe's exploration to the solve that follows (auto probed to choose)."""
    compiled.__dict__.setdefault("_ctmc_probes", {})[_probe_key(o, cutoff)] = (spec, space)


def probe(spec: CTMCSpec, limit: int | None, seconds: float = PROBE_SECONDS):
    """When the state bound is above the limits, explore up to PROBE_STATES (or the
    ``seconds`` of work at PROBE_RATE, or the state limit; each level and round of
    immediate firings costs ``explore.LEVEL_WORK`` states' work): a chain that ends there
    is counted exactly (spec.estimate becomes its size) and returned."""
    if size_problem(spec, limit) is None or len(spec.bounds) != spec.ncols:
        return None
    work = max(1000, int(seconds * PROBE_RATE))
    n = min(PROBE_STATES, state_limit(spec, limit), work)
    if not resources.fits(n * spec.bytes_per_state):
        return None
    try:
        space = Explorer(spec, n, seconds=max(seconds, PROBE_SECONDS) * PROBE_BACKSTOP,
                         work=work).run()
    except SolverError:
        return None
    spec.estimate, spec.estimate_kind, spec.estimate_how = float(len(space.states)), "exact", \
        "exploring it"
    return space


def state_limit(spec: CTMCSpec, limit: int | None) -> int:
    """The state cap: ``limit`` (--limit) or DEFAULT_LIMIT."""
    return DEFAULT_LIMIT if limit is None else int(limit)


def size_problem(spec: CTMCSpec, limit: int | None) -> str | None:
    """Why the chain is too large to generate (states or memory), or None."""
    n = state_limit(spec, limit)
    if spec.estimate > n:
        return (f"the CTMC has {spec.estimate_phrase()}, above the limit of {n:,} states")
    if not resources.fits(spec.memory_bytes()):
        return (f"the CTMC with {spec.estimate_phrase()} would need about "
                f"{resources.format_size(spec.memory_bytes())}, above the memory limit of "
                f"{resources.format_size(resources.memory_limit()[0])}")
    return None


def check_size(spec: CTMCSpec, limit: int | None) -> int:
    """Refuse before generating when the state estimate is above the state limit or its
    memory above the memory limit; the state limit to explore with."""
    n = state_limit(spec, limit)
    if spec.estimate > n:
        raise SolverError(f"the CTMC has {spec.estimate_phrase()}, above the limit of {n:,} states "
                          "(set --limit to raise it); use --method des or smaller parameters",
                          construct="state-space size", methods=("des",))
    resources.require(f"the CTMC with {spec.estimate_phrase()}", spec.memory_bytes(),
                      hint="use --method des or smaller parameters")
    return n


def class_busy(spec: CTMCSpec, states: np.ndarray) -> list[np.ndarray]:
    """Busy servers per queue class in every state: list of (n, nclasses)."""
    from .dynamics import Dynamics
    dyn = Dynamics(spec)
    S = states.astype(np.int64)
    out = []
    for q in spec.queues:
        K = len(q.classes)
        B = np.zeros((len(S), K))
        s = q.servers
        if q.layout == "counts":
            n = S[:, q.classes].astype(float)
            tot = n.sum(axis=1)
            if q.serves == "all":
                B = n
            elif q.serves == "shared":
                B = n * q.shared_factor(tot)[:, None]
            else:
                B = np.minimum(n, s)
        else:
            served, share = dyn.served(q, S)
            cls = S[:, q.cls_cols]
            for k in range(K):
                B[:, k] = ((cls == k + 1) & served).sum(axis=1) * share
        out.append(B)
    return out


def _predicates(ctmc: CTMC, pi: np.ndarray, preds: dict) -> list[tuple]:
    """Probability of marking predicates written over place totals, e.g. 'lock == 0'."""
    from qpn.dsl.grammar import parse_expr
    from qpn.expr import evaluate
    c = ctmc.spec.compiled
    S = ctmc.space.states
    env = {}
    for p in c.places:
        cols = p.slots + (p.qslots or [])
        env[p.name] = S[:, cols].sum(axis=1)
    rows = []
    for name, text in preds.items():
        try:
            val = evaluate(parse_expr(text), env)
        except QPNError as exc:
            raise SolverError(f"predicate '{name}': {exc}") from None
        mask = np.asarray(val, dtype=bool)
        rows.append(("probability", name, "", float(pi[mask].sum()) if mask.ndim else float(bool(mask))))
    return rows


def measures(ctmc: CTMC, pi: np.ndarray) -> list[tuple]:
    """The measure rows (tokens, throughputs, utilizations, residence times) of the
    steady state ``pi`` of ``ctmc``: mean tokens per slot, firing rates per mode and busy
    servers per queue class, derived as every solver derives them.

    >>> import qpn
    >>> from qpn.solvers.ctmc.linalg import steady_state
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> ctmc = build(qpn.compile_net(net))
    >>> pi, info = steady_state(ctmc.Q)
    >>> [(m, e, round(float(v), 4)) for m, e, color, v in measures(ctmc, pi) if m == "tokens"]
    [('tokens', 'think', 0.8), ('tokens', 'cpu', 1.2)]
    """
    c = ctmc.spec.compiled
    S = ctmc.space.states
    slot_tokens = pi @ S[:, :c.nslots].astype(float)
    sp = ctmc.space
    mode_rates = np.bincount(sp.flow_mode, weights=sp.flow_rate * pi[sp.flow_state],
                             minlength=len(c.modes)).astype(float)
    busy = [pi @ B for B in class_busy(ctmc.spec, S)]
    return derive(c, slot_tokens, mode_rates, busy)


class CTMCSolver:
    """``ctmc``: the exact steady state of the net's Markov chain (phase-type delays).

    >>> import qpn
    >>> c = qpn.compile_net(qpn.load("models/mutex.qpn"))
    >>> solver = CTMCSolver()
    >>> solver.problems(c, {}), solver.name
    ([], 'ctmc')
    >>> round(solver.solve(c, {}).get("throughput", "acquire"), 4)
    3.5757
    """
    name = "ctmc"
    Options = CTMCOptions

    def problems(self, compiled, options: dict) -> list[str]:
        """Constructs with no exact Markov chain: a discipline declared without one (its
        ``ctmc`` is None), round robin with a quantum (unless ``rr='ps'``), infinitely many servers with an ordering discipline, a
        non-exponential delay with several servers, in-order departure after LCFS-PR, PRIO or
        RANDOM service, a place that gives its tokens one at a time (departure fifo, random).

        >>> import qpn
        >>> c = qpn.compile_net(qpn.load("models/rr_cpu.qpn"))
        >>> CTMCSolver().problems(c, {})
        ['queue cpu: round robin with a quantum (no exact Markov model)']
        >>> CTMCSolver().problems(c, {"rr": "ps"})      # as processor sharing it has one
        []
        """
        o = CTMCOptions.of(options)
        out = []
        for q in compiled.queues:
            d = disciplines.get(q.discipline)
            if d.ctmc is None:
                out.append(f"queue {q.name}: {d.why_no_ctmc()}")
            if d.ctmc == "ps" and o.rr != "ps":
                out.append(f"queue {q.name}: round robin with a quantum (no exact Markov model)")
            if math.isinf(q.servers) and not d.shares_service:
                out.append(f"queue {q.name}: infinitely many servers with {q.discipline}")
        for m in compiled.modes:
            if m.kind == "timed" and not m.delay.is_exponential() and m.servers != 1:
                out.append(f"transition {m.transition}: non-exponential delay with multiple servers")
        for p in compiled.places:
            if p.departure == IN_ORDER and p.queue is not None and \
                    not disciplines.get(compiled.queues[p.queue].discipline).ctmc_fifo_departure:
                out.append(f"place {p.name}: in-order departure with "
                           f"{compiled.queues[p.queue].discipline} service")
            if p.departure in ONE_AT_A_TIME:
                out.append(f"place {p.name}: departure {p.departure} (the order of the waiting "
                           f"tokens is not part of the chain's state)")
        return out

    def solve(self, compiled, options: dict) -> Result:
        """Generate the chain and solve its steady state; an open net's population cut-off
        doubles until the probability at it is below ``truncation``.  A net without steady
        state (deadlock, growth, stalled solvers) is marked so on the result.

        >>> import qpn
        >>> c = qpn.compile_net(qpn.load("models/mm1.qpn"))      # open: rho 0.8
        >>> res = CTMCSolver().solve(c, {})
        >>> round(res.get("response", "server"), 6), res.info["truncated_mass"] < 1e-10
        (5.0, True)
        """
        o = CTMCOptions.of(options)
        t0 = time.perf_counter()
        adaptive = o.cutoff is None
        cutoff = o.first_cutoff
        masses: list[float] = []
        stopped = ""                    # why the adaptive cut-off stopped doubling, if not mass
        while True:
            ctmc = build(compiled, o.replace(cutoff=cutoff))
            t1 = time.perf_counter()
            stuck = _stuck(ctmc)
            if stuck is not None:       # no steady state to solve for (the system is singular)
                res = Result(method="ctmc", model=compiled.net.name,
                             info={"states": ctmc.n, "generation_seconds": t1 - t0})
                res.mark_degenerate(*stuck)
                return res
            pi, info = _steady(ctmc, o.steady)
            t2 = time.perf_counter()
            if ctmc.spec.cutoff is None or not adaptive:
                break
            mass = float(pi[ctmc.space.blocked].sum())
            masses.append(mass)
            # an open net: raise the cut-off until the mass at it is negligible
            if mass <= o.truncation or _plainly_growing(masses):
                break
            if cutoff >= o.max_cutoff:
                stopped = f"the adaptive cut-off stops at max_cutoff {o.max_cutoff}: --option max_cutoff=N"
                break
            if ctmc.n * 2.2 > state_limit(ctmc.spec, o.limit) or \
                    not resources.fits(ctmc.n * 2.2 * ctmc.spec.bytes_per_state):
                stopped = (f"doubling it would pass the state limit or the memory ({ctmc.n:,} "
                           "states now): --limit, or simulate (--method des)")
                break
            cutoff *= 2
        rows = measures(ctmc, pi) + _predicates(ctmc, pi, o.predicates)
        growing = _growing(compiled, rows, masses)
        sp = ctmc.space
        res = to_result(compiled, rows, "ctmc", states=ctmc.n, transitions=int(ctmc.Q.nnz - ctmc.n),
                        levels=sp.levels, generation_seconds=t1 - t0, solve_seconds=t2 - t1,
                        states_per_second=ctmc.n / max(t1 - t0, 1e-9),
                        **{("linear_solver" if k == "method" else k): v for k, v in info.items()})
        res.explanation.append(f"CTMC with {ctmc.n:,} tangible states, solved by {info['method']} "
                               f"(flow imbalance {info['residual']:.2e})")
        if info["residual"] > UNCONVERGED:
            # every linear solver stalled: the numbers are not the chain's steady state
            res.imprecise = f"the steady-state solvers stalled at flow imbalance {info['residual']:.1e}"
            res.warnings.append(f"{res.imprecise} (tried {'; '.join(info.get('tried', [info['method']]))}): "
                                "the measures may be far off; simulate (--method des) to check")
        for note in ctmc.spec.notes:
            res.warnings.append(f"approximation: {note}")
        if ctmc.spec.cutoff is not None:
            mass = float(pi[sp.blocked].sum())
            res.info["cutoff"] = ctmc.spec.cutoff
            res.info["truncated_mass"] = mass
            res.warnings.append(f"open net truncated at {ctmc.spec.cutoff} tokens; probability at the "
                                f"cut-off {mass:.3g}"
                                + (f" (raise --cutoff; {stopped})" if mass > 1e-6 and stopped else
                                   " (raise --cutoff)" if mass > 1e-6 else ""))
        if growing:
            res.mark_degenerate("unstable", growing)
        return res


#: a steady state whose flow imbalance |pi Q|_1 / sum_j pi_j q_j is above this is no answer
#: (the measures' relative errors are of this order); the solvers stop at 5e-11
UNCONVERGED = 1e-8

#: an open net whose probability at the population cut-off stays above this while the
#: cut-off doubles has no steady state (a stable one loses mass there geometrically)
UNSTABLE_MASS = 1e-3


def _plainly_growing(masses: list[float]) -> bool:
    """Whether the mass at the cut-off has stayed flat over three cut-offs (60, 120, 240):
    no need to double further.  A stable net's mass there falls at least like 1/cut-off
    (halves as the cut-off doubles: the mass at N is at most about 1/(N - mode), and
    geometrically so past the mode); an unstable one keeps it (1 - 1/rho for an
    overloaded queue).  Doubling on to 3,840 cost a 3,841-level exploration and a
    stalled solver for an overloaded M/M/1 (22 s); a mass flat at 0.0026 from 60 to 960
    cost 4.6 s of explorations for a fuzzed server whose queue holds 2^31 requests.
    So three cut-offs stop the doubling when the mass is flat, or when its ratio per
    doubling is above 1/2 and rising (0.0147, 0.0080, 0.0047: ratios 0.54, 0.59): a
    stable queue's ratio falls as the cut-off grows (rho^N), a critical one's stays near
    1/2; either way _growing's verdict on these masses is already 'unstable'."""
    if len(masses) >= 2 and min(masses[-2:]) > 0.5 and masses[-1] >= 0.8 * masses[-2]:
        return True     # more mass at the cut-off than below it, twice: rising, not falling
    if _critical(masses):
        return True
    if len(masses) < 3:
        return False
    a, b, c = masses[-3:]
    if min(a, b, c) <= UNSTABLE_MASS:
        return False
    return (b >= 0.8 * a and c >= 0.8 * b) or (c / b > 0.5 and c / b >= b / a)


#: how close to 1/2 the mass at the cut-off must stay, per doubling, for _critical
CRITICAL_BAND = (0.48, 0.52)


def _critical(masses: list[float]) -> bool:
    """Whether the mass at the cut-off has halved, no faster and no slower, at each of the
    last three doublings: the probability is spread evenly below the cut-off (1/cut-off at
    it), as in a queue whose arrivals equal its service (null recurrent: no steady state).
    A stable queue's ratio per doubling falls as the cut-off grows (even at utilization
    0.999: 0.49, 0.47, 0.44 from 60 to 480); a fuzzed critical net doubled on to 3,840
    (7.8 s) and answered with a mean of half the cut-off."""
    if len(masses) < 4 or min(masses[-4:]) <= 0:
        return False
    lo, hi = CRITICAL_BAND
    return all(lo <= b / a <= hi for a, b in zip(masses[-4:], masses[-3:]))


def _stuck(ctmc: CTMC) -> tuple[str, str] | None:
    """('deadlock' | 'unstable', why) when a reachable tangible state has no way out.

    Self-loops count as activity (a transition that fires without changing the marking).
    In an open net a dead state at the population cut-off means tokens pile up that
    nothing takes out: the truncation, not the net, stops them (unstable)."""
    sp = ctmc.space
    out = np.bincount(sp.src, weights=sp.rate, minlength=ctmc.n) if len(sp.src) else np.zeros(ctmc.n)
    dead = np.flatnonzero(out <= 0)
    if not len(dead):
        return None
    c = ctmc.spec.compiled
    S = sp.states
    cut = dead[sp.blocked[dead]] if ctmc.spec.cutoff is not None else dead[:0]
    from .dynamics import Dynamics
    if len(cut) and Dynamics(ctmc.spec).holds_back_a_step(S[cut].astype(np.int64)):
        # the truncation, not the net: a thread's item could not become an open token at
        # the cut-off (a loop of puts or releases, more than one firing's margin)
        raise SolverError(f"the CTMC's population cut-off ({ctmc.spec.cutoff} tokens) held back a "
                          "step inside a thread (not an arrival) and left a state with no way "
                          "out, which the net does not have: raise --cutoff, or simulate",
                          construct="population cut-off", methods=("des",))
    if len(cut):
        m = S[cut[0], :c.nslots].astype(np.int64)
        grow = m - c.m0
        names = sorted({c.places[c.slot_place[s]].name for s in np.flatnonzero(grow == grow.max())})
        return ("unstable", f"tokens pile up in {', '.join(repr(n) for n in names)} without bound: "
                            f"nothing takes them out (the CTMC cut off at {ctmc.spec.cutoff} tokens "
                            "gets stuck there)")
    from ..status import deadlock_reason
    return ("deadlock", deadlock_reason(c, S, dead))


def _steady(ctmc: CTMC, method: str) -> tuple[np.ndarray, dict]:
    """The steady state, with the solver's memory checked first and a ticking bar; a
    singular system (several closed classes) is a SolverError."""
    nnz = ctmc.Q.nnz
    # the iterative solvers hold about six copies of Q (transposes, triangles, factors)
    resources.require(f"solving the CTMC of {ctmc.n:,} states ({nnz:,} nonzeros)",
                      6 * 16.0 * nnz + 10 * 8.0 * ctmc.n, hint="use --method des")
    try:
        with progress.ticking(f"solving the CTMC ({ctmc.n:,} states)"):
            return steady_state(ctmc.Q, method)
    except RuntimeError as exc:          # SuperLU: "Factor is exactly singular"
        raise SolverError(f"the CTMC has no unique steady state ({exc}): the net can end in "
                          "more than one set of markings it never leaves; simulate it "
                          "(--method des) to see where it goes", methods=("des",)) from None


def _growing(compiled, rows: list, masses: list[float]) -> str | None:
    """Why an open net is unstable, judged from the mass at the cut-off as it doubled."""
    toks = {e: v for m, e, col, v in rows if m == "tokens" and col == ""}
    worst = max(toks, key=toks.get) if toks else "?"
    if _critical(masses):
        return (f"tokens in '{worst}' grow without bound (arrivals equal service): the "
                f"probability at the population cut-off halves each time the cut-off doubles "
                f"({', '.join(f'{m:.3g}' for m in masses)}), spread evenly below it")
    if len(masses) < 2 or masses[-1] <= UNSTABLE_MASS or masses[-1] < 0.5 * masses[-2]:
        return None
    return (f"tokens in '{worst}' grow without bound (arrivals above service): the probability "
            f"at the population cut-off stays at {masses[-1]:.3g} as the cut-off doubles")


#: multiply-adds a transient solution may take (uniformization: one product with the
#: generator per Poisson term, about rate x time terms); some minutes of CPU
TRANSIENT_WORK = 2e11
#: Poisson terms at most (their weights are held: 8 bytes each)
TRANSIENT_TERMS = 5e7


def _check_transient_work(ctmc: CTMC, t: float) -> None:
    """Refuse, with the estimate, a time the uniformization cannot reach: its Poisson
    series has about q t terms for the fastest exit rate q (a 1 ns step makes 10^9 per
    second), each a product with the generator."""
    q = float(-ctmc.Q.diagonal().min()) if ctmc.n else 0.0
    terms = q * t + 10 * math.sqrt(q * t) + 30
    if terms > TRANSIENT_TERMS or terms * max(ctmc.Q.nnz, 1) > TRANSIENT_WORK:
        raise SolverError(f"the transient solution at t = {t:g} s needs about {terms:.3g} "
                          f"uniformization steps of {ctmc.Q.nnz:,} multiply-adds (fastest rate "
                          f"{q:.3g}/s x {t:g} s), more than the {TRANSIENT_TERMS:.0e} steps or "
                          f"{TRANSIENT_WORK:.0e} multiply-adds it may take: ask for earlier times, "
                          "or use the steady state (no --transient) for late ones",
                          construct="--transient", methods=("des",))


def solve_transient(compiled, times, options: dict | None = None) -> list[Result]:
    """Measures at each time (instantaneous means and rates) from the initial marking.

    >>> import qpn
    >>> net = qpn.parse('''
    ... place a init 1
    ... place b
    ... transition f : a -> b delay exp(0.5)
    ... transition g : b -> a delay exp(1)''')
    >>> out = solve_transient(qpn.compile_net(net), [0, 1, 10])
    >>> [round(r.get("tokens", "b"), 4) for r in out]      # 2/3 (1 - exp(-3 t))
    [0.0, 0.6335, 0.6667]
    >>> out[1].method, out[1].info["time"]
    ('ctmc-transient', 1.0)
    """
    times = list(times)
    bad = [t for t in times if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0]
    if bad:
        raise SolverError(f"transient times must be finite and >= 0 seconds, got {bad[0]!r}",
                          construct="--transient")
    o = CTMCOptions.of(options)
    ctmc = build(compiled, o)
    _check_transient_work(ctmc, max(times, default=0.0))
    p0 = np.zeros(ctmc.n)
    p0[ctmc.space.init_ids] = ctmc.space.init_prob
    out = []
    for t, pt in zip(times, transient(ctmc.Q, p0, list(times))):
        res = to_result(compiled, measures(ctmc, pt) + _predicates(ctmc, pt, o.predicates),
                        "ctmc-transient", time=float(t), states=ctmc.n)
        out.append(res)
    return out
