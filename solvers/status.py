"""What a solve run ended with: the exit statuses of ``qpn solve`` and the degenerate nets
behind some of them, in one place (the CLI, its ``--help`` and the docs read them here).

A *degenerate* net has no steady state to report: it is empty (no places, or no tokens
and no transition that creates any), it deadlocks (a reachable marking where nothing can
happen), or it is unstable (tokens pile up without bound).  A solver that finds one sets
``Result.degenerate`` to the kind and ``Result.reason`` to what it found; the table
header, the JSON and the exit status say so instead of printing numbers that mean nothing.

>>> int(ExitStatus.DEADLOCK), exit_status(["unstable", "imprecise"])
(4, <ExitStatus.UNSTABLE: 5>)
"""
from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import numpy as np

from qpn.errors import SolverError


class ExitStatus(IntEnum):
    """The exit status of ``qpn solve`` (and ``Result.status``): how the run ended."""
    OK = 0            # the numbers answer the question
    FAILED = 1        # a sweep point failed (its error is printed)
    ERROR = 2         # a mistake in the model or the command line (printed with its location)
    IMPRECISE = 3     # a simulation stopped before its precision target, or a CTMC solve stalled
    DEADLOCK = 4      # the net reaches a marking where nothing can happen
    UNSTABLE = 5      # tokens pile up without bound (arrivals above service, or never leave)
    EMPTY = 6         # nothing to solve: no places, or no tokens and no transition creating any
    INTERRUPTED = 130  # Ctrl-C: the results printed are partial


#: what each status means, for ``qpn solve --help`` and the docs
MEANING = {
    ExitStatus.OK: "solved",
    ExitStatus.FAILED: "a sweep point failed",
    ExitStatus.ERROR: "error in the model or the command line",
    ExitStatus.IMPRECISE: "simulation stopped before its precision target, or the CTMC's linear solvers "
                          "stalled (--allow-imprecise: 0)",
    ExitStatus.DEADLOCK: "the net deadlocks: no steady state, no measures",
    ExitStatus.UNSTABLE: "the net is unstable: tokens in a place grow without bound",
    ExitStatus.EMPTY: "nothing to solve: no places, or no tokens and no transition creating any",
    ExitStatus.INTERRUPTED: "interrupted (Ctrl-C): the results are partial",
}

#: Result.degenerate kinds -> exit status
DEGENERATE = {"empty": ExitStatus.EMPTY, "deadlock": ExitStatus.DEADLOCK,
              "unstable": ExitStatus.UNSTABLE}
#: when runs end differently (a sweep), the status reported: the first of these that occurs
PRECEDENCE = ("partial", "empty", "deadlock", "unstable", "imprecise")
_STATUS = dict(DEGENERATE, partial=ExitStatus.INTERRUPTED, imprecise=ExitStatus.IMPRECISE)


def exit_status(kinds: Iterable[str]) -> ExitStatus:
    """The status of runs that ended with ``kinds`` ('partial', 'deadlock', ..., 'ok')."""
    seen = set(kinds)
    for k in PRECEDENCE:
        if k in seen:
            return _STATUS[k]
    return ExitStatus.OK


def epilog() -> str:
    """The exit-status table of ``qpn solve --help``."""
    return "exit status:\n" + "\n".join(f"  {int(s):>3}  {MEANING[s]}" for s in ExitStatus)


# ------------------------------------------------------------ degenerate nets
class Degenerate(SolverError):
    """A solver found that the net has no steady state to report (``kind``: 'unstable',
    'deadlock'); ``solvers.solve`` turns it into a Result marked so, with its exit status."""

    kind = "degenerate"

    def __init__(self, reason: str, *, construct: str | None = None):
        self.reason = reason
        super().__init__(reason, construct=construct)


class Unstable(Degenerate):
    """No steady state because tokens grow without bound (exit status 5)."""

    kind = "unstable"


class Deadlocked(Degenerate):
    """The net reaches a marking where nothing can happen (exit status 4)."""

    kind = "deadlock"


