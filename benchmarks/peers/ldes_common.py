"""Running LINE's LDES (its native discrete-event simulator) for the simulator benchmark.

LDES is a C++ binary (``line_solver/bin/ldes``; ``ldes.jar`` on a JVM where no
native binary fits) that ``SolverLDES`` runs as a subprocess on the model saved
as JSON.  ``-s N`` ("samples") stops the run after N service completions,
counted over every station except the source (the delay of a closed network
included): the per-visit response-time samples (``--respt-samples``) of a run
with ``-s N`` number exactly N in all.  The engine reports its own run time
(``runtime``: the simulation without process start-up and JSON I/O); it, the
wall-clock time of the subprocess and the CPU time of the subprocess (``cpu``,
the clock the benchmarks compare) are returned.
"""
import json
import os
import resource
import subprocess
import tempfile
import time


def run_ldes(model, samples: int, seed: int = 1, respt_samples: bool = False) -> dict:
    """Run LDES on ``model`` for ``samples`` service completions; the parsed result
    document plus ``seconds`` (engine run time) and ``wall`` (subprocess)."""
    from line_solver.solvers.wrappers.solver_ldes import solver_ldes as mod
    solver = mod.SolverLDES(model, samples=samples, seed=seed, verbose="silent")
    with tempfile.TemporaryDirectory(prefix="qpn_ldes_") as tmp:
        model_path, result_path = os.path.join(tmp, "model.json"), os.path.join(tmp, "result.json")
        mod.save_model(model, model_path)
        # the native engine records response-time samples too (the wrapper sends
        # that request to ldes.jar only), so the flag is added here
        runners = [cmd + (["--respt-samples"] if respt_samples else [])
                   for cmd in solver._build_cli_runners(model_path, result_path)]
        err = ""
        for cmd in runners:
            t0 = time.perf_counter()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall = time.perf_counter() - t0
            if proc.returncode == 0 and os.path.isfile(result_path):
                with open(result_path) as f:
                    doc = json.load(f)
                doc["wall"] = wall
                # CPU time of the whole engine process (start-up and JSON I/O included)
                doc["cpu"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                doc["seconds"] = float(doc.get("runtime") or wall)
                doc["engine"] = "native" if cmd[0].endswith("ldes") else "jar"
                return doc
            err = (proc.stderr or proc.stdout).strip()[-300:]
    raise RuntimeError(f"LDES failed: {err}")


def metric(doc: dict, name: str, station: int, cls: int = 0) -> float:
    return float(doc["metrics"][name][station][cls])


def respt_counts(doc: dict) -> list[int]:
    """Response-time samples per station (summed over classes)."""
    return [sum(len(c) for c in st) for st in doc.get("respTimeSamples", [])]
