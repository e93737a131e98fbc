"""Progress with ETA for long computations, on tqdm, to stderr only.

One hook for every long loop (CTMC exploration and solve, sweeps; builds and
verify can use it the same way)::

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
    from tqdm import tqdm
    forced = os.environ.get("QPN_PROGRESS", "").strip() == "1"
    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
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
