"""Solver options: each solver declares one frozen dataclass of typed, documented options.

A field is declared with :func:`option`: its default, a one-line doc, a
:class:`Check` that converts a value (a Python value or the text of a command
line) and says what it expected, and the command-line flag that offers it, if
any.  Everything else is derived from these declarations: the names
``solvers.solve`` accepts, the checks of their values, ``qpn solve``'s flags
and the option list in its ``--help``.

A solver turns the mapping it is handed into its own dataclass with
:meth:`SolverOptions.of`.  Names that only another solver declares are ignored,
so that one mapping can serve ``auto`` (which may hand it to any method) and
``--compare``; a name no registered solver declares is an error.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo(SolverOptions):
...     tol: float = option(1e-10, "stopping tolerance", positive())
>>> Demo.of({"tol": "1e-6"}).tol
1e-06
>>> Demo.of({"tol": -1})
Traceback (most recent call last):
...
qpn.errors.SolverError: option tol=-1: must be > 0
"""
from __future__ import annotations

import dataclasses
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

from qpn.errors import SolverError, suggest

from .registry import all_solvers


class OptionValueError(ValueError):
    """A value an option cannot take; the message says what was expected."""


@dataclass(frozen=True)
class Check:
    """Converts a value of one option; raises :class:`OptionValueError`.

    ``what`` names the accepted values in the help text ("a number > 0").
    """
    convert: Callable[[Any], Any]
    what: str

    def __call__(self, value: Any) -> Any:
        return self.convert(value)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) else None


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise OptionValueError(f"expected {what}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise OptionValueError(f"expected {what}") from None


def real(test: Callable[[float], bool] = math.isfinite, need: str = "finite") -> Check:
    """A float for which ``test`` holds ("must be <need>" otherwise).

    >>> real()("2.5")
    2.5
    """
    def conv(v):
        x = _number(v, "a number")
        if not test(x):
            raise OptionValueError(f"must be {need}")
        return x
    return Check(conv, f"a number {need}" if need[0] in "<>" else f"a number, {need}")


def positive() -> Check:
    """A finite float > 0.

    >>> positive()(3), positive().what
    (3.0, 'a number > 0')
    """
    return real(lambda x: math.isfinite(x) and x > 0, "> 0")


def between(low: float, high: float, example: str = "") -> Check:
    """A float strictly between ``low`` and ``high``.

    >>> between(0, 1)("0.95")
    0.95
    """
    need = f"between {low:g} and {high:g}" + (f", e.g. {example}" if example else "")
    return real(lambda x: low < x < high, need)


def whole(low: int | None = None, what: str = "an integer") -> Check:
    """An int >= ``low``; text and integral floats ('1e6') are accepted.

    >>> whole(1)("1e3")
    1000
    """
    def conv(v):
        if isinstance(v, bool):
            raise OptionValueError(f"expected {what}")
        if isinstance(v, int):
            n = v
        else:
            s = _text(v)
            try:
                n = int(s) if s is not None and s.lstrip("+-").isdigit() else None
            except ValueError:
                n = None
            if n is None:
                x = _number(v, what)
                if not math.isfinite(x) or x != int(x):
                    raise OptionValueError(f"expected {what}")
                n = int(x)
        if low is not None and n < low:
            raise OptionValueError(f"must be >= {low}")
        return n
    return Check(conv, what + (f" >= {low}" if low is not None else ""))


def choice(*values: str) -> Check:
    """One of ``values`` (case-insensitive text).

    >>> choice("a", "b")("b")
    'b'
    """
    def conv(v):
        s = _text(v)
        if s is None or s.lower() not in values:
            raise OptionValueError("not one of " + ", ".join(values))
        return s.lower()
    return Check(conv, " | ".join(values))


def boolean() -> Check:
    """True or False (also yes/no, on/off, 1/0 as text).

    >>> boolean()("yes")
    True
    """
    def conv(v):
        if isinstance(v, bool):
            return v
        s = (_text(v) or str(v)).lower()
        if s in ("true", "yes", "on", "1"):
            return True
        if s in ("false", "no", "off", "0"):
            return False
        raise OptionValueError("expected true or false")
    return Check(conv, "true | false")


def duration(test: Callable[[float], bool] = lambda x: math.isfinite(x) and x > 0,
             need: str = "> 0") -> Check:
    """Seconds: a number, or text with a unit ('10 min').

    >>> duration()("20 ms")
    0.02
    """
    def conv(v):
        s = _text(v)
        if s is None:
            x = _number(v, "a time")
        else:
            try:
                x = float(s)
            except ValueError:
                x = _unit_seconds(s)
        if not test(x):
            raise OptionValueError(f"must be {need}")
        return x
    return Check(conv, f"a time {need} (seconds, or with a unit: '10 min')")


def _unit_seconds(text: str) -> float:
    from qpn.dsl.grammar import parse_expr
    from qpn.errors import QPNError
    from qpn.expr import evaluate
    try:
        return float(evaluate(parse_expr(text, "duration"), {}))
    except (QPNError, TypeError, ValueError, ZeroDivisionError):
        raise OptionValueError("expected a time") from None


def either(first: str, other: Check) -> Check:
    """The word ``first`` or a value of ``other``.

    >>> either("auto", whole(1))("auto"), either("auto", whole(1))("4")
    ('auto', 4)
    """
    def conv(v):
        if (_text(v) or "").lower() == first:
            return first
        try:
            return other(v)
        except OptionValueError as exc:
            raise OptionValueError(f"expected '{first}' or {other.what}"
                                   if str(exc).startswith("expected") else str(exc)) from None
    return Check(conv, f"{first} | {other.what}")


def optional(other: Check) -> Check:
    """None (the solver decides) or a value of ``other``.

    >>> optional(whole(1))(None) is None
    True
    """
    return Check(lambda v: None if v is None else other(v), other.what)


def names(allowed: tuple[str, ...]) -> Check:
    """A tuple of names out of ``allowed`` (a comma-separated text, or a sequence).

    >>> names(("x", "y"))("x,y")
    ('x', 'y')
    """
    def conv(v):
        items = [x.strip() for x in v.split(",")] if isinstance(v, str) else list(v)
        bad = [x for x in items if x not in allowed]
        if bad or not items:
            raise OptionValueError("expected names out of " + ", ".join(allowed))
        return tuple(items)
    return Check(conv, "names out of " + ", ".join(allowed))


def mapping() -> Check:
    """A mapping of names to expressions (text)."""
    def conv(v):
        if not isinstance(v, Mapping) or not all(isinstance(k, str) and isinstance(x, str)
                                                 for k, x in v.items()):
            raise OptionValueError("expected a mapping of names to expressions")
        return dict(v)
    return Check(conv, "name=expression pairs")


def patterns() -> Check:
    """A tuple of element name patterns (fnmatch: ``worker.*``), from a comma-separated
    text or a sequence; empty: every element.

    >>> patterns()("response.running, worker.*"), patterns()("")
    (('response.running', 'worker.*'), ())
    """
    def conv(v):
        items = [x.strip() for x in v.split(",")] if isinstance(v, str) else list(v)
        if not all(isinstance(x, str) for x in items):
            raise OptionValueError("expected element names or patterns (worker.*)")
        return tuple(x for x in items if x)
    return Check(conv, "element names or patterns, comma-separated")


def anything(what: str) -> Check:
    """Any value, unchecked (an address, a client object); ``what`` names it in the help.

    >>> anything("a label")("z")
    'z'
    """
    return Check(lambda v: v, what)


@dataclass(frozen=True)
class Flag:
    """How the command line offers an option: ``--name`` (or these names)."""
    names: tuple[str, ...] = ()
    metavar: str | None = None
    help: str | None = None           # longer than the doc, when the flag needs it


def option(default: Any, doc: str, check: Check, *, flag: Flag | bool | None = None,
           factory: Callable[[], Any] | None = None):
    """A dataclass field of a :class:`SolverOptions`."""
    meta = {"doc": doc, "check": check, "flag": Flag() if flag is True else flag or None}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class SolverOptions:
    """Base of every solver's options (a frozen dataclass of :func:`option` fields)."""
    #: what the options are about, in messages ("--seed is a simulation option")
    label: ClassVar[str] = "solver"

    @classmethod
    def fields(cls) -> tuple[dataclasses.Field, ...]:
        """The declared options (dataclass fields, their metadata holding doc, check and flag)."""
        return dataclasses.fields(cls)

    @classmethod
    def of(cls, given: Mapping[str, Any] | "SolverOptions" | None = None):
        """This solver's options from ``given``: names checked against every registered
        solver, values converted and checked, None meaning the default."""
        if isinstance(given, cls):
            return given
        if isinstance(given, SolverOptions):
            given = given.as_dict()
        given = dict(given or {})
        own = {f.name: f for f in cls.fields()}
        unknown = [k for k in given if k not in own]
        if unknown:
            known = option_names()
            for k in unknown:
                if k not in known:
                    hint = suggest(str(k), known)
                    raise SolverError(f"unknown solver option '{k}'" +
                                      (f"; did you mean '{hint}'?" if hint else
                                       f" (options: {', '.join(sorted(known))})"),
                                      construct="options")
        values = {}
        for k, v in given.items():
            if k in own and v is not None:
                values[k] = check_value(own[k], v)
        return cls(**values)

    def replace(self, **changes: Any):
        """A copy with ``changes`` (checked like :meth:`of`)."""
        own = {f.name: f for f in self.fields()}
        return dataclasses.replace(self, **{k: v if v is None else check_value(own[k], v)
                                            for k, v in changes.items()})

    def as_dict(self) -> dict:
        """Every option by name, defaults included."""
        return {f.name: getattr(self, f.name) for f in self.fields()}


def check_value(f: dataclasses.Field, value: Any) -> Any:
    """``value`` converted by the field's check; a SolverError naming the option if it fails."""
    try:
        return f.metadata["check"](value)
    except OptionValueError as exc:
        raise SolverError(f"option {f.name}={value!r}: {exc}", construct="options") from None


def option_names() -> set[str]:
    """Every option name some registered solver declares.

    >>> {"cutoff", "replications", "tol"} <= option_names()
    True
    """
    return {f.name for s in all_solvers() for f in s.Options.fields()}


def describe(cls: type[SolverOptions], indent: str = "  ") -> list[str]:
    """One line per option: name, default (``unset``: the solver decides), accepted values, doc."""
    out = []
    for f in cls.fields():
        d = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        shown = ("unset" if d is None or d == {} else ",".join(d) if isinstance(d, tuple)
                 else str(d).lower() if isinstance(d, bool) else str(d))
        out += textwrap.wrap(f"{f.name} ({shown}; {f.metadata['check'].what}): {f.metadata['doc']}",
                             width=92, initial_indent=indent, subsequent_indent=indent + "    ",
                             break_on_hyphens=False)
    return out


def describe_all() -> str:
    """The options of every registered solver, as in ``qpn solve --help``."""
    lines = []
    for s in all_solvers():
        if s.Options.fields():
            lines.append(f"{s.name}:")
            lines += describe(s.Options)
    return "\n".join(lines)


if __name__ == "__main__":     # the text of solvers.solve's docstring and qpn solve --help
    print(describe_all())
