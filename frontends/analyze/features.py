"""CPU demands that depend on the size of what a thread just read (Freud's input-dependent
costs).

A worker that reads an item and then processes it spends CPU in proportion to the item's
size.  One distribution per fragment mixes the sizes of the traced run: a prediction for
another input mix (more large items) keeps the traced mix.  Here each execution of a
fragment gets the feature of its thread's last input before it ended: the bytes of the
last ``recv`` or ``read`` (the tracer records them) or the value the program named with
``pytrace.feature``.  If the demand follows the feature (a straight line, n log2 n, a
parabola, two lines split at a breakpoint or a mean per size: the simplest whose 5-fold
cross-validated error is within 1% or one standard error of the best, curves.py; and
better than a constant), the model branches on the size class with the traced shares as
parameters (``share_read_31_65536``), each class with its own demand, and prints the fit
and its R²; setting the shares predicts another mix.  The model has no feature variable:
whatever the curve, each class's demand is fitted to its own samples (a piecewise fit's
classes do not straddle its breakpoint).

>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> x = rng.choice([4096.0, 65536.0], size=200, p=[0.8, 0.2])
>>> y = 20_000 + 30 * x + rng.normal(0, 5_000, size=200)
>>> f = fit_feature(x, y)
>>> f.kind, [c.value for c in f.classes], round(f.r2, 2), round(f.slope)
('line', [4096.0, 65536.0], 1.0, 30)
>>> fit_feature(x, rng.normal(100_000, 5_000, size=200)) is None
True
"""
from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass, field

import numpy as np

from qpn.expr import BinOp, Num, Ref
from qpn.software import ast as sw

from . import curves
from .fit import fit, fmt_time
from .naming import ident

#: executions of a fragment with a known feature needed to fit anything
MIN_SAMPLES = 30
#: distinct sizes up to which each is a class of its own (else quantile classes)
MAX_CLASSES = 6
#: the cross-validated share of the variance the feature must explain
MIN_R2 = 0.5
#: input operations whose bytes are a feature
INPUTS = ("recv", "read")


@dataclass
class SizeClass:
    value: float              # the class's size (bytes): its mean size
    share: float              # the traced share of executions in it
    samples: list             # the demands (ns) of the executions in it


@dataclass
class FeatureFit:
    kind: str                 # "line", "nlogn", "quadratic", "piecewise" or "classes"
    intercept: float          # ns: demand = intercept + slope * size (the line, whatever kind)
    slope: float              # ns per byte
    r2: float                 # cross-validated share of the variance explained (by kind)
    n: int
    classes: list = field(default_factory=list)
    quadratic: tuple = ()     # (c0, c1, c2) ns: demand = c0 + c1 size + c2 size^2, if chosen
    nlogn: tuple = ()         # (a, b) ns: demand = a + b size log2(size), if chosen
    pieces: tuple = ()        # (breakpoint, a1, b1, a2, b2): a1 + b1 size up to it, if chosen
    errors: dict = field(default_factory=dict)   # candidate -> its cross-validated MSE (ns²)

    def formula(self, unit: str = "byte", var: str = "x") -> str:
        """The fitted demand as text: ``20 us + 30 ns per byte``, with a square term, an
        n log n term, or per side of a breakpoint on ``var``."""
        if self.kind == "quadratic":
            c0, c1, c2 = self.quadratic
            return f"{fmt_time(c0)} {_signed(c1)} per {unit} {_signed(c2)} per {unit}²"
        if self.kind == "nlogn":
            a, b = self.nlogn
            return f"{fmt_time(a)} {_signed(b)} × {var} log2 {var} ({var} in {unit}s)"
        if self.kind == "piecewise":
            bp, a1, b1, a2, b2 = self.pieces
            return (f"[{var} <= {bp:g}] {fmt_time(a1)} {_signed(b1)} per {unit}; "
                    f"[{var} > {bp:g}] {fmt_time(a2)} {_signed(b2)} per {unit}")
        return f"{fmt_time(self.intercept)} {_signed(self.slope)} per {unit}"


def _signed(ns: float) -> str:
    """``+ 30 ns`` or ``- 400.3 us``."""
    return f"- {fmt_time(-ns)}" if ns < 0 else f"+ {fmt_time(ns)}"


def input_sizes(events) -> dict:
    """tid -> (end times, (value, where)) of its inputs, sorted by end: the bytes of its
    reads and receives (where: ``read_31``, the operation and its line) and the values of
    the features it named (where: the name)."""
    out: dict = collections.defaultdict(list)
    for e in events:
        if e["kind"] == "feature" and isinstance(e.get("value"), (int, float)):
            # a feature the program named (pytrace's feature()): it stands for its item
            out[e["tid"]].append((e["ts"], float(e["value"]), ident(str(e["name"]), "feature")))
            continue
        if e["kind"] == "io" and e.get("op") in INPUTS and e.get("bytes"):
            line = str(e.get("site") or "").rpartition(":")[2]
            out[e["tid"]].append((e["ts"] + e.get("dur", 0), float(e["bytes"]),
                                  f"{e['op']}_{line}" if line.isdigit() else e["op"]))
    return {t: ([a for a, _, _ in v], [(b, w) for _, b, w in v])
            for t, v in ((t, sorted(v)) for t, v in out.items())}


def feature_of(sizes: dict, tid: int, since: float, end: int) -> tuple | None:
    """(bytes, where) of ``tid``'s last input that ended in (since, end]: in a loop, since
    the thread's previous pass through the same fragment (an input of this iteration)."""
    ends, inputs = sizes.get(tid, ((), ()))
    i = bisect.bisect_right(ends, end) - 1
    if i < 0 or ends[i] <= since:
        return None
    return inputs[i]


