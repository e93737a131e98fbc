"""Memory: what this machine can give, the limit qpn keeps to, and the one refusal.

Every large allocation (a CTMC state space and its generator, simulator
buffers, dense structural matrices) first asks :func:`require` with an
estimate of its bytes.  Above the limit it raises :class:`MemoryLimitError`,
which says the estimate, the limit, where the limit comes from and how to
raise it, before anything is allocated.

The limit is, in order: :func:`set_memory_limit` (the CLI's
``--memory-limit``), the environment variable ``QPN_MEMORY_LIMIT``, else half
of the memory available now: ``MemAvailable`` of ``/proc/meminfo``, capped by
the cgroup's limit (containers) and by the address-space limit
(``ulimit -v``) less what the process already maps.

>>> parse_size("8GiB"), parse_size("512 MB"), parse_size("1.5g"), parse_size("4096")
(8589934592, 512000000, 1610612736, 4096)
>>> format_size(3 * 2**30), format_size(1536), format_size(12)
('3.0 GiB', '1.5 KiB', '12 B')
"""
from __future__ import annotations

import math
import os
import re
import resource
import time

from .errors import QPNError

ENV = "QPN_MEMORY_LIMIT"
OPTION = "--memory-limit"
#: share of the available memory qpn allows itself by default
DEFAULT_SHARE = 0.5

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 2**20, "mb": 10**6,
          "mib": 2**20, "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12,
          "tib": 2**40}
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*\Z")
_override: int | None = None


class MemoryLimitError(QPNError):
    """A computation would need more memory than qpn allows itself (said before allocating)."""

    def __init__(self, what: str, needed: float, limit: int, source: str, hint: str | None = None):
        self.what, self.needed, self.limit, self.source = what, needed, limit, source
        text = (f"error: {what} would need about {format_size(needed)}, above the memory limit of "
                f"{format_size(limit)} ({source})\n"
                f"hint: raise the limit with {OPTION} SIZE or {ENV}=SIZE (e.g. {OPTION} "
                f"{_suggest(needed)})")
        if hint:
            text += f", or {hint}"
        super().__init__(text)


def parse_size(text: str | int) -> int:
    """Bytes from '8GiB', '512 MB', '1.5g' (k/m/g/t alone are binary units) or a number."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text <= 0:
            raise QPNError(f"error: a memory size must be > 0, got {text}")
        return text
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise QPNError(f"error: '{text}' is not a memory size\n"
                       "expected: a number of bytes with an optional unit, e.g. 8GiB, 512MB, 2g")
    value = float(m.group(1)) * _UNITS[unit]
    if not math.isfinite(value) or value < 1:
        raise QPNError(f"error: a memory size must be at least 1 byte, got '{text}'")
    return int(value)


def format_size(n: float) -> str:
    """Binary units with one decimal ('3.0 GiB'); 'unbounded' for infinity."""
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 1024)):
        if n >= size:
            v = n / size
            return f"{v:.1f} {unit}" if v < 10_000 or unit != "TiB" else f"{v:.3g} {unit}"
    return f"{int(n)} B"


def round_size(n: float) -> str:
    """A whole number of MiB (or GiB from 1 GiB on) at or above ``n``, for a hint.

    >>> round_size(3 * 2**20 + 1), round_size(2**30), round_size(10)
    ('4MiB', '1GiB', '1MiB')
    """
    unit, size = ("GiB", 2**30) if n >= 2**30 else ("MiB", 2**20)
    return f"{max(1, math.ceil(n / size))}{unit}"


def size_from_env(name: str, default: int, example: str) -> int:
    """The size the environment variable ``name`` sets (``8MiB``), else ``default``; a
    QPNError naming the variable when it is not a size."""
    env = os.environ.get(name, "").strip()
    if not env:
        return default
    try:
        return parse_size(env)
    except QPNError:
        raise QPNError(f"error: {name}={env!r} is not a size\nexpected: a number of bytes "
                       f"with an optional unit, e.g. {example}") from None


def _suggest(needed: float) -> str:
    """A round size above ``needed`` for the hint ('12GiB')."""
    if not math.isfinite(needed) or needed > 2**60:
        return "64GiB"
    gib = needed / 2**30
    if gib < 1:
        return f"{max(1, math.ceil(needed / 2**20 * 1.25))}MiB"
    return f"{math.ceil(gib * 1.25)}GiB"


def _meminfo(field: str) -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_room() -> int | None:
    """What the cgroup still allows (v2: memory.max - memory.current; v1 likewise)."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit = _read_int(limit_file)
        if limit is not None and limit < 2**60:   # v1 writes a huge number for "no limit"
            return max(limit - (_read_int(usage_file) or 0), 0)
    return None


def _address_room() -> int | None:
    """What ``ulimit -v`` (RLIMIT_AS) still allows this process to map."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = 0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    mapped = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return max(soft - mapped, 0)


#: a reading of the machine is reused this long: a loop that checks its memory at
#: every step (CTMC levels) must not read /proc thousands of times a second
READING_SECONDS = 0.2
_reading: tuple[float, int] | None = None


def available_memory() -> int:
    """Bytes this process could still allocate: the least of the machine's available
    memory, the cgroup's room and the address-space room (4 GiB if none is known)."""
    global _reading
    now = time.monotonic()
    if _reading is not None and now - _reading[0] < READING_SECONDS:
        return _reading[1]
    rooms = [r for r in (_meminfo("MemAvailable"), _cgroup_room(), _address_room()) if r is not None]
    room = min(rooms) if rooms else 4 * 2**30
    _reading = (now, room)
    return room


def set_memory_limit(limit: int | str | None) -> None:
    """Set (or with None, clear) the limit for this process, as ``--memory-limit`` does."""
    global _override
    _override = None if limit is None else parse_size(limit)


def memory_limit() -> tuple[int, str]:
    """(bytes, where the limit comes from)."""
    if _override is not None:
        return _override, f"set by {OPTION}"
    env = os.environ.get(ENV, "").strip()
    if env:
        return parse_size(env), f"set by {ENV}"
    avail = available_memory()
    return int(avail * DEFAULT_SHARE), (f"half of the {format_size(avail)} this process can use "
                                        "now")


def require(what: str, nbytes: float, *, hint: str | None = None) -> None:
    """Refuse (MemoryLimitError) when ``nbytes`` is above the memory limit.

    ``what`` names the allocation in words ('the CTMC of 3.1e+08 states');
    ``hint`` is a second way out (a smaller parameter, another method)."""
    limit, source = memory_limit()
    if not nbytes <= limit:          # also refuses NaN
        raise MemoryLimitError(what, nbytes, limit, source, hint)


def fits(nbytes: float) -> bool:
    """Whether ``nbytes`` is within the memory limit (for choosing, not refusing)."""
    return nbytes <= memory_limit()[0]
