"""qpn's predictions for Table 2 of seed 004 (Performance Prophet, LAPW0 of WIEN2k on
4, 8, 16 and 32 MPI processes, 32 and 64 atoms), rebuilt as models/published/lapw0.qpn
(docs/published.md).

The seed prints only total run times, not its cost functions.  The rule, fixed before
looking at any error: **calibrate from the two smallest configurations (N1P4 and N2P8),
predict N4P16 and N8P32**, per problem size.  The model has two free numbers, `fixed`
(seconds every rank computes) and `divided` (seconds split between the ranks); its
`latency` (the allreduce's cost per round) stays 0.  The run time is 1 / throughput of
`world.trip`, simulated (the compute step is deterministic, which neither MVA nor the
CTMC solve exactly; the model has no randomness, so the simulation is exact: every
replication gives the same number).

The model's run time is linear in (fixed, divided, latency); its three coefficients at a
configuration are found by solving the model at unit values, then the calibration is a
linear system.  The two calibrated numbers are then put back into the model and every
configuration is solved again: the build points must come back exactly.

The N2P8 row at 64 atoms is inconsistent in the seed (297 simulated against 264 measured
is 12.5%, printed 1.04%).  It is rebuilt three ways, each labelled: as printed (264), and
with the two measured values for which 297 is 1.04% off (297 / 1.0104 = 293.9 and
297 / 0.9896 = 300.1).

A separate variant calibrates `latency` too, from a third point (N4P16), with the rounds
of a recursive-doubling allreduce (log2 P), and predicts N8P32 only.

    python tests/published_models_mpi.py     # prints the tables of docs/published.md
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import qpn                                             # noqa: E402
from qpn.frontends.verify.published import load_seed   # noqa: E402
from qpn.solvers import solve                          # noqa: E402

MODEL = os.path.join(os.path.dirname(HERE), "models", "published", "lapw0.qpn")
SEED_004 = os.path.join(HERE, "data", "published", "seed-004.toml")
METHOD = "des"
# The model is deterministic: every replication gives the same numbers and the interval
# is 0.  What is left is the edge of the window: a run cut by the end of the simulation
# counts as not done, which would cost up to 1 / RUNS.  A run is 2 x ranks timed events
# (each rank's compute and its cost of the allreduce; the synchronization takes no
# time), so RUNS x 2 x ranks events end the simulation at the end of a run, and the run
# time is exact.
RUNS = 2000
OPTIONS = {"replications": 2, "quiet": True, "seed": 1}
PARAMS = ("fixed", "divided", "latency")
BUILD = ("N1P4", "N2P8")
PREDICT = ("N4P16", "N8P32")


def ranks(machine: str) -> int:
    """NxPy: y processes in all (seed 004, Table 2)."""
    return int(machine.split("P")[1])


_NET = None


def net():
    global _NET
    if _NET is None:
        _NET = qpn.load(MODEL)
    return _NET


def solve_run_time(machine: str, **values: float) -> tuple[float, float]:
    """(run time in seconds, half-width of its 95% interval) of the model at a machine."""
    p = ranks(machine)
    res = solve(net(), method=METHOD, options=OPTIONS | {"events": RUNS * 2 * p}, ranks=p,
                **values)
    x = res.get("throughput", "world.trip")
    h = res.ci("throughput", "world.trip") or 0.0
    return 1.0 / x, h / (x * x)


_COEF: dict[str, np.ndarray] = {}


def coefficients(machine: str) -> np.ndarray:
    """(a, b, c): the model's run time at `machine` is a fixed + b divided + c latency.
    Solved at (1, 0, 0), (1, 1, 0) and (1, 0, 1) so that no step takes zero time."""
    if machine not in _COEF:
        base = solve_run_time(machine, fixed=1.0, divided=0.0, latency=0.0)[0]
        with_d = solve_run_time(machine, fixed=1.0, divided=1.0, latency=0.0)[0]
        with_l = solve_run_time(machine, fixed=1.0, divided=0.0, latency=1.0)[0]
        _COEF[machine] = np.array([base, with_d - base, with_l - base])
    return _COEF[machine]


@dataclass
class Row:
    machine: str
    measured: float
    seed_predicted: float
    seed_eps: float            # percent, as printed
    predicted: float
    half_width: float
    built: bool                # a calibration point (qpn's error is 0 by construction)

    @property
    def eps(self) -> float:
        """qpn's error in percent, |m - p| / m, as the seed computes it."""
        return 100 * abs(self.measured - self.predicted) / self.measured


@dataclass
class Rebuild:
    label: str
    nat: int
    values: dict               # calibrated fixed, divided, latency (seconds)
    rows: list[Row]
    build: tuple[str, ...]
    note: str = ""

    @property
    def physical(self) -> bool:
        """No negative work or latency: the model accepts the values and was solved."""
        return min(self.values.values()) >= -1e-9

    def mean_eps(self, machines=PREDICT) -> float:
        return float(np.mean([r.eps for r in self.rows if r.machine in machines]))


def measured_of(nat: int, override: dict | None = None) -> dict[str, float]:
    t = load_seed(SEED_004).table(f"lapw0-nat{nat}")
    out = {c.at["machine"]: c.measured.value for c in t.cells()}
    out.update(override or {})
    return out


