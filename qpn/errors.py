"""User-facing errors with source locations.

Every mistake a user can make in a model raises a :class:`ModelError` (or a
subclass).  Its string form is what the CLI prints instead of a traceback::

    models/web.qpn:12:21: error: undefined place 'cpus'
       12 | transition start : idle, requests(x) -> cpus(x)
          |                                         ^^^^
    expected: a place declared in this net
    hint: did you mean 'cpu'?
"""
from __future__ import annotations

import difflib
from typing import Iterable


class Loc:
    """A position in a source file (1-based line and column).

    A plain slotted class: models hold one per element, so it must be cheap.
    Locations never take part in model equality.

    >>> loc = Loc("web.qpn", 2, 7, source="place idle\\nplace cpus")
    >>> str(loc), loc
    ('web.qpn:2:7', Loc('web.qpn', 2, 7))
    """

    __slots__ = ("file", "line", "col", "end_line", "end_col", "source")

    def __init__(self, file: str = "<string>", line: int = 0, col: int = 0,
                 end_line: int = 0, end_col: int = 0, source: str | None = None):
        self.file, self.line, self.col = file, line, col
        self.end_line, self.end_col, self.source = end_line, end_col, source

    def __repr__(self) -> str:
        return f"Loc({self.file!r}, {self.line}, {self.col})"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def with_end(self, end_line: int) -> "Loc":
        """The same location spanning to ``end_line``.

        >>> Loc("web.qpn", 2, 7).with_end(4).end_line
        4
        """
        return Loc(self.file, self.line, self.col, end_line, self.end_col, self.source)

    def line_text(self) -> str | None:
        """The text of the located line (None without the source).

        >>> Loc("web.qpn", 2, 7, source="place idle\\nplace cpus").line_text()
        'place cpus'
        >>> Loc("web.qpn", 2, 7).line_text() is None
        True
        """
        if self.source is None or self.line <= 0:
            return None
        start = 0
        for _ in range(self.line - 1):
            start = self.source.find("\n", start) + 1
            if start == 0:
                return None
        end = self.source.find("\n", start)
        return self.source[start:] if end < 0 else self.source[start:end]


def either(choices: Iterable[str]) -> str:
    """Choices in words, for a message: ``a``, ``a or b``, ``a, b or c``.

    >>> either(["ps"]), either(["ps", "fcfs", "rr"])
    ('ps', 'ps, fcfs or rr')
    """
    items = list(choices)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """Closest candidate to ``name`` for a did-you-mean hint, or None.

    >>> suggest('cpus', ['cpu', 'disk'])
    'cpu'
    """
    cands = sorted({c for c in candidates if c != name})
    best = difflib.get_close_matches(name, cands, n=1, cutoff=0.6)
    if best:
        return best[0]
    low = {c.lower(): c for c in cands}
    return low.get(name.lower())


class QPNError(Exception):
    """Base class of all errors qpn reports to users (no traceback in the CLI).

    >>> import qpn
    >>> try:
    ...     qpn.load("no_such_model.qpn")
    ... except qpn.QPNError as e:
    ...     print(type(e).__name__, str(e).splitlines()[0])
    ModelError error: no such model file: no_such_model.qpn
    >>> print(QPNError("plots need matplotlib", hint="pip install matplotlib"))
    plots need matplotlib
    hint: pip install matplotlib
    """
    hint: str | None = None

    def __init__(self, *args, hint: str | None = None):
        if hint is not None:      # subclasses that render their own hint pass none here
            self.hint = hint
            args = (f"{args[0]}\nhint: {hint}",) + args[1:] if args else (f"hint: {hint}",)
        super().__init__(*args)


class ModelError(QPNError):
    """A mistake in a model: where, what, what was expected, and a hint.

    >>> import qpn
    >>> try:
    ...     qpn.parse("place idle\\ntransition t : idle -> cpus", path="web.qpn")
    ... except qpn.ModelError as e:
    ...     print(e.loc, e.message)
    web.qpn:2:24 undefined place 'cpus'
    """

    def __init__(self, message: str, loc: Loc | None = None, *,
                 expected: str | None = None, hint: str | None = None,
                 did_you_mean: str | None = None):
        self.message = message
        self.loc = loc
        self.expected = expected
        self.hint = hint
        self.did_you_mean = did_you_mean
        super().__init__(self.render())

    def render(self) -> str:
        """The message as printed: ``file:line:col: error: ...``, the line with carets
        under the located span, what was expected, and the hints.

        >>> e = ModelError("undefined place 'cpus'", did_you_mean="cpu",
        ...                loc=Loc("m.qpn", 1, 13, 1, 17, source="t : idle -> cpus"))
        >>> print(e.render())
        m.qpn:1:13: error: undefined place 'cpus'
         1 | t : idle -> cpus
           |             ^^^^
        hint: did you mean 'cpu'?
        """
        head = f"{self.loc}: error: {self.message}" if self.loc else f"error: {self.message}"
        out = [head]
        text = self.loc.line_text() if self.loc else None
        if text is not None:
            num = str(self.loc.line)
            pad = " " * len(num)
            out.append(f" {num} | {text}")
            width = 1
            if self.loc.end_line == self.loc.line and self.loc.end_col > self.loc.col:
                width = self.loc.end_col - self.loc.col
            caret = " " * (max(self.loc.col, 1) - 1) + "^" * width
            out.append(f" {pad} | {caret}")
        if self.expected:
            out.append(f"expected: {self.expected}")
        if self.did_you_mean:
            out.append(f"hint: did you mean '{self.did_you_mean}'?")
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)


class ParameterError(ModelError):
    """A bad parameter value or override (e.g. ``--set threads=four``).

    >>> import qpn
    >>> net = qpn.parse("param threads = 4\\nplace idle init threads")
    >>> try:
    ...     net.with_params(threads="four")
    ... except qpn.ParameterError as e:
    ...     print(e.message)
    parameter 'threads' must be a number or an expression of parameters; 'four' is neither
    """


class SolverError(QPNError):
    """A solver cannot handle a model; names the construct and who can.

    >>> import qpn
    >>> net = qpn.parse("place a init 1\\nplace b\\ntransition t : a -> b delay uniform(1, 2)\\n"
    ...                 "transition u : b -> a delay exp(1)")
    >>> try:
    ...     qpn.solve(net, "mva")
    ... except qpn.SolverError as e:
    ...     print(e.methods)
    ('ctmc', 'des')
    >>> str(SolverError("no guards here", construct="guard", methods=["des"]))
    'no guards here (methods that can: des)'
    """

    def __init__(self, message: str, *, construct: str | None = None,
                 methods: Iterable[str] = ()):
        self.construct = construct
        self.methods = tuple(methods)
        text = message
        if self.methods:
            text += f" (methods that can: {', '.join(self.methods)})"
        super().__init__(text)


def undefined(kind: str, name: str, loc: Loc | None, candidates: Iterable[str],
              expected: str | None = None) -> ModelError:
    """Standard 'undefined X' error with a did-you-mean suggestion."""
    cands = list(candidates)
    return ModelError(f"undefined {kind} '{name}'", loc,
                      expected=expected or f"a {kind} declared in this net",
                      did_you_mean=suggest(name, cands))
