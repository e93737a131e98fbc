"""qpn's simulation of a QPME model against SimQPN's reference results.

QPME's regression tests keep, per model, the ``.qpe`` file and ``reference-testdata.xml``:
nested ``<dataset name=.. type=..>`` (``qplace:queue`` and ``qplace:depository``: the two
parts of a queueing place; ``place``: an ordinary place; ``queue``: a QPME queue) holding
``<dataset type="color">`` and ``<metric name=..>`` with a ``<summary mean= stdDev=>`` and
``<data>`` (one value per SimQPN replication).  :func:`parse_reference` reads them and
:func:`compare` puts each beside qpn's measure of the same thing (:data:`MAPPING`):

* arrivThrPut of a queue or place: ``arrivals``; deptThrPut of a depository or place:
  ``departures``; deptThrPut of a queue and arrivThrPut of a depository (service
  completions): ``arrivals``, the rate at which a stable queue completes service;
* meanTkPop: ``queue_tokens`` (queue), ``tokens - queue_tokens`` (depository), ``tokens``;
* meanST: ``response`` (queue), ``residence - response`` (depository), ``residence``;
* a QPME queue: queueUtil is ``utilization`` (not for IS, where SimQPN reports
  P(not empty)); meanTotTkPop, totArrivThrPut, totDeptThrPut and meanST are the totals
  of the place using it (not summed for a queue shared by several places).

A difference of two qpn measures gets the sum of their half-widths, a bound on its own.
SimQPN's half-width is Student's over its replications.  Metrics without a counterpart
(tkOcp, min/max, SimQPN's batch means) are counted under ``unmapped`` with the reason.

>>> xml = ('<test-data><dataset name="CPU" type="qplace:queue"><dataset name="a" type="color">'
...        '<metric name="meanTkPop"><summary mean="2" stdDev="1"/><data>1.0, 2.0, 3.0</data>'
...        '</metric></dataset></dataset></test-data>')
>>> [r] = parse_reference(xml)
>>> r.location, r.kind, r.color, r.metric, r.mean, r.n, round(r.half_width(), 3)
('CPU', 'queue', 'a', 'meanTkPop', 2.0, 3, 2.484)
>>> MAPPING[("depository", "meanTkPop")]
('tokens', 'queue_tokens')

Run ``python -m tools.qpme_reference REFDIR [--seconds N] [--json out.json]`` from the
checkout, REFDIR holding one ``.qpe`` file and ``reference-testdata.xml``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field

KINDS = {"qplace:queue": "queue", "qplace:depository": "depository", "place": "place", "queue": "station"}
#: (kind, SimQPN metric) -> (qpn measure, measure subtracted or None)
MAPPING: dict[tuple[str, str], tuple[str, str | None]] = {
    ("queue", "arrivThrPut"): ("arrivals", None), ("queue", "deptThrPut"): ("arrivals", None),
    ("queue", "meanTkPop"): ("queue_tokens", None), ("queue", "meanST"): ("response", None),
    ("depository", "arrivThrPut"): ("arrivals", None), ("depository", "deptThrPut"): ("departures", None),
    ("depository", "meanTkPop"): ("tokens", "queue_tokens"), ("depository", "meanST"): ("residence", "response"),
    ("place", "arrivThrPut"): ("arrivals", None), ("place", "deptThrPut"): ("departures", None),
    ("place", "meanTkPop"): ("tokens", None), ("place", "meanST"): ("residence", None),
    ("station", "queueUtil"): ("utilization", None), ("station", "meanTotTkPop"): ("queue_tokens", None),
    ("station", "totArrivThrPut"): ("arrivals", None), ("station", "totDeptThrPut"): ("arrivals", None),
    ("station", "meanST"): ("response", None),
}
NO_COUNTERPART = {
    "tkOcp": "P(place not empty): qpn does not report it",
    "tkColOcp": "P(a token of the color in the place): qpn does not report it",
    **dict.fromkeys(("minTkPop", "maxTkPop", "minST", "maxST"), "extreme of one run"),
    "stDevST": "qpn's residence_var is the whole place's, not its queue's or depository's",
    **dict.fromkeys(("stdStateMeanST", "ciHalfLenST", "confLevelST"), "SimQPN's batch means (meanST is compared)"),
    "wallClockTime": "SimQPN's run time",
}
GROUPS = {"arrivThrPut": "throughput", "deptThrPut": "throughput", "totArrivThrPut": "throughput",
          "totDeptThrPut": "throughput", "meanTkPop": "population", "meanTotTkPop": "population",
          "meanST": "residence", "queueUtil": "utilization"}


@dataclass(frozen=True)
class RefMetric:
    """One SimQPN metric: where, what, and its values over the replications."""
    location: str
    kind: str                   # queue | depository | place | station
    color: str                  # '' for place or queue totals
    metric: str
    mean: float
    stdev: float
    n: int
    values: tuple[float, ...] = field(default=(), repr=False)

    def half_width(self, level: float = 0.95) -> float:
        """Student-t half-width of the mean over the replications (n - 1 degrees of freedom)."""
        if self.n < 2 or not math.isfinite(self.stdev):
            return math.nan
        from scipy.stats import t
        return float(t.ppf(0.5 + level / 2, self.n - 1) * self.stdev / math.sqrt(self.n))


def parse_reference(source: str | bytes) -> list[RefMetric]:
    """The metrics of a ``reference-testdata.xml`` (its path, or its text)."""
    text = source if isinstance(source, bytes) or source.lstrip().startswith("<") else open(source, "rb").read()
    out: list[RefMetric] = []

    def walk(e: ET.Element, loc: str, kind: str, color: str) -> None:
        for c in e:
            if c.tag == "dataset" and c.get("type") == "color":
                walk(c, loc, kind, c.get("name", ""))
            elif c.tag == "dataset":
                walk(c, c.get("name", ""), KINDS.get(c.get("type", ""), c.get("type", "")), "")
            elif c.tag == "metric":
                vals = tuple(float(v) for v in (c.findtext("data") or "").replace(",", " ").split())
                n = len(vals)
                if n:
                    mean = sum(vals) / n
                    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else math.nan
                else:       # a summary only
                    s = c.find("summary")
                    mean, sd = (float(s.get(k, "nan")) if s is not None else math.nan for k in ("mean", "stdDev"))
                out.append(RefMetric(loc, kind, color, c.get("name", ""), mean, sd, n, vals))
    walk(ET.fromstring(text), "", "", "")
    return out


@dataclass
class Names:
    """QPME names -> qpn names, as qpn's importer (qpn.dsl.qpe) makes them."""
    places: dict[str, str]
    colors: dict[str, str]
    queues: dict[str, list[str]]     # QPME queue name -> the qpn places on it
    shared: dict[str, str]           # QPME queue name -> qpn shared queue
    strategy: dict[str, str]         # QPME queue name -> IS, FCFS, PS, ...
    config: dict[str, str]           # the net's SimQPN run settings (stopping rule, lengths)