def empty_reason(compiled) -> str | None:
    """Why a compiled net has nothing to solve, or None.  Cheap: no state space."""
    import numpy as np
    if not compiled.places:
        return "the model has no places: nothing to solve"
    if int(compiled.m0.sum()) == 0:
        if np.all(np.diff(compiled.pre.tocsr().indptr) > 0):
            return ("no tokens: the initial marking is empty and every transition needs input "
                    "tokens, so nothing can ever happen (give a place an 'init' count)")
    return None


def source_traps(compiled) -> list[str]:
    """Transitions that keep a net at time 0: an immediate mode with no input arc, no
    inhibitor arc and no output place with a capacity is enabled in every marking, so it
    fires forever in zero time; so does one that gives back what it takes, enabled at the
    start, whose inputs nothing of its priority can take.  Cheap (no state space).  Only the sure case of the
    structural check's timeless traps: a loop of immediate modes may also have a way out
    (a retry loop that leaves with probability 1/2), which only a run can tell."""
    import numpy as np
    pre, post = compiled.pre.tocsr(), compiled.post.tocsr()
    no_input = np.diff(pre.indptr) == 0
    inhibited = {int(i) for i in compiled.inh_mode}
    capped = set(compiled.cap.tocsr().indices.tolist())
    imm = [i for i, m in enumerate(compiled.modes) if m.kind == "immediate"]
    is_imm = np.zeros(len(compiled.modes), dtype=bool)
    is_imm[imm] = True
    by_slot = compiled.pre.tocsc()        # the modes that take from a slot: one column each
    m0 = np.asarray(compiled.m0)
    out = set()
    for i in imm:
        mode = compiled.modes[i]
        if i in inhibited or capped.intersection(post.indices[post.indptr[i]:post.indptr[i + 1]].tolist()):
            continue
        if no_input[i]:
            out.add(mode.transition)
            continue
        # a self-loop (it gives back at least what it takes) enabled at the start, whose
        # inputs no other immediate mode of its priority or above can take: once enabled,
        # nothing can disable it before time passes, and time never passes
        ins = pre.indices[pre.indptr[i]:pre.indptr[i + 1]]
        need = pre.data[pre.indptr[i]:pre.indptr[i + 1]]
        out_row = dict(zip(post.indices[post.indptr[i]:post.indptr[i + 1]].tolist(),
                           post.data[post.indptr[i]:post.indptr[i + 1]].tolist()))
        gives = np.array([out_row.get(int(s), 0) for s in ins])
        if np.any(gives < need) or np.any(m0[ins] < need):
            continue
        takers = np.unique(np.concatenate([by_slot.indices[by_slot.indptr[s]:by_slot.indptr[s + 1]]
                                           for s in ins]))
        if not any(j != i and is_imm[j] and compiled.modes[j].priority >= mode.priority for j in takers):
            out.add(mode.transition)
    return sorted(out)


def deadlock_reason(compiled, states: np.ndarray, dead: np.ndarray) -> str:
    """Why a chain deadlocks: its first dead marking (``states[dead[0]]``) and how many
    others there are."""
    more = f" (and {len(dead) - 1} other dead marking(s))" if len(dead) > 1 else ""
    return ("the net reaches a marking where nothing can happen: "
            f"{marking_text(compiled, states[dead[0]])}{more}")


def marking_text(compiled, m: np.ndarray) -> str:
    """A marking as 'place=count, ...' over the non-empty slots ('(empty)' if none)."""
    import numpy as np
    parts = [compiled.slot_label(s) + (f"={int(m[s])}" if m[s] != 1 else "")
             for s in np.flatnonzero(m[:compiled.nslots])]
    if len(parts) > 8:
        parts = parts[:8] + [f"... ({len(parts) - 8} more)"]
    return ", ".join(parts) if parts else "(empty)"


__all__ = ["Degenerate", "Deadlocked", "Unstable", "ExitStatus", "MEANING", "DEGENERATE", "exit_status", "epilog", "empty_reason", "source_traps",
           "marking_text", "deadlock_reason"]
