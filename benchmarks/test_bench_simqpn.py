"""QPME's own example models on qpn's simulator and on SimQPN (QPME's simulator, Java).

    python benchmarks/peers/simqpn_build.py          # once: builds SimQPN (needs a JDK, git, QPME's repo)
    python -m pytest benchmarks/test_bench_simqpn.py --benchmark-only -s

SimQPN is built from a QPME git directory into a cache directory (QPN_QPME_REPO,
QPN_SIMQPN_HOME; see peers/simqpn_build.py, which the first test also runs); the models
are QPME's examples at that repository's HEAD.  Without java, javac, git or the
repository (and no earlier build) the tests are skipped and say why.

Every figure is a rate per CPU second (user + system) of a whole run, the same clock
on both sides (clocks.py):

* **cold** — a fresh process does the whole job: for qpn ``python -m qpn.cli solve
  MODEL.qpe --method des ...`` (interpreter, imports, reading the .qpe, loading the
  compiled event loop from numba's disk cache, the run, the analysis, the JSON); for
  SimQPN its java process (JVM start-up, JIT compiler threads, reading the model, the
  run, its report and result files);
* **warm** — for qpn the same ``qpn.solve`` again in a process that has done it once.
  SimQPN has no warm mode (each run is a JVM of its own), so both of qpn's figures are
  set against SimQPN's cold one; SimQPN's own ``runWallClockTime`` (the simulation
  alone, wall clock) is printed beside it.

Each model runs with the simqpn-configuration stored in it: ispass03-02 ``example_config``
(fixed length: ramp-up 5e7, total 1e8 time units), SjAS04Model_6AS-L5 ``example_config``
(RELPRC: ramp-up 5e6, run until SimQPN's relative precision is reached, at most 1e9) and
SPECjms2007Model ``new configuration`` (fixed length: ramp-up 120, total 1320).  qpn then
simulates the same span: one replication of SimQPN's total run length with SimQPN's
ramp-up as its warm-up (``time``, ``replications=1``, ``warmup``), so the two do the same
work; the unit of the rates is token departures from all places over the whole run
(SimQPN: sum of deptThrPut x totalRunLen; qpn: sum of ``departures`` x simulated time).
A second qpn line gives qpn's defaults (10 replications, sequential stopping at 1%),
a different amount of work, for reference.

The answers are checked: qpn's departures per color (its 95% interval) against
SimQPN's deptThrPut at a handful of places (the Client throughputs per color for
ispass03-02), within ``K`` half-widths.  The speed assertions are guards, not goals:
qpn warm >= 1x and cold >= 0.5x SimQPN on the same span, scaled by QPN_BENCH_FLOOR
(1 by default; lower it on a loaded machine).
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass

import pytest

import qpn
from clocks import Figures, load_average, run_timed, warm
from peers import simqpn

FLOOR = float(os.environ.get("QPN_BENCH_FLOOR", 1.0))
TARGET_WARM, TARGET_COLD = 1.0, 0.5       # qpn / SimQPN on the same span (guards)
K = 4.0                                   # half-widths of qpn's interval allowed (SimQPN has its noise too)
SIMQPN_SEED = 1_000_000_000_000          # SimQPN's -d (a date in ms)
FIGURES = Figures()
Cells = dict[tuple[str, str, str], tuple[float, float | None]]


@dataclass
class Case:
    """One QPME example: its file, the configuration SimQPN runs, the (place, color)
    departures compared, whether qpn's defaults are run too, and qpn's expected status."""
    file: str
    config: str
    checks: list[tuple[str, str]]
    defaults: bool = True
    status: str = "ok"


CASES = {
    "ispass03-02": Case("ispass03-02.qpe", "example_config", [("Client", "x1"), ("Client", "x2")]),
    "SjAS04": Case("SjAS04Model_6AS-L5.qpe", "example_config",
                   [("C1", "B"), ("C1", "P"), ("C1", "M"), ("C2", "W"), ("H", "b"), ("H", "w")]),
    # the DC_POrderConfQ_Disk depository has no output transition: its tokens pile up in
    # SimQPN too (deptCnt 0); qpn says so (status 'unstable') and keeps its estimates.
    # The I*_Trigger_10/_100 places get a random split of the trigger tokens at the start
    # (InitSM/InitDC/InitHQ take 10 or 100 helper tokens): not compared; the load they
    # generate, compared downstream, does not depend on the split.
    "SPECjms2007": Case("SPECjms2007Model.qpe", "new configuration",
                        [("SMs_Client_CPU_1", "StatInfoSM"), ("SMs_Client_CPU_1", "Order_S"),
                         ("DC_OrderQ_CPU", "Order_S"), ("HQ_ProductAnnouncementT_CPU",
                                                        "ProductAnnouncementNotification_S")],
                        defaults=False, status="unstable"),
}


@pytest.fixture(scope="module")
def examples() -> str:
    """The directory of QPME's examples in SimQPN's build (built here when needed)."""
    try:
        home = simqpn.simqpn_build.ensure_built()
    except simqpn.simqpn_build.BuildError as e:
        pytest.skip(f"SimQPN unavailable: {e}")
    return os.path.join(home, "examples")


@pytest.fixture(scope="module", autouse=True)
def summary():
    """Print every figure again at the end."""
    yield
    FIGURES.print_all("QPME examples: qpn against SimQPN (CPU time, both sides)")


def place_names(path: str) -> dict[str, str]:
    """QPME place name -> qpn element, from the comments of qpn's translation."""
    from qpn.dsl.qpe import qpe_to_qpn
    with open(path, "rb") as f:
        lines = qpe_to_qpn(f.read(), path)[0].splitlines()
    out = {}
    for line, nxt in zip(lines, lines[1:]):
        m = re.match(r"^# '(.*)' \([^)]*\)", line)
        if m and nxt.startswith("place "):
            out[m.group(1)] = nxt.split()[1]
    return out


