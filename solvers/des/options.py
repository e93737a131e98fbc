"""Options of the simulator (``method="des"``; also ``auto`` when it simulates).

>>> o = DESOptions.of({"time": "10 min", "replications": 4})
>>> o.time, o.replications, o.rtol
(600.0, 4, 0.01)
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..measures import MEASURE_ORDER
from ..options import (Check, Flag, OptionValueError, SolverOptions, anything, between, boolean, choice,
                       duration, either, names, option, optional, patterns, positive, real,
                       whole)

#: simulation kernels (solvers.des.solver.choose_kernel)
KERNELS = ("auto", "qn", "lindley", "general")


def _warmup_check() -> Check:
    time = duration(lambda x: math.isfinite(x) and x >= 0, ">= 0")

    def conv(v):
        s = v.strip().lower() if isinstance(v, str) else None
        if s == "mser":
            return "mser"
        if s in ("none", "no", "off"):
            return 0
        try:
            return time(v)
        except OptionValueError as exc:
            if str(exc).startswith("expected"):
                raise OptionValueError("expected 'mser', 'none' or a time in seconds") from None
            raise OptionValueError("must be 'mser' or a time >= 0") from None
    return Check(conv, "mser | none | a time >= 0")


@dataclass(frozen=True)
class DESOptions(SolverOptions):
    """Options of the simulator."""
    label = "simulation"
    seed: int = option(1, "random seed", whole(0, "an integer"), flag=Flag(metavar="N"))
    replications: int | str = option(
        "auto", "independent replications per point", either("auto", whole(1, "an integer")),
        flag=Flag(("--replications", "-R"), "R",
                  "independent replications per point (default auto: 10, more for small sweeps on "
                  "the step kernels; 1: one long run with batch means)"))
    time: float | None = option(
        None, "simulated time per replication (default: until rtol/atol is met)", optional(duration()),
        flag=Flag(metavar="T", help="simulated time per replication, in seconds or with a unit "
                                    "('10 min'); default: until --rtol/--atol is met"))
    events: int | None = option(None, "events per replication instead of a time",
                                optional(whole(1, "a whole number")),
                                flag=Flag(metavar="N", help="events per replication instead of --time"))
    rtol: float = option(
        0.01, "sequential stopping: relative CI half-width of the watched measures", positive(),
        flag=Flag(metavar="X", help="sequential stopping: run until the CI half-widths of throughputs "
                                    "and token counts are within X times their means, or X times "
                                    "--floor of the largest value of the same measure, whichever is "
                                    "larger (default 0.01)"))
    floor: float = option(
        0.05, "precision floor as a fraction of the largest value of the same measure",
        real(lambda x: 0 <= x <= 1, "between 0 and 1"),
        flag=Flag(metavar="F", help="precision floor as a fraction of the largest value of the same "
                                    "measure (default 0.05; 0: every estimate to --rtol of its own "
                                    "value)"))
    atol: float | None = option(None, "sequential stopping on absolute half-widths (instead of rtol)",
                                optional(positive()), flag=Flag(metavar="X"))
    watch: tuple = option(("throughput", "tokens"), "the measures whose precision stops the run",
                          names(MEASURE_ORDER))
    watch_elements: tuple = option(
        (), "the elements whose watched measures stop the run (patterns; default: every one)",
        patterns(), flag=Flag(metavar="PATTERNS", help="stop when the watched measures of these "
                                                      "elements (comma-separated names or "
                                                      "patterns, e.g. 'response.running,worker.*') "
                                                      "reach --rtol: the measures a prediction "
                                                      "reads, not every token count (default: "
                                                      "every element)"))
    level: float = option(0.95, "confidence level of the intervals", between(0, 1, "0.95"),
                          flag=Flag(metavar="L"))
    warmup: float | str = option(
        "mser", "warm-up to discard: mser (detected), none, or a time", _warmup_check(),
        flag=Flag(metavar="mser|T"))
    wall: float = option(
        60.0, "wall-clock cap of a simulation, in seconds (less the time its threads waited for "
              "CPUs other work held)", duration(),
        flag=Flag(metavar="SECONDS", help="wall-clock cap of a simulation, fixed --time/--events runs "
                                          "included (default 60 s), less the time its threads waited "
                                          "for CPUs other work held (a loaded machine does not cut a "
                                          "short solve); a run it stops has not reached its "
                                          "precision or horizon: the table, the JSON and the exit "
                                          "status (3) say so; --method auto's count of the CTMC's "
                                          "states takes at most a quarter of it"))
    crn: bool = option(False, "common random numbers: replication r of every sweep point uses the "
                              "same streams", boolean(), flag=True)
    kernel: str = option("auto", "simulation kernel (auto: the fastest that fits the net)",
                         choice(*KERNELS), flag=True)
    workers: int | str = option(
        "auto", "local processes sharing the lanes (the numbers do not depend on it)",
        either("auto", whole(1, "an integer")),
        flag=Flag(metavar="N", help="local processes sharing the lanes (default: every core for long "
                                    "fixed-length runs with >= 1024 lanes, else 1); the numbers do "
                                    "not depend on it"))
    threads: int | str = option(
        "auto", "threads sharing the lanes of the event engine (the numbers do not depend on it)",
        either("auto", whole(1, "a whole number")),
        flag=Flag(metavar="N", help="threads sharing the lanes of the event engine (default: every "
                                    "core; 1 in each --workers process); the numbers do not depend "
                                    "on it"))
    scheduler: str | None = option(
        None, "run the sweep points on the Dask scheduler at this address", optional(anything("an address")),
        flag=Flag(metavar="ADDR", help="run the sweep points on the Dask scheduler at ADDR (e.g. "
                                       "tcp://host:8786; needs --method des and qpn[distributed])"))
    histograms: bool = option(True, "residence-time histograms for percentiles", boolean(), flag=True)
    buckets: int = option(64, "time buckets of the statistics per lane (batch means, warm-up "
                               "detection)", whole(2, "a whole number"))
    series: bool = option(False, "keep every place's time-averaged token count per bucket in the "
                                 "result (info['series'])", boolean())
    min_events: int = option(20_000, "events per lane before the first precision check",
                             whole(1, "a whole number"))
    quiet: bool = option(False, "no progress bar", boolean())


def usable_cores() -> int:
    """Cores this process may run on (at most 8): the default number of worker
    processes for long runs, and of the event engine's threads."""
    return max(1, min(len(os.sched_getaffinity(0)), 8))
