"""Hand-written QPME and PNML files (tests/data/qpe/hand, tests/data/pnml/hand): each
is read, written as qpn text and read again (the same model), written back in its own
format and read again (a fixed point that means the same), and solved beside its twin,
a qpn model written by hand (NAME.qpn next to it).  Where a closed form exists the
imported model is checked against it; the untimed PNML nets against a small solver of
their own that reads the XML independently of qpn's importer."""
import itertools
import math
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import qpn
from qpn import solvers
from qpn.dsl.pnml import pnml_to_qpn, qpn_to_pnml
from qpn.dsl.printer import print_net
from qpn.dsl.qpe import qpe_to_qpn
from qpn.dsl.qpe_export import qpn_to_qpe

from conftest import TESTS_DIR

QPE_DIR = os.path.join(TESTS_DIR, "data", "qpe", "hand")
PNML_DIR = os.path.join(TESTS_DIR, "data", "pnml", "hand")

#: model -> the analytic method that solves it exactly
QPE_MODELS = {"open_tandem": "mva", "shared_cpu": "mva", "prio_server": "ctmc",
              "weighted_routing": "ctmc", "fork_join": "ctmc", "mixed_service": "mva"}
PNML_MODELS = {"mutex": "ctmc", "pages": "ctmc", "batches": "ctmc", "inhibitor": "ctmc",
               "mmc_queue": "mva", "repairman": "ctmc"}
UNTIMED = {"mutex", "pages", "batches", "inhibitor"}      # no qpn sections: unit rates

#: imported (measure, element, color) -> the twin's, where the twin says it otherwise;
#: None: the twin has no such cell (QPME's Dispatch is two of the twin's route modes)
RENAMED = {
    "weighted_routing": {("throughput", "Dispatch", "heavy"): ("throughput", "route", "heavy"),
                         ("throughput", "Dispatch", "light"): ("throughput", "route", "light"),
                         ("throughput", "Skip", ""): ("throughput", "route", "skip"),
                         ("throughput", "Dispatch", ""): None},
}


def _read(kind: str, name: str):
    """(file path, its bytes, the imported model, its qpn text, the import's notes)."""
    folder, ext, translate = ((QPE_DIR, ".qpe", qpe_to_qpn) if kind == "qpe"
                              else (PNML_DIR, ".pnml", pnml_to_qpn))
    path = os.path.join(folder, name + ext)
    with open(path, "rb") as fh:
        data = fh.read()
    text, notes = translate(data, path)
    return path, data, qpn.parse(text, path), text, notes


def _export_import(kind: str, net):
    """The model written in its foreign format and read back, and that file's text."""
    if kind == "qpe":
        xml = qpn_to_qpe(qpn.compile_net(net))
        return qpn.parse(qpe_to_qpn(xml.encode(), "back.qpe")[0], "back.qpe"), xml
    xml = qpn_to_pnml(qpn.compile_net(net))
    return qpn.parse(pnml_to_qpn(xml.encode(), "back.pnml")[0], "back.pnml"), xml


CASES = [("qpe", n) for n in QPE_MODELS] + [("pnml", n) for n in PNML_MODELS]


