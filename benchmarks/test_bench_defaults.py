"""`qpn solve` with its defaults, on every bundled model and on models built from traces.

    python -m pytest benchmarks/test_bench_defaults.py --benchmark-only -s

Each case is a fresh ``qpn solve MODEL`` process (interpreter, imports, the
compiled event loop loaded from numba's cache, the run, the analysis), once
with the default method (``auto``: analytic where exact, else simulation) and
once with ``--method des`` (simulation by default rules: 10 replications,
sequential stopping at a 1% half-width with a 5% floor, 60 s wall cap).  The
traced models are built here: each test program (tests/programs) is traced
with ``qpn trace`` and modelled with ``qpn build``.

The simulation issue's target: every run reaches its precision (stopped by
precision, exit status 0) in under 10 s of wall time on an idle machine
(QPN_BENCH_FLOOR < 1 relaxes the time on a loaded one, as in the other
benchmarks).  Printed per case: wall and CPU seconds, events, the method and
kernel chosen, the load average.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from clocks import Figures, load_average, run_timed

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(ROOT, "tests", "programs")
FLOOR = float(os.environ.get("QPN_BENCH_FLOOR", 1.0))
WALL_TARGET = 10.0
FIGURES = Figures()

BUNDLED = sorted(glob.glob(os.path.join(ROOT, "models", "*.qpn")) +
                 glob.glob(os.path.join(ROOT, "models", "bench", "*.qpn")) +
                 glob.glob(os.path.join(ROOT, "models", "published", "*.qpn")))
# (name, program and arguments): the programs of the analyzer's tests, as they trace them
TRACED = [("pool_queue_lock", ["pool_queue_lock.py", "30", "3"]),
          ("barrier_iterations", ["barrier_iterations.py", "8", "3"]),
          ("file_server", ["file_server.py", "40", "2"]),
          ("gil_work_python", ["gil_work.py", "python", "2", "24"]),
          ("gil_work_hash", ["gil_work.py", "hash", "2", "24"]),
          ("probe_cost", ["probe_cost.py", "20", "200"]),
          ("split_rounds", ["split_rounds.py", "12", "2"]),
          ("sleep_poll", ["sleep_poll.py", "150", "2"]),
          ("cache_workers", ["cache_workers.py", "120", "2"]),
          ("open_client", ["open_client.py", "300", "2", "400"]),
          ("pipeline_chain", ["pipeline_chain.py", "200", "2"]),
          ("mapreduce", ["mapreduce.py", "10", "2"]),
          ("conn_pool", ["conn_pool.py", "50", "4", "2"])]
QPN = [sys.executable, "-m", "qpn.cli"]


@pytest.fixture(scope="module", autouse=True)
def summary():
    # compile (or load) the event loop once, so no case below pays for compiling
    subprocess.run(QPN + ["solve", os.path.join(ROOT, "models", "mutex.qpn"), "--method", "des",
                          "--events", "1000", "-q"], capture_output=True, check=True)
    yield
    FIGURES.print_all("qpn solve with default options (wall and CPU of the whole process)")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """name -> model file built by `qpn trace` + `qpn build` from a test program."""
    d = tmp_path_factory.mktemp("built")
    out = {}
    for name, args in TRACED:
        trace, model = d / f"{name}.jsonl", d / f"{name}.qpn"
        subprocess.run(QPN + ["trace", "-o", str(trace), sys.executable, os.path.join(PROGRAMS, args[0]),
                              *args[1:]], capture_output=True, check=True, cwd=ROOT)
        subprocess.run(QPN + ["build", str(trace), "-o", str(model), "--source-dir", PROGRAMS],
                       capture_output=True, check=True, cwd=ROOT)
        out[name] = str(model)
    return out


def _solve(path: str, method: str, tmp_path) -> tuple[dict, int, float, float]:
    """(JSON result, exit status, wall s, CPU s) of a fresh `qpn solve`."""
    out = tmp_path / "result.json"
    args = QPN + ["solve", path, "--json", str(out), "-q"] + ([] if method == "auto" else ["--method", method])
    p, cpu, wall = run_timed(args, timeout=600, cwd=ROOT)
    assert out.exists(), p.stderr[-800:]
    return json.loads(out.read_text()), p.returncode, wall, cpu


def _check(benchmark, label: str, path: str, method: str, tmp_path) -> None:
    doc, status, wall, cpu = benchmark.pedantic(lambda: _solve(path, method, tmp_path), rounds=1, iterations=1)
    info = doc.get("info", {})
    chosen = doc["method"]
    how = (f"des {info.get('kernel')}, {info.get('replications')} x {info['precision']['events_per_replication']:,} "
           f"events, {info.get('threads', 1)} thread(s), stopped by {info.get('stopped_by')}"
           if chosen == "des" else chosen)
    FIGURES.say(f"{label:40s} {method:5s} {wall:6.2f} s wall {cpu:6.2f} s CPU  {how}  [{load_average()}]")
    benchmark.extra_info.update(wall=wall, cpu=cpu, method=chosen, status=status, load=os.getloadavg())
    assert status == 0, doc.get("imprecise")
    if chosen == "des":
        assert info["stopped_by"] == "precision" and doc["precision_reached"] is True
    assert wall * FLOOR < WALL_TARGET, f"{label}: {wall:.1f} s (target {WALL_TARGET} s)"


@pytest.mark.parametrize("method", ["auto", "des"])
@pytest.mark.parametrize("path", BUNDLED, ids=[os.path.relpath(p, os.path.join(ROOT, "models")) for p in BUNDLED])
def test_bundled_model(benchmark, path, method, tmp_path):
    _check(benchmark, os.path.relpath(path, ROOT), path, method, tmp_path)


@pytest.mark.parametrize("method", ["auto", "des"])
@pytest.mark.parametrize("name", [t[0] for t in TRACED])
def test_model_built_from_a_trace(benchmark, built, name, method, tmp_path):
    _check(benchmark, f"built from {name}", built[name], method, tmp_path)