def _cells(rows) -> Cells:
    """(measure, element, color) -> (value, half-width), from JSON rows or a Result's rows."""
    get = (lambda r, k: r[k]) if rows and isinstance(rows[0], dict) else getattr
    return {(get(r, "measure"), get(r, "element"), get(r, "color")): (get(r, "value"), get(r, "ci"))
            for r in rows}


def _qpn_cold(path: str, args: list[str], status: str) -> tuple[Cells, dict, float]:
    """``python -m qpn.cli solve`` in a fresh process: (cells, info, CPU s)."""
    with tempfile.TemporaryDirectory(prefix="qpn_bench_") as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", "qpn.cli", "solve", path, "--method", "des", "-q", "--json", out, *args]
        p, cpu, _ = run_timed(cmd)
        if p.returncode not in ((0, 3) if status == "ok" else (0, 3, 5)) or not os.path.exists(out):
            raise RuntimeError(f"{' '.join(cmd[2:])} failed ({p.returncode}): {p.stderr.strip()[-600:]}")
        with open(out) as f:
            doc = json.load(f)
    return _cells(doc["measures"]), doc["info"], cpu


def _qpn_warm(path: str, options: dict):
    """qpn.solve once to warm up, then again timed: (result, CPU s)."""
    net = qpn.load(path)
    o = dict(options, quiet=True)
    qpn.solve(net, method="des", options=o)
    res, cpu, _ = warm(lambda: qpn.solve(net, method="des", options=o))
    return res, cpu


def _departures(cells: Cells, names: dict[str, str]) -> float:
    """Token departures per time unit from all places (qpn)."""
    return sum(cells.get(("departures", e, ""), (0.0, None))[0] for e in names.values())


def _simqpn_departures(run: simqpn.SimQPNRun) -> float:
    """Token departures per time unit from all places (SimQPN: ordinary places and depositories)."""
    return sum(s.get("deptThrPut", 0.0) for (part, _, _), s in run.stats.items() if part in ("place", "depository"))


def _rate(x: float) -> str:
    return f"{x / 1e6:,.2f} M" if x >= 1e6 else f"{x / 1e3:,.0f} k"


