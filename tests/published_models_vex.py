"""qpn's predictions for the worked examples of seed 003 (VEX thesis) that give enough
numbers (docs/published.md):

* Table 8.2, the model-integration case study: the total time of a test of 3000
  requests (models/published/vex_cache_db.qpn), from the parameters of Table 8.1 alone, against the
  real run (9413.07 ms) and VEX's own pure model (7857.10 ms, -16.53%); the steady
  state of one request (models/published/vex_demo_select.qpn) against Pollaczek-Khinchine;
* §6.1, the M/M/1 server sped up and slowed down (models/published/vex_mm1.qpn), by MVA;
* Table 7.3, the CPU-bound toy loop f(T, m) = q ceil(T / m) (models/published/vex_parallel_loop.qpn)
  beside VEX's Lax and SPEX predictions.

Nothing is calibrated: every number of the models is a number the seed states.

    python tests/published_models_vex.py     # prints the tables of docs/published.md
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import qpn                                             # noqa: E402
from qpn.frontends.verify.published import load_seed   # noqa: E402
from qpn.solvers import solve                          # noqa: E402

MODELS = os.path.join(os.path.dirname(HERE), "models", "published")
SEED_003 = os.path.join(HERE, "data", "published", "seed-003.toml")

# Table 8.1
REQUESTS, RATE, HIT, CACHE, QUERY = 3000, 400.0, 0.75, 50e-6, 7e-3
REAL_MS, REAL_SD_MS = 9413.07, 140.633          # Table 8.2, real complete code
THINK_LATE = 1.12                                # §8.4.4: measured think time +12%


def load(name: str):
    return qpn.load(os.path.join(MODELS, name))


# ------------------------------------------------------------------ Table 8.2

@dataclass
class TotalTime:
    """qpn's total time of a test, in seconds."""
    label: str
    rate: float
    requests: int
    think: float          # simulated mean think time
    think_h: float
    join: float           # simulated mean wait for the last answers after the last think
    join_h: float
    timer: float          # residence of test.running (Little: cut at the window's edges)
    sd: float             # from the timer's histogram
    cycles: float         # tests simulated
    query: float          # MySQL response time, simulated
    query_h: float
    mysql_u: float

    @property
    def exact_thinks(self) -> float:
        """The thinks alone: requests thinks of mean 1 / rate, one after the other."""
        return self.requests / self.rate

    @property
    def exact_sd(self) -> float:
        """The thinks' standard deviation, sqrt(requests) / rate: the test's, but for the
        few milliseconds of the wait at the end."""
        return math.sqrt(self.requests) / self.rate

    @property
    def total(self) -> float:
        """The prediction: the thinks (exact) plus the simulated wait at the end."""
        return self.exact_thinks + self.join

    @property
    def simulated_total(self) -> tuple[float, float]:
        """The same from the simulation alone: requests x simulated think + join, and a
        (conservative) half-width."""
        return (self.requests * self.think + self.join,
                self.requests * self.think_h + self.join_h)

    def err(self, measured_ms: float = REAL_MS) -> float:
        """Signed error in percent, as the seed prints it: 100 (p - m) / m."""
        return 100 * (1000 * self.total - measured_ms) / measured_ms


DES_TEST = {"time": 75.0, "replications": 10, "warmup": "none", "seed": 1, "quiet": True}


def total_test_time(label: str, rate: float = RATE, requests: int = REQUESTS,
                    options: dict | None = None) -> TotalTime:
    """Simulate tests of `requests` requests back to back (each starts empty: no warm-up)."""
    res = solve(load("vex_cache_db.qpn"), method="des", options=options or DES_TEST,
                rate=rate, requests=requests)

    def g(measure, element):
        return res.get(measure, element), res.ci(measure, element) or 0.0

    think, think_h = g("residence", "client.think")
    join, join_h = g("residence", "client.join")
    query, query_h = g("residence", "request.query")
    timer = res.get("residence", "test.running")
    sd = math.sqrt(res.get("residence_var", "test.running"))
    cycles = res.info["simulated_time"] * res.info["replications"] / timer
    return TotalTime(label, rate, requests, think, think_h, join, join_h, timer, sd, cycles,
                    query, query_h, res.get("utilization", "mysql"))


def pk_mysql(rate: float = RATE) -> tuple[float, float]:
    """(utilization, response time) of MySQL as an M/D/1 queue (Pollaczek-Khinchine)."""
    lam = rate * (1 - HIT)
    u = lam * QUERY
    return u, QUERY + lam * QUERY ** 2 / (2 * (1 - u))


def table_8_2(rows: list[TotalTime]) -> str:
    seed = load_seed(SEED_003).table("model-integration")
    head = ["stage", "total time (ms)", "sd (ms)", "error vs real (%)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sds = {"pure model": "53.366", "client thinking": "145.938", "partial code": "158.632",
           "VEX complete": "123.045"}
    out.append(f"| real complete code (measured) | {REAL_MS:.2f} | {REAL_SD_MS:.3f} | 0 |")
    for c in seed.cells():
        out.append(f"| VEX, {c.at['stage']} | {c.predicted.text} | {sds[c.at['stage']]} | "
                   f"{c.eps.text} |")
    for r in rows:
        out.append(f"| **qpn, {r.label}** | {1000 * r.total:.1f} ± {1000 * r.join_h:.1f} | "
                   f"{1000 * r.exact_sd:.0f} | {r.err():+.2f} |")
    return "\n".join(out)


