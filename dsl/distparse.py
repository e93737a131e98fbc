"""Build distribution objects from the arguments written in a model."""
from __future__ import annotations

import os
import re

from qpn.distributions import (DISTRIBUTIONS, Det, Empirical, Erlang, Exp, Gamma, HyperExp,
                               HyperExpFit, Lognormal, Normal, Uniform)
from qpn.errors import Loc, ModelError, suggest
from qpn.expr import UNITS, BinOp, Num, Ref, evaluate

# name -> (parameter names, class); positional order = parameter order
_SIGNATURES = {
    "exp": (("mean",), Exp),
    "det": (("value",), Det),
    "uniform": (("lo", "hi"), Uniform),
    "erlang": (("k", "mean"), Erlang),
    "gamma": (("mean", "scv"), Gamma),
    "lognormal": (("mean", "scv"), Lognormal),
    "normal": (("mu", "sigma"), Normal),
}


def _signature_text(name: str) -> str:
    if name == "hyperexp":
        return "hyperexp(p1: mean1, p2: mean2, ...) or hyperexp(mean = m, scv = c)"
    if name in ("empirical", "replay"):
        return f'{name}([1.2, 3.4, ...], unit = ms) or {name}("samples.txt", unit = ms, column = 1)'
    if name == "exp":
        return "exp(mean) or exp(rate = r)"
    params = _SIGNATURES[name][0]
    return f"{name}({', '.join(params)})"


def build_distribution(name: str, args: list, loc: Loc | None, name_loc: Loc, base_dir: str):
    """The distribution ``name(args)`` checked against its signature (sample files of
    ``empirical``/``replay`` read relative to ``base_dir``); a located error otherwise."""
    if name not in DISTRIBUTIONS:
        raise ModelError(f"unknown distribution '{name}'", name_loc,
                         expected="one of " + ", ".join(DISTRIBUTIONS),
                         did_you_mean=suggest(name, DISTRIBUTIONS))
    sig = _signature_text(name)
    if name == "hyperexp":
        return _hyperexp(args, loc, sig)
    if name in ("empirical", "replay"):
        return _empirical(name, args, loc, sig, base_dir)
    params, cls = _SIGNATURES[name]
    values: dict[str, object] = {}
    pos = 0
    for kind, key, value, where in args:
        if kind == "pos":
            if pos >= len(params):
                raise ModelError(f"{name} takes {len(params)} argument(s)", where, expected=sig)
            values[params[pos]] = value
            pos += 1
        elif kind == "named":
            if name == "exp" and key == "rate":
                key, value = "mean", BinOp("/", Num(1), value, where)
            if key not in params:
                raise ModelError(f"{name} has no argument '{key}'", where, expected=sig,
                                 did_you_mean=suggest(key, params + (("rate",) if name == "exp" else ())))
            if key in values:
                raise ModelError(f"argument '{key}' given twice", where, expected=sig)
            values[key] = value
        else:
            raise ModelError(f"unexpected argument form in {name}(...)", where, expected=sig)
    missing = [p for p in params if p not in values]
    if missing:
        raise ModelError(f"{name} is missing argument '{missing[0]}'", loc, expected=sig)
    return cls(*[values[p] for p in params], loc=loc)


def _hyperexp(args, loc, sig):
    pairs = [a for a in args if a[0] == "pair"]
    named = {a[1]: a for a in args if a[0] == "named"}
    other = [a for a in args if a[0] not in ("pair", "named")]
    if other:
        raise ModelError("hyperexp arguments are 'probability: mean' pairs", other[0][3], expected=sig)
    if pairs and named:
        raise ModelError("give either 'p: mean' branches or mean/scv, not both", loc, expected=sig)
    if pairs:
        return HyperExp(tuple(a[1] for a in pairs), tuple(a[2] for a in pairs), loc=loc)
    for key, a in named.items():
        if key not in ("mean", "scv"):
            raise ModelError(f"hyperexp has no argument '{key}'", a[3], expected=sig,
                             did_you_mean=suggest(key, ["mean", "scv"]))
    if set(named) != {"mean", "scv"}:
        raise ModelError("hyperexp needs branches or both mean and scv", loc, expected=sig)
    return HyperExpFit(named["mean"][2], named["scv"][2], loc=loc)


def _const(value, where, what):
    try:
        return evaluate(value, {})
    except ModelError:
        raise ModelError(f"{what} must be a number (no parameters)", where) from None


def _empirical(name, args, loc, sig, base_dir):
    data = None
    unit = None
    column = None
    source = None
    for kind, key, value, where in args:
        if kind in ("list", "string"):
            if data is not None:
                raise ModelError("samples given twice", where, expected=sig)
            data = (kind, value, where)
        elif kind == "named" and key == "unit":
            if not isinstance(value, Ref) or value.name not in UNITS:
                raise ModelError("unit must be a time unit", where, expected=", ".join(UNITS),
                                 did_you_mean=suggest(getattr(value, "name", ""), UNITS))
            unit = value.name
        elif kind == "named" and key == "column":
            column = _const(value, where, "column")
            if not isinstance(column, int) or column < 1:
                raise ModelError("column must be a whole number >= 1", where)
        else:
            raise ModelError(f"unexpected argument in {name}(...)", where, expected=sig)
    if data is None:
        raise ModelError(f"{name} needs samples", loc, expected=sig)
    kind, value, where = data
    if kind == "list":
        units = {v.unit for v in value if isinstance(v, Num)}
        if unit is None and len(units) == 1 and None not in units and all(
                isinstance(v, Num) for v in value):
            unit = units.pop()  # [1 ms, 2 ms] keeps its unit: [1, 2] with unit = ms
            value = [Num(v.value) for v in value]
        samples = []
        for v in value:
            if unit is not None and isinstance(v, Num) and v.unit:
                raise ModelError("give units either per sample or with 'unit =', not both", where)
            samples.append(_const(v, where, "a sample"))
        if column is not None:
            raise ModelError("'column' applies to sample files only", where)
    else:
        source = value
        samples = read_samples(os.path.join(base_dir, value), column or 1, where)
    if not samples:
        raise ModelError(f"{name} has no samples", where or loc, expected=sig)
    bad = [s for s in samples if not isinstance(s, (int, float)) or s < 0]
    if bad:
        raise ModelError(f"samples must be numbers >= 0, got {bad[0]!r}", where)
    return Empirical(tuple(samples), replay=(name == "replay"), unit=unit, source=source,
                     column=column, loc=loc)


def read_samples(path: str, column: int, where: Loc | None) -> list[float]:
    """Read one column of numbers (whitespace/comma separated, '#' comments)."""
    if not os.path.isfile(path):
        raise ModelError(f"sample file not found: {path}", where,
                         hint="paths are relative to the model file")
    out = []
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ModelError(f"{path}:{line}: the sample file is not UTF-8 text "
                         f"(byte 0x{data[exc.start:exc.start + 1].hex()})", where,
                         expected="numbers in a UTF-8 text file") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f for f in re.split(r"[,\s]+", line) if f]
        if len(fields) < column:
            raise ModelError(f"{path}:{lineno}: has no column {column}", where)
        try:
            out.append(float(fields[column - 1]))
        except ValueError:
            if not out:  # a header line
                continue
            raise ModelError(f"{path}:{lineno}: '{fields[column - 1]}' is not a number", where) from None
    return out