@pytest.mark.parametrize("kind,name", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_import_dsl_import_is_the_same_model(kind, name):
    path, data, net, text, notes = _read(kind, name)
    # only untimed PNML nets need an assumption, and the note says which one
    if kind == "pnml" and name in UNTIMED:
        assert len(notes) == 1 and "unit rates" in notes[0], notes
    else:
        assert notes == []
    # the importer's text and the canonical qpn text of the model read back as the model
    assert qpn.parse(print_net(net), name + ".qpn") == net
    assert qpn.load(path) == net
    # the model written back in its format, and read: writing that again changes nothing
    back, xml = _export_import(kind, net)
    again, xml2 = _export_import(kind, back)
    assert again == back and xml2 == _export_import(kind, again)[1]


def _twin_key(key):
    """A twin's cell key with mode colors '[x=buy]' (a variable's binding) as 'buy'."""
    measure, element, color = key
    return measure, element, re.sub(r"^\[\w+=(\w+)\]$", r"\1", color)


def _agree(name, res, ref):
    """Every cell of ``res`` that ``ref`` has (renamed as RENAMED says) is equal to 1e-9;
    every cell over all colors must be there.  Returns how many of those there were."""
    cells = {_twin_key(r.key): r.value for r in ref.rows}
    required = 0
    for row in res.rows:
        key = RENAMED.get(name, {}).get(row.key, row.key)
        if key is None or (row.color and key not in cells):
            continue          # a color of a one-color QPME place that the twin writes plain
        required += not row.color
        assert key in cells, (name, row.key)
        if math.isnan(row.value):
            assert math.isnan(cells[key]), (name, row.key)
        else:
            assert cells[key] == pytest.approx(row.value, rel=1e-9, abs=1e-12), (name, row.key)
    return required


@pytest.mark.parametrize("kind,name", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_imported_model_agrees_with_its_twin(kind, name):
    method = (QPE_MODELS if kind == "qpe" else PNML_MODELS)[name]
    _, _, net, _, _ = _read(kind, name)
    twin = qpn.load(os.path.join(QPE_DIR if kind == "qpe" else PNML_DIR, name + ".qpn"))
    res, ref = solvers.solve(net, method), solvers.solve(twin, method)
    assert res.method == ref.method == method
    assert _agree(name, res, ref) >= 5
    # and the model written back in its format (once and twice) means the same
    back, _ = _export_import(kind, net)
    for model in (back, _export_import(kind, back)[0]):
        cells = {r.key: r.value for r in solvers.solve(model, method).rows}
        for row in res.rows:      # (a competing transition's modes may become transitions)
            if row.measure == "tokens" and not row.color or \
                    row.measure == "throughput" and not row.color and row.key in cells:
                assert cells[row.key] == pytest.approx(row.value, rel=1e-9), (name, row.key)


# ------------------------------------------------------------------ closed forms (QPME)
def _solve(kind, name):
    _, _, net, _, _ = _read(kind, name)
    return solvers.solve(net, (QPE_MODELS if kind == "qpe" else PNML_MODELS)[name])


def test_open_tandem_is_a_jackson_network():
    res = _solve("qpe", "open_tandem")
    for place, rho in (("Station_1", 0.5 / 1.0), ("Station_2", 0.5 / 0.8)):
        assert res.get("tokens", place) == pytest.approx(rho / (1 - rho), rel=1e-9)
        assert res.get("utilization", place) == pytest.approx(rho, rel=1e-9)
    assert res.get("throughput", "Exit") == pytest.approx(0.5, rel=1e-9)


def _compositions(n, k):
    """Every way to put n customers at k stations."""
    for cut in itertools.combinations(range(n + k - 1), k - 1):
        bounds = (-1,) + cut + (n + k - 1,)
        yield tuple(bounds[i + 1] - bounds[i] - 1 for i in range(k))


def product_form(stations, population):
    """Throughput per chain and mean customers per station and chain of a closed
    multichain BCMP network, by summing the product form over every state.  A station
    is (servers, demand per chain): math.inf servers is a delay, otherwise a PS (or
    FCFS with equal demands) station whose n customers are served at min(n, servers)."""
    C, S = len(population), len(stations)

    def factor(servers, demand, n):
        if math.isinf(servers):
            return math.prod(d ** k / math.factorial(k) for d, k in zip(demand, n))
        total = sum(n)
        v = math.factorial(total) * math.prod(d ** k / math.factorial(k) for d, k in zip(demand, n))
        return v / math.prod(min(j, servers) for j in range(1, total + 1))

    def normalize(pop):
        G, Q = 0.0, np.zeros((S, C))
        for split in itertools.product(*(list(_compositions(n, S)) for n in pop)):
            per_station = [[split[c][s] for c in range(C)] for s in range(S)]
            w = math.prod(factor(m, d, n) for (m, d), n in zip(stations, per_station))
            G += w
            Q += w * np.array(per_station, dtype=float)
        return G, Q / G

    G, Q = normalize(population)
    X = [normalize([n - (c == k) for k, n in enumerate(population)])[0] / G for c in range(C)]
    return X, Q


def test_shared_cpu_matches_the_product_form():
    """Web and DB share one PS CPU: for the product form it is one station whose demand
    per class is the sum of the two places' (the places split its customers)."""
    res = _solve("qpe", "shared_cpu")
    web, db = (0.1, 0.2), (0.05, 0.25)
    cpu = tuple(a + b for a, b in zip(web, db))
    X, Q = product_form([(math.inf, (5, 10)), (1, cpu), (1, (0.125, 0.125))], (3, 2))
    for c, color in enumerate(("browse", "buy")):
        assert res.get("throughput", "Reply", color) == pytest.approx(X[c], rel=1e-9)
        assert res.get("tokens", "Terminals", color) == pytest.approx(Q[0][c], rel=1e-9)
        assert res.get("tokens", "Web", color) == pytest.approx(Q[1][c] * web[c] / cpu[c], rel=1e-9)
        assert res.get("tokens", "DB", color) == pytest.approx(Q[1][c] * db[c] / cpu[c], rel=1e-9)
        assert res.get("tokens", "Disk", color) == pytest.approx(Q[2][c], rel=1e-9)


def test_mixed_service_is_insensitive_and_matches_the_product_form():
    """IS and PS (two servers) with deterministic, uniform and gamma times: only the means
    count.  Users 4 / 6 / 8 s; App CPU web 0.5 s, batch 1.5 s; DB CPU batch 2 s, admin 1.25 s."""
    res = _solve("qpe", "mixed_service")
    X, Q = product_form([(math.inf, (4, 6, 8)), (2, (0.5, 1.5, 0)), (2, (0, 2, 1.25))], (3, 2, 1))
    for c, color in enumerate(("web", "batch", "admin")):
        for s, place in enumerate(("Users", "App_CPU", "DB_CPU")):
            if (place, color) not in (("App_CPU", "admin"), ("DB_CPU", "web")):
                assert res.get("tokens", place, color) == pytest.approx(Q[s][c], rel=1e-9), (place, color)
    assert res.get("throughput", "Call_app", "web") == pytest.approx(X[0], rel=1e-9)
    assert res.get("throughput", "Call_app", "batch") == pytest.approx(X[1], rel=1e-9)
    assert res.get("throughput", "Call_db") == pytest.approx(X[2], rel=1e-9)


def test_prio_server_serves_qpme_priority_0_first():
    """A CTMC built by hand: 2 gold (think 2 s, service 0.5 s) and 3 bronze (think 4 s,
    service 1/1.5 s) customers; the server takes a waiting gold one first (QPME priority
    0, served before 1), without preemption."""
    NG, NB, zg, zb, sg, sb = 2, 3, 2.0, 4.0, 0.5, 1 / 1.5
    states = [(g, b, s) for g in range(NG + 1) for b in range(NB + 1) for s in "GB-"
              if (s == "-" and g + b == 0) or (s == "G" and g) or (s == "B" and b)]
    index = {x: i for i, x in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    for (g, b, s), i in index.items():
        moves = []
        if g < NG:
            moves.append(((g + 1, b, "G" if s == "-" else s), (NG - g) / zg))
        if b < NB:
            moves.append(((g, b + 1, "B" if s == "-" else s), (NB - b) / zb))
        if s == "G":
            moves.append(((g - 1, b, "G" if g > 1 else "B" if b else "-"), 1 / sg))
        if s == "B":
            moves.append(((g, b - 1, "G" if g else "B" if b > 1 else "-"), 1 / sb))
        for target, rate in moves:
            Q[i, index[target]] += rate
            Q[i, i] -= rate
    A = np.vstack([Q.T[:-1], np.ones(len(states))])
    pi = np.linalg.solve(A, np.eye(len(states))[-1])
    res = _solve("qpe", "prio_server")
    assert res.get("tokens", "Server", "Gold") == pytest.approx(sum(p * x[0] for p, x in zip(pi, states)), rel=1e-9)
    assert res.get("tokens", "Server", "Bronze") == pytest.approx(sum(p * x[1] for p, x in zip(pi, states)), rel=1e-9)
    x_gold = sum(p for p, x in zip(pi, states) if x[2] == "G") / sg
    assert res.get("throughput", "Done", "Gold") == pytest.approx(x_gold, rel=1e-9)


def test_weighted_routing_is_qpme_two_stage_choice():
    """Dispatch (weight 2) against Skip (weight 1), then Dispatch's modes by firing weights
    1 and 3: heavy, light and skip in the ratio 1 : 3 : 2; also after two QPME round trips
    (the export once wrote the weight of a competing one-mode transition, which the first
    trip makes of each of Dispatch's modes, as its firing weight, where QPME ignores it)."""
    res = _solve("qpe", "weighted_routing")
    _, _, net, _, _ = _read("qpe", "weighted_routing")
    back, xml = _export_import("qpe", net)
    assert 'name="Dispatch.heavy" priority="0" weight="0.5"' in xml
    back, xml = _export_import("qpe", back)
    assert 'name="Dispatch_heavy" priority="0" weight="0.5"' in xml
    again = solvers.solve(back, "ctmc")
    for r, heavy, light, skip in ((res, ("Dispatch", "heavy"), ("Dispatch", "light"), ("Skip", "")),
                                  (again, ("Dispatch_heavy", ""), ("Dispatch_light", ""), ("Skip", ""))):
        x = r.get("throughput", "Request")
        assert r.get("throughput", *heavy) == pytest.approx(x / 6, rel=1e-9)
        assert r.get("throughput", *light) == pytest.approx(x / 2, rel=1e-9)
        assert r.get("throughput", *skip) == pytest.approx(x / 3, rel=1e-9)
    # a heavy request comes back 'small': the disk's large tokens are the heavy ones
    assert res.get("departures", "Disk", "large") == pytest.approx(res.get("throughput", "Dispatch", "heavy"), rel=1e-9)


def test_fork_join_waits_for_the_slowest_of_three():
    """One request: think exp(2), then two tasks of rate 1 (two workers) and one of rate
    0.5 (the disk) in parallel; the join waits for the maximum of the three."""
    rates = (1.0, 1.0, 0.5)
    e_max = sum((-1) ** (len(s) + 1) / sum(s) for k in (1, 2, 3) for s in itertools.combinations(rates, k))
    res = _solve("qpe", "fork_join")
    assert res.get("throughput", "Join") == pytest.approx(1 / (2 + e_max), rel=1e-9)
    assert res.get("tokens", "Pending") == pytest.approx(e_max / (2 + e_max), rel=1e-9)


# ------------------------------------------------------------------ closed forms (PNML)
PNML_NS = "{http://www.pnml.org/version-2009/grammar/pnml}"


def _label(e, label):
    t = e.find(f"{PNML_NS}{label}/{PNML_NS}text")
    return None if t is None else t.text.strip()


def spn_reference(path):
    """Mean tokens per place and throughput per transition of an untimed P/T net read
    as a stochastic Petri net with unit rates: read with ElementTree (pages walked,
    references followed, inscriptions and PIPE's inhibitor arcs), its reachability
    graph built and its CTMC solved here, without qpn."""
    root = ET.parse(path).getroot()
    places, trans, refs, arcs = {}, {}, {}, []
    for e in root.iter():
        tag = e.tag.replace(PNML_NS, "")
        if tag == "place":
            places[e.get("id")] = (_label(e, "name"), int(_label(e, "initialMarking") or 0))
        elif tag == "transition":
            trans[e.get("id")] = _label(e, "name")
        elif tag in ("referencePlace", "referenceTransition"):
            refs[e.get("id")] = e.get("ref")
        elif tag == "arc":
            kind = e.find(f"{PNML_NS}type")
            arcs.append((e.get("source"), e.get("target"), int(_label(e, "inscription") or 1),
                         kind is not None and kind.get("value") == "inhibitor"))

    def node(i):
        while i in refs:
            i = refs[i]
        return i

    pids = list(places)
    pre = {t: np.zeros(len(pids), int) for t in trans}
    post = {t: np.zeros(len(pids), int) for t in trans}
    inhibit = {t: np.full(len(pids), np.iinfo(int).max) for t in trans}
    for src, dst, n, inhibitor in arcs:
        src, dst = node(src), node(dst)
        if inhibitor:
            inhibit[dst][pids.index(src)] = n
        elif src in places:
            pre[dst][pids.index(src)] += n
        else:
            post[src][pids.index(dst)] += n
    m0 = tuple(places[p][1] for p in pids)
    index, todo, edges = {m0: 0}, [m0], []
    while todo:
        m = np.array(todo.pop())
        for t in trans:
            if (m >= pre[t]).all() and (m < inhibit[t]).all():
                m2 = tuple(m - pre[t] + post[t])
                if m2 not in index:
                    index[m2] = len(index)
                    todo.append(m2)
                edges.append((index[tuple(m)], index[m2], t))
    Q = np.zeros((len(index), len(index)))
    for i, j, _ in edges:
        Q[i, j] += 1.0
        Q[i, i] -= 1.0
    A = np.vstack([Q.T[:-1], np.ones(len(index))])
    pi = np.linalg.solve(A, np.eye(len(index))[-1])
    markings = np.array(sorted(index, key=index.get), dtype=float)
    tokens = {places[p][0]: float(pi @ markings[:, k]) for k, p in enumerate(pids)}
    throughput = {trans[t]: float(sum(pi[i] for i, _, u in edges if u == t)) for t in trans}
    return tokens, throughput, len(index)


@pytest.mark.parametrize("name", sorted(UNTIMED))
def test_untimed_net_matches_an_independent_solver(name):
    tokens, throughput, states = spn_reference(os.path.join(PNML_DIR, name + ".pnml"))
    res = _solve("pnml", name)
    assert res.info["states"] == states
    for place, v in tokens.items():
        assert res.get("tokens", place) == pytest.approx(v, rel=1e-9, abs=1e-12), place
    for t, v in throughput.items():
        assert res.get("throughput", t) == pytest.approx(v, rel=1e-9), t


def test_batches_cycle_through_four_unit_steps():
    """6 parts -> 3 + a kit -> 2 kits -> a shipment -> 6 parts: four exp(1) steps."""
    res = _solve("pnml", "batches")
    assert res.get("throughput", "ship") == pytest.approx(1 / 4, rel=1e-9)
    assert res.get("throughput", "assemble") == pytest.approx(1 / 2, rel=1e-9)
    assert res.get("tokens", "parts") == pytest.approx((6 + 3) / 4, rel=1e-9)


def test_mmc_queue_is_erlang_c():
    lam, mean, c = 1.0, 2.0, 3
    a = lam * mean
    rho = a / c
    p0 = 1 / (sum(a ** k / math.factorial(k) for k in range(c)) + a ** c / (math.factorial(c) * (1 - rho)))
    lq = p0 * a ** c * rho / (math.factorial(c) * (1 - rho) ** 2)
    res = _solve("pnml", "mmc_queue")
    assert res.get("tokens", "servers_") == pytest.approx(lq + a, rel=1e-9)
    assert res.get("throughput", "depart") == pytest.approx(lam, rel=1e-9)


def test_repairman_is_the_finite_source_queue():
    """N = 4 machines failing at 1/10 h each, one repairman of rate 1/2 h (M/M/1//4)."""
    N, lam, mu = 4, 1 / 36000, 1 / 7200
    weights = [math.factorial(N) / math.factorial(N - n) * (lam / mu) ** n for n in range(N + 1)]
    p = [w / sum(weights) for w in weights]
    res = _solve("pnml", "repairman")
    assert res.get("throughput", "fixed") == pytest.approx(mu * (1 - p[0]), rel=1e-9)
    assert res.get("tokens", "workshop") == pytest.approx(sum(n * q for n, q in enumerate(p)), rel=1e-9)
