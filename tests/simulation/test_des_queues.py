"""The simulator (method "des") against closed-form and exact queueing results.

Every check compares a simulated mean with the exact value and accepts it when
it lies within ``K_CI = 1.8`` confidence half-widths (see ``des_support`` for
why), and also requires the half-width to be small enough for the check to
mean something.  Seeds are fixed; horizons are modest so the suite stays fast.

The simulator picks one of three kernels (Lindley recursion for a G/G/1 FCFS
queue, a lockstep kernel for exponential queueing networks, and the general
event engine); each known answer is checked on the kernels that can run it,
the general engine included (``kernel="general"``).
"""
import math

import pytest

import qpn
from des_support import (MODELS, K_CI, SEED, assert_all_cover, assert_covers, des, mean_and_halfwidth)
from qpn.solvers.des.api import simulate

# Replications: the Lindley kernel simulates each replication on its own, so
# 20 long ones; the two step kernels advance all lanes together and are much
# cheaper per event with many lanes, so 50 shorter ones.  t(0.975, 19) = 2.09
# and t(0.975, 49) = 2.01: 1.8 half-widths are 3.8 and 3.6 standard errors.
R = 20
RS = 50


def open_queue(discipline: str, service: str, lam: float, servers: int = 1):
    """Poisson arrivals at rate ``lam`` into one queue whose served tokens leave."""
    return qpn.parse(f"net q\nplace server queue {discipline} servers {servers} service {service}\n"
                     f"transition arrive : -> server delay exp({1 / lam!r})\n"
                     "transition leave : server ->\n")


def check_open_queue(res, lam: float, rho: float, response: float, *, max_rel: float = 0.06):
    """Response, tokens (Little), utilization and throughput of one open queue.

    ``max_rel`` bounds the relative half-width of the response time and the
    tokens; at the horizons below it is 2-5% (seeds 1-8), so the default 6%
    only rejects a run whose interval is unusually wide."""
    assert_covers(res, "response", "server", "", response, max_rel=max_rel)
    assert_covers(res, "residence", "server", "", response, max_rel=max_rel)
    assert_covers(res, "tokens", "server", "", lam * response, max_rel=max_rel)
    assert_covers(res, "utilization", "server", "", rho, max_rel=0.02)
    assert_covers(res, "throughput", "leave", "", lam, max_rel=0.02)
    assert_covers(res, "throughput", "arrive", "", lam, max_rel=0.02)


# ------------------------------------------------------------------ M/M/1
# lambda = 0.8, mean service 1 s: rho = 0.8, response 1/(mu - lambda) = 5 s,
# tokens rho/(1-rho) = 4.
MM1_KERNELS = [
    # (kernel option, kernel class expected, replications, horizon per replication)
    ("auto", "LindleyKernel", R, 20_000),
    ("qn", "QNKernel", RS, 8000),
    ("general", "EventEngine", 100, 3000),
]


@pytest.mark.parametrize("kernel,cls,reps,T", MM1_KERNELS, ids=[k[0] for k in MM1_KERNELS])
def test_mm1(kernel, cls, reps, T):
    res = des(qpn.load(f"{MODELS}/mm1.qpn"), {"time": T, "replications": reps, "kernel": kernel})
    assert res.info["kernel"] == cls
    check_open_queue(res, 0.8, 0.8, 5.0)


# ------------------------------------------------------------------ M/M/c
def erlang_c_response(lam: float, c: int, S: float) -> float:
    """Mean response time of M/M/c (Erlang C)."""
    a = lam * S
    rho = a / c
    last = a ** c / math.factorial(c) / (1 - rho)
    wait_prob = last / (sum(a ** k / math.factorial(k) for k in range(c)) + last)
    return S + wait_prob * S / (c - a)


@pytest.mark.parametrize("kernel,cls", [("qn", "QNKernel"), ("general", "EventEngine")])
def test_mmc_erlang_c(kernel, cls):
    # models/mmc.qpn: lambda = 3, c = 4, S = 1 s: rho = 0.75, P(wait) = 0.509, W = 1.5094 s
    lam, c, S = 3.0, 4, 1.0
    W = erlang_c_response(lam, c, S)
    assert W == pytest.approx(1.509433962, rel=1e-9)
    res = des(qpn.load(f"{MODELS}/mmc.qpn"), {"time": 800, "replications": RS, "kernel": kernel})
    assert res.info["kernel"] == cls
    assert_covers(res, "response", "station", "", W)
    assert_covers(res, "tokens", "station", "", lam * W)
    assert_covers(res, "utilization", "station", "", lam * S / c, max_rel=0.02)
    assert_covers(res, "throughput", "leave", "", lam, max_rel=0.02)