def qpme_names(qpe_path: str) -> Names:
    """Read ``qpe_path`` with qpn's importer: the model's names and SimQPN's run settings."""
    from qpn.dsl.qpe import _Reader, qpe_to_qpn
    data = open(qpe_path, "rb").read()
    reader = _Reader(data, qpe_path)
    places = reader.read()["places"]
    queues: dict[str, list[str]] = {}
    for p in places:
        if p["queue"] is not None:
            queues.setdefault(reader.queues[p["queue"]].get("name", ""), []).append(p["name"])
    text, _ = qpe_to_qpn(data, qpe_path)
    shared = dict(re.findall(r"# QPME queue '(.*)' \(.*\), used by .*\nshared queue (\S+) :", text))
    config = {}
    for ma in ET.fromstring(data).iter("meta-attribute"):
        if ma.get("name") == "sim-qpn" and ma.get("stopping-rule"):
            config = {k: v for k, v in ma.attrib.items() if k not in ("name", "id")}
    return Names({p["qpme"]: p["name"] for p in places}, {el.get("name", ""): n for n, el in reader.colors.values()},
                 queues, shared, {q.get("name", ""): q.get("strategy", "") for q in reader.queues.values()}, config)


@dataclass
class Row:
    """A compared metric: SimQPN's mean and half-width beside qpn's."""
    location: str
    kind: str
    color: str
    metric: str
    qpn_measure: str
    ref: float
    ref_hw: float
    n: int
    qpn: float
    qpn_hw: float

    @property
    def rel_diff(self) -> float:
        """|qpn - SimQPN| / |SimQPN| (0 when both are 0, inf when only SimQPN's is)."""
        d = abs(self.qpn - self.ref)
        return 0.0 if d == 0 else d / abs(self.ref) if self.ref else math.inf

    @property
    def overlap(self) -> bool:
        """Do the two confidence intervals meet (up to rounding)?"""
        slack = 1e-6 * max(abs(self.qpn), abs(self.ref))
        return abs(self.qpn - self.ref) <= (self.ref_hw if math.isfinite(self.ref_hw) else 0) + self.qpn_hw + slack


