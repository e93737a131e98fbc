"""Several suites in one run: ``qpn verify suites`` (every ``suites/*/suite.toml``).

Each suite runs as ``qpn verify suites/NAME`` would (its own table, ``verify.json`` and
plot); a suite that fails (a missing program, a traced run that crashed) is recorded
with its error and the others go on.  The summary has one row per suite (its group,
points, mean and max ε, the measured spread and load average), the mean ε of each
group (``group = "cpu"`` or ``"server"`` in the manifest: the two bounds issue 14 sets),
and is written as JSON beside the suites (``verify-summary.json``).

>>> rows = [SuiteRow("a", "cpu", 4, 0.05, 0.09, (0.02, 0.1), (0.3, 1.2)),
...         SuiteRow("b", "cpu", 3, 0.15, 0.2, (0.05, 0.3), (0.5, 0.9)),
...         SuiteRow("c", "server", 0, None, None, None, None, error="no such file")]
>>> print(summary_table(rows))
suite  group   points  mean eps  max eps  spread  load average
-----  ------  ------  --------  -------  ------  ------------
a      cpu          4      5.0%     9.0%   2-10%       0.3-1.2
b      cpu          3     15.0%    20.0%   5-30%       0.5-0.9
c      server       -         -        -       -             -  error: no such file
cpu: mean eps 10.0% over 2 suite(s) (7 configurations)
server: no suite ran
"""
from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass

from qpn.errors import QPNError
from qpn.texttable import aligned

from .manifest import GROUPS, ORIGINS, load_suite


@dataclass
class SuiteRow:
    """One suite's outcome in a several-suite run."""

    suite: str
    group: str
    points: int
    mean_eps: float | None
    max_eps: float | None
    spread: tuple | None            # (min, max) of the points' measured spread
    load: tuple | None              # (min, max) 1-minute load average while measuring
    bound: float | None = None
    error: str | None = None
    origin: str = "beside"          # written beside the analyzer, or unseen by its authors
    unstable: int = 0               # points without a steady state in the model (not in the mean)

    @property
    def over_bound(self) -> bool:
        """The suite failed, or its mean ε is above its bound."""
        return self.error is not None or (self.bound is not None and not self.mean_eps <= self.bound)


def suite_dirs(paths: list[str]) -> list[str]:
    """The suite directories that ``paths`` name: a directory holding ``suite.toml`` is one
    suite, a directory without one stands for every subdirectory that holds one."""
    out = []
    for p in paths:
        if os.path.isfile(os.path.join(p, "suite.toml")):
            out.append(p)
            continue
        subs = sorted(os.path.join(p, d) for d in os.listdir(p)) if os.path.isdir(p) else []
        found = [d for d in subs if os.path.isfile(os.path.join(d, "suite.toml"))]
        if not found:
            raise QPNError(f"{p}: neither a suite (no suite.toml) nor a directory of suites "
                           "(no SUBDIR/suite.toml); see docs/verify.md")
        out += found
    return out


def row_of(report, group: str, origin: str = "beside") -> SuiteRow:
    """The summary row of a finished suite (a ``verify.Report``)."""
    spreads = [r["spread"] for r in report.rows]
    loads = [x for r in report.rows if r.get("load") for x in r["load"]]
    bad = len(report.unstable)
    return SuiteRow(report.suite, group, len(report.rows) - bad, report.mean_eps, report.max_eps,
                    (min(spreads), max(spreads)) if spreads else None,
                    (min(loads), max(loads)) if loads else None, report.bound, origin=origin,
                    unstable=bad)


def summary_table(rows: list[SuiteRow]) -> str:
    """Suites as a text table, then the mean ε of each group over its suites."""
    head = ["suite", "group", "points", "mean eps", "max eps", "spread", "load average"]
    lines = [head]
    notes = []
    for r in rows:
        ok = r.error is None
        lines.append([r.suite, r.group, str(r.points) if ok else "-",
                      _pct(r.mean_eps) if ok else "-", _pct(r.max_eps) if ok else "-",
                      (f"{100 * r.spread[0]:.0f}-{100 * r.spread[1]:.0f}%" if ok and r.spread else "-"),
                      (f"{r.load[0]:.1f}-{r.load[1]:.1f}" if ok and r.load else "-")])
        notes.append(f"  error: {r.error.splitlines()[0]}" if not ok else
                     (f"  above its bound {100 * r.bound:.0f}%" if r.over_bound else "")
                     + (f"  UNSTABLE in the model at {r.unstable} more point(s)" if r.unstable
                        else ""))
    out = aligned(head, lines[1:], left=2)
    out = out[:2] + [line + note for line, note in zip(out[2:], notes)]
    origins = [o for o in ORIGINS if any(r.origin == o for r in rows)]
    for o in origins:
        mine = [r for r in rows if r.origin == o]
        tag = "" if len(origins) == 1 else (" (programs written beside the analyzer)" if o ==
                                            "beside" else " (programs unseen by its authors)")
        for g, m in group_means(mine).items():
            out.append(f"{g}{tag}: mean eps {100 * m['mean_eps']:.1f}% over {m['suites']} "
                       f"suite(s) ({m['points']} configurations)" if m["suites"]
                       else f"{g}{tag}: no suite ran")
    return "\n".join(out)


def group_means(rows: list[SuiteRow]) -> dict:
    """{group: {"suites", "points", "mean_eps"}}: the mean over the suites of a group that
    ran (mean_eps None where none did)."""
    out = {}
    for g in GROUPS:
        done = [r for r in rows if r.group == g and r.error is None and r.mean_eps is not None]
        out[g] = {"suites": len(done), "points": sum(r.points for r in done),
                  "mean_eps": sum(r.mean_eps for r in done) / len(done) if done else None}
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def verify_all(dirs: list[str], *, log=sys.stderr, **options) -> list[SuiteRow]:
    """Run the suites in ``dirs`` (``suite_dirs``), printing each suite's table to ``log``;
    a failing suite is a row with its error.  ``options`` go to ``verify``."""
    from . import verify
    rows = []
    for d in dirs:
        name, group, origin = os.path.basename(os.path.abspath(d)), "cpu", "beside"
        try:
            s = load_suite(d)
            group, origin = s.group, s.origin
            rep = verify(d, log=log, **options)
        except (QPNError, OSError) as exc:
            rows.append(SuiteRow(name, group, 0, None, None, None, None, error=str(exc),
                                 origin=origin))
            print(f"verify {name}: failed: {exc}", file=log)
            continue
        for w in rep.warnings:
            print(f"warning: {rep.suite}: {w}", file=log)
        print(f"{rep.suite}:\n{rep.table()}\n", file=log)
        rows.append(row_of(rep, group, origin))
    return rows


def summary_record(rows: list[SuiteRow]) -> dict:
    """The summary as plain data (for ``verify-summary.json``)."""
    return {"suites": [asdict(r) for r in rows], "groups": group_means(rows),
            "by_origin": {o: group_means([r for r in rows if r.origin == o]) for o in ORIGINS
                          if any(r.origin == o for r in rows)}}


__all__ = ["GROUPS", "SuiteRow", "suite_dirs", "row_of", "summary_table", "group_means",
           "verify_all", "summary_record"]
