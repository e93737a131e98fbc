"""Published tables of the seed works: measured and predicted values as the seeds print
them, with the seeds' own errors (``tests/data/published/seed-NNN.toml``,
docs/published.md).

Each cell is kept as printed (a string), so a cell knows its precision: ``0.170`` is
0.170 +- 0.0005.  That is what lets a test tell a rounding difference from a defect of the
source: the error recomputed from the printed measured and predicted values is an
*interval* (every pair of true values that round to the printed ones), and the seed's
printed error must fall in it, to its own rounding.

>>> t = PublishedTable.from_dict({"id": "mc", "cols": {"name": "threads", "values": [1, 2]},
...     "measured": "72.719 39.754", "predicted": "78.275 39.202", "eps": "0.076 0.014"},
...     seed="seed-000", default_error="abs")
>>> [round(c.recomputed, 4) for c in t.cells()]
[0.0764, 0.0139]
>>> [c.consistent for c in t.cells()], t.mean_eps()
([True, True], 0.045)
"""
from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from typing import Iterator

from qpn.errors import QPNError
from qpn.texttable import aligned

# where the fixtures live (a repository checkout; the loader takes any directory)
PUBLISHED_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "published")

# how a seed computes its error column from measured m and predicted p
ERRORS = {
    "abs": "|m - p| / m",
    "abs_percent": "100 |m - p| / m",
    "signed_percent": "100 (p - m) / m",
}
MISSING = "-"       # the source does not give this cell
ILLEGIBLE = "?"     # the source prints it, but it cannot be read

_TABLE_KEYS = {"id", "table", "section", "program", "setup", "cores", "metric", "units",
               "built_at", "rows", "cols", "measured", "predicted", "eps", "error",
               "stated", "exceptions", "mean_exception", "range_exception", "notes",
               "mean_from"}


@dataclass(frozen=True)
class Value:
    """One printed number: its value and half a unit of its last printed digit."""

    text: str
    value: float        # nan when missing or illegible
    half_ulp: float

    @classmethod
    def parse(cls, text: str) -> "Value":
        """A value from its printed text (MISSING or ILLEGIBLE: nan).

        >>> Value.parse("0.125").half_ulp
        0.0005
        """
        if text in (MISSING, ILLEGIBLE):
            return cls(text, math.nan, math.nan)
        try:
            v = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number, '-' (not given) or '?' (illegible)")
        decimals = len(text.split(".")[1]) if "." in text else 0
        return cls(text, v, 0.5 * 10.0 ** -decimals)

    @property
    def known(self) -> bool:
        """Whether the value was printed legibly."""
        return not math.isnan(self.value)


@dataclass(frozen=True)
class Axis:
    """A table's rows or columns: the varied setting and its values."""
    name: str
    values: tuple


@dataclass
class Cell:
    """One configuration of a table: where it is, what was printed, what follows."""

    at: dict                      # axis name -> value
    measured: Value | None
    predicted: Value | None
    eps: Value | None             # the seed's printed error
    low: float = math.nan         # the error that the printed m and p allow, lowest ...
    high: float = math.nan        # ... and highest
    exception: str | None = None  # why the printed error is documented as not following

    @property
    def recomputed(self) -> float:
        """The error from the printed measured and predicted values (nan without them)."""
        if not (self.measured and self.predicted and self.measured.known and self.predicted.known):
            return math.nan
        return _error(self._kind, self.measured.value, self.predicted.value)

    @property
    def consistent(self) -> bool | None:
        """Does the printed error follow from the printed values (None: nothing to check)?"""
        if math.isnan(self.low) or not (self.eps and self.eps.known):
            return None
        slack = self.eps.half_ulp + 1e-12
        return self.eps.value + slack >= self.low and self.eps.value - slack <= self.high

    _kind: str = "abs"


def _error(kind: str, m: float, p: float) -> float:
    if kind == "abs":
        return abs(m - p) / m
    if kind == "abs_percent":
        return 100 * abs(m - p) / m
    return 100 * (p - m) / m


def _error_range(kind: str, m: Value, p: Value) -> tuple[float, float]:
    """The lowest and highest error over every m, p that print as the given values.

    The error is a function of r = p/m; r ranges over [p-b, p+b] / [m-a, m+a]."""
    m_lo, m_hi = m.value - m.half_ulp, m.value + m.half_ulp
    p_lo, p_hi = p.value - p.half_ulp, p.value + p.half_ulp
    if m_lo <= 0:
        return (math.nan, math.nan)
    r_lo, r_hi = p_lo / m_hi, p_hi / m_lo
    if kind == "signed_percent":
        return (100 * (r_lo - 1), 100 * (r_hi - 1))
    scale = 100 if kind == "abs_percent" else 1
    far = max(abs(1 - r_lo), abs(1 - r_hi))
    near = 0.0 if r_lo <= 1 <= r_hi else min(abs(1 - r_lo), abs(1 - r_hi))
    return (scale * near, scale * far)


