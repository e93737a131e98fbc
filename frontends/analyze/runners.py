"""What an analysis of a trace produces: the options of ``qpn build``, the runners (a pool
of threads, or the main thread, with the body the model gives it), and the
:class:`Analysis` the model writer (:mod:`.model`) reads."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from qpn.errors import QPNError

from .objects import ObjectTable
from .sockets import SocketLinks
from .naming import Sources
from .structure import Tokens
from .threads import Group


#: how the model's host cpu may share the machine's cores: any thread on any core, or
#: per-core run queues (docs/analyzer.md, Cores)
CPU_POLICIES = ("ps", "jsq-ps")


@dataclass
class Options:
    """Knobs of ``qpn build`` (times in ns)."""

    prune: float = 0.03               # drop fragments below this share of a runner's CPU / I/O
    demands: str = "fitted"           # fitted | empirical
    io_threshold: int = 50_000        # I/O faster than this is a page-cache hit
    slack: float = 0.05               # CPU share outside a steady-state loop that may be dropped
    gil: bool | None = None           # model the GIL (None: as the trace header says)
    cpu: str = "ps"                   # the host's discipline: ps | jsq-ps (CPU_POLICIES)
    source_dir: str | None = None     # the program's files (None: the cwd the trace recorded)

    def __post_init__(self):
        if self.cpu not in CPU_POLICIES:
            raise QPNError(f"--cpu {self.cpu}: the cores are shared by "
                           f"{' or '.join(CPU_POLICIES)} (qpn/disciplines)")
        # checked here, before a long trace is read for nothing
        if self.source_dir and not os.path.isdir(self.source_dir):
            raise QPNError(f"--source-dir {self.source_dir}: no such directory")


@dataclass
class Runner:
    """A pool of threads (or the main thread) and the body the model gives it."""

    name: str
    group: Group
    mode: str                         # forever | counted | omitted
    header: int | None = None
    latch: int | None = None          # forever: iterations end after this token, not at header
    items: list = field(default_factory=list)
    walks: list = field(default_factory=list)
    exits: int = 0
    warm: int = 0                     # forever: first iterations left out (a JIT's warm-up)
    iterations: int = 0
    why: str = ""
    width: int | None = None          # threads at once, where fewer (forked in rounds: forks.py)
    serial: tuple = (0, 0)            # main thread's CPU before and after its modelled run (ns)

    @property
    def size(self) -> int:
        """The number of threads of the runner (at once)."""
        return self.width or len(self.group.tids)


@dataclass
class Analysis:
    """Everything the model writer needs."""

    trace: object
    options: Options
    objects: ObjectTable
    tokens: Tokens
    runners: list
    links: SocketLinks
    sources: Sources
    gil: bool
    shares: dict                      # leaf id -> GIL-free share
    queue_flow: dict                  # queue key -> flow facts
    external: dict                    # queue key -> sorted arrival times (ns)
    phase: tuple | None
    warnings: list = field(default_factory=list)
    traced_sites: frozenset = frozenset()
    timings: dict = field(default_factory=dict)     # seconds per stage
    joins: list = field(default_factory=list)       # joins.Join: batches that wait for a pool
    probe_ns: int = 0                 # the tracer's own CPU per event, taken off the fragments
    notes: list = field(default_factory=list)       # header lines: what was read how
    phase_by: str = "hand-overs"      # what bounds the work phase: hand-overs | threads
    wakeups: dict = field(default_factory=dict)     # process -> wake-up times, ns (wakeups.py)
    selecting: frozenset = frozenset()              # threads that waited in select (selects.py)