def map_metric(r: RefMetric, names: Names) -> tuple[str, str, str | None] | str:
    """(qpn measure, element, measure subtracted) for ``r``, or why there is none."""
    if r.metric in NO_COUNTERPART:
        return NO_COUNTERPART[r.metric]
    if (r.kind, r.metric) not in MAPPING:
        return f"no mapping for a {r.kind}'s {r.metric}"
    measure, minus = MAPPING[(r.kind, r.metric)]
    if r.kind != "station":
        return (measure, names.places[r.location], minus) if r.location in names.places else \
            f"place '{r.location}' is not in the model"
    if r.metric == "queueUtil" and names.strategy.get(r.location) == "IS":
        return "an IS queue's queueUtil is SimQPN's P(not empty); qpn's utilization is the mean number in service"
    if r.metric == "queueUtil" and r.location in names.shared:
        return measure, names.shared[r.location], None
    users = names.queues.get(r.location, [])
    return (measure, users[0], None) if len(users) == 1 else \
        f"totals of queue {r.location}, used by {len(users)} places, are not summed"


def compare(refs: list[RefMetric], res, names: Names, level: float = 0.95) -> tuple[list[Row], dict[str, int]]:
    """Rows for the metrics qpn's result ``res`` has, and the others counted by reason."""
    rows: list[Row] = []
    unmapped: dict[str, int] = {}

    def skip(why: str) -> None:
        unmapped[why] = unmapped.get(why, 0) + 1

    for r in refs:
        m = map_metric(r, names)
        if isinstance(m, str):
            skip(f"{r.metric}: {m}")
            continue
        measure, element, minus = m
        color = names.colors.get(r.color, r.color) if r.color else ""
        try:
            a, b = (res.cell(x, element, color) for x in (measure, minus or measure))
        except Exception as exc:   # a cell qpn does not have: its own message
            skip(f"{r.metric}: {exc}")
            continue
        v, hw = a.value, a.ci or 0.0
        if minus:    # a difference: exactly 0 when the two agree to rounding
            v = 0.0 if abs(a.value - b.value) <= 1e-9 * max(abs(a.value), abs(b.value)) else a.value - b.value
            hw += b.ci or 0.0
        if not (math.isfinite(v) and math.isfinite(r.mean)):
            skip(f"{r.metric}: undefined (no visits)")
            continue
        rows.append(Row(r.location, r.kind, r.color, r.metric, measure + (f" - {minus}" if minus else ""),
                        r.mean, r.half_width(level), r.n, v, hw))
    return rows, unmapped


def summarize(rows: list[Row]) -> dict:
    """Counts compared and overlapping, and the worst relative difference per group."""
    out: dict = {"compared": len(rows), "overlap": sum(r.overlap for r in rows), "groups": {}}
    for g in sorted(set(GROUPS.values())):
        sel = [r for r in rows if GROUPS.get(r.metric) == g]
        if sel:
            w = max([r for r in sel if r.ref] or sel, key=lambda r: r.rel_diff)
            out["groups"][g] = {"compared": len(sel), "overlap": sum(r.overlap for r in sel),
                                "max_rel_diff": w.rel_diff, "worst": f"{w.kind} {w.location}"
                                f"{'/' + w.color if w.color else ''} {w.metric}",
                                "ref_zero_qpn_not": sum(1 for r in sel if not r.ref and r.qpn)}
    return out


def format_rows(rows: list[Row], only_misses: bool = False) -> str:
    """A text table of ``rows`` (``only_misses``: those whose intervals do not meet)."""
    head = f"{'kind':<10} {'location':<28} {'color':<14} {'metric':<14} {'SimQPN':>23} {'qpn':>23} {'rel':>8} ov"
    return "\n".join([head, "-" * len(head)] + [
        f"{r.kind:<10} {r.location[:28]:<28} {r.color[:14]:<14} {r.metric:<14} {r.ref:>11.6g} ±{r.ref_hw:<9.3g} "
        f"{r.qpn:>11.6g} ±{r.qpn_hw:<9.3g} {r.rel_diff:>8.2%} {'y' if r.overlap else 'N'}"
        for r in rows if not (only_misses and r.overlap)])


