"""MVA solver: known answers, and exact MVA against independent product-form sums."""
import itertools
import json
import math

import numpy as np
import pytest

import qpn
from qpn import solvers
from qpn.cli import main
from qpn.errors import SolverError
from qpn.solvers.mva import exact_mva, linearizer, schweitzer

from conftest import MODELS


def load(name):
    return qpn.load(f"{MODELS}/{name}.qpn")


# ---------------------------------------------------------------- references
# Independent of the MVA code: the product-form stationary distribution summed
# over every state.  A station is (servers, demands per chain); its factor for
# k_c customers of chain c is |k|!/prod k_c! prod D_c^k_c / prod_{j<=|k|} min(j, servers)
# (servers = inf gives the IS factor prod D_c^k_c / k_c!).

def _compositions(n, parts):
    if parts == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in _compositions(n - first, parts - 1):
            yield (first,) + rest


def _factor(servers, demands, k):
    tot = sum(k)
    f = 1.0
    for d, kc in zip(demands, k):
        f *= d ** kc / math.factorial(kc)
    if math.isinf(servers):
        return f
    beta = math.prod(min(j, servers) for j in range(1, tot + 1))
    return f * math.factorial(tot) / beta


def brute_force(stations, population):
    """Mean customers Q[c][i] and throughput X[c] (per unit visit) by enumeration."""
    M, C = len(stations), len(population)
    per_chain = [list(_compositions(n, M)) for n in population]
    G = 0.0
    Q = np.zeros((C, M))
    for combo in itertools.product(*per_chain):
        w = 1.0
        for i, (srv, dem) in enumerate(stations):
            w *= _factor(srv, dem, [combo[c][i] for c in range(C)])
        G += w
        for c in range(C):
            Q[c] += w * np.array(combo[c])
    Q /= G
    # throughput from a delay station (Little) or from G(N - e_c)/G(N)
    X = []
    for c in range(C):
        n = list(population)
        n[c] -= 1
        X.append(_G(stations, n) / G if population[c] > 0 else 0.0)
    return Q, np.array(X)


def _G(stations, population):
    M, C = len(stations), len(population)
    total = 0.0
    for combo in itertools.product(*[list(_compositions(n, M)) for n in population]):
        w = 1.0
        for i, (srv, dem) in enumerate(stations):
            w *= _factor(srv, dem, [combo[c][i] for c in range(C)])
        total += w
    return total


def erlang_c(c, a):
    """Probability of waiting in M/M/c, straight from the textbook formula."""
    top = a ** c / math.factorial(c) * c / (c - a)
    return top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)


# ---------------------------------------------------------------- open
def test_mm1_known_answer():
    res = solvers.solve(load("mm1"), "mva")
    assert res.get("utilization", "server") == pytest.approx(0.8, rel=1e-9)
    assert res.get("response", "server") == pytest.approx(5.0, rel=1e-9)
    assert res.get("tokens", "server") == pytest.approx(4.0, rel=1e-9)
    assert res.get("throughput", "leave") == pytest.approx(0.8, rel=1e-9)
    assert res.info["algorithm"] == "open"


def test_mmc_erlang_c():
    lam, c, S = 3.0, 4, 1.0
    a = lam * S
    pw = erlang_c(c, a)
    L = a + pw * (a / c) / (1 - a / c)
    res = solvers.solve(load("mmc"), "mva")
    assert res.get("utilization", "station") == pytest.approx(a / c, rel=1e-9)
    assert res.get("tokens", "station") == pytest.approx(L, rel=1e-9)
    assert res.get("response", "station") == pytest.approx(L / lam, rel=1e-9)
    assert res.get("response", "station") - S == pytest.approx(pw / (c / S - lam), rel=1e-9)


@pytest.mark.parametrize("disc", ["queue is", "queue ps servers inf", "queue fcfs servers inf"])
def test_mm_inf(disc):
    net = qpn.parse(f"param lambda = 7\nplace s {disc} service erlang(3, 2 s)\n"
                    "transition arrive : -> s delay exp(1 / lambda)\ntransition leave : s ->\n")
    res = solvers.solve(net, "mva")
    assert res.get("tokens", "s") == pytest.approx(14.0, rel=1e-9)
    assert res.get("response", "s") == pytest.approx(2.0, rel=1e-9)
    assert res.get("utilization", "s") == pytest.approx(14.0, rel=1e-9)


