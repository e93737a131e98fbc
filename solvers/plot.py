"""Figures of results: what a solve, a sweep or a verification found, as PNG or SVG.

The input is the JSON that ``qpn solve --json``, ``qpn solve --sweep ... --json`` and
``qpn verify`` write, so a figure can be drawn again later without solving.  Which
figure is drawn follows from the file:

* one result: bars of the utilization of every queue, the throughput of every
  transition, the tokens of every place and, where the simulator measured them, the
  residence-time percentiles, each with its confidence interval;
* a sweep: each chosen measure against the swept parameter, one line per element,
  the confidence band shaded;
* a verification (``verify.json``): predicted against measured, with the line of
  perfect prediction.

matplotlib is optional (``pip install matplotlib``, or the ``plot`` extra); it is
imported only here, and only when a figure is asked for.

>>> kind_of({"points": []}), kind_of({"measures": []}), kind_of({"rows": [], "suite": "s"})
('sweep', 'result', 'verify')
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

from qpn.errors import ModelError, QPNError

from .result import UNITS

#: measures of a sweep figure when none are asked for
SWEEP_DEFAULT = ("throughput", "utilization", "residence")
FORMATS = (".png", ".svg")
#: no creation date in the files: the same result draws the same bytes
_METADATA = {".png": {"Software": "qpn"}, ".svg": {"Date": None, "Creator": "qpn"}}


def kind_of(d: dict) -> str:
    """'result', 'sweep' or 'verify': what a result JSON holds."""
    if "points" in d:
        return "sweep"
    if "rows" in d and "suite" in d:
        return "verify"
    if "measures" in d:
        return "result"
    raise ModelError("not a qpn result: expected the JSON of qpn solve --json, a sweep or verify.json",
                     None, hint="write one with: qpn solve MODEL --json result.json")


def read_result(path: str) -> dict:
    """The JSON of a result file, with a clear error when it is not one."""
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise QPNError(f"no such result file: {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: not JSON ({exc})", None,
                         hint="plot reads the files of qpn solve --json and qpn verify") from None
    if not isinstance(d, dict):
        raise QPNError(f"{path}: not a qpn result (a JSON {type(d).__name__})")
    kind_of(d)
    return d


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ModelError("plots need matplotlib, which is not installed", None,
                         hint="pip install matplotlib (or pip install 'qpn[plot]')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _label(measure: str) -> str:
    unit = UNITS.get(measure, "")
    return f"{measure} [{unit}]" if unit else measure


def _real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _cell(m) -> dict | None:
    """A result row fit to draw (its half-width 0.0 when absent or not finite), None for a
    row without a finite value; a row of the wrong shape is a QPNError naming it."""
    if not isinstance(m, dict) or not isinstance(m.get("measure"), str) \
            or not isinstance(m.get("element", ""), str):
        raise QPNError(f"not a qpn result row: {str(m)[:80]} (expected measure, element, value, ci)")
    value, ci = m.get("value"), m.get("ci")
    for what, x in (("value", value), ("ci", ci)):
        if x is not None and not _real(x):
            raise QPNError(f"result row {m['measure']} {m.get('element', '')}: {what} is "
                           f"{str(x)[:40]}, expected a number (the file of qpn solve --json)")
    if value is None or not math.isfinite(value):
        return None
    return dict(m, ci=ci if ci is not None and math.isfinite(ci) and ci >= 0 else 0.0)


def _cells(d: dict, measure: str, colors: bool = False) -> list[dict]:
    rows = d.get("measures", [])
    if not isinstance(rows, list):
        raise QPNError("not a qpn result: its measures are not a list")
    cells = (_cell(m) for m in rows)
    return [m for m in cells if m is not None and m["measure"] == measure
            and (colors or not m.get("color"))]


def figure(d: dict, measures: list[str] | None = None):
    """The matplotlib figure of a result, sweep or verification dictionary."""
    kind = kind_of(d)
    plt = _pyplot()
    if kind == "result":
        return _result_figure(plt, d, measures)
    if kind == "sweep":
        return _sweep_figure(plt, d, measures)
    return _verify_figure(plt, d)


def _result_figure(plt, d: dict, measures):
    panels = [m for m in (measures or ("utilization", "throughput", "tokens")) if _cells(d, m)]
    pct = [m for m in (_cell(m) for m in d.get("measures", [])) if m is not None
           and m["measure"].startswith("residence_p") and not m.get("color")]
    if pct and not measures:
        panels.append("percentiles")
    if not panels:
        raise QPNError("the result has none of the measures to plot"
                       + (f" ({', '.join(measures)})" if measures else "")
                       + (f": it is {d.get('status')}" if d.get("status") not in (None, "ok") else ""))
    # each panel as tall as its bars need (a model with 60 places gets a readable list)
    heights = [1.6 if m == "percentiles" else max(1.2, 0.22 * len(_cells(d, m))) for m in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 1.2 + sum(heights) + 0.6 * len(panels)),
                             squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, measure in zip(axes[:, 0], panels):
        if measure == "percentiles":
            _percentiles(ax, pct)
            continue
        cells = _cells(d, measure)
        names = [c["element"] for c in cells]
        values = [c["value"] for c in cells]
        err = [c["ci"] for c in cells]
        ax.barh(range(len(cells)), values, xerr=err if any(err) else None, color="#4c72b0",
                capsize=3)
        ax.set_yticks(range(len(cells)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(_label(measure))
        ax.set_title(measure, fontsize=10)
    title = f"{d.get('model', '')}: {d.get('method', '')}"
    if d.get("level"):
        title += f", {round(100 * d['level'])}% confidence intervals"
    if d.get("status") not in (None, "ok"):
        title += f" ({d['status'].upper()})"
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def _percentiles(ax, cells):
    by_el: dict[str, dict[str, float]] = {}
    for c in cells:
        by_el.setdefault(c["element"], {})[c["measure"].removeprefix("residence_")] = c["value"]
    qs = ["p50", "p90", "p95", "p99"]
    for el, vals in by_el.items():
        xs = [q for q in qs if q in vals]
        ax.plot(xs, [vals[q] for q in xs], marker="o", label=el)
    ax.set_xlabel("percentile")
    ax.set_ylabel("residence [s]")
    ax.set_title("residence-time percentiles", fontsize=10)
    ax.legend(fontsize=7)


def _swept(d: dict) -> tuple[str, list]:
    sweep = d.get("sweep") or {}
    if not sweep:
        raise QPNError("the sweep names no swept parameter")
    name = next(iter(sweep))
    return name, [p["params"].get(name) for p in d["points"]]


def _sweep_figure(plt, d: dict, measures):
    name, xs = _swept(d)
    want = list(measures or SWEEP_DEFAULT)
    panels = []
    for m in want:
        if any(_cells(p.get("result", {}), m) for p in d["points"]):
            panels.append(m)
    if not panels:
        raise QPNError(f"the sweep has none of the measures {', '.join(want)}")
    numeric = all(isinstance(x, (int, float)) for x in xs)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 1.5 + 2.6 * len(panels)), squeeze=False)
    for ax, m in zip(axes[:, 0], panels):
        series: dict[str, list[tuple[Any, float, float]]] = {}
        for x, p in zip(xs, d["points"]):
            for c in _cells(p.get("result", {}), m):
                series.setdefault(c["element"], []).append((x, c["value"], c.get("ci") or 0.0))
        for el, pts in series.items():
            px = [p[0] if numeric else str(p[0]) for p in pts]
            y = [p[1] for p in pts]
            h = [p[2] for p in pts]
            ax.plot(px, y, marker="o", markersize=3, label=el)
            if any(h):
                ax.fill_between(px, [a - b for a, b in zip(y, h)], [a + b for a, b in zip(y, h)],
                                alpha=0.2)
        ax.set_xlabel(name)
        ax.set_ylabel(_label(m))
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{d.get('model', '')}: {d.get('method', '')}, {name} swept", fontsize=11)
    fig.tight_layout()
    return fig


def _verify_figure(plt, d: dict):
    rows = [r for r in d["rows"] if isinstance(r, dict) and _real(r.get("measured"))
            and _real(r.get("predicted")) and math.isfinite(r["measured"])
            and math.isfinite(r["predicted"])]
    if not rows:
        raise QPNError("the verification has no row with both a measurement and a prediction")
    xs, ys = [r["measured"] for r in rows], [r["predicted"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(xs, ys, color="#4c72b0")
    for r, x, y in zip(rows, xs, ys):
        ax.annotate(" ".join(f"{k}={v}" for k, v in r.get("point", {}).items()), (x, y), fontsize=7)
    lo, hi = min(xs + ys) * 0.9, max(xs + ys) * 1.1
    ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8, label="perfect prediction")
    ax.set_xlabel(f"measured {d.get('expr', '')}".strip())
    ax.set_ylabel("predicted")
    eps = d.get("mean_eps")
    ax.set_title(f"{d.get('suite', '')}" + (f": mean eps {100 * eps:.1f}%" if eps is not None else ""))
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def save_figure(d: dict, path: str, measures: list[str] | None = None) -> str:
    """Draw ``d`` (a result, sweep or verification dict) into ``path`` (.png or .svg).

    Parameters
    ----------
    d : the JSON dictionary of a result (``Result.to_dict()``), a sweep or verify.json
    path : the output file; its extension chooses the format
    measures : the measures to draw (default: utilization, throughput, tokens for a
        result; throughput, utilization, residence for a sweep)

    Returns
    -------
    The path written.
    """
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ModelError(f"plots are written as {' or '.join(FORMATS)}, not '{ext or path}'", None,
                         hint="name the output e.g. result.png or result.svg")
    from qpn.fileio import check_output, write_atomic
    check_output(path)
    fig = figure(d, measures)
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format=ext[1:], dpi=110, metadata=_METADATA[ext])
    _pyplot().close(fig)
    write_atomic(path, buf.getvalue())
    return path


def svg_text(d: dict, measures: list[str] | None = None) -> str:
    """The figure as SVG text (for the HTML report)."""
    import io
    fig = figure(d, measures)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata=_METADATA[".svg"])
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.find("<svg"):]