@pytest.mark.parametrize("name", list(CASES))
def test_qpme_example_vs_simqpn(benchmark, examples, name):
    """qpn and SimQPN on the same span of one of QPME's examples: CPU time, warm and cold,
    and the answers agree."""
    case = CASES[name]
    path = os.path.join(examples, case.file)
    conf = simqpn.configuration(path, case.config)
    sim = simqpn.run(path, SIMQPN_SEED, case.config)
    T, W = sim.total_run_length, sim.total_run_length - sim.measurement_length
    names = place_names(path)
    options = {"time": T, "replications": 1, "warmup": W, "seed": 1, "wall": 3600}
    args = ["--time", repr(T), "--replications", "1", "--warmup", repr(W), "--seed", "1", "--wall", "3600"]

    def both():
        cold_cells, _, cold_cpu = _qpn_cold(path, args, case.status)
        res, warm_cpu = _qpn_warm(path, options)
        return cold_cells, cold_cpu, res, warm_cpu
    cold_cells, cq, res, wq = benchmark.pedantic(both, rounds=1, iterations=1)
    cells = _cells(res.rows)
    units_q = _departures(cells, names) * res.info["replications"] * res.info["simulated_time"]
    units_q_cold = _departures(cold_cells, names) * T
    units_s = _simqpn_departures(sim) * sim.total_run_length
    rw, rc = (units_q / wq) / (units_s / sim.cpu), (units_q_cold / cq) / (units_s / sim.cpu)
    line = (f"{name} ({case.config}: {conf.get('stopping-rule')}; SimQPN ran {T:.4g} time units, "
            f"ramp-up {W:.4g}, {sim.stop}; departures): qpn 1 replication {_rate(units_q / wq)}/CPU-s warm "
            f"({wq:.2f} s, {_rate(res.info['events'] / wq)} events/CPU-s), {_rate(units_q_cold / cq)} cold "
            f"({cq:.2f} s); SimQPN {_rate(units_s / sim.cpu)}/CPU-s ({sim.cpu:.2f} s, whole JVM, no warm mode; "
            f"{_rate(units_s / max(sim.sim_seconds, 1e-3))}/s by its own run time) -> qpn/SimQPN "
            f"{rw:.2f}x warm, {rc:.2f}x cold; qpn status {res.status}  [{load_average()}]")
    benchmark.extra_info.update(ratio_warm=rw, ratio_cold=rc, qpn_cpu_warm=wq, qpn_cpu_cold=cq,
                                simqpn_cpu=sim.cpu, simqpn_run_seconds=sim.sim_seconds, span=T,
                                departures=units_s, load=os.getloadavg())
    FIGURES.say(line)
    if res.status != "ok":
        FIGURES.say(f"  {name}: qpn: {res.reason}")
    assert res.status == case.status

    dcells = None
    if case.defaults:                                      # qpn's defaults, for reference
        dcold, dinfo, dcq = _qpn_cold(path, ["--allow-imprecise"], "ok")
        dres, dwq = _qpn_warm(path, {})
        dcells = _cells(dres.rows)
        span = dres.info["replications"] * dres.info["simulated_time"]
        du = _departures(dcells, names) * span
        FIGURES.say(f"  {name}, qpn defaults ({dres.info['replications']} replications x "
                    f"{dres.info['simulated_time']:.3g} = {span:.3g} time units, {dres.info['stopped_by']}): "
                    f"{dwq:.2f} CPU-s warm, {dcq:.2f} cold; {_rate(du / dwq)} departures/CPU-s warm, "
                    f"{_rate(_departures(dcold, names) * span / dcq)} cold")

    bad = []
    for place, color in case.checks:
        s = sim.get("depository" if ("depository", place, color) in sim.stats else "place", place, color)
        v, h = cells[("departures", names[place], color)]
        text = f"{place} {color}: qpn {v:.6g} +- {h:.2g}"
        if dcells is not None:
            dv, dh = dcells[("departures", names[place], color)]
            text += f" (defaults {dv:.6g} +- {dh:.2g})"
            if abs(dv - s) > K * dh:
                bad.append(f"{place} {color} (defaults)")
        FIGURES.say(f"  {name} departures {text}, SimQPN {s:.6g}")
        if abs(v - s) > K * h:
            bad.append(f"{place} {color}")
    assert not bad, f"qpn and SimQPN disagree beyond {K:g} half-widths: {bad}"
    assert rw >= TARGET_WARM * FLOOR and rc >= TARGET_COLD * FLOOR