def test_open_saturation_names_the_station():
    # no steady state: a result without measures, marked unstable (qpn solve exits 5)
    res = solvers.solve(load("mm1"), "mva", **{"lambda": 1.25})
    assert (res.status, res.rows) == ("unstable", [])
    assert "saturates place server: utilization 1.25 >= 1" in res.reason
    res = solvers.solve(load("mmc"), "mva", **{"lambda": 5})
    assert res.status == "unstable" and "place station: utilization 1.25" in res.reason


def test_open_class_switching_network():
    # the web server's open part without the thread pool: product form
    net = qpn.parse("""
        param rate = 40
        colors phase = {parse, render}
        place cpu : phase queue ps servers 1 service parse: exp(4 ms), render: exp(6 ms)
        place disk queue fcfs service exp(12 ms)
        transition arrive : -> cpu(parse) delay exp(1 / rate)
        transition lookup {
            mode hit : cpu(parse) -> cpu(render) weight 0.8
            mode miss : cpu(parse) -> disk weight 0.2
        }
        transition read_done : disk -> cpu(render)
        transition reply : cpu(render) ->
    """)
    res = solvers.solve(net, "mva")
    lam = 40.0
    u_p, u_r, u_d = lam * 0.004, lam * 0.006, lam * 0.2 * 0.012
    rho = u_p + u_r
    assert res.get("tokens", "cpu", "parse") == pytest.approx(rho / (1 - rho) * u_p / rho, rel=1e-9)
    assert res.get("tokens", "cpu", "render") == pytest.approx(rho / (1 - rho) * u_r / rho, rel=1e-9)
    assert res.get("tokens", "disk") == pytest.approx(u_d / (1 - u_d), rel=1e-9)
    assert res.get("throughput", "lookup", "miss") == pytest.approx(8.0, rel=1e-9)
    assert res.get("throughput", "reply") == pytest.approx(40.0, rel=1e-9)


# ---------------------------------------------------------------- closed
def repairman_reference(N, mttf, repair):
    r = repair / mttf
    p0 = 1.0 / sum(math.factorial(N) / math.factorial(N - k) * r ** k for k in range(N + 1))
    X = (1 - p0) / repair
    broken = N - X * mttf  # Little at the working machines: N - L = X * mttf
    return p0, X, broken


def test_repairman_with_timed_transitions():
    p0, X, broken = repairman_reference(10, 3600.0, 600.0)
    res = solvers.solve(load("repairman"), "mva")
    assert res.get("throughput", "fix") == pytest.approx(X, rel=1e-9)
    assert res.get("throughput", "fail") == pytest.approx(X, rel=1e-9)
    assert res.get("tokens", "broken") == pytest.approx(broken, rel=1e-9)
    assert res.get("tokens", "working") == pytest.approx(10 - broken, rel=1e-9)
    assert res.get("tokens", "repaired") == 0.0


def test_repairman_with_queueing_places():
    net = qpn.parse("""
        param machines = 10
        place working queue is service exp(1 h) init machines
        place repair queue fcfs service exp(10 min)
        transition fail : working -> repair
        transition fixed : repair -> working
    """)
    p0, X, broken = repairman_reference(10, 3600.0, 600.0)
    res = solvers.solve(net, "mva")
    assert res.get("utilization", "repair") == pytest.approx(1 - p0, rel=1e-9)
    assert res.get("tokens", "repair") == pytest.approx(broken, rel=1e-9)
    assert res.get("throughput", "fixed") == pytest.approx(X, rel=1e-9)


@pytest.mark.parametrize("N", [1, 5, 20])
def test_closed_tandem_against_normalizing_constant(N):
    stations = [(1, [0.1]), (1, [0.2]), (2, [0.3])]
    Q, X = brute_force(stations, [N])
    res = solvers.solve(load("tandem"), "mva", N=N)
    for i, p in enumerate(["s1", "s2", "s3"]):
        assert res.get("tokens", p) == pytest.approx(Q[0, i], rel=1e-9)
    assert res.get("throughput", "t12") == pytest.approx(X[0], rel=1e-9)
    assert res.get("utilization", "s3") == pytest.approx(X[0] * 0.3 / 2, rel=1e-9)


CENTRAL = [  # visits: terminals 1, cpu 1/0.5 = 2, disk1 2 * 0.3, disk2 2 * 0.2
    (math.inf, [5.0, 5.0]),
    (1, [2 * 0.05, 2 * 0.08]),
    (1, [0.6 * 0.03, 0.6 * 0.03]),
    (2, [0.4 * 0.06, 0.4 * 0.06]),
]


