"""The result type every solver returns (analytic ones without CIs).

A :class:`Result` is a list of :class:`Measure` cells keyed by
(measure, element, color); the same type for MVA, CTMC and the simulator, so
two results can be compared cell by cell.

Measures:
  tokens        mean number of tokens in a place (queue + depository)
  queue_tokens  mean tokens in the queue part of a queueing place (incl. in service)
  arrivals      tokens entering a place per second
  departures    tokens leaving a place per second
  residence     mean time a token spends in a place (Little: tokens / arrivals)
  response      mean time from arrival at a queue to service completion
  depository_tokens, depository_residence
                tokens in a queueing place's depository (served, not yet taken by a
                transition) and their mean time there: QPME's depository statistics;
                tables show them when asked for (``--measure``, or ``--measure qpme``)
  utilization   busy servers / servers of a queue (for IS: mean busy servers; with a
                speed table: capacity in use / its largest capacity)
  throughput    firings of a transition per second
  probability   probability of a marking predicate
"""
from __future__ import annotations

import csv
import io
import json
import math
from html import escape
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from qpn.texttable import aligned

#: MVA algorithms whose answers are approximations (``info["algorithm"]``), as titles name them
APPROXIMATE_MVA = {"schweitzer": "Schweitzer", "linearizer": "Linearizer"}

UNITS = {"tokens": "", "queue_tokens": "", "depository_tokens": "", "depository_residence": "s",
         "arrivals": "1/s", "departures": "1/s",
         "residence": "s", "response": "s", "utilization": "", "throughput": "1/s",
         "probability": "", "residence_var": "s^2", "residence_p50": "s", "residence_p90": "s",
         "residence_p95": "s", "residence_p99": "s"}

#: measures that text tables show only when asked for (every format holds them)
ON_REQUEST = frozenset({"depository_tokens", "depository_residence"})
#: named sets of measures (``--measure qpme``): QPME's per place, queue and depository
MEASURE_SETS = {"qpme": ("arrivals", "departures", "tokens", "queue_tokens", "depository_tokens",
                         "residence", "response", "depository_residence", "utilization")}


def expand_measures(names) -> list[str]:
    """Measure names with the named sets (:data:`MEASURE_SETS`) spelled out.

    >>> expand_measures(["throughput", "qpme"])[:3]
    ['throughput', 'arrivals', 'departures']
    """
    out: list[str] = []
    for n in names:
        for m in MEASURE_SETS.get(n, (n,)):
            if m not in out:
                out.append(m)
    return out


@dataclass
class Measure:
    """One cell of a result: a measure of an element (and color), with its confidence
    half-width and observation count when simulated.

    >>> m = Measure("throughput", "leave", value=0.8)
    >>> m.key, m.unit
    (('throughput', 'leave', ''), '1/s')
    """
    measure: str
    element: str
    color: str = ""          # '' = all colors together (or plain tokens)
    value: float = math.nan
    ci: float | None = None  # half-width of the confidence interval
    n: int | None = None     # observations behind a simulated estimate (firings, visits)

    @property
    def key(self) -> tuple[str, str, str]:
        """(measure, element, color): what a result indexes its cells by."""
        return (self.measure, self.element, self.color)

    @property
    def unit(self) -> str:
        """The measure's unit ('' for counts and ratios)."""
        return UNITS.get(self.measure, "")


