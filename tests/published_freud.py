"""qpn's fits of Freud's micro-benchmark (seed 001, Rogora, Probabilistic Performance
Annotations, §5.4.1 and Appendix A) beside Freud's own annotations (docs/published-freud.md).

tests/programs/freud_microbench.py reimplements the generators; this traces it with qpn's
tracer, takes each call's CPU demand (from its ``begin`` mark to its ``end`` mark), gives
the demands to the analyzer's feature fit (features.size_fit: the feature the call named
last, the curve chosen by 5-fold cross-validation) and prints a markdown table.  As in
Freud, each function runs 150 times and the first call is dropped (149 observations).

    python tests/published_freud.py [TRACE]     # TRACE: an earlier trace, else a new one
"""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from qpn.frontends.analyze.features import fit_feature, input_sizes, size_fit  # noqa: E402
from qpn.frontends.analyze.fit import fit                                      # noqa: E402
from qpn.frontends.trace import read_trace                                     # noqa: E402

PROGRAM = os.path.join(HERE, "programs", "freud_microbench.py")
CALLS = 150


@dataclass
class Case:
    number: str          # Appendix A's
    function: str
    generator: str       # its cost, as the appendix writes it (usleep: CPU here)
    truth: str           # our generator's expected demand (us), our feature ranges
    freud: str           # Freud's annotation as printed (digest E.2)
    freud_class: str
    expected: tuple      # the kinds of qpn that count as Freud's class ("none": no fit)


CASES = [
    Case("A.1", "test_linear_int", "t×usleep(250)", "250·t, t in 1..20",
         "Norm(-754.85 + 373.86 * t, 1306916)", "linear", ("line",)),
    Case("A.4", "test_global_feature", "g×usleep(70)", "70·g, g in 1..40",
         "Norm(33.15 + 142.48 * g, 6796)", "linear", ("line",)),
    Case("A.5", "test_linear_charptr", "strlen×usleep(100)", "100·s, s in 1..50",
         "Norm(-59.69 + 173.45*s, 785)", "linear", ("line",)),
    Case("A.9", "test_linear_vector", "size×usleep(250)", "250·size, size in 1..20",
         "Norm(-287.62 + 375.38 * t.artificial.size, 293989)", "linear", ("line",)),
    Case("A.10", "test_derived_class", "usleep(pv)", "c, c in 100..2000",
         "Norm(100.93 + 1.01 * c, 258)", "linear", ("line",)),
    Case("A.11", "test_quad_int", "t×usleep(t)", "t², t in 1..80",
         "Norm(63.51 * t + 1.07 * t ^ 2, 45612)", "quadratic", ("quadratic",)),
    Case("A.12", "test_nlogn_int", "t×usleep(log2(t))", "t·log2 t, t in 2..2048",
         "Norm(2585.09 + 1.03 * t * log(t), 477983)", "n log n", ("nlogn",)),
    Case("A.13", "test_quad_int_wn", "t×usleep(t + rand()%t·100)", "51t² − 50t (mean), t in 1..25",
         "Norm(6269.55 + 52.18 * t^2, 991720824)", "quadratic", ("quadratic",)),
    Case("A.14", "test_interaction_linear_quad", "a×usleep(b²)", "a·b², a in 1..10, b in 1..30",
         "Norm(155.10*a + 15.52*b^2 - 7.62*b + 17.95*a*b^2 - 51.50*a*b, 21.87)",
         "interaction a·b²", ()),
    Case("A.15", "test_linear_branches", "a>10: b×usleep(b); else c×usleep(450)",
         "a>10: b²; else 450·c; a 0..20, b 1..60, c 1..20",
         "[ a <= 10 ] Norm(-392.24 + 587.35 * c, 424838118); "
         "[ a > 10 ] Norm(17743.87 + 1.14 * b ^ 2, 581010480)", "piecewise (branch on a)", ()),
    Case("A.16", "test_linear_branches_one_f", "a<10: (10−a)×usleep(400); else usleep(4000)+(a−10)×usleep(400)",
         "[a <= 9] 4000 − 400·a; [a > 9] 400·a; a in 0..20",
         "[ a <= 9 ] Norm(5122.16 - 514.55 * a, 41817); [ a > 9 ] Norm(-1189.46 + 532.05 * a, 33452)",
         "piecewise", ("piecewise",)),
    Case("A.17", "test_multi_enum", "CONST: usleep(100000); LINEAR: a×usleep(100); QUAD: a×usleep(a)",
         "c=0: 10000 (not 100000); c=1: 100·a; c=2: a²; a in 1..60",
         "[ 0 <= c ] Norm(10435, 124398); [ 0 < c <= 1 ] Norm(354.35 + 171.54 * a, 5249978); "
         "[ 1 < c ] Norm(19357.97 + 1.14 * a^2, 647021694)", "enum partitions", ()),
    Case("A.19", "test_linear_main_component", "25%: usleep(10000+rand%1500); 25%: usleep(rand%100); 50%: a×usleep(1000)",
         "50%: 1000·a; 25%: ~10750; 25%: ~50; a in 1..20",
         "M Norm(64.88 + 1042.19 * a, 4697777)", "main component, linear", ("line",)),
    Case("A.20", "test_random_clustering", "30%: usleep(900); 40%: usleep(600); 30%: usleep(300)",
         "30% 900, 40% 600, 30% 300 (a 1..100, unused)",
         "{0.32} Norm(422, 528); {0.32} Norm(740, 888); {0.34} Norm(1034, 1138)",
         "mixture (no feature)", ()),
]