def calibrate(measured: dict[str, float], build: tuple[str, ...], free: tuple[str, ...]) -> dict:
    """The free parameters that make the model's run time equal the measured one at the
    build points (as many points as free parameters); the others stay 0."""
    idx = [PARAMS.index(p) for p in free]
    a = np.array([coefficients(m)[idx] for m in build])
    x = np.linalg.solve(a, np.array([measured[m] for m in build]))
    values = dict.fromkeys(PARAMS, 0.0)
    values.update({p: float(v) for p, v in zip(free, x)})
    return values


def rebuild(nat: int, label: str, override: dict | None = None, *, build=BUILD,
            free=("fixed", "divided"), note: str = "") -> Rebuild:
    t = load_seed(SEED_004).table(f"lapw0-nat{nat}")
    measured = measured_of(nat, override)
    values = calibrate(measured, build, free)
    rows = []
    for c in t.cells():
        m = c.at["machine"]
        if min(values.values()) < -1e-9:      # see Rebuild.physical
            # not a program (negative work or latency): the model refuses a negative
            # delay, so give the value of its linear form and say so
            p, h = float(coefficients(m) @ [values[k] for k in PARAMS]), float("nan")
        else:
            p, h = solve_run_time(m, **values)
        rows.append(Row(m, measured[m], c.predicted.value, c.eps.value, p, h, m in build))
    return Rebuild(label, nat, values, rows, tuple(build), note)


def n2p8_implied() -> tuple[float, float]:
    """The two measured values m with |297 - m| / m = 1.04%."""
    return 297 / 1.0104, 297 / 0.9896


def rebuilds() -> list[Rebuild]:
    low, high = n2p8_implied()
    return [
        rebuild(32, "32 atoms"),
        rebuild(64, "64 atoms, N2P8 as printed (264 s)"),
        rebuild(64, f"64 atoms, N2P8 measured {high:.1f} s (what 297 s and 1.04% imply "
                    "if Prophet is too fast)", {"N2P8": high}),
        rebuild(64, f"64 atoms, N2P8 measured {low:.1f} s (what 297 s and 1.04% imply "
                    "if Prophet is too slow)", {"N2P8": low}),
    ]


def variants() -> list[Rebuild]:
    """Three free numbers (a communication term) from three points, N8P32 predicted."""
    low, high = n2p8_implied()
    three = ("N1P4", "N2P8", "N4P16")
    free = PARAMS
    return [
        rebuild(32, "32 atoms", build=three, free=free),
        rebuild(64, "64 atoms, N2P8 as printed", build=three, free=free),
        rebuild(64, f"64 atoms, N2P8 {high:.1f} s", {"N2P8": high}, build=three, free=free),
        rebuild(64, f"64 atoms, N2P8 {low:.1f} s", {"N2P8": low}, build=three, free=free),
    ]


def markdown(rb: Rebuild) -> str:
    v = rb.values
    head = ["machine", "ranks", "measured (s)", "Prophet (s)", "Prophet error (%)",
            "qpn (s)", "qpn error (%)"]
    out = [f"**LAPW0, {rb.label}** — built at {' and '.join(rb.build)}: "
           f"fixed {v['fixed']:.2f} s, divided {v['divided']:.2f} s"
           + (f", latency {v['latency']:.2f} s per round" if v["latency"] else "")
           + f"; `lapw0.qpn`, `--method {METHOD}`", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rb.rows:
        measured = f"{r.measured:.1f}" if r.measured != int(r.measured) else f"{r.measured:g}"
        mark = " (built)" if r.built else ""
        out.append("| " + " | ".join([r.machine + mark, str(ranks(r.machine)), measured,
                                     f"{r.seed_predicted:g}", f"{r.seed_eps:.2f}",
                                     f"{r.predicted:.1f}", f"{r.eps:.2f}"]) + " |")
    seed_mean = np.mean([r.seed_eps for r in rb.rows if r.machine in PREDICT])
    out += ["", f"mean error over {' and '.join(PREDICT)}: Prophet {seed_mean:.2f}%, "
                f"qpn {rb.mean_eps():.2f}%"]
    return "\n".join(out)


def variant_table(vs: list[Rebuild]) -> str:
    head = ["case", "fixed (s)", "divided (s)", "latency (s/round)", "N8P32 measured (s)",
            "qpn (s)", "qpn error (%)", "Prophet error (%)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rb in vs:
        r = next(r for r in rb.rows if r.machine == "N8P32")
        v = rb.values
        solved = rb.physical
        out.append("| " + " | ".join([rb.label, f"{v['fixed']:.1f}", f"{v['divided']:.1f}",
                                     f"{v['latency']:.1f}", f"{r.measured:g}",
                                     f"{r.predicted:.1f}" if solved else f"({r.predicted:.1f})",
                                     f"{r.eps:.2f}" if solved else f"({r.eps:.2f})",
                                     f"{r.seed_eps:.2f}"]) + " |")
    return "\n".join(out)


def main() -> None:
    res = solve(net(), method="auto", options=OPTIONS | {"events": RUNS * 8})
    print(res.explanation[0])
    print()
    for rb in rebuilds():
        print(markdown(rb))
        print()
    print(variant_table(variants()))


if __name__ == "__main__":
    main()