def test_central_server_exact_against_brute_force():
    Q, X = brute_force(CENTRAL, [8, 6])
    res = solvers.solve(load("central_server"), "mva")
    assert res.info["algorithm"] == "exact" and "exact MVA" in " ".join(res.explanation)
    for i, p in enumerate(["terminals", "cpu", "disk1", "disk2"]):
        for c, col in enumerate(["a", "b"]):
            assert res.get("tokens", p, col) == pytest.approx(Q[c, i], rel=1e-9)
    for c, col in enumerate(["a", "b"]):
        assert res.get("throughput", "submit", f"[x={col}]") == pytest.approx(X[c], rel=1e-9)
        assert res.get("throughput", "route", f"to_disk2[x={col}]") == \
            pytest.approx(0.4 * X[c], rel=1e-9)
    assert res.get("utilization", "disk2") == pytest.approx((X[0] + X[1]) * 0.024 / 2, rel=1e-9)
    assert res.get("response", "cpu", "b") == pytest.approx(Q[1, 1] / (2 * X[1]), rel=1e-9)


@pytest.mark.parametrize("algo,rel", [("schweitzer", 0.03), ("linearizer", 0.02)])
def test_central_server_approximations_close_to_exact(algo, rel):
    net = load("central_server")
    exact = solvers.solve(net, "mva", options={"mva": "exact"})
    approx = solvers.solve(net, "mva", options={"mva": algo, "tol": 1e-9})
    assert approx.info["algorithm"] == algo and approx.info["converged"]
    assert approx.info["iterations"] > 1
    compared = 0
    for a, e, diff in approx.compare(exact):
        if a.measure in ("tokens", "throughput", "utilization", "response"):
            assert diff < rel, (a.key, a.value, e.value)
            compared += 1
    assert compared > 40


def test_linearizer_beats_schweitzer_on_single_class():
    D, N, s = [[1.0, 0.4, 0.3]], [6], [math.inf, 1, 1]
    exact = exact_mva(D, N, s).throughput[0]
    e_s = abs(schweitzer(D, N, s).throughput[0] - exact)
    e_l = abs(linearizer(D, N, s).throughput[0] - exact)
    assert e_l < e_s and e_l / exact < 2e-3


@pytest.mark.parametrize("stations,population", [
    ([(math.inf, [2.0, 1.0, 0.5]), (1, [0.1, 0.3, 0.2]), (3, [0.5, 0.2, 0.4]), (2, [0.3, 0.3, 0.1])],
     [3, 2, 4]),
    ([(1, [0.2, 0.1]), (4, [0.9, 1.3]), (math.inf, [0.0, 3.0])], [5, 7]),
    ([(2, [1.0]), (5, [2.0])], [12]),
])
def test_exact_mva_against_brute_force(stations, population):
    Q, X = brute_force(stations, population)
    D = np.array([st[1] for st in stations]).T
    s = [st[0] for st in stations]
    r = exact_mva(D, population, s)
    assert r.queue_length == pytest.approx(Q, rel=1e-9, abs=1e-12)
    assert r.throughput == pytest.approx(X, rel=1e-9)
    assert r.iterations == math.prod(n + 1 for n in population)


def test_exact_mva_multiserver_stays_exact_near_saturation():
    # a 4-server station saturated by 150 customers: subtracting marginal
    # probabilities would lose every digit here; compare with a log-space sum
    Z, D, E, k, N = 2.0, 1.0, 0.1, 4, 150
    logw, states = [], []
    for a in range(N + 1):
        for b in range(N + 1 - a):
            beta = sum(math.log(min(j, k)) for j in range(1, b + 1))
            logw.append(a * math.log(Z) - math.lgamma(a + 1) + b * math.log(D) - beta
                        + (N - a - b) * math.log(E))
            states.append((a, b, N - a - b))
    w = np.exp(np.array(logw) - max(logw))
    Q = (w[:, None] * np.array(states)).sum(axis=0) / w.sum()
    r = exact_mva([[Z, D, E]], [N], [math.inf, k, 1])
    assert r.queue_length[0] == pytest.approx(Q, rel=1e-9)
    assert r.throughput[0] == pytest.approx(Q[0] / Z, rel=1e-9)


def test_exact_mva_two_multiserver_stations_heavy_load():
    stations = [(math.inf, [0.5, 0.2]), (3, [1.0, 0.6]), (2, [0.4, 0.9]), (1, [0.05, 0.1])]
    Q, X = brute_force(stations, [10, 8])
    D = np.array([st[1] for st in stations]).T
    r = exact_mva(D, [10, 8], [st[0] for st in stations])
    assert r.queue_length == pytest.approx(Q, rel=1e-9)
    assert r.throughput == pytest.approx(X, rel=1e-9)


