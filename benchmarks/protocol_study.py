"""Which measured value should a prediction be compared with on this machine?

Run: python benchmarks/protocol_study.py [pool|barrier|file] [ALTERNATIONS] [-o rows.jsonl]

Alternates ALTERNATIONS times between tracing a suite program at its traced
configuration and timing it untraced at the predicted ones (3 runs, one
process each), as tests/analyze_support.paired_rounds does; then models every
trace and predicts.  It prints, for every window of 4 consecutive alternations
(one round of the tests), the error of two comparisons:

* fastest: the trace whose threads used the least CPU against the fastest run;
* typical: the trace of median CPU against the mean of the runs (the tests' choice).

docs/analyzer.md ("Measured predictions") quotes a run of 24 alternations per program.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

from analyze_support import (measure, predict_batch_ms, predict_requests_per_s,  # noqa: E402
                             predict_rounds_ms, trace_runs)

from qpn.frontends.analyze import build  # noqa: E402

WINDOW = 4


# program: (file, traced args, timed configs, predicted labels, predict, measured value)
STUDIES = {
    "pool": ("pool_queue_lock.py", (30, 3), [(30, 2), (30, 1)], (2, 1),
             lambda res, w: predict_batch_ms(res, w, 30),
             lambda runs, w, agg: agg(runs[f"30,{w}"])),
    "barrier": ("barrier_iterations.py", (8, 3), [(8, 2), (8, 1)], (2, 1),
                lambda res, w: predict_rounds_ms(res, w, 8),
                lambda runs, w, agg: agg(runs[f"8,{w}"])),
    "file": ("file_server.py", (40, 2), [(40, 1), (120, 1)], (1,), predict_requests_per_s,
             lambda runs, w, agg: 80000.0 / (agg(runs["120,1"]) - agg(runs["40,1"]))),
}


class _Tmp:
    """The one method of pytest's tmp_path_factory that trace_runs uses."""

    def __init__(self, root: str):
        self.root, self.n = Path(root), 0

    def mktemp(self, name: str) -> Path:
        self.n += 1
        p = self.root / f"{name}{self.n}"
        p.mkdir()
        return p


def collect(study: str, n: int) -> list[dict]:
    """n alternations: [{"cpu": ns, "runs": {config: [ms]}, "pred": {label: value}}]."""
    name, traced, configs, labels, predict, _ = STUDIES[study]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmpf = _Tmp(tmp)
        for _ in range(n):
            ((tr, cpu),) = trace_runs(tmpf, name, *traced)
            runs = {f"{a},{b}": measure(name, 3, a, b) for a, b in configs}
            rows.append({"cpu": cpu, "runs": runs, "trace": tr})
        for r in rows:            # simulate after the timing, so it does not disturb it
            res = build(r.pop("trace"))
            r["pred"] = {str(w): predict(res, w) for w in labels}
    return rows


def windows(study: str, rows: list[dict]) -> dict:
    """{(comparison, label): [signed relative error of each window of WINDOW rows]}."""
    _, _, _, labels, _, measured = STUDIES[study]
    out: dict = {}
    for s in range(len(rows) - WINDOW + 1):
        w = rows[s:s + WINDOW]
        runs = {c: [x for r in w for x in r["runs"][c]] for c in w[0]["runs"]}
        by_cpu = sorted(w, key=lambda r: r["cpu"])
        for label in labels:
            for how, trace, agg in (("fastest", by_cpu[0], min),
                                    ("typical", by_cpu[(WINDOW - 1) // 2], statistics.fmean)):
                m = measured(runs, label, agg)
                out.setdefault((how, label), []).append((trace["pred"][str(label)] - m) / m)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", choices=sorted(STUDIES))
    ap.add_argument("alternations", type=int, nargs="?", default=24)
    ap.add_argument("-o", "--rows", help="also write the raw rows (JSON lines) here")
    a = ap.parse_args(argv)
    rows = collect(a.study, a.alternations)
    if a.rows:
        with open(a.rows, "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    for (how, label), errs in sorted(windows(a.study, rows).items()):
        absolute = sorted(abs(e) for e in errs)
        print(f"{a.study} at {label}, {how}: median |error| {100 * statistics.median(absolute):.1f}%, "
              f"signed mean {100 * statistics.fmean(errs):+.1f}%, "
              f"90th percentile {100 * absolute[int(0.9 * len(absolute))]:.1f}% "
              f"({len(errs)} windows)")


if __name__ == "__main__":
    main()