@dataclass
class Step:              # what size_fit needs of a fragment's execution
    tid: int
    ts: int
    cpu: float           # ns


def trace(out: str, calls: int = CALLS, *names: str) -> str:
    """Trace the micro-benchmark into ``out`` (qpn's tracer); returns ``out``."""
    from qpn.frontends.pytrace import trace_command
    import subprocess
    run = trace_command([sys.executable, PROGRAM, str(calls), "0", *names], out,
                        stdout=subprocess.DEVNULL)
    assert run.returncode == 0, f"{PROGRAM} exited with {run.returncode}"
    return out


def calls_of(events) -> dict:
    """number -> [Step] of each call (begin to end mark), first call dropped."""
    begun, out = {}, {}
    for e in events:
        if e["kind"] != "mark" or e.get("name") not in ("begin", "end"):
            continue
        key = (e["tid"], e["text"])
        if e["name"] == "begin":
            begun[key] = e
        else:
            b = begun.pop(key)
            out.setdefault(e["text"], []).append(Step(e["tid"], e["ts"], e["cpu"] - b["cpu"]))
    return {k: v[1:] for k, v in out.items()}


def features_of(events) -> dict:
    """number -> {feature name: [value per call]} (first call dropped)."""
    out, current = {}, None
    for e in events:
        if e["kind"] == "mark" and e.get("name") == "begin":
            current = out.setdefault(e["text"], {})
        elif e["kind"] == "feature" and current is not None:
            current.setdefault(e["name"], []).append(e["value"])
    return {k: {f: v[1:] for f, v in fs.items()} for k, fs in out.items()}


def us(c: float) -> str:
    return f"{c / 1000:.4g}"


def term(c: float, what: str, first: bool = False) -> str:
    s = f"{abs(c) / 1000:.4g}{what}"
    return (("−" if c < 0 else "") + s) if first else (f" − {s}" if c < 0 else f" + {s}")


def formula(ff, var: str) -> str:
    """A fit in us, Freud's way round: ``12.3 + 250·t``."""
    if ff.kind == "line":
        return us(ff.intercept) + term(ff.slope, f"·{var}")
    if ff.kind == "quadratic":
        c0, c1, c2 = ff.quadratic
        return us(c0) + term(c1, f"·{var}") + term(c2, f"·{var}²")
    if ff.kind == "nlogn":
        a, b = ff.nlogn
        return us(a) + term(b, f"·{var} log2 {var}")
    if ff.kind == "piecewise":
        bp, a1, b1, a2, b2 = ff.pieces
        return (f"[{var} <= {bp:g}] {us(a1)}{term(b1, f'·{var}')}; "
                f"[{var} > {bp:g}] {us(a2)}{term(b2, f'·{var}')}")
    return "means " + ", ".join(f"{c.value:g}: {us(sum(c.samples) / len(c.samples))}"
                                for c in ff.classes)