def solve(model: str, names: Names, n_ref: int, args: argparse.Namespace):
    """qpn's result for ``model`` by the command line's method and options."""
    import qpn
    opts: dict = {"wall": args.seconds, "seed": args.seed, "rtol": args.rtol, "quiet": True, "histograms": False}
    if args.like_simqpn:
        if names.config.get("stopping-rule") != "FIXEDLEN":
            raise SystemExit(f"error: --like-simqpn needs SimQPN's FIXEDLEN stopping rule, not {names.config}")
        opts.update(time=float(names.config["total-run-length"]),
                    warmup=float(names.config["ramp-up-length"]), replications=n_ref)
    opts.update({k: getattr(args, k) for k in ("time", "warmup", "replications", "threads")
                 if getattr(args, k) is not None})
    return qpn.solve(qpn.load(model), args.method, options=opts if args.method == "des" else {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.qpme_reference", description=__doc__.split("\n")[0])
    ap.add_argument("refdir", help="directory with the .qpe model and reference-testdata.xml")
    ap.add_argument("--model", help="solve this .qpe instead of REFDIR's (a variant of it)")
    ap.add_argument("--method", default="des", help="qpn's method (default des; auto, mva, ctmc: exact)")
    ap.add_argument("--seconds", type=float, default=60.0, help="wall-clock cap of the simulation")
    ap.add_argument("--rtol", type=float, default=0.002, help="sequential stopping precision (default 0.002)")
    ap.add_argument("--time", type=float, help="fixed simulated time per replication")
    ap.add_argument("--warmup", help="mser (default) or a simulated time")
    ap.add_argument("--replications", type=int)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--like-simqpn", action="store_true",
                    help="SimQPN's run length, ramp-up and replications (FIXEDLEN runs)")
    ap.add_argument("--all", action="store_true", help="print every row, not only the misses")
    ap.add_argument("--json", help="write the rows, the unmapped metrics and the summary here")
    args = ap.parse_args(argv)
    qpes = sorted(f for f in os.listdir(args.refdir) if f.endswith(".qpe"))
    if len(qpes) != 1:
        raise SystemExit(f"error: {args.refdir}: expected one .qpe file, found {len(qpes)}")
    qpe, xml = os.path.join(args.refdir, qpes[0]), os.path.join(args.refdir, "reference-testdata.xml")
    refs = parse_reference(xml)
    n_ref = max((r.n for r in refs), default=0)
    model = args.model or qpe
    print(f"model {model}; SimQPN: {n_ref} replications of {qpe}")
    from qpn.errors import QPNError
    try:
        names = qpme_names(model)
        print(f"SimQPN's run settings: {names.config}")
        res = solve(model, names, n_ref, args)
    except QPNError as exc:
        print(f"qpn refused the model:\n{exc}")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"model": model, "refused": str(exc)}, fh, indent=1)
        return 2
    print(f"qpn: {res.method}, {res.status}, {res.wall_time:.1f} s; " + "; ".join(res.explanation))
    for w in res.warnings:
        print("qpn warning:", w[:300])
    rows, unmapped = compare(refs, res, names, res.level or 0.95)
    print(format_rows(rows, only_misses=not args.all))
    summary = summarize(rows)
    print(f"\ncompared {summary['compared']}, intervals overlap {summary['overlap']}")
    for g, s in summary["groups"].items():
        zero = f"; {s['ref_zero_qpn_not']} where SimQPN has 0, qpn not" if s["ref_zero_qpn_not"] else ""
        print(f"  {g:<12} {s['compared']:>5} compared, {s['overlap']:>5} overlap, max rel. diff "
              f"{s['max_rel_diff']:.2%} ({s['worst']}){zero}")
    print(f"not compared: {sum(unmapped.values())}")
    for why, k in sorted(unmapped.items(), key=lambda x: -x[1]):
        print(f"  {k:>5}  {why[:160]}")
    if args.json:
        def fin(v):     # strict JSON: inf and nan as null
            if isinstance(v, dict):
                return {k: fin(x) for k, x in v.items()}
            return None if isinstance(v, float) and not math.isfinite(v) else v
        with open(args.json, "w") as fh:
            json.dump({"model": model, "reference": xml, "config": names.config, "simqpn_replications": n_ref,
                       "qpn": {"method": res.method, "status": res.status, "wall_time": res.wall_time,
                               "explanation": res.explanation, "warnings": res.warnings,
                               "info": {k: v for k, v in res.info.items() if isinstance(v, (int, float, str))}},
                       "summary": fin(summary), "unmapped": unmapped,
                       "rows": [{k: fin(v) for k, v in dict(asdict(r), rel_diff=r.rel_diff, overlap=r.overlap).items()}
                                for r in rows]}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
