"""Running SimQPN (QPME's simulator, Java) on a ``.qpe`` model for the peer benchmark.

    python benchmarks/peers/simqpn.py MODEL.qpe [SEED [CONFIG]]     # one JSON line

SimQPN is built by ``simqpn_build.py`` and run headless through its own command-line
runner, in a temporary directory (it writes its result and log files beside the model):

    java -XX:+UseSerialGC -Xmx1g -cp ... de.tud.cs.simqpn.kernel.console.SimQPN -r CONFIG -d SEED model.qpe

``-r`` names a simqpn-configuration stored in the model (run length, ramp-up, stopping
rule, batch-means settings, statistics levels); ``-d`` seeds SimQPN's generators (a date
in ms: the same value reproduces a run bit for bit).  The CPU time is that of the whole
java process (JVM start-up, JIT threads and model loading included), from
``clocks.run_timed``; SimQPN's own ``runWallClockTime`` (the simulation alone, wall
clock) is returned beside it.  The printed report is parsed into statistics per
(part, place, color), part being ``place`` (an ordinary place), ``queue`` or
``depository`` (the two halves of a queueing place): ``deptThrPut``, ``arrivThrPut``,
``meanTkPop``, ``meanST`` (all observations), and where SimQPN printed steady-state
statistics ``ci_mean``, ``ci`` (half-width) and ``ci_level``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (os.path.dirname(HERE), HERE) if p not in sys.path]
from clocks import run_timed  # noqa: E402
import simqpn_build  # noqa: E402

XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
PARTS = {"Ordinary Place": "place", "Queue of Queueing Place": "queue",
         "Depository of Queueing Place": "depository", "Queue": "station"}
_SECTION = re.compile(r"^REPORT for (.+?) : (.*?)-{8,}\s*$")
_COLOR = re.compile(r"^-{4,} Color = (.*?) -{4,}\s*$")
_FIELD = re.compile(r"([A-Za-z]+)=(-?[0-9.]+(?:E-?[0-9]+)?|NaN|-?Infinity)")
_CI = re.compile(r"^([0-9.]+)% c\.i\. = (\S+) \+/- (\S+)")
_LENGTH = re.compile(r"msrmPrdLen= (\S+) totalRunLen= (\S+) runWallClockTime=.*\(=(\S+) sec\)")


class SimQPNError(RuntimeError):
    """SimQPN did not finish (its runner exits 0 after an error, so its output is checked)."""


@dataclass
class SimQPNRun:
    """One SimQPN run: its statistics, its run length and what it cost."""
    stats: dict[tuple[str, str, str], dict[str, float]]     # (part, name, color) -> fields
    totals: dict[tuple[str, str], dict[str, float]]         # (part, name) -> fields of the whole element
    total_run_length: float                                 # model time simulated (ramp-up included)
    measurement_length: float                               # model time after the ramp-up
    sim_seconds: float                                      # SimQPN's runWallClockTime (simulation only)
    stop: str                                               # why it stopped
    cpu: float = 0.0                                        # CPU s of the whole java process
    wall: float = 0.0
    command: list[str] = field(default_factory=list)
    console: str = ""

    def get(self, part: str, name: str, color: str, key: str = "deptThrPut") -> float:
        """One statistic, e.g. ``get("depository", "Client", "x1")`` (departures per time unit)."""
        return self.stats[(part, name, color)][key]


def configuration(model_path: str, name: str = "example_config") -> dict[str, str]:
    """The attributes of the simqpn-configuration ``name`` stored in a ``.qpe`` model
    (``stopping-rule``, ``ramp-up-length``, ``total-run-length``, ...)."""
    names = []
    for e in ET.parse(model_path).getroot().iter("meta-attribute"):
        if (e.get(XSI_TYPE) or e.get("type")) == "simqpn-configuration":
            if e.get("configuration-name") == name:
                return dict(e.attrib)
            names.append(e.get("configuration-name"))
    raise KeyError(f"{model_path}: no simqpn-configuration {name!r} (there are {names})")


def _number(s: str) -> float:
    return float(s.replace("Infinity", "inf"))


def parse(console: str) -> SimQPNRun:
    """The statistics and run length in SimQPN's printed report (the last run's)."""
    stats: dict = {}
    totals: dict = {}
    lengths = None
    stop = ""
    part = name = color = None
    for line in console.splitlines():
        if m := _LENGTH.search(line):
            lengths = tuple(_number(x) for x in m.groups())
        elif "STOPPING because" in line:
            stop = line.split("STOPPING because", 1)[1].strip(" !")
        elif m := _SECTION.match(line):
            part, name, color = PARTS.get(m.group(1), m.group(1)), m.group(2).strip(), None
            totals[(part, name)] = {}
        elif part is None:
            continue
        elif m := _COLOR.match(line):
            color = m.group(1)
            stats[(part, name, color)] = {}
        elif m := _CI.match(line.strip()):
            if color is not None:
                stats[(part, name, color)].update(ci_level=float(m.group(1)) / 100, ci_mean=_number(m.group(2)),
                                                  ci=_number(m.group(3)))
        else:
            target = totals[(part, name)] if color is None else stats[(part, name, color)]
            for key, value in _FIELD.findall(line):
                target[key] = _number(value)
    if lengths is None or not stats:
        raise SimQPNError("no report in SimQPN's output:\n" + console.strip()[-1500:])
    if "stopped because of reaching max totalRunLen" in console:
        stop = "max totalRunLen reached before the required precision"
    elif not stop:
        stop = "required precision reached"
    return SimQPNRun(stats, totals, total_run_length=lengths[1], measurement_length=lengths[0],
                     sim_seconds=lengths[2], stop=stop)


def command(model_file: str, seed: int, config: str, home: str | None = None) -> list[str]:
    """The java command line (run it in the model's directory)."""
    return [shutil.which("java") or "java", "-XX:+UseSerialGC", "-Xmx1g", "-cp", simqpn_build.classpath(home),
            simqpn_build.MAIN_CLASS, "-r", config, "-d", str(seed), model_file]


def run(model_path: str, seed: int = 1_000_000_000_000, config: str = "example_config",
        timeout: float = 1800, home: str | None = None) -> SimQPNRun:
    """Run SimQPN on a copy of ``model_path`` in a temporary directory; the parsed report
    with the CPU and wall time of the whole java process.  SimQPN must have been built
    (:func:`simqpn_build.ensure_built`)."""
    configuration(model_path, config)                        # a clear error for a wrong name
    with tempfile.TemporaryDirectory(prefix="qpn_simqpn_") as tmp:
        model_file = os.path.basename(model_path)
        shutil.copy(model_path, os.path.join(tmp, model_file))
        cmd = command(model_file, seed, config, home)
        p, cpu, wall = run_timed(cmd, timeout=timeout, cwd=tmp)
        out = p.stdout + p.stderr
        if p.returncode != 0 or "Simulation finished." not in out:
            raise SimQPNError(f"SimQPN failed (exit {p.returncode}) on {model_path}:\n{out.strip()[-1500:]}")
    res = parse(out)
    res.cpu, res.wall, res.command, res.console = cpu, wall, cmd, out
    return res


def main(argv: list[str]) -> int:
    """Build if needed, run once, print a JSON summary line."""
    if not argv:
        print(__doc__)
        return 2
    simqpn_build.ensure_built(quiet=True)
    r = run(argv[0], int(argv[1]) if len(argv) > 1 else 1_000_000_000_000,
            argv[2] if len(argv) > 2 else "example_config")
    print(json.dumps({"cpu": r.cpu, "wall": r.wall, "sim_seconds": r.sim_seconds, "stop": r.stop,
                      "total_run_length": r.total_run_length, "measurement_length": r.measurement_length,
                      "deptThrPut": {f"{p}:{n}:{c}": s.get("deptThrPut") for (p, n, c), s in r.stats.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