# ------------------------------------------- M/D/1, M/G/1: Pollaczek-Khinchine
def pk_response(lam: float, mean: float, scv: float) -> float:
    """M/G/1 FCFS mean response: S + lambda E[S^2] / (2 (1 - rho))."""
    return mean + lam * mean * mean * (1 + scv) / (2 * (1 - lam * mean))


MG1 = [
    # (service, lambda, mean, scv, precision): the heavy-tailed lognormal
    # needs a wider interval at the same horizon
    ("det(1 s)", 0.8, 1.0, 0.0, 0.06),                           # M/D/1: W = 3
    ("uniform(0 s, 2 s)", 0.8, 1.0, 1 / 3, 0.06),                # W = 3.667
    ("erlang(4, 1 s)", 0.8, 1.0, 0.25, 0.06),                    # W = 3.5
    ("hyperexp(0.2: 3 s, 0.8: 500 ms)", 0.5, 1.0, 3.0, 0.06),    # E[S^2] = 4: W = 3
    ("hyperexp(mean = 1 s, scv = 4)", 0.5, 1.0, 4.0, 0.06),      # W = 3.5
    ("gamma(1 s, 0.5)", 0.7, 1.0, 0.5, 0.06),                    # W = 2.75
    ("lognormal(1 s, 2)", 0.5, 1.0, 2.0, 0.08),                  # W = 2.5
]


@pytest.mark.parametrize("service,lam,mean,scv,max_rel", MG1,
                         ids=[m[0].split("(")[0] + str(i) for i, m in enumerate(MG1)])
def test_mg1_pollaczek_khinchine(service, lam, mean, scv, max_rel):
    res = des(open_queue("fcfs", service, lam), {"time": 20_000, "replications": R})
    assert res.info["kernel"] == "LindleyKernel"
    check_open_queue(res, lam, lam * mean, pk_response(lam, mean, scv), max_rel=max_rel)


def test_md1_on_the_general_engine():
    # the same M/D/1 (W = 3 s, tokens 2.4) through the per-token work queue
    res = des(open_queue("fcfs", "det(1 s)", 0.8), {"time": 2000, "replications": RS, "kernel": "general"})
    assert res.info["kernel"] == "EventEngine"
    check_open_queue(res, 0.8, 0.8, pk_response(0.8, 1.0, 0.0), max_rel=0.07)


# ----------------------------------------------- M/G/1-PS: insensitivity
PS = [
    # (service, precision required of the response-time interval): the
    # variance of the PS response time grows with the service SCV, so the
    # high-variance services get a wider bound at the same horizon
    ("det(1 s)", 0.06),
    ("erlang(3, 1 s)", 0.06),
    ("hyperexp(0.2: 3 s, 0.8: 500 ms)", 0.08),
    ("lognormal(1 s, 2)", 0.08),
]


@pytest.mark.parametrize("service,max_rel", PS, ids=[s[0].split("(")[0] + str(i) for i, s in enumerate(PS)])
def test_mg1_processor_sharing_is_insensitive(service, max_rel):
    # M/G/1-PS: the mean response S/(1 - rho) depends on the service mean only.
    # lambda = 0.6, S = 1 s: response 2.5 s, tokens 1.5.
    res = des(open_queue("ps", service, 0.6), {"time": 2000, "replications": RS})
    assert res.info["kernel"] == "EventEngine"
    check_open_queue(res, 0.6, 0.6, 1.0 / (1 - 0.6), max_rel=max_rel)


def test_mm1_round_robin_equals_mm1():
    # With exponential service any quantum leaves the queue-length process of
    # M/M/1 unchanged (memoryless work), so RR gives response S/(1-rho) too.
    res = des(open_queue("rr quantum 500 ms", "exp(1 s)", 0.6), {"time": 2000, "replications": RS})
    assert res.info["kernel"] == "EventEngine"
    check_open_queue(res, 0.6, 0.6, 2.5)


