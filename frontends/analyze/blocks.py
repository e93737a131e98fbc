"""Small helpers over structured bodies: time sums, lock pairing, comments.

>>> from qpn.frontends.analyze.structure import Leaf
>>> cpu_sum(Leaf(("cpu", None, "p.py:1")))
0.0
"""
from __future__ import annotations

from .fit import fmt_time, uneven
from .structure import Branch, Leaf, Loop


class Ctx:
    """Per-runner state while its body is written."""

    def __init__(self, runner):
        self.runner = runner
        self.last_site = None         # site of the step written last (the one before)
        self.cpu_total = 0.0
        self.io_total = 0.0
        self.bad_mutex: set = set()
        self.pruned = 0
        self.pruned_time = 0.0
        self.pruned_cpu = 0.0         # CPU (ns) of the CPU fragments left out: kept in the model
        self.receiver = None          # the leaf whose demand takes it (model.py, _receiver)
        self.received = None          # what its cpu step was written from
        self.steps: list = []
        self.speedups: list = []

    def prune(self, ns: float, cpu: float = 0.0) -> None:
        """Count a fragment left out, its time (ns) and its CPU (ns), which the model keeps
        in one step (each below the threshold, together they may not be: 18% of a worker's
        CPU in suites/sized_items)."""
        self.pruned += 1
        self.pruned_time += ns
        self.pruned_cpu += cpu

    @property
    def pruned_share(self) -> float:
        """The share of the runner's CPU and I/O time left out."""
        total = self.cpu_total + self.io_total
        return self.pruned_time / total if total else 0.0


def per_thread_note(lf: Leaf, group) -> str | None:
    """A comment line when the threads of a pool spent clearly different CPU on
    one fragment (means 1.2x apart or more, 3+ executions each): the model uses
    the pool's mean, and the reason may be the program's (uneven work) or the
    machine's (cores at different speeds while it was traced)."""
    by: dict = {}
    for s in lf.steps:
        if s.cpu is not None:
            by.setdefault(s.tid, []).append(s.cpu)
    means = uneven(by)
    if means is None:
        return None
    names = dict(zip(group.tids, group.thread_names))
    parts = ", ".join(f"{names.get(t) or t} {fmt_time(m)}" for t, m in sorted(means.items()))
    return (f"# per thread: {parts}; the mean is used (uneven work, or cores at different "
            "speeds while traced)")


def cpu_sum(lf: Leaf) -> float:
    """CPU ns of the fragments before a leaf's operation, over all its executions."""
    v = lf.__dict__.get("_cpu")
    if v is None:
        v = lf.__dict__["_cpu"] = float(sum(s.cpu for s in lf.steps if s.cpu is not None))
    return v


def io_sum(lf: Leaf) -> float:
    """I/O ns of a leaf's operation (file I/O only)."""
    if lf.action != "io":
        return 0.0
    v = lf.__dict__.get("_io")
    if v is None:
        v = lf.__dict__["_io"] = float(sum(s.dur for s in lf.steps))
    return v


def lock_comment(lf: Leaf) -> str:
    """The comment above a ``lock``: acquisitions, contention, mean wait."""
    n = len(lf.steps)
    waits = [s.blocked for s in lf.steps]
    cont = sum(1 for s in lf.steps if s.ev.get("contended")) / n if n else 0
    return (f"# {n} acquisitions at {lf.token[2]}, {100 * cont:.0f}% contended, "
            f"mean wait {fmt_time(sum(waits) / n if n else 0)}")


def walk_locks(items, key, held, cond_mutex):
    """Whether mutex ``key`` is held after ``items`` (starting with ``held``).

    Returns True/False, or None when some path unlocks it without holding it,
    locks it twice, waits on its condition without it, or two paths disagree.
    """
    for it in items:
        if held is None:
            return None
        if isinstance(it, Leaf):
            a, k = it.action, it.token[1]
            if a == "lock" and k == key:
                if held:
                    return None
                held = True
            elif a == "unlock" and k == key:
                if not held:
                    return None
                held = False
            elif a == "wait" and cond_mutex(k) == key and not held:
                return None
        elif isinstance(it, Loop):
            after = walk_locks(it.body, key, held, cond_mutex)
            if after != held:
                return None
        elif isinstance(it, Branch):
            ends = {walk_locks(alt, key, held, cond_mutex) for _, alt in it.alts}
            if len(ends) != 1 or None in ends:
                return None
            held = ends.pop()
    return held
