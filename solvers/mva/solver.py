"""The registered ``mva`` solver: product-form detection, then MVA.

Options (:class:`MVAOptions`): ``mva``, the algorithm of closed chains
(``auto``: exact when the closed chains have at most 200,000 population
vectors and exact MVA's complement networks for multi-server stations stay
within its limit, Linearizer otherwise; the Result's ``explanation`` says
which and why), and ``tol``, the convergence tolerance of the approximations.
Purely open networks use the closed forms of :mod:`.open`.

>>> import qpn
>>> from qpn import solvers
>>> res = solvers.solve(qpn.parse('''
... place server queue fcfs service exp(1 s)
... transition arrive : -> server delay exp(1.25 s)
... transition leave : server ->'''), "mva")
>>> round(res.get("tokens", "server"), 9), res.info["algorithm"]
(4.0, 'open')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qpn.errors import SolverError
from qpn.solvers.measures import derive, to_result
from qpn.solvers.options import SolverOptions, choice, option, positive, whole
from qpn.solvers.result import Result

from .approx import linearizer, schweitzer
from .exact import MAX_VECTORS, exact_mva, population_vectors
from .open import mixed_network, open_network
from .productform import QNModel, product_form

ALGORITHMS = ("auto", "exact", "schweitzer", "linearizer")
AUTO_LIMIT = 200_000
#: exact MVA steps through the total populations 0..N one level at a time (about 50 us
#: each, whatever the level's width): a chain of 65,536 jobs took 6.6 s
AUTO_LEVELS = 20_000
_CLOSED = {"exact": exact_mva, "schweitzer": schweitzer, "linearizer": linearizer}


@dataclass
class Analysis:
    """MVA of a :class:`QNModel`: per-chain throughput and (chain, station) customers.

    Throughput is per unit visit ratio for closed chains and 1 for open chains
    (their visit ratios are already arrivals per second).
    """
    throughput: np.ndarray
    queue_length: np.ndarray
    algorithm: str
    iterations: int = 0
    converged: bool = True
    explanation: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MVAOptions(SolverOptions):
    """Options of the MVA solver."""
    label = "MVA"
    mva: str = option("auto", "algorithm for closed chains (auto: exact up to exact_limit "
                              "population vectors, else Linearizer)",
                      choice(*ALGORITHMS))
    exact_limit: int = option(AUTO_LIMIT, "the most population vectors for which auto chooses exact "
                                          "MVA (its time and memory grow with them)", whole(1))
    tol: float = option(1e-10, "convergence tolerance of the approximations, in customers",
                        positive())


def _mixed_problems(qn: QNModel) -> list[str]:
    D = qn.demands()
    cl, op = qn.closed, qn.open
    if not cl or not op:
        return []
    out = []
    for i, st in enumerate(qn.stations):
        if not st.delay and st.servers > 1 and D[op, i].sum() > 0 and D[cl, i].sum() > 0:
            out.append(f"{st.element}: a multi-server station visited by both open and closed "
                       f"chains (mixed MVA handles single-server and delay stations)")
    return out


def _exact_networks(qn: QNModel) -> int:
    """Networks exact MVA solves: 2^m for m multi-server stations of closed chains (:mod:`.exact`)."""
    D = qn.demands()[qn.closed].sum(axis=0)
    return 2 ** sum(1 for i, st in enumerate(qn.stations)
                    if not st.delay and st.servers > 1 and D[i] > 0)


#: how the explanation names the algorithm that ran, saying when it approximates
RAN = {"exact": "exact MVA", "open": "the open network's closed forms (exact)",
       "schweitzer": "Schweitzer's approximate MVA",
       "linearizer": "the Linearizer (approximate MVA)"}


def choose_algorithm(qn: QNModel, algorithm: str = "auto",
                     exact_limit: int = AUTO_LIMIT) -> tuple[str, str]:
    """(the algorithm :func:`analyze` runs for ``qn``, why): ``open`` for open networks,
    the one asked for, or for ``auto`` exact MVA up to ``exact_limit`` population vectors
    (and its limits on levels and networks), else the Linearizer.

    >>> import qpn
    >>> qn = product_form(qpn.compile_net(qpn.load("models/interactive.qpn")))
    >>> choose_algorithm(qn)
    ('exact', 'exact MVA: 3 population vectors <= 200000')
    >>> choose_algorithm(qn, exact_limit=2)[0]
    'linearizer'
    """
    if not qn.closed:
        return "open", "open network: closed-form BCMP/Jackson formulas per station"
    N = np.array([qn.chains[c].population for c in qn.closed], dtype=np.int64)
    V = population_vectors(N)
    if algorithm != "auto":
        return algorithm, f"{algorithm} MVA as requested ({V} population vectors)"
    nets = _exact_networks(qn)
    if V > exact_limit:
        return "linearizer", (f"Linearizer (approximate MVA): {V} population vectors > "
                              f"{exact_limit}, too many for exact MVA")
    if (int(N.sum()) + 1) * nets > AUTO_LEVELS:
        return "linearizer", (f"Linearizer (approximate MVA): exact MVA would take "
                              f"{int(N.sum()) + 1:,} population levels in each of {nets} "
                              f"network(s), one after the other (more than {AUTO_LEVELS:,} steps)")
    if V * nets > MAX_VECTORS:
        return "linearizer", (f"Linearizer (approximate MVA): exact MVA would run {nets} networks "
                              f"(one per subset of the multi-server stations) of {V} vectors each")
    return "exact", f"exact MVA: {V} population vectors <= {exact_limit}"


def describe(qn: QNModel, options: dict | None = None) -> str:
    """What MVA will run on ``qn`` with solver ``options`` (the ``mva`` ones are read,
    the others left), for ``auto``'s one line: exact, or which approximation and why.

    >>> import qpn
    >>> qn = product_form(qpn.compile_net(qpn.load("models/interactive.qpn")))
    >>> describe(qn), describe(qn, {"mva": "schweitzer", "seed": 1})
    ('mean value analysis is exact', "Schweitzer's approximate mean value analysis, as requested")
    >>> describe(qn, {"exact_limit": 2})
    'mean value analysis by the Linearizer, which is approximate: 3 population vectors > 2, too many for exact MVA'
    """
    if isinstance(options, SolverOptions):
        options = options.as_dict()
    own = {f.name for f in MVAOptions.fields()}
    o = MVAOptions.of({k: v for k, v in (options or {}).items() if k in own})
    algorithm, why = choose_algorithm(qn, o.mva, o.exact_limit)
    if algorithm in ("exact", "open"):
        return "mean value analysis is exact"
    if o.mva != "auto":
        who = "Schweitzer's" if algorithm == "schweitzer" else "the Linearizer's"
        return f"{who} approximate mean value analysis, as requested"
    return f"mean value analysis by the Linearizer, which is approximate: {why.split(': ', 1)[1]}"


def analyze(qn: QNModel, algorithm: str = "auto", tol: float = 1e-10,
            exact_limit: int = AUTO_LIMIT) -> Analysis:
    """Solve a product-form network description with the chosen algorithm (``auto``: exact
    up to ``exact_limit`` population vectors, else Linearizer; :func:`choose_algorithm`).

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> qn = product_form(qpn.compile_net(net))
    >>> an = analyze(qn)
    >>> an.algorithm, an.throughput.round(4).tolist(), an.queue_length.round(4).tolist()
    ('exact', [0.8], [[0.8, 1.2]])
    >>> round(float(analyze(qn, "schweitzer").throughput[0]), 4)
    0.7639
    """
    D = qn.demands()
    servers = np.array([st.servers for st in qn.stations], dtype=float)
    names = [st.element for st in qn.stations]
    cl, op = qn.closed, qn.open
    X = np.zeros(len(qn.chains))
    Q = np.zeros((len(qn.chains), len(qn.stations)))
    X[op] = 1.0
    algorithm, reason = choose_algorithm(qn, algorithm, exact_limit)
    if not cl:
        Q[op], _ = open_network(D[op], servers, names)
        return Analysis(X, Q, "open", 0, True, [reason])
    N = np.array([qn.chains[c].population for c in cl], dtype=np.int64)
    why = [reason]
    if algorithm == "exact":
        solver = exact_mva
    else:
        base = _CLOSED[algorithm]

        def solver(d, n, s):
            return base(d, n, s, tol=tol)
    if op:
        res, Qo = mixed_network(D[cl], N, D[op], servers, solver, names)
        Q[op] = Qo
        why.append(f"mixed network: {len(op)} open chain(s) inflate the demands of the closed ones")
    else:
        res = solver(D[cl], N, servers)
    X[cl] = res.throughput
    Q[cl] = res.queue_length
    return Analysis(X, Q, res.algorithm, res.iterations, res.converged, why)


def net_quantities(compiled, qn: QNModel, throughput, queue_length, visits=None, service=None,
                   mode_visits=None):
    """``slot_tokens``, ``mode_rates``, ``class_busy`` for :func:`solvers.measures.derive`.

    Works on floats and on numpy object arrays of sympy expressions
    (``visits``/``service`` per class and ``mode_visits`` then override the
    numeric ones of ``qn``).  A chain's customers at a station are split over
    its classes there in proportion to their demands (BCMP's multinomial).

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> c = qpn.compile_net(net)
    >>> qn = product_form(c)
    >>> an = analyze(qn)
    >>> slot_tokens, rates, busy = net_quantities(c, qn, an.throughput, an.queue_length)
    >>> round(float(slot_tokens.sum()), 6)              # the population
    2.0
    >>> rates.round(4).tolist(), [b.round(4).tolist() for b in busy]
    ([0.8, 0.8], [[0.8], [0.8]])
    """
    X = np.asarray(throughput)
    Q = np.asarray(queue_length)
    symbolic = X.dtype == object or Q.dtype == object
    dtype = object if symbolic else float
    v = [k.visits for k in qn.classes] if visits is None else list(visits)
    S = [k.service for k in qn.classes] if service is None else list(service)
    MV = qn.mode_visits if mode_visits is None else np.asarray(mode_visits)
    dem: dict[tuple[int, int], object] = {}
    for k, cl in enumerate(qn.classes):
        key = (cl.chain, cl.station)
        dem[key] = dem.get(key, 0) + v[k] * S[k]
    slot_tokens = np.zeros(compiled.nslots, dtype=dtype)
    busy = [np.zeros(len(q.classes), dtype=dtype) for q in compiled.queues]
    for k, cl in enumerate(qn.classes):
        d, tot = v[k] * S[k], dem[(cl.chain, cl.station)]
        if d != 0 and tot != 0:
            slot_tokens[cl.slot] = slot_tokens[cl.slot] + Q[cl.chain, cl.station] * d / tot
        st = qn.stations[cl.station]
        if st.queue is not None:
            busy[st.queue][cl.qclass] = busy[st.queue][cl.qclass] + X[cl.chain] * d
    if len(qn.chains):
        rates = (X.astype(dtype)[:, None] * MV.astype(dtype)).sum(axis=0)
    else:
        rates = np.zeros(len(compiled.modes), dtype=dtype)
    return slot_tokens, np.asarray(rates, dtype=dtype), busy


def chain_info(qn: QNModel) -> list[dict]:
    """The chains as the result's info lists them: name, type, classes (class @ station)
    and population or arrival rate."""
    out = []
    for ch in qn.chains:
        d = {"name": ch.name, "type": "closed" if ch.closed else "open",
             "classes": [qn.classes[k].label + " @ " + qn.stations[qn.classes[k].station].name
                         for k in ch.classes]}
        if ch.closed:
            d["population"] = ch.population
        else:
            d["arrival_rate"] = ch.arrival_rate
        out.append(d)
    return out


class MVASolver:
    """``mva``: product-form nets (BCMP) by exact or approximate mean value analysis.

    >>> import qpn
    >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
    >>> c = qpn.compile_net(net)
    >>> res = MVASolver().solve(c, {})
    >>> round(res.get("throughput", "back"), 6), round(res.get("tokens", "cpu"), 6)
    (0.8, 1.2)
    """
    name = "mva"
    Options = MVAOptions

    def problems(self, compiled, options: dict) -> list[str]:
        """Why the net is not a product-form network (:func:`product_form`'s reasons), and
        exact MVA's population vectors above the limit.

        >>> import qpn
        >>> MVASolver().problems(qpn.compile_net(qpn.load("models/mm1.qpn")), {})
        []
        >>> reasons = MVASolver().problems(qpn.compile_net(qpn.load("models/mutex.qpn")), {})
        >>> reasons[0].split(":")[0]
        'place lock'
        """
        algo = MVAOptions.of(options).mva
        qn = product_form(compiled)
        if isinstance(qn, list):
            return qn
        out = _mixed_problems(qn)
        if algo == "exact" and qn.closed:
            V = population_vectors([qn.chains[c].population for c in qn.closed])
            if V * _exact_networks(qn) > MAX_VECTORS:
                out.append(f"population: exact MVA would visit {V} population vectors in "
                           f"{_exact_networks(qn)} network(s) (limit {MAX_VECTORS} in all); "
                           f"use mva='linearizer'")
        return out

    def solve(self, compiled, options: dict) -> Result:
        """Mean value analysis of the product-form network: exact, Schweitzer or
        Linearizer for the closed chains (option ``mva``), open chains in closed form.

        >>> import qpn
        >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
        >>> res = MVASolver().solve(qpn.compile_net(net), {"mva": "linearizer"})
        >>> res.info["algorithm"], round(res.get("utilization", "cpu"), 4), res.explanation[-1]
        ('linearizer', 0.8, 'linearizer MVA as requested (3 population vectors)')
        """
        o = MVAOptions.of(options)
        algo, tol = o.mva, o.tol
        qn = product_form(compiled)
        if isinstance(qn, list):
            raise SolverError("the net is not product form: " + "; ".join(qn), construct=qn[0],
                              methods=("ctmc", "des"))
        problems = _mixed_problems(qn)
        if problems:
            raise SolverError(problems[0], construct=problems[0].split(":")[0], methods=("ctmc", "des"))
        an = analyze(qn, algo, tol, o.exact_limit)
        slot_tokens, rates, busy = net_quantities(compiled, qn, an.throughput, an.queue_length)
        rows = derive(compiled, slot_tokens, rates, busy)
        ncl = len(qn.closed)
        res = to_result(compiled, rows, "mva", algorithm=an.algorithm, iterations=an.iterations,
                        converged=an.converged, chains=chain_info(qn),
                        stations=[st.element for st in qn.stations])
        res.explanation.append(f"product form: {ncl} closed and {len(qn.chains) - ncl} open "
                               f"chain(s) over {len(qn.stations)} station(s), solved by "
                               + RAN.get(an.algorithm, f"{an.algorithm} MVA"))
        res.explanation += an.explanation
        if not an.converged:
            res.warnings.append(f"{an.algorithm} did not converge to tol={tol} in "
                                f"{an.iterations} iterations")
        return res


__all__ = ["MVASolver", "MVAOptions", "analyze", "net_quantities", "Analysis", "ALGORITHMS", "AUTO_LIMIT",
           "choose_algorithm", "describe"]