@dataclass
class Result:
    """What every solver returns: the cells, the parameters, what the solver chose and
    why, warnings, and how the run ended (:attr:`status`).

    >>> r = Result(method="mva", model="mm1")
    >>> r.add("utilization", "server", 0.8)
    >>> r.add("tokens", "server", 4.0)
    >>> r.get("utilization", "server"), r.measures(), r.status
    (0.8, ['utilization', 'tokens'], 'ok')
    """
    method: str
    model: str
    rows: list[Measure] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    explanation: list[str] = field(default_factory=list)   # what the solver chose and why
    warnings: list[str] = field(default_factory=list)
    level: float | None = None                             # CI level, e.g. 0.95
    partial: bool = False
    imprecise: str | None = None                           # why a precision target was missed
    degenerate: str | None = None     # 'empty' | 'deadlock' | 'unstable' (solvers.status)
    reason: str | None = None         # what made it degenerate, e.g. the dead marking
    wall_time: float | None = None
    info: dict[str, Any] = field(default_factory=dict)     # solver details (states, residual ...)

    @property
    def method_label(self) -> str:
        """The method as titles name it: an MVA that approximated says which algorithm ran.

        >>> Result("mva", "m", info={"algorithm": "linearizer"}).method_label
        'mva (Linearizer, approximate)'
        >>> Result("mva", "m", info={"algorithm": "exact"}).method_label
        'mva'
        """
        algorithm = APPROXIMATE_MVA.get(self.info.get("algorithm")) if self.method == "mva" else None
        return f"{self.method} ({algorithm}, approximate)" if algorithm else self.method

    @property
    def status(self) -> str:
        """How the run ended: 'partial', a degenerate kind, 'imprecise' or 'ok'."""
        if self.partial:
            return "partial"
        return self.degenerate or ("imprecise" if self.imprecise else "ok")

    def mark_degenerate(self, kind: str, reason: str, *, keep_rows: bool = False) -> None:
        """Flag a net without a steady state; its rows go unless ``keep_rows`` (the numbers of
        a deadlocked or empty net would be zeros and NaN that look like an answer).

        >>> r = Result("ctmc", "m"); r.add("tokens", "p", 0.0)
        >>> r.mark_degenerate("deadlock", "no transition can fire")
        >>> r.status, r.reason, r.rows
        ('deadlock', 'no transition can fire', [])
        """
        self.degenerate, self.reason = kind, reason
        if not keep_rows:
            self.rows = []

    # -- access ------------------------------------------------------------
    def _index(self) -> dict:
        idx = self.__dict__.get("_idx")
        if idx is None or len(idx) != len(self.rows):
            idx = {r.key: r for r in self.rows}
            self.__dict__["_idx"] = idx
        return idx

    def cell(self, measure: str, element: str, color: str = "") -> Measure:
        """The cell of ``measure`` for ``element`` (and ``color``); a QPNError with the
        nearest element's name when there is none.

        >>> r = Result("mva", "m"); r.add("throughput", "leave", 0.8)
        >>> r.cell("throughput", "leave").value, r.cell("throughput", "leave").unit
        (0.8, '1/s')
        """
        try:
            return self._index()[(measure, element, color)]
        except KeyError:
            have = sorted({r.element for r in self.rows if r.measure == measure})
            from qpn.errors import QPNError, suggest
            s = suggest(element, have)
            raise QPNError(f"no measure '{measure}' for '{element}'"
                           + (f" color '{color}'" if color else "")
                           + (f"; did you mean '{s}'?" if s else "")) from None

    def get(self, measure: str, element: str, color: str = "") -> float:
        """The value of a cell (see :meth:`cell`).

        >>> r = Result("mva", "m"); r.add("tokens", "server", 4.0)
        >>> r.get("tokens", "server")
        4.0
        """
        return self.cell(measure, element, color).value

    def ci(self, measure: str, element: str, color: str = "") -> float | None:
        """The confidence half-width of a cell (None from the analytic methods).

        >>> r = Result("des", "m"); r.add("tokens", "server", 4.1, ci=0.2, n=1000)
        >>> r.ci("tokens", "server")
        0.2
        """
        return self.cell(measure, element, color).ci

    def add(self, measure: str, element: str, value: float, color: str = "",
            ci: float | None = None, n: int | None = None) -> None:
        """Append a cell.

        >>> r = Result("mva", "m"); r.add("utilization", "cpu", 0.5); len(r.rows)
        1
        """
        self.rows.append(Measure(measure, element, color, float(value), ci, n))

    def measures(self) -> list[str]:
        """The measures present, in the order of their first cell.

        >>> r = Result("mva", "m"); r.add("tokens", "a", 1); r.add("throughput", "t", 2); r.add("tokens", "b", 3)
        >>> r.measures()
        ['tokens', 'throughput']
        """
        seen: dict[str, None] = {}
        for r in self.rows:
            seen.setdefault(r.measure, None)
        return list(seen)

    # -- output ------------------------------------------------------------
    def table(self, measures: Iterable[str] | None = None, digits: int = 6) -> str:
        """Aligned text table (one line per cell).

        >>> r = Result("mva", "mm1")
        >>> r.add("utilization", "server", 0.8); r.add("tokens", "server", 4.0)
        >>> print(r.table())
        mm1: mva
        measure      element  color  unit  value
        -----------  -------  -----  ----  -----
        utilization  server                  0.8
        tokens       server                    4
        >>> r.table(["tokens"]).splitlines()[-1]           # only the measures asked for
        'tokens   server                    4'
        """
        want = set(expand_measures(measures)) if measures else None
        rows = [r for r in self.rows
                if (r.measure not in ON_REQUEST if want is None else r.measure in want)]
        with_ci = any(r.ci is not None for r in rows)
        with_n = any(r.n is not None for r in rows)
        head = ["measure", "element", "color", "unit", "value"] + (["+/-"] if with_ci else []) + \
            (["n"] if with_n else [])
        body = []
        for r in rows:
            line = [r.measure, r.element, r.color, r.unit, _g(r.value, digits)]
            if with_ci:
                line.append("" if r.ci is None else _g(r.ci, 3))
            if with_n:
                line.append("" if r.n is None else f"{r.n:,}")
            body.append(line)
        out = []
        title = f"{self.model}: {self.method_label}"
        if self.level is not None:
            title += f", {int(round(self.level * 100))}% confidence intervals"
        if self.partial:
            title += " (PARTIAL: stopped early)"
        if self.degenerate:
            title += f" -- {self.degenerate.upper()}: {self.reason}"
        elif self.imprecise:
            title += f" -- PRECISION NOT REACHED ({self.imprecise})"
        out.append(title)
        if self.degenerate and not rows:
            return title + "\n"          # no header over no rows
        out += aligned(head, body, left=4)
        if any(b[4] == UNDEFINED for b in body):
            out.append(UNDEFINED_NOTE)
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict:
        """Everything as plain data (what ``--json`` writes), cells with their units.

        >>> r = Result("mva", "mm1"); r.add("throughput", "leave", 0.8)
        >>> d = r.to_dict()
        >>> d["status"], d["measures"]
        ('ok', [{'measure': 'throughput', 'element': 'leave', 'color': '', 'value': 0.8,
                 'ci': None, 'n': None, 'unit': '1/s'}])
        """
        return {"method": self.method, "model": self.model, "params": self.params,
                "status": self.status, "reason": self.reason,
                "level": self.level, "partial": self.partial, "imprecise": self.imprecise,
                "precision_reached": self.imprecise is None, "wall_time": self.wall_time,
                "explanation": self.explanation, "warnings": self.warnings,
                "info": _jsonable(self.info),
                "measures": [dict(asdict(r), unit=r.unit) for r in self.rows]}

    def to_json(self, path: str | None = None) -> str:
        """Strict JSON of :meth:`to_dict` (NaN as null); written atomically to ``path`` if given.

        >>> import json
        >>> r = Result("mva", "m"); r.add("tokens", "q", 4.0); r.add("response", "idle", math.nan)
        >>> [(c["element"], c["value"]) for c in json.loads(r.to_json())["measures"]]
        [('q', 4.0), ('idle', None)]
        """
        text = strict_json(self.to_dict())
        if path is not None:
            from qpn.fileio import write_atomic
            write_atomic(path, text + "\n")
        return text

    def to_csv(self, path: str | None = None) -> str:
        """One CSV line per cell (value, half-width, unit, observations when simulated);
        written atomically to ``path`` if given.

        >>> r = Result("des", "m"); r.add("tokens", "q", 4.1, ci=0.2, n=1000)
        >>> r.to_csv().splitlines()
        ['measure,element,color,value,ci_halfwidth,unit,observations', 'tokens,q,,4.1,0.2,,1000']
        """
        buf = io.StringIO()
        w = csv.writer(buf)
        with_n = any(r.n is not None for r in self.rows)        # simulations only
        w.writerow(["measure", "element", "color", "value", "ci_halfwidth", "unit"] + (["observations"] if with_n else []))
        for r in self.rows:
            w.writerow([r.measure, r.element, r.color, repr(r.value),
                        "" if r.ci is None else repr(r.ci), r.unit] + (["" if r.n is None else r.n] if with_n else []))
        text = buf.getvalue()
        if path is not None:
            from qpn.fileio import write_atomic
            write_atomic(path, text)
        return text

    def to_frame(self):
        """The cells as a pandas DataFrame (measure, element, color, value, ci, n, unit).

        >>> r = Result("mva", "m"); r.add("tokens", "server", 4.0)
        >>> r.to_frame()[["element", "value"]].values.tolist()   # doctest: +SKIP
        [['server', 4.0]]
        """
        try:
            import pandas as pd
        except ImportError:
            from qpn.errors import QPNError
            raise QPNError("Result.to_frame needs pandas, which is not installed",
                           hint="pip install pandas") from None
        return pd.DataFrame([dict(asdict(r), unit=r.unit) for r in self.rows],
                            columns=["measure", "element", "color", "value", "ci", "n", "unit"])

    def _repr_html_(self) -> str:
        """A notebook's view: one table per measure, with units (solvers.report)."""
        head = f"<p><b>{escape(self.model)}: {escape(self.method_label)}</b> ({escape(self.status)})</p>"
        return head + "".join(f"<p>{escape(m)}</p>" + measure_table(self, m) for m in self.measures())

    def compare(self, other: "Result") -> list[tuple[Measure, Measure, float]]:
        """Cells present in both results with their relative difference.

        >>> a = Result("mva", "m"); a.add("tokens", "q", 4.0)
        >>> b = Result("des", "m"); b.add("tokens", "q", 3.0)
        >>> [(x.value, y.value, rel) for x, y, rel in a.compare(b)]
        [(4.0, 3.0, 0.25)]
        """
        idx = other._index()
        out = []
        for r in self.rows:
            o = idx.get(r.key)
            if o is None:
                continue
            denom = max(abs(r.value), abs(o.value))
            rel = 0.0 if denom == 0 else abs(r.value - o.value) / denom
            out.append((r, o, rel))
        return out