def details(r: TotalTime) -> str:
    u, resp = pk_mysql(r.rate)
    sim, sim_h = r.simulated_total
    return (f"{r.label}: thinks {1000 * r.exact_thinks:.1f} ms (exact) + wait for the last "
            f"answers {1000 * r.join:.1f} ± {1000 * r.join_h:.1f} ms (simulated, {r.cycles:.0f} "
            f"tests); all simulated: {1000 * sim:.0f} ± {1000 * sim_h:.0f} ms; sd of a test "
            f"{1000 * r.sd:.0f} ms simulated (thinks alone: {1000 * r.exact_sd:.0f}); "
            f"MySQL utilization {r.mysql_u:.3f} (M/D/1: {u:.3f}), response "
            f"{1000 * r.query:.2f} ± {1000 * r.query_h:.2f} ms (M/D/1, every arrival Poisson: "
            f"{1000 * resp:.2f})")


DES_OPEN = {"seed": 1, "quiet": True}


def demo_select() -> list[tuple[str, float, float, float]]:
    """(measure, qpn, half-width, closed form) for the open model of one request."""
    res = solve(load("vex_demo_select.qpn"), method="des", options=DES_OPEN)
    u, resp = pk_mysql()
    cache = CACHE / (1 - RATE * HIT * CACHE)            # M/M/1-PS on the one core
    request = HIT * cache + (1 - HIT) * resp
    rows = []
    for label, measure, element, exact in [
            ("MySQL utilization", "utilization", "mysql", u),
            ("MySQL response (ms)", "residence", "clients.query", resp),
            ("cache response (us)", "residence", "clients.cache", cache),
            ("request response (ms)", "residence", "response.running", request)]:
        scale = 1e6 if "(us)" in label else 1e3 if "(ms)" in label else 1
        rows.append((label, scale * res.get(measure, element),
                     scale * (res.ci(measure, element) or 0), scale * exact))
    return rows


def demo_select_table(rows) -> str:
    out = ["| measure | closed form | qpn (des) |", "|---|---|---|"]
    for label, v, h, exact in rows:
        out.append(f"| {label} | {exact:.4g} | {v:.4g} ± {h:.2g} |")
    return "\n".join(out)


# ------------------------------------------------------------------ §6.1 M/M/1

MM1 = [("μ", 1.0), ("μ_acc (+20%)", 1.2), ("μ_slow (−33%)", 2 / 3)]


def mm1(mu: float = 800.0) -> list[tuple[str, float, float, float]]:
    """(label, service rate, closed form R, qpn R by MVA), R in seconds."""
    net = load("vex_mm1.qpn")
    out = []
    for label, speedup in MM1:
        res = solve(net, method="mva", rate=RATE, mu=mu, speedup=speedup)
        out.append((label, speedup * mu, 1 / (speedup * mu - RATE),
                    res.get("residence", "clients.serve")))
    return out


def mm1_table(rows) -> str:
    out = ["| server | service rate (1/s) | R = 1/(μ − λ) (ms) | qpn, mva (ms) | VEX |",
           "|---|---|---|---|---|"]
    for label, mu, exact, got in rows:
        out.append(f"| {label} | {mu:.1f} | {1000 * exact:.3f} | {1000 * got:.3f} | "
                   "Figure 6.1 only |")
    return "\n".join(out)


# ------------------------------------------------------------------ Table 7.3

Q, CORES = 0.17, 2
# Runs simulated per point.  A run is T timed events (the threads' completions; the fork
# and the join take no time), so CYCLES x T events end the simulation at the end of a
# run and the count of runs in the window is exact; any other stop would cut a run and
# be off by up to 1 / CYCLES.
CYCLES = 2000


def parallel_loop(t_per_m: int, cores: int = CORES, q: float = Q) -> float:
    """qpn's run time of T = t_per_m x cores threads on `cores` cores (deterministic)."""
    threads = t_per_m * cores
    res = solve(load("vex_parallel_loop.qpn"), method="des",
                options={"events": CYCLES * threads, "replications": 1,
                         "warmup": "none", "seed": 1, "quiet": True},
                threads=threads, cores=cores, q=q)
    return 1 / res.get("throughput", "main.run.done")


def table_7_3() -> str:
    seed = load_seed(SEED_003)
    lax, spex = seed.table("multicore-lax"), seed.table("multicore-spex")
    out = ["| T/m | f(T, m) (s) | VEX Lax (s) | Lax error (%) | VEX SPEX (s) | SPEX error (%) | "
           "qpn (s) | qpn error (%) |", "|---|---|---|---|---|---|---|---|"]
    for cl, cs in zip(lax.cells(), spex.cells()):
        k = cl.at["T_per_m"]
        f = Q * k
        got = parallel_loop(k)
        out.append(f"| {k} | {f:.2f} | {cl.predicted.text} | {cl.eps.text} | "
                   f"{cs.predicted.text} | {cs.eps.text} | {got:.2f} | {round(100 * (got - f) / f, 2) + 0.0:.2f} |")
    return "\n".join(out)


def main() -> None:
    rows = [total_test_time("from Table 8.1"),
            total_test_time("think +12% (measured in §8.4.4)", rate=RATE / THINK_LATE)]
    print(table_8_2(rows))
    print()
    for r in rows:
        print("*", details(r))
    print()
    print(demo_select_table(demo_select()))
    print()
    print(mm1_table(mm1()))
    print()
    print(table_7_3())


if __name__ == "__main__":
    main()