# --------------------------------------------- closed product-form networks
@pytest.mark.parametrize("kernel,cls", [("qn", "QNKernel"), ("general", "EventEngine")])
def test_closed_tandem_against_exact_mva(kernel, cls):
    net = qpn.load(f"{MODELS}/tandem.qpn")
    exact = qpn.solve(net, method="mva")
    assert exact.info["algorithm"] == "exact"
    res = des(net, {"time": 200, "replications": RS, "kernel": kernel})
    assert res.info["kernel"] == cls
    n = assert_all_cover(res, exact, ("throughput", "tokens", "utilization", "residence"))
    assert n == 3 + 3 + 3 + 3
    # the population is conserved in every replication
    total = sum(res.get("tokens", s) for s in ("s1", "s2", "s3"))
    assert total == pytest.approx(5.0, rel=1e-9)


@pytest.mark.parametrize("kernel,cls", [("qn", "QNKernel"), ("general", "EventEngine")])
def test_central_server_two_classes_against_exact_mva(kernel, cls):
    net = qpn.load(f"{MODELS}/central_server.qpn")
    exact = qpn.solve(net, method="mva")
    assert exact.info["algorithm"] == "exact"
    res = des(net, {"time": 200, "replications": RS, "kernel": kernel})
    assert res.info["kernel"] == cls
    # every throughput (per transition, class and routing mode) and every mean
    # token count (per place and class); the small disk populations (~0.03)
    # are checked for coverage only, the per-mode routing rates (~0.5/s) to 8%
    n = assert_all_cover(res, exact, ("throughput", "tokens", "utilization"), max_rel=0.08)
    assert n >= 40


# ------------------------------------------------ residence-time percentiles
# Residence times are binned in log-spaced bins, 100 per decade (ratio
# r = 10^0.01 = 1.0233), and a percentile is interpolated log-linearly inside its
# bin.  For a smooth density the CDF is nearly linear across one bin and the
# interpolation error is second order, at most x (r - 1)^2 / 8 = 7e-5 x; for a
# point mass the percentile can only be placed within its bin (a factor r).
BIN_RATIO = 10 ** 0.01
INTERP = (BIN_RATIO - 1) ** 2 / 8


def test_percentiles_of_a_point_mass_lie_in_its_bin():
    net = qpn.parse("place work queue is service det(370 ms) init 4\n"
                    "transition again : work -> work\n")
    res = des(net, {"time": 200, "replications": 2, "kernel": "general"})
    for q in (50, 90, 95, 99):
        v = res.get(f"residence_p{q}", "work")
        assert 0.37 / BIN_RATIO <= v <= 0.37 * BIN_RATIO, (q, v)
    assert res.get("residence_var", "work") == pytest.approx(0.0, abs=1e-12)


def test_percentiles_below_one_nanosecond_read_zero_not_the_histograms_floor():
    # a subnormal step: its residences lie below the histograms' first edge (1 ns)
    net = qpn.parse("place think init 2\nplace cpu queue fcfs service det(1e-320 s)\n"
                    "transition go : think -> cpu delay exp(1)\ntransition back : cpu -> think\n")
    res = des(net, {"events": 4000, "replications": 2, "kernel": "general"})
    assert res.get("residence", "cpu") == pytest.approx(0.0, abs=1e-300)
    assert [res.get(f"residence_p{q}", "cpu") for q in (50, 90, 99)] == [0.0, 0.0, 0.0]
    assert res.get("residence_p90", "think") > 1.0       # (about 3.9 s: two tokens, one timer)


def test_percentiles_of_independent_uniform_residence_times():
    # An IS place with uniform(1 s, 2 s) service: residence times are i.i.d.
    # uniform, so the p-quantile is 1 + p and the sample quantile of n draws has
    # standard deviation sqrt(p (1 - p) / n) / f with density f = 1.  The warm-up
    # cut keeps at least half the run, so n >= X T R / 2.
    N, T, reps = 50, 40.0, 10
    net = qpn.parse(f"place work queue is service uniform(1 s, 2 s) init {N}\n"
                    "transition again : work -> work\n")
    res = des(net, {"time": T, "replications": reps})
    X = res.get("throughput", "again")
    n = X * T * reps / 2
    for p in (0.5, 0.9, 0.95, 0.99):
        v = res.get(f"residence_p{int(round(100 * p))}", "work")
        sd = math.sqrt(p * (1 - p) / n)
        tol = K_CI * 1.96 * sd + INTERP * (1 + p)
        assert abs(v - (1 + p)) <= tol, (p, v, tol)
    # the variance of uniform(1, 2) is 1/12; the sample variance of n draws has
    # variance (mu4 - sigma^4) / n with fourth central moment mu4 = 1/80
    var = res.get("residence_var", "work")
    sd_var = math.sqrt((1 / 80 - 1 / 144) / n)
    assert abs(var - 1 / 12) <= K_CI * 1.96 * sd_var, var