def _grid(raw, rows: Axis | None, cols: Axis, what: str) -> list[list[Value]]:
    """Rows of printed cells; a one-row table is a single string."""
    lines = [raw] if isinstance(raw, str) else list(raw)
    want_rows = len(rows.values) if rows else 1
    if len(lines) != want_rows:
        raise ValueError(f"{what} has {len(lines)} row(s), the table has {want_rows}")
    out = []
    for i, line in enumerate(lines):
        cells = line.split()
        if len(cells) != len(cols.values):
            raise ValueError(f"{what} row {i + 1} has {len(cells)} cells, the table has "
                             f"{len(cols.values)} columns ({cols.name})")
        out.append([Value.parse(c) for c in cells])
    return out


@dataclass
class PublishedTable:
    """One published table: a metric over a grid of configurations."""

    seed: str
    id: str
    cols: Axis
    rows: Axis | None = None
    table: str = ""
    section: str = ""
    program: str = ""
    setup: str = ""
    cores: int | None = None
    metric: str = ""
    units: str = ""
    built_at: dict = field(default_factory=dict)
    measured: list | None = None
    predicted: list | None = None
    eps: list | None = None
    error: str = "abs"
    stated: dict = field(default_factory=dict)
    exceptions: list = field(default_factory=list)
    mean_exception: str | None = None
    range_exception: str | None = None
    mean_from: str = "printed"       # "recomputed": the error column is too damaged to average
    notes: list = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict, seed: str, default_error: str) -> "PublishedTable":
        """A table from its entry in a seed's JSON file (ValueError naming what is wrong)."""
        unknown = set(d) - _TABLE_KEYS
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; "
                             f"expected some of {', '.join(sorted(_TABLE_KEYS))}")
        if "id" not in d or "cols" not in d:
            raise ValueError("a table needs an id and cols = {name = ..., values = [...]}")
        axis = lambda a: Axis(a["name"], tuple(a["values"])) if a else None  # noqa: E731
        rows, cols = axis(d.get("rows")), axis(d["cols"])
        error = d.get("error", default_error)
        if error not in ERRORS:
            raise ValueError(f"error = {error!r}; expected one of {', '.join(ERRORS)}")
        grids = {k: _grid(d[k], rows, cols, k) if k in d else None
                 for k in ("measured", "predicted", "eps")}
        if not any(grids.values()):
            raise ValueError("a table needs measured, predicted or eps values")
        t = cls(seed=seed, id=d["id"], rows=rows, cols=cols, error=error,
                **{k: d[k] for k in ("table", "section", "program", "setup", "cores",
                                      "metric", "units", "built_at", "stated", "exceptions",
                                      "mean_exception", "range_exception", "mean_from", "notes")
                                      if k in d},
                **grids)
        names = {cols.name} | ({rows.name} if rows else set())
        for e in t.exceptions:
            if set(e.get("at", {})) != names or not e.get("reason"):
                raise ValueError(f"exception {e!r}: needs at = {{{', '.join(sorted(names))}}} "
                                 "and a reason")
            if t.cell(**e["at"]) is None:
                raise ValueError(f"exception at {e['at']}: no such cell")
        return t

    @property
    def title(self) -> str:
        """``seed Table id: program, metric (setup)``."""
        return f"{self.seed} Table {self.table}: {self.program}, {self.metric} ({self.setup})"

    def cells(self) -> Iterator[Cell]:
        """Every configuration, row by row."""
        row_values = self.rows.values if self.rows else (None,)
        exc = {tuple(sorted(e["at"].items())): e["reason"] for e in self.exceptions}
        for i, rv in enumerate(row_values):
            for j, cv in enumerate(self.cols.values):
                at = ({self.rows.name: rv} if self.rows else {}) | {self.cols.name: cv}
                pick = lambda g: g[i][j] if g else None  # noqa: E731
                c = Cell(at, pick(self.measured), pick(self.predicted), pick(self.eps),
                         exception=exc.get(tuple(sorted(at.items()))))
                c._kind = self.error
                if c.measured and c.predicted and c.measured.known and c.predicted.known:
                    c.low, c.high = _error_range(self.error, c.measured, c.predicted)
                yield c

    def cell(self, **at) -> Cell | None:
        """The cell at the given row and column values, or None."""
        return next((c for c in self.cells() if c.at == at), None)

    def inconsistent(self) -> list[Cell]:
        """Cells whose printed error does not follow from the printed values."""
        return [c for c in self.cells() if c.consistent is False]

    def error_ranges(self) -> list[tuple[float, float, float]]:
        """(value, lowest, highest) of each cell's error, as :meth:`errors` takes it: a
        printed error to its rounding, a recomputed one over the printed values' rounding."""
        out = []
        for c in self.cells():
            printed = c.eps is not None and c.eps.known
            if printed and self.mean_from != "recomputed":
                v, h = c.eps.value, c.eps.half_ulp
                out.append((v, v - h, v + h))
            elif not math.isnan(c.recomputed):
                out.append((c.recomputed, c.low, c.high))
        return out

    def errors(self) -> list[float]:
        """The error of every cell: printed where legible (unless ``mean_from =
        "recomputed"``), else recomputed from the printed measured and predicted values."""
        return [v for v, _, _ in self.error_ranges()]

    def mean_eps(self) -> float:
        """The mean of :meth:`errors` (absolute values for signed errors)."""
        errs = [abs(e) for e in self.errors()]
        return sum(errs) / len(errs) if errs else math.nan

    def mean_range(self) -> tuple[float, float]:
        """The lowest and highest mean error that the printed cells allow (signed errors
        are averaged as they are; only seed 000's absolute errors have stated means)."""
        cells = self.error_ranges()
        if not cells:
            return (math.nan, math.nan)
        n = len(cells)
        return (sum(lo for _, lo, _ in cells) / n, sum(hi for _, _, hi in cells) / n)

    def text(self) -> str:
        """The table as rows of configuration, measured, predicted, printed error, recomputed."""
        head = ([self.rows.name] if self.rows else []) + [self.cols.name, "measured",
                                                          "predicted", "eps", "recomputed"]
        lines = [head]
        for c in self.cells():
            show = lambda v: v.text if v is not None else ""  # noqa: E731
            r = c.recomputed
            lines.append([str(v) for v in c.at.values()]
                         + [show(c.measured), show(c.predicted), show(c.eps),
                            "" if math.isnan(r) else f"{r:.4f}"])
        return "\n".join([self.title] + aligned(head, lines[1:], rule=False))


