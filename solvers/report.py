"""One self-contained HTML page of a solved model: what a performance engineer sends
to others.

The page holds the model's summary (``qpn show``), the method the solver used and
why, the status and every warning, one table per measure with units, confidence
intervals and observations, and the figures of :mod:`solvers.plot` as inline SVG
(no files beside it, no scripts, no network).  Without matplotlib the page says so
where the figures would be.

>>> import qpn
>>> from qpn import solvers
>>> net = qpn.parse("net mm1\\nparam lambda = 1\\nplace q queue fcfs service exp(0.5)\\n"
...                 "transition arrive timed : -> q delay exp(1 / lambda)\\ntransition leave : q ->")
>>> page = html_report(net, solvers.solve(net, "mva"), plots=False)
>>> page.startswith("<!DOCTYPE html>"), "<th>unit</th>" in page, "1/s" in page
(True, True, True)
"""
from __future__ import annotations

import datetime
from html import escape

from qpn.errors import QPNError

from .result import UNITS, Result, measure_table  # noqa: F401  (measure_table: this module's API)

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .5em 0 1em; } td, th { padding: .15em .7em; }
th { text-align: left; border-bottom: 1px solid #999; } td.num { text-align: right;
font-variant-numeric: tabular-nums; } tr:nth-child(even) { background: #f4f4f4; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: 12px; }
.status { padding: .2em .6em; border-radius: 3px; font-weight: bold; }
.ok { background: #d8f0d8; } .bad { background: #f8d8d0; } .warn { color: #8a4b00; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
"""


def _figures(res: Result) -> str:
    from .plot import svg_text
    try:
        svg = svg_text(res.to_dict())
    except QPNError as exc:
        return f'<p class="warn">No figure: {escape(str(exc).splitlines()[0])}</p>'
    return f"<figure>{svg}</figure>"


def html_report(net, res: Result, source: str | None = None, plots: bool = True) -> str:
    """The HTML page of a model and its result.

    Parameters
    ----------
    net : the model (:class:`qpn.net.Net`) that was solved
    res : its result
    source : the model file's path, shown in the header
    plots : draw the figures (needs matplotlib)

    Returns
    -------
    The page's text.
    """
    from qpn.summary import summarize
    title = f"{res.model or net.name}: {res.method_label}"
    ok = res.status == "ok"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f"<p>Model <code>{escape(source or net.name)}</code>, solved "
             f"{escape(datetime.datetime.now().strftime('%Y-%m-%d %H:%M'))}"
             + (f" in {res.wall_time:.3g} s" if res.wall_time else "") + ". Status: "
             f'<span class="status {"ok" if ok else "bad"}">{escape(res.status)}</span>'
             + (f" — {escape(res.reason or res.imprecise or '')}" if not ok else "") + "</p>"]
    parts.append("<h2>Method</h2><ul>" + "".join(f"<li>{escape(e)}</li>" for e in res.explanation)
                 + "</ul>")
    if res.level:
        parts.append(f"<p>Simulated values carry {round(100 * res.level)}% confidence intervals "
                     "(± half-widths) and the number of observations behind them.</p>")
    if res.warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(
            f'<li class="warn">{escape(w)}</li>' for w in res.warnings) + "</ul>")
    if res.rows:
        parts.append("<h2>Figures</h2>")
        parts.append(_figures(res) if plots else "<p>(figures left out)</p>")
        parts.append("<h2>Results</h2>")
        for m in res.measures():
            unit = UNITS.get(m, "")
            parts.append(f"<h3>{escape(m)}" + (f" [{escape(unit)}]" if unit else "") + "</h3>")
            parts.append(measure_table(res, m))
    parts.append("<h2>Model</h2><pre>" + escape(summarize(net)) + "</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