@dataclass
class Result:
    case: Case
    fit: object          # FeatureFit or None
    feature: str         # the feature it is on (the last named before the call)
    n: int
    plain: str           # without a fit: the distribution fitted to the demands
    others: dict         # feature -> FeatureFit or None: each named feature alone
    ts: list             # the values of the feature fitted on, per call
    demands: list        # ns, per call

    @property
    def kind(self) -> str:
        return self.fit.kind if self.fit else "none"

    @property
    def found(self) -> bool:
        return self.kind in self.case.expected


def analyse(path: str) -> list[Result]:
    events = read_trace(path).events
    sizes = input_sizes(events)
    calls, feats = calls_of(events), features_of(events)
    out = []
    for case in CASES:
        steps = calls[case.number]
        res = size_fit(sizes, steps)
        ff, where = res if res else (None, list(feats[case.number])[-1])
        others = {name: fit_feature(v, [s.cpu for s in steps])
                  for name, v in feats[case.number].items()}
        out.append(Result(case, ff, where, len(steps), fit([s.cpu for s in steps]).describe(),
                          others, feats[case.number][list(feats[case.number])[-1]],
                          [s.cpu for s in steps]))
    return out


KINDS = ("line", "nlogn", "quadratic", "piecewise", "classes")


def a13_ceiling(r: Result) -> float:
    """The R² of A.13's mean demand, 51 t² - 50 t, over its traced calls: what its
    generator's own noise leaves to the best fit."""
    import numpy as np
    t = np.array(r.ts)
    y = np.array(r.demands)
    noise = t * 100.0 ** 2 * (t * t - 1) / 12 * 1e6          # ns²
    return float(1 - noise.mean() / y.var())


def markdown(results: list[Result]) -> str:
    head = ["#", "function", "generator (CPU, us)", "Freud (printed)", "Freud's class",
            "qpn fit (us)", "qpn kind", "qpn CV R²", "class found"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        c = r.case
        qfit = formula(r.fit, r.feature) if r.fit else f"none: {r.plain}"
        out.append("| " + " | ".join([
            c.number, f"`{c.function}`", c.truth, f"`{c.freud}`", c.freud_class, qfit,
            r.kind + ("" if r.fit is None else f" on {r.feature}"),
            f"{r.fit.r2:.4f}" if r.fit else "–", "yes" if r.found else "**no**"]) + " |")
    fitted = [r for r in results if r.fit]
    worst = min(fitted, key=lambda r: r.fit.r2)
    found = [r for r in results if r.found]
    a13 = next(r for r in results if r.case.number == "A.13")
    out += ["", f"A.13's noise, rand() % t × 100 us per iteration, has the variance "
                f"t × 100² (t² − 1) / 12 us² per call: at the traced t it leaves at most "
                f"R² {a13_ceiling(a13):.4f} to any fit of t."]
    out += ["", f"classes found: {len(found)} of {len(results)} "
                f"({', '.join(r.case.number for r in results if not r.found)} missed); "
                f"min CV R² {worst.fit.r2:.4f} ({worst.case.number}) over the {len(fitted)} "
                f"functions qpn fitted; over those whose class it found: "
                f"{min(r.fit.r2 for r in found if r.fit):.4f}", "",
            "Each candidate's cross-validated R² (the chosen one in bold):", "",
            "| # | " + " | ".join(KINDS) + " |", "|---|" + "---|" * len(KINDS)]
    for r in fitted:
        e = r.fit.errors
        out.append(f"| {r.case.number} | " + " | ".join(
            "–" if k not in e else (f"**{1 - e[k] / e['const']:.6f}**" if k == r.kind
                                    else f"{1 - e[k] / e['const']:.6f}") for k in KINDS) + " |")
    out += ["", "Each named feature alone (what the fit gives when the program names only it):", "",
            "| # | feature | qpn kind | qpn fit (us) | CV R² |", "|---|---|---|---|---|"]
    for r in results:
        if len(r.others) < 2:
            continue
        for name, ff in r.others.items():
            out.append(f"| {r.case.number} | {name} | {ff.kind if ff else 'none'} | "
                       f"{formula(ff, name) if ff else '–'} | {f'{ff.r2:.4f}' if ff else '–'} |")
    return "\n".join(out)


def main() -> None:
    if len(sys.argv) > 1:
        path = sys.argv[1]
    else:
        path = os.path.join(tempfile.mkdtemp(prefix="freud-"), "microbench.jsonl")
        trace(path)
    print(f"<!-- trace: {path} -->")
    print(markdown(analyse(path)))


if __name__ == "__main__":
    main()
