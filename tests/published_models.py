"""qpn's predictions for the seed tables whose programs are rebuilt in models/
(docs/published.md): Montecarlo (Tables 6.2, 6.3), Raytracer (6.4) and Sunflow (6.16) of
seed 000.

The rule is the seed's own: calibrate from the one configuration the seed built its model
at, predict every other one.  The model's only free number is the CPU demand per task;
it is scaled so that the model's run time at the build configuration equals the measured
one (run time is proportional to the demand in these models), then every configuration
of the table is solved with an exact method, the CTMC.

    python tests/published_models.py     # prints the tables of docs/published.md
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import qpn                                         # noqa: E402
from qpn.frontends.verify.published import load_seed   # noqa: E402
from qpn.solvers import solve                          # noqa: E402

MODELS = os.path.join(os.path.dirname(HERE), "models")
SEED_000 = os.path.join(HERE, "data", "published", "seed-000.toml")
TASKS = 1000          # nominal tasks per run: only TASKS x demand enters the run time
METHOD = "ctmc"


@dataclass
class Rebuild:
    table: str        # id in seed-000.toml
    model: str        # file in models/
    step: str         # the worker's CPU step: run time = TASKS / throughput(step.done)


REBUILDS = [
    Rebuild("montecarlo-I", "montecarlo.qpn", "workers.generate"),
    Rebuild("montecarlo-II", "montecarlo.qpn", "workers.generate"),
    Rebuild("raytracer-I", "raytracer.qpn", "workers.render"),
    Rebuild("sunflow", "sunflow.qpn", "workers.render"),
]


def run_time(net, step: str, demand: float, point: dict) -> float:
    """The model's run time of TASKS tasks at one configuration, by the CTMC."""
    res = solve(net, method=METHOD, demand=demand, **point)
    return TASKS / res.get("throughput", f"{step}.done")


@dataclass
class Row:
    point: dict
    measured: float
    seed_predicted: float
    seed_eps: float
    predicted: float

    @property
    def eps(self) -> float:
        return abs(self.measured - self.predicted) / self.measured


def rebuild(rb: Rebuild) -> tuple[float, list[Row]]:
    """(calibrated demand in seconds, one row per configuration of the table)."""
    table = load_seed(SEED_000).table(rb.table)
    net = qpn.load(os.path.join(MODELS, rb.model))
    fixed = {"cores": table.cores} if table.rows is None or table.rows.name != "cores" else {}
    build = fixed | dict(table.built_at)
    cell = table.cell(**{k: v for k, v in table.built_at.items()
                         if k in {table.cols.name} | ({table.rows.name} if table.rows else set())})
    probe = 1.0
    demand = probe * cell.measured.value / run_time(net, rb.step, probe, build)
    rows = []
    for c in table.cells():
        point = fixed | c.at
        rows.append(Row(point, c.measured.value, c.predicted.value, c.eps.value,
                        run_time(net, rb.step, demand, point)))
    return demand, rows


def markdown(rb: Rebuild, demand: float, rows: list[Row]) -> str:
    table = load_seed(SEED_000).table(rb.table)
    names = list(rows[0].point)
    shown = [n for n in names if len({r.point[n] for r in rows}) > 1]
    head = shown + ["measured (s)", "PERSIK (s)", "PERSIK ε", "qpn (s)", "qpn ε"]
    out = [f"**{table.program}, {table.setup}, Table {table.table}** — built at "
           + ", ".join(f"{k} = {v}" for k, v in table.built_at.items())
           + f"; calibrated demand {TASKS} × {1000 * demand:.3f} ms; `{rb.model}`, "
           + f"`--method {METHOD}`", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join([str(r.point[n]) for n in shown]
                                     + [f"{r.measured:g}", f"{r.seed_predicted:g}",
                                        f"{r.seed_eps:.3f}", f"{r.predicted:.3f}",
                                        f"{r.eps:.3f}"]) + " |")
    seed_mean = sum(r.seed_eps for r in rows) / len(rows)
    mean = sum(r.eps for r in rows) / len(rows)
    out += ["", f"mean ε: PERSIK {seed_mean:.3f}, qpn {mean:.3f} "
                f"(max {max(r.seed_eps for r in rows):.3f} and {max(r.eps for r in rows):.3f}) "
                f"over {len(rows)} configurations"]
    return "\n".join(out)


def main() -> None:
    for rb in REBUILDS:
        demand, rows = rebuild(rb)
        assert all(math.isfinite(r.predicted) for r in rows)
        print(markdown(rb, demand, rows))
        print()


if __name__ == "__main__":
    main()