@dataclass
class PublishedSeed:
    """The published tables of one seed document (one JSON file)."""
    seed: str
    file: str
    work: str
    tables: list
    setups: dict = field(default_factory=dict)
    path: str = ""

    def table(self, id: str) -> PublishedTable:
        """The table ``id`` (an error naming the file and its tables if none)."""
        for t in self.tables:
            if t.id == id:
                return t
        raise QPNError(f"{self.path}: no table {id!r}; the tables are: "
                       f"{', '.join(t.id for t in self.tables)}")


def load_seed(path: str) -> PublishedSeed:
    """One seed's fixture file; a malformed file is a QPNError naming the file and table."""
    try:
        with open(path, "rb") as f:
            d = tomllib.load(f)
    except OSError as e:
        raise QPNError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise QPNError(f"{path}: not valid TOML: {e}") from None
    for key in ("seed", "file", "tables"):
        if key not in d:
            raise QPNError(f"{path}: missing top-level key {key!r} (seed, file, work, tables)")
    tables, seen = [], set()
    for k, raw in enumerate(d["tables"]):
        name = raw.get("id", f"#{k + 1}")
        try:
            t = PublishedTable.from_dict(raw, d["seed"], d.get("error", "abs"))
        except (ValueError, KeyError, TypeError) as e:
            raise QPNError(f"{path}: table {name}: {e}") from None
        if t.id in seen:
            raise QPNError(f"{path}: table {name}: the id is used twice")
        seen.add(t.id)
        tables.append(t)
    return PublishedSeed(d["seed"], d["file"], d.get("work", ""), tables,
                         d.get("setups", {}), path)


def load_all(directory: str = PUBLISHED_DIR) -> list[PublishedSeed]:
    """Every ``seed-*.toml`` in ``directory``, by name."""
    names = sorted(n for n in os.listdir(directory) if n.startswith("seed-") and n.endswith(".toml"))
    return [load_seed(os.path.join(directory, n)) for n in names]
