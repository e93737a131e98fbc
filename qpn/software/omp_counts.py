"""The counts of an OpenMP work-sharing loop (:mod:`qpn.software.omp`): its threads, and how
its iterations split among them (static blocks, dynamic and guided chunks), folded to
numbers where they are numbers and kept as expressions of parameters otherwise.
"""
from __future__ import annotations

import math

from ..errors import ModelError
from ..expr import BinOp, Call, Expr, Num
from . import ast as sw

ONE = Num(1)


# ------------------------------------------------------------- folded arithmetic
def _int(e: Expr) -> int | None:
    """The value of a whole-number literal (None: an expression)."""
    if isinstance(e, Num) and e.unit is None and isinstance(e.value, (int, float)) \
            and math.isfinite(e.value) and e.value == int(e.value):
        return int(e.value)
    return None


def _fold(op: str, a: Expr, b: Expr) -> Expr:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return Num({"+": x + y, "-": x - y, "*": x * y}[op])
    if op == "*" and (x == 1 or y == 1):
        return b if x == 1 else a
    if op in "+-" and y == 0:
        return a
    return BinOp(op, a, b)


def _min(a: Expr, b: Expr) -> Expr:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return Num(min(x, y))
    return Call("min", (a, b))


def _ceil_div(a: Expr, b: Expr) -> Expr:
    """``ceil(a / b)``.

    >>> [_ceil_div(Num(n), Num(4)).value for n in (1, 4, 5, 8, 10)]
    [1, 1, 2, 2, 3]
    """
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return Num(-(-x // y))
    if y == 1:
        return a
    return Call("ceil", (BinOp("/", a, b),))


def static_split(n: Expr, t: Expr) -> tuple[Expr, Expr, Expr, Expr]:
    """(team, most, full, fewer): ``team = min(T, N)`` threads, ``full`` of them run
    ``most = ceil(N / team)`` iterations and ``fewer = team - full`` run ``most - 1``.

    >>> [tuple(x.value for x in static_split(Num(n), Num(t))) for n, t in ((10, 4), (8, 4), (3, 4))]
    [(4, 3, 2, 2), (4, 2, 4, 0), (3, 1, 3, 0)]
    """
    if n == t:                  # a parallel region: one iteration per thread
        return t, ONE, t, Num(0)
    team = _min(t, n)
    most = _ceil_div(n, team)
    full = _fold("-", n, _fold("*", team, _fold("-", most, ONE)))
    return team, most, full, _fold("-", team, full)


def dynamic_split(n: Expr, c: Expr) -> tuple[Expr, Expr]:
    """(chunks, last): ``ceil(N / C)`` chunks, the last of ``N - C * (chunks - 1)``
    iterations.

    >>> [tuple(x.value for x in dynamic_split(Num(10), Num(c))) for c in (1, 3, 5, 20)]
    [(10, 1), (4, 1), (2, 5), (1, 10)]
    """
    chunks = _ceil_div(n, c)
    if _int(c) == 1:
        return chunks, ONE
    return chunks, _fold("-", n, _fold("*", c, _fold("-", chunks, ONE)))


def guided_chunks(n: int, t: int, c: int = 1) -> list[int]:
    """The sizes of the chunks of ``schedule guided C``, in the order they are handed out:
    each is the iterations left divided by the threads, rounded up, at least C (the last
    may be smaller), as libgomp does.

    >>> guided_chunks(10, 4), guided_chunks(100, 4, 5), guided_chunks(3, 4)
    ([3, 2, 2, 1, 1, 1], [25, 19, 14, 11, 8, 6, 5, 5, 5, 2], [1, 1, 1])
    """
    sizes, left = [], n
    while left > 0:
        size = min(left, max(c, -(-left // t)))
        sizes.append(size)
        left -= size
    return sizes


def default_threads(table, st: sw.ParallelFor) -> sw.Cpu:
    """The cpu whose cores are the threads of a ``parallel for`` without ``threads``."""
    cpus = table.of(sw.Cpu)
    if len(cpus) == 1:
        return cpus[0]
    if not cpus:
        raise ModelError("a parallel for without 'threads' runs one thread per core of the "
                         "cpu, but no cpu is declared", st.loc,
                         expected="'threads <count>' after the number of iterations")
    raise ModelError("a parallel for without 'threads' runs one thread per core of the cpu, "
                     f"but there are several: {', '.join(d.name for d in cpus)}", st.loc,
                     expected="'threads <count>' after the number of iterations")