def test_auto_picks_linearizer_for_large_populations():
    net = load("central_server")
    res = solvers.solve(net, "mva", n_a=600, n_b=400)
    assert res.info["algorithm"] == "linearizer"
    assert any("241001 population vectors > 200000" in e for e in res.explanation)
    small = solvers.solve(net, "mva", n_a=2, n_b=1)
    assert small.info["algorithm"] == "exact"
    chains = {c["name"]: c for c in small.info["chains"]}
    assert chains["terminals(a)"]["population"] == 2 and chains["terminals(b)"]["type"] == "closed"


def test_bad_options_are_refused():
    with pytest.raises(SolverError, match="not one of"):
        solvers.solve(load("mm1"), "mva", options={"mva": "fast"})
    with pytest.raises(SolverError, match="tol"):
        solvers.solve(load("mm1"), "mva", options={"tol": -1})


# ---------------------------------------------------------------- mixed
def test_mixed_network_against_product_form_sum():
    # closed: 3 users thinking 2 s, CPU 0.3 s per visit; open: 1 job/s with 0.25 s at the CPU
    net = qpn.parse("""
        colors kind = {user, batch}
        place think queue is service exp(2 s) init 3
        place cpu : kind queue ps service user: exp(300 ms), batch: exp(250 ms)
        transition go : think -> cpu(user)
        transition back : cpu(user) -> think
        transition batch : -> cpu(batch) delay exp(1 s)
        transition done : cpu(batch) ->
    """)
    res = solvers.solve(net, "mva")
    # P(k users, m batch jobs at the cpu) ~ (k+m)!/(k! m!) 0.3^k 0.25^m * 2^(3-k)/(3-k)!
    G = Qu = Qb = 0.0
    for k in range(4):
        for m in range(400):
            w = math.comb(k + m, k) * 0.3 ** k * 0.25 ** m * 2.0 ** (3 - k) / math.factorial(3 - k)
            G, Qu, Qb = G + w, Qu + k * w, Qb + m * w
    assert res.get("tokens", "cpu", "user") == pytest.approx(Qu / G, rel=1e-9)
    assert res.get("tokens", "cpu", "batch") == pytest.approx(Qb / G, rel=1e-9)
    assert res.get("throughput", "back") == pytest.approx((3 - Qu / G) / 2.0, rel=1e-9)
    assert "mixed network" in " ".join(res.explanation)


def test_mixed_multiserver_station_is_refused():
    net = qpn.parse("""
        colors kind = {user, batch}
        place think queue is service exp(2 s) init 3
        place cpu : kind queue ps servers 2 service exp(300 ms)
        transition go : think -> cpu(user)
        transition back : cpu(user) -> think
        transition batch : -> cpu(batch) delay exp(1 s)
        transition done : cpu(batch) ->
    """)
    with pytest.raises(SolverError, match="place cpu: a multi-server station visited by both"):
        solvers.solve(net, "mva")


# ---------------------------------------------------------------- more mappings
def test_timed_race_is_one_station():
    # two IS timed transitions race for each token: an IS station with the summed rate
    net = qpn.parse("""
        place idle init 4
        place a queue fcfs service exp(0.5 s)
        place b queue fcfs service exp(0.25 s)
        transition to_a servers inf : idle -> a delay exp(2 s)
        transition to_b servers inf : idle -> b delay exp(4 s)
        transition from_a : a -> idle
        transition from_b : b -> idle
    """)
    # visits per cycle: idle 1, a 2/3, b 1/3; think = 1/(1/2 + 1/4) = 4/3 s
    stations = [(math.inf, [4 / 3]), (1, [2 / 3 * 0.5]), (1, [1 / 3 * 0.25])]
    Q, X = brute_force(stations, [4])
    res = solvers.solve(net, "mva")
    assert res.get("tokens", "idle") == pytest.approx(Q[0, 0], rel=1e-9)
    assert res.get("tokens", "a") == pytest.approx(Q[0, 1], rel=1e-9)
    assert res.get("throughput", "to_b") == pytest.approx(X[0] / 3, rel=1e-9)