#: how a table shows a value that is not defined (a mean over no observations)
UNDEFINED = "n/a"
#: the note under a table that shows one
UNDEFINED_NOTE = (f"{UNDEFINED}: not defined: a mean over no observations (nothing enters the place, "
                  "or nothing fires to time it); null in the JSON")


def _g(v: float, digits: int) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return UNDEFINED
    return f"{v:.{digits}g}"


def _jsonable_default(o):
    try:
        import numpy as np
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def finite_or_none(o):
    """``o`` with every NaN and infinity replaced by None (JSON has no such numbers:
    ``NaN`` in a file breaks jq, JavaScript and strict parsers)."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: finite_or_none(v) for k, v in o.items()}
    if isinstance(o, list):
        return [finite_or_none(v) for v in o]
    return o


def strict_json(d) -> str:
    """RFC 8259 JSON of ``d`` (numpy values converted, undefined numbers as null), indented."""
    plain = json.loads(json.dumps(_str_keys(d), default=_jsonable_default))
    return json.dumps(finite_or_none(plain), indent=2, allow_nan=False)


def _jsonable(d):
    return json.loads(json.dumps(_str_keys(d), default=_jsonable_default))


def _str_keys(d):
    """JSON objects take string keys only (the symbolic solver keys its closed forms by
    (measure, element, color) tuples: '--json' raised TypeError on them)."""
    if isinstance(d, dict):
        return {k if isinstance(k, (str, int, float, bool)) or k is None else
                "/".join(map(str, k)) if isinstance(k, tuple) else str(k): _str_keys(v)
                for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_str_keys(v) for v in d]
    return d


def measure_table(res: Result, measure: str) -> str:
    """One measure's cells as an HTML table (element, color, value, unit, CI, n): the
    notebook view's and the HTML report's (:mod:`solvers.report`)."""
    rows = [r for r in res.rows if r.measure == measure]
    with_ci = any(r.ci is not None for r in rows)
    with_n = any(r.n is not None for r in rows)
    head = ["element", "color", "value", "unit"] + (["± (CI half-width)"] if with_ci else []) + \
        (["observations"] if with_n else [])
    out = ["<table>", "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        cells = [f"<td>{escape(r.element)}</td>", f"<td>{escape(r.color)}</td>",
                 f'<td class="num">{escape(_g(r.value, 6))}</td>', f"<td>{escape(r.unit)}</td>"]
        if with_ci:
            cells.append(f'<td class="num">{"" if r.ci is None else escape(_g(r.ci, 3))}</td>')
        if with_n:
            cells.append(f'<td class="num">{"" if r.n is None else f"{r.n:,}"}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)
