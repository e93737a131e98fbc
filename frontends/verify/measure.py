"""Measure a suite's program over its grid: isolated, repeated round robin, cached.

Each run is the program in its own session with autogroup nice -19 (the
project's VM is shared: ../shared/guides/tracing-and-measuring.md).  The
repeats go round robin over the grid, so a slow spell of the machine spreads
over every point instead of falling on one.  A point whose samples spread more
than ``NOISY`` gets one more round.  The load average is kept with every
sample.  Samples are cached in ``.verify-cache.json`` by the program's hash and
arguments, so a second ``qpn verify`` measures nothing unless asked to.  Each
sample is written to the cache (atomically) as soon as it is taken: a run that
is killed keeps what it measured, and the next one measures only the rest.

Measured value per point: ``wall`` -- the median wall time of a run (s);
``rate`` -- (large - small) / (T(large) - T(small)) from the medians of runs at
the two values of ``over`` (per second: start-up and shut-down cancel);
``stdout`` -- the median of the number the pattern finds in the output.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

from qpn.errors import QPNError
from qpn.fileio import write_atomic
from qpn.progress import progress

from .isolation import ISOLATE

NOISY = 0.25


def _loadavg() -> float | None:
    try:
        with open("/proc/loadavg") as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def run_once(suite, values: dict, timeout: float = 600.0) -> dict:
    """One isolated run of the program: {"wall": s, "value": float | None, "load": 1-min load,
    "loop_ns": the machine's Python speed just before (frontends/calibrate.py)}."""
    from qpn.frontends.calibrate import python_loop_ns
    argv = suite.command(values)
    loop_ns = round(python_loop_ns(), 3)
    server = contextlib.nullcontext()
    if suite.server:                         # a server, and the program is its load
        from .server import running_server
        server = running_server(suite, values)
    with server:
        t0 = time.perf_counter()
        p = subprocess.run(ISOLATE + argv, capture_output=True, text=True, timeout=timeout,
                           cwd=os.path.dirname(suite.program))
        wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise QPNError(f"{suite.name}: `{' '.join(argv)}` exited with {p.returncode}: "
                       f"{p.stderr.strip()[-500:]}")
    value = None
    if suite.kind == "stdout":
        value = stdout_number(suite, p.stdout)
        if value is None:
            raise QPNError(f"{suite.name}: the pattern {suite.pattern!r} found nothing in the output "
                           f"of `{' '.join(argv)}`: {p.stdout.strip()[-300:]!r}")
    return {"wall": wall, "value": value, "load": _loadavg(), "loop_ns": loop_ns}


def stdout_number(suite, stdout: str) -> float | None:
    """The number the suite's ``[measure] pattern`` finds in a program's output (None: no
    pattern, or no match)."""
    m = re.search(suite.pattern, stdout) if suite.pattern else None
    return float(m.group(1)) if m else None


def runs_of(suite, point: dict) -> list[dict]:
    """The program configurations measured for one grid point (two for ``rate``)."""
    if suite.kind == "rate":
        return [{**point, suite.over: v} for v in suite.values]
    return [dict(point)]


def program_key(suite, values: dict) -> str:
    """The program file's hash and its arguments: what a cached sample or trace is of.
    This interpreter is written ``{python}`` (:func:`canonical_key`)."""
    key = f"{_file_hash(suite.program, os.path.getmtime(suite.program))} {json.dumps(suite.argv(values))}"
    if suite.launcher:                   # mpiexec -n RANKS: the ranks are part of the run
        key += f" launcher {json.dumps(suite._fill(list(suite.launcher), values, 'program.launcher'))}"
    return canonical_key(key + (f" server {json.dumps(suite.server_argv(values))}"
                                if suite.server else ""))


def canonical_key(key: str) -> str:
    """``key`` with this interpreter's path as ``{python}``: ``qpn verify`` runs as
    ``.venv/bin/python3`` (the console script) and ``python -m pytest`` as
    ``.venv/bin/python``, one interpreter; a key that kept the spelling made each retrace
    and remeasure what the other had recorded.  Older keys are read through it too."""
    for n in _spellings(sys.executable):
        key = key.replace(n, "{python}")
    return key


@functools.lru_cache(maxsize=4)
def _spellings(exe: str) -> tuple:
    """The paths naming interpreter ``exe`` (as JSON writes them), longest first."""
    names = {exe, os.path.realpath(exe)} | {os.path.join(os.path.dirname(exe), n)
                                            for n in ("python", "python3")}
    same = [n for n in names if os.path.realpath(n) == os.path.realpath(exe)]
    return tuple(json.dumps(n)[1:-1] for n in sorted(same, key=len, reverse=True))


@functools.lru_cache(maxsize=32)
def _file_hash(path: str, mtime: float) -> str:
    """sha256 of a file, read once per modification (``mtime`` is part of the key)."""
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def setup(suite, log=sys.stderr) -> None:
    """Run the suite's ``setup`` command (installs what the suite runs, e.g. a server)."""
    if not suite.setup:
        return
    argv = suite._fill(suite.setup, {}, "setup")
    p = subprocess.run(argv, capture_output=True, text=True, cwd=suite.dir, timeout=900)
    if p.returncode != 0:
        raise QPNError(f"{suite.name}: setup `{' '.join(argv)}` exited with {p.returncode}: "
                       f"{(p.stderr or p.stdout).strip()[-500:]}")
    print(f"verify {suite.name}: setup `{' '.join(argv)}` done", file=log)


def measure(suite, *, remeasure: bool = False, log=sys.stderr) -> dict:
    """{point index: {"value", "spread", "range", "samples", "loads"}} for every grid point.

    Every sample goes to the cache file (atomically) as soon as it is measured: a run that
    is killed (SIGKILL, Ctrl-C) keeps what it measured, and the next run measures only
    what is missing (the repeats, then the extra round of the noisy points)."""
    cache_path = os.path.join(suite.dir, ".verify-cache.json")
    try:
        with open(cache_path) as fh:
            cache = {} if remeasure else json.load(fh)
    except (OSError, ValueError):
        cache = {}
    merged: dict = {}                        # keys written before canonical_key, read through it
    for k, v in cache.items():
        merged.setdefault(canonical_key(k), []).extend(v)
    cache = merged
    if remeasure:                            # the old samples are gone, also if killed before
        write_atomic(cache_path, json.dumps(cache, indent=1))    # the first new one

    def take(k: str, values: dict) -> None:
        """One more sample of configuration ``k``, kept on disk before the next run."""
        cache.setdefault(k, []).append(run_once(suite, values))
        write_atomic(cache_path, json.dumps(cache, indent=1))

    points = suite.points()
    configs = [(i, c) for i, p in enumerate(points) for c in runs_of(suite, p)]
    need = {program_key(suite, c): c for _, c in configs}
    todo = [k for k in need if len(cache.get(k, [])) < suite.repeats]
    runs = sum(max(0, suite.repeats - len(cache.get(k, []))) for k in todo)
    with progress(f"verify {suite.name}: measuring", total=runs or None, unit="runs") as bar:
        for r in range(suite.repeats):
            for k in todo:
                if len(cache.setdefault(k, [])) <= r:
                    take(k, need[k])
                    bar.update(1)
            if todo:
                print(f"verify {suite.name}: round {r + 1}/{suite.repeats} measured", file=log)
    out = _values(suite, points, cache)
    noisy = [i for i, v in out.items() if v["spread"] > NOISY]
    # one more round for the noisy points: in a run that measured, or to finish the round a
    # killed run began (some configuration has its extra sample already)
    begun = any(len(cache.get(k, [])) > suite.repeats for k in need)
    extra = {program_key(suite, c): c for i in noisy for c in runs_of(suite, points[i])}
    extra = {k: c for k, c in extra.items() if len(cache[k]) <= suite.repeats}
    if (todo or begun) and extra:
        for k, c in extra.items():
            take(k, c)
        out = _values(suite, points, cache)
    return out


def _values(suite, points, cache) -> dict:
    out = {}
    for i, p in enumerate(points):
        samples = [cache[program_key(suite, c)] for c in runs_of(suite, p)]
        if suite.kind == "rate":
            (small, large), (a, b) = samples, suite.values
            t_small = statistics.median(s["wall"] for s in small)
            t_large = statistics.median(s["wall"] for s in large)
            if t_large <= t_small:
                raise QPNError(f"{suite.name}: at {p}, {suite.over}={b} did not take longer than "
                               f"{suite.over}={a}: no rate to measure")
            value = (b - a) / (t_large - t_small)
            walls = [s["wall"] for s in large]
            # the rate of each round (its small and large run, measured close in time)
            each = [(b - a) / (ls["wall"] - ss["wall"]) for ss, ls in zip(small, large)
                    if ls["wall"] > ss["wall"]]
        else:
            key = "wall" if suite.kind == "wall" else "value"
            walls = [s[key] for s in samples[0]]
            value = statistics.median(walls)
            each = walls
        med = statistics.median(walls)
        spread = (max(walls) - min(walls)) / med if med > 0 else 0.0
        loads = [s["load"] for group in samples for s in group if s["load"] is not None]
        loops = [s.get("loop_ns") for group in samples for s in group]
        out[i] = {"value": value, "spread": spread, "samples": len(walls),
                  # lowest and highest of the repeats, in the measured value's unit
                  "range": (min(each + [value]), max(each + [value])),
                  "load": (min(loads), max(loads)) if loads else None,
                  # every sample calibrated, or none counts (a cache from before calibration)
                  "loop_ns": loops if loops and all(loops) else None}
    return out


__all__ = ["measure", "setup", "run_once", "runs_of", "program_key", "canonical_key", "ISOLATE"]