def test_shared_queue_and_lcfs_pr_general_service():
    res = solvers.solve(load("shared_queue"), "mva")
    # flow conservation and Little at every place
    for p in ("users", "parse", "render", "disk", "cache"):
        assert res.get("arrivals", p) == pytest.approx(res.get("departures", p), rel=1e-9)
    assert res.get("throughput", "lookup", "hit") == \
        pytest.approx(0.7 * res.get("throughput", "request"), rel=1e-9)
    assert sum(res.get("tokens", p) for p in ("users", "parse", "render", "disk", "cache")) == \
        pytest.approx(6, rel=1e-9)
    # the cache's hyperexponential service enters through its mean only (insensitivity)
    assert res.get("utilization", "cache") == pytest.approx(
        res.get("throughput", "from_cache") * (0.9 * 100e-6 + 0.1 * 2e-3), rel=1e-9)


def test_more_servers_than_customers_is_a_delay_station():
    # 2^31 servers once made exact MVA allocate per-server probabilities (MemoryError)
    D = np.array([[0.1, 0.2, 0.3]])
    many = exact_mva(D, [5], [1, 1, 2 ** 31])
    delay = exact_mva(D, [5], [1, 1, math.inf])
    assert np.allclose(many.throughput, delay.throughput, rtol=1e-12)
    assert np.allclose(many.queue_length, delay.queue_length, rtol=1e-12)
    five = exact_mva(D, [5], [1, 1, 5])               # exactly as many servers as customers
    assert np.allclose(five.throughput, delay.throughput, rtol=1e-12)


def test_schweitzer_converges_for_a_huge_population():
    # the tolerance is per customer: with 2^31 customers an absolute 1e-10 was never met
    res = schweitzer(np.array([[1.0, 0.2, 0.1]]), [2 ** 31], [math.inf, 1, 1])
    assert res.converged and res.throughput[0] == pytest.approx(5.0, rel=1e-9)  # the 0.2 s station


def test_exact_limit_moves_autos_switch_from_exact_mva_to_linearizer(tmp_path):
    # central_server has (8 + 1) * (6 + 1) = 63 population vectors
    net = qpn.load(MODELS + "/central_server.qpn")
    exact = qpn.solve(net, method="mva")
    assert exact.info["algorithm"] == "exact" and "63 population vectors <= 200000" in exact.explanation[-1]
    approx = qpn.solve(net, method="mva", options={"exact_limit": 62})
    assert approx.info["algorithm"] == "linearizer"
    assert "63 population vectors > 62" in approx.explanation[-1]
    for cell in exact.rows:
        if cell.measure == "throughput":
            assert approx.get("throughput", cell.element, cell.color) == pytest.approx(cell.value, rel=1e-3)
    assert qpn.solve(net, method="mva", options={"exact_limit": "63"}).info["algorithm"] == "exact"
    with pytest.raises(SolverError, match="exact_limit=0: must be >= 1"):
        qpn.solve(net, method="mva", options={"exact_limit": 0})
    # auto hands it on; the CLI takes it as --option
    assert qpn.solve(net, options={"exact_limit": 62}).info["algorithm"] == "linearizer"
    out = tmp_path / "r.json"
    assert main(["solve", MODELS + "/central_server.qpn", "--option", "exact_limit=62", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["info"]["algorithm"] == "linearizer"


@pytest.mark.parametrize("method", [schweitzer, linearizer])
def test_one_chain_solved_as_one_equation_agrees_with_the_iteration(method):
    # one chain's fixed point is solved as one equation in X (a root finder); the
    # iteration still solves several chains: the same network with an empty second chain
    # goes that way, an independent check.  2^32 customers took 100,000 sweeps (10 s,
    # campaign 50); the root finder needs a few dozen evaluations
    rng = np.random.default_rng(4)
    for _ in range(40):
        M = int(rng.integers(1, 5))
        D = rng.lognormal(0, 1, (1, M))
        servers = np.where(rng.random(M) < 0.3, math.inf, rng.integers(1, 4, M)).astype(float)
        n = int(rng.choice([1, 2, 3, 7, 40]))
        one = method(D, [n], servers=servers)
        two = method(np.vstack([D, D]), [n, 0], servers=servers)
        assert two.converged
        assert one.throughput[0] == pytest.approx(two.throughput[0], rel=1e-8)
        assert one.queue_length[0] == pytest.approx(two.queue_length[0], rel=1e-7, abs=1e-9)
        assert one.queue_length[0].sum() == pytest.approx(n, rel=1e-10)
    big = method([[0.5, 2.0, 1.0]], [2 ** 32], servers=[math.inf, 1, 2])
    assert big.converged and big.iterations < 1000
    assert big.throughput[0] == pytest.approx(0.5, rel=1e-9)      # the 2 s station saturates