def fit_feature(x, y) -> FeatureFit | None:
    """The demands ``y`` (ns) as a function of the sizes ``x`` (bytes), or None when a
    constant does about as well (cross-validated R² below MIN_R2) or the sample is small.

    Few distinct sizes (<= MAX_CLASSES) are classes of their own, with a mean each when
    that cross-validates better than a curve; more are cut into 4 quantile classes (two
    each side of a piecewise fit's breakpoint)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < MIN_SAMPLES or np.ptp(x) == 0 or np.var(y) == 0:
        return None
    order = np.random.default_rng(0).permutation(len(x))     # folds not in trace order
    x, y = x[order], y[order]
    values = np.unique(x)
    few = len(values) <= MAX_CLASSES
    kind, errs = curves.choose(x, y, few)
    r2 = 1 - errs[kind] / errs["const"] if errs["const"] > 0 else 0.0
    if kind == "const" or r2 < MIN_R2:
        return None
    b, a = np.polyfit(x, y, 1)
    quad = tuple(float(c) for c in np.polyfit(x, y, 2)[::-1]) if kind == "quadratic" else ()
    nlogn = curves.nlogn(x, y) if kind == "nlogn" else ()
    pieces = ()
    if kind == "piecewise":
        bp, (a1, b1), (a2, b2) = curves.piecewise(x, y)
        pieces = (bp, a1, b1, a2, b2)
    if few:
        groups = [(v, x == v) for v in values]
    elif pieces:
        # two classes each side of the breakpoint (split at the side's median): no class
        # mixes the two lines
        groups = []
        for side in (x <= pieces[0], x > pieces[0]):
            med = np.median(x[side])
            groups += [(float(x[m].mean()), m) for m in (side & (x <= med), side & (x > med))
                       if np.any(m)]
    else:
        edges = np.quantile(x, [0.25, 0.5, 0.75])
        cls = np.searchsorted(edges, x, side="right")
        groups = [(float(x[cls == c].mean()), cls == c) for c in range(4) if np.any(cls == c)]
    classes = [SizeClass(float(v), float(m.mean()), [float(t) for t in y[m]]) for v, m in groups]
    return FeatureFit(kind, float(a), float(b), float(r2), len(x), classes, quad, nlogn, pieces,
                      errs)


def size_fit(sizes: dict, steps) -> tuple[FeatureFit, str] | None:
    """The fit of a fragment's demands (``steps``: its executions with CPU) on the size of
    their input, and where that input is read (``read_31``); None if the demand does not
    follow it, or fewer than 90% of the executions have one input site."""
    if not sizes:                             # a trace without inputs: nothing to fit
        return None
    steps = sorted(steps, key=lambda s: s.ts)
    last: dict = {}                           # tid -> its previous pass's end
    feats = []
    for s in steps:
        feats.append(feature_of(sizes, s.tid, last.get(s.tid, float("-inf")), s.ts))
        last[s.tid] = s.ts
    wheres = collections.Counter(f[1] for f in feats if f is not None)
    if not wheres:
        return None
    where, n = wheres.most_common(1)[0]
    if n < 0.9 * len(steps):
        return None
    pairs = [(f[0], s.cpu) for f, s in zip(feats, steps) if f is not None and f[1] == where]
    ff = fit_feature([a for a, _ in pairs], [b for _, b in pairs])
    return (ff, where) if ff else None


def _is_io(where: str) -> bool:
    """Whether an input site is an I/O operation's (``read_31``), not a named feature."""
    op, _, line = where.partition("_")
    return op in INPUTS and (not line or line.isdigit())


def size_steps(w, by_size: tuple, name: str, share: float, sp: str, k,
               parts: list | None = None) -> list:
    """The steps of a fragment whose demand follows its input's size: a branch on the
    size class, the shares parameters (one per class but the first: it takes the rest;
    shared by the fragments that follow the same input), a fitted demand per class
    (added to ``parts`` as (fit, share, speed-up, factor, label))."""
    ff, where = by_size
    unit = "bytes" if _is_io(where) else where
    refs = []
    for c in ff.classes[1:]:
        key = (where, round(c.value))
        if key not in w.share_params:
            w.share_params[key] = w.param(
                f"share_{where}_{round(c.value)}", round(c.share, 4),
                f"share of the {where} inputs of about {round(c.value)} {unit} (traced: "
                f"{100 * c.share:.1f}%); set it to predict another input mix")
        refs.append(Ref(w.share_params[key]))
    rest = Num(1)
    for r in refs:
        rest = BinOp("-", rest, r)
    alts = []
    for c, prob in zip(ff.classes, [rest] + refs):
        f = fit(c.samples)
        step = w.names.unique(f"{name}_{round(c.value)}")
        if parts is not None:
            parts.append((f, share, sp, k, step))
        alts.append(sw.Alternative(prob, tuple(w.split(f, share, sp, k, step)),
                                   doc=f"about {round(c.value)} {unit}: {f.describe()}"))
    how = {"classes": "a mean per size", "line": "a line", "nlogn": "n log n",
           "quadratic": "a parabola",
           "piecewise": "two lines split at a breakpoint; the classes split there too"}[ff.kind]
    what = (f"the bytes of the {where} before it" if unit == "bytes" else
            f"the program's feature '{where}' (pytrace.feature)")
    formula = ff.formula("byte", "size") if unit == "bytes" else ff.formula("unit", where)
    return [sw.Branch(tuple(alts), doc=(
        f"demand by {what}: {formula} ({how}, "
        f"cross-validated R² {ff.r2:.2f}, {ff.n} samples; features.py)"))]