MM1_PCT_KERNELS = [
    # (kernel, replications per point, horizon, bound on the relative
    # half-width of p50 and p90, p95, p99, variance): the Lindley kernel is
    # cheap enough for a long horizon; the other two kernels share the
    # histogram code and get a coarser consistency check.  A half-width from
    # 8 estimates (7 degrees of freedom) varies by about +/-50% itself, so the
    # bounds are about twice the typical values.
    ("auto", 4, 50_000, (0.05, 0.08, 0.12, 0.15)),
    ("qn", 8, 5000, (0.12, 0.15, 0.25, 0.4)),
    ("general", 8, 5000, (0.12, 0.15, 0.25, 0.4)),
]


@pytest.mark.parametrize("kernel,reps,T,prec", MM1_PCT_KERNELS, ids=[k[0] for k in MM1_PCT_KERNELS])
def test_mm1_fcfs_response_time_percentiles(kernel, reps, T, prec):
    # M/M/1 FCFS (lambda 0.8, mu 1): the response time is exponential with rate
    # mu - lambda = 0.2, so its p-quantile is -ln(1 - p) / 0.2 and its variance 25.
    # Successive response times are strongly correlated, so the sampling error
    # is not that of i.i.d. draws: the interval comes from 8 independent
    # estimates (8 sweep points with identical parameters = independent streams,
    # ``reps`` replications pooled in each), Student-t with 7 degrees of freedom, plus
    # the bin-interpolation bound above.
    points = 8
    sw = simulate(qpn.load(f"{MODELS}/mm1.qpn"), sweep={"lambda": [0.8] * points},
                  options={"time": T, "replications": reps, "seed": SEED, "quiet": True, "kernel": kernel})
    assert len(sw.points) == points
    for q, max_rel in ((50, prec[0]), (90, prec[0]), (95, prec[1]), (99, prec[2])):
        exact = -math.log(1 - q / 100) / 0.2
        m, h = mean_and_halfwidth([pt.result.get(f"residence_p{q}", "server") for pt in sw.points])
        assert abs(m - exact) <= K_CI * h + INTERP * exact, \
            f"p{q}: {m:.4g} +/- {h:.3g} vs exact {exact:.4g} ({abs(m - exact) / h:.2f} half-widths)"
        assert h <= max_rel * exact, f"p{q}: half-width {h:.3g} too wide to test anything"
    m, h = mean_and_halfwidth([pt.result.get("residence_var", "server") for pt in sw.points])
    assert abs(m - 25.0) <= K_CI * h and h <= prec[3] * 25.0, (m, h)


# ------------------------------------------------- warm-up truncation bias
def test_ci_coverage_does_not_degrade_with_many_replications():
    # The interval must stay honest when it gets narrow: with 400 replications
    # of M/M/1 (lambda 0.8) the 95% half-width of the mean response is ~1% and the
    # estimate must still lie within 1.8 of them.  The start from an empty
    # system biases each run by about -170 token-seconds / T (-0.2% at
    # T = 20000), far below that; a warm-up rule that cuts the initial part of
    # a run depending on the data it cuts (e.g. dropping high excursions) adds a
    # bias proportional to one run's own standard error, and this test sees it.
    res = des(qpn.load(f"{MODELS}/mm1.qpn"), {"time": 20_000, "replications": 400})
    assert_covers(res, "response", "server", "", 5.0, max_rel=0.02)
    assert_covers(res, "tokens", "server", "", 4.0, max_rel=0.02)
    assert_covers(res, "utilization", "server", "", 0.8, max_rel=0.01)


def test_warmup_removes_a_start_up_transient_seen_only_in_throughputs():
    # 50 tokens start together in an IS place with uniform(1 s, 2 s) service and
    # cycle through it.  The marking never changes (always 50 tokens), but the
    # completions are not stationary at first: none in the first second, and
    # the renewal count lags t / 1.5 by about 0.48 per token (renewal theory),
    # so the throughput averaged over [0, 40 s] is about 2% low.  The default
    # warm-up must cut such a start (the transient is over in a few cycles),
    # so that the interval covers X = 50 / 1.5.
    net = qpn.parse("place work queue is service uniform(1 s, 2 s) init 50\n"
                    "transition again : work -> work\n")
    res = des(net, {"time": 40, "replications": 10})
    assert_covers(res, "throughput", "again", "", 50 / 1.5, max_rel=0.02)
