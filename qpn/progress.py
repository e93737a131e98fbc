"""Progress with ETA for long computations, on tqdm, to stderr only.

One hook for every long loop (CTMC exploration and solve, sweeps; builds and
verify can use it the same way); counts show as integers or to a tenth, with their unit
(``10.6/100 %``, ``2/6 runs``, ``12.3k/20.0k states``)::

    with progress("exploring the CTMC", total=estimate, unit="states") as bar:
        ...
        bar.update(new_states)

A bar shows only when stderr is a terminal, the command was not asked to be
quiet (``configure(quiet=True)``, the CLI's ``-q``) and the work lasts more
than a second (tqdm's ``delay``); it erases itself when done, so tables and
JSON never contain it.  ``QPN_PROGRESS=1`` forces bars (for tests),
``QPN_PROGRESS=0`` turns them off.

>>> with progress("nothing to show", total=3) as bar:   # not a terminal: a no-op bar
...     bar.update(3)
>>> type(bar).__name__
'NullBar'
"""
from __future__ import annotations

import functools
import math
import os
import sys
from contextlib import contextmanager
from typing import Iterator

_quiet = False


class NullBar:
    """What :func:`progress` yields when no bar is shown: every call does nothing."""
    total = None
    n = 0

    def update(self, n: float = 1) -> None:
        """Count n more units (kept, so that callers may read ``n``)."""
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Nothing (tqdm's interface)."""

    def set_description_str(self, s: str = "", refresh: bool = True) -> None:
        """Nothing (tqdm's interface)."""

    def refresh(self) -> None:
        """Nothing (tqdm's interface)."""


def number(x: float | None) -> str:
    """A count or an amount as a bar shows it: whole numbers as integers, others to a
    tenth (three significant digits below 1), ``?`` when unknown.

    >>> [number(x) for x in (10.566954874594641, 100, 100.0, 0.0123456, 1234.56, None)]
    ['10.6', '100', '100', '0.0123', '1235', '?']
    """
    if x is None:
        return "?"
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x.is_integer():
        return str(int(x))
    if abs(x) >= 1000:
        return f"{x:.0f}"
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.3g}"


@functools.cache
def _bar_class():
    """tqdm with counts and rates shown by :func:`number` (large ones scaled, ``12.3k``)
    and the unit after them: ``10.6/100 % [00:01<00:09, 9.5 %/s]``, not
    ``10.566954874594641/100 [00:01<00:09,  9.50%/s]``."""
    from tqdm import tqdm

    class Bar(tqdm):
        @staticmethod
        def format_meter(n, total, elapsed, ncols=None, prefix="", ascii=False, unit="it",
                         unit_scale=False, rate=None, bar_format=None, postfix=None,
                         unit_divisor=1000, initial=0, colour=None, **extra):
            if bar_format is None:
                # as tqdm: a true unit_scale writes 12.3k, a number other than 1 multiplies
                sizeof = bool(unit_scale)
                k = float(unit_scale) if unit_scale and unit_scale not in (True, 1) else 1.0

                def fmt(v: float) -> str:
                    v = v * k
                    return (tqdm.format_sizeof(v, divisor=unit_divisor)
                            if sizeof and abs(v) >= 1000 else number(v))
                if rate is None and elapsed:
                    rate = (n - initial) / elapsed
                shown = f" {unit}" if unit and unit != "it" else ""
                if not rate:
                    speed = f"?{shown}/s"
                elif rate * k < 1:                   # slower than one a second: seconds each
                    speed = f"{number(1 / (rate * k))} s/{unit}"
                else:
                    speed = f"{fmt(rate)}{shown}/s"
                extra.update(n_fmt=fmt(n), total_fmt=fmt(total) if total else "?",
                             unit_shown=shown, speed=speed)
                bar_format = ("{l_bar}{bar}| {n_fmt}/{total_fmt}{unit_shown} "
                              "[{elapsed}<{remaining}, {speed}{postfix}]" if total else
                              ("{desc}: " if prefix else "")
                              + "{n_fmt}{unit_shown} [{elapsed}, {speed}{postfix}]")
            return tqdm.format_meter(n, total, elapsed, ncols=ncols, prefix=prefix, ascii=ascii,
                                     unit=unit, unit_scale=unit_scale, rate=rate,
                                     bar_format=bar_format, postfix=postfix,
                                     unit_divisor=unit_divisor, initial=initial, colour=colour,
                                     **extra)
    return Bar


def configure(*, quiet: bool) -> None:
    """Turn every bar of this process off (``quiet=True``) or back on."""
    global _quiet
    _quiet = bool(quiet)


def enabled() -> bool:
    """Whether a bar would show now."""
    forced = os.environ.get("QPN_PROGRESS", "").strip()
    if forced == "0" or _quiet:
        return False
    if forced == "1":
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(desc: str, total: float | None = None, unit: str = "it", *,
             delay: float = 1.0) -> Iterator:
    """A tqdm bar on stderr (or a :class:`NullBar`); ``total=None``: elapsed time and rate only.

    A ``total`` that is an estimate may be raised while running (``bar.total = n``)."""
    if not enabled():
        yield NullBar()
        return
    forced = os.environ.get("QPN_PROGRESS", "").strip() == "1"
    bar = _bar_class()(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                       dynamic_ncols=True, unit_scale=total is None or total >= 10_000,
                       delay=0 if forced else delay,
                       mininterval=0.25)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def ticking(desc: str) -> Iterator:
    """Elapsed time for one long call that reports nothing itself (a solver's
    factorization): a thread refreshes the bar twice a second."""
    with progress(desc, total=None, unit="s") as bar:
        if isinstance(bar, NullBar):
            yield bar
            return
        bar.bar_format = "{desc}: {elapsed} so far"     # a count of nothing would say 0
        import threading
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(0.5):
                bar.refresh()

        t = threading.Thread(target=tick, name="qpn-progress", daemon=True)
        t.start()
        try:
            yield bar
        finally:
            stop.set()
            t.join()
