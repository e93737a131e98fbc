"""Queueing disciplines, each declared once with what the language, the importers and
the solvers' checks need to know of it.

The grammar's ``DISCIPLINE`` keyword, the validator's rules (which options a
discipline takes), the QPME and PNML mappings and the solvers' applicability checks
read these declarations instead of comparing names.  How a simulator or a CTMC
serves a queue stays with each solver (its kernels switch on the name or a code).

>>> [d.name for d in all_disciplines()]
['is', 'fcfs', 'ps', 'random', 'prio', 'lcfs-pr', 'rr']
>>> get("ps").product_form, get("fcfs").product_form, get("prio").product_form
('any', 'exponential', None)
>>> names_where(takes_quantum=True)
('rr',)
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Discipline:
    """A queueing discipline.

    ``name`` is the keyword of the language.  ``default_servers``: the servers a
    queue has when the model gives none (``inf`` for an infinite-server one, which
    then takes no ``servers``).  ``product_form``: 'any' when a BCMP network keeps
    its product form for any service distribution (IS, PS, LCFS-PR), 'exponential'
    when it needs exponential service of the same mean for every class (FCFS,
    RANDOM), None when it breaks it.  ``qpme``: QPME's name of the strategy (None:
    QPME has none).  ``shares_service``: every token present is served at once
    (infinitely many servers, or their capacity shared), so any number of servers,
    infinity included, has a CTMC.  ``ctmc``: 'exact', or 'ps' for a discipline the
    CTMC solves only as processor sharing, on request.  ``ctmc_fifo_departure``:
    whether the CTMC keeps FIFO departure order after this service.
    """
    name: str
    summary: str
    default_servers: float = 1.0
    takes_quantum: bool = False          # 'quantum' and 'switch' (time slicing)
    takes_priority: bool = False         # priority levels, 'preemptive'/'nonpreemptive'
    shares_service: bool = False         # every token present is in service (IS, PS)
    product_form: str | None = None
    qpme: str | None = None
    ctmc: str = "exact"
    ctmc_fifo_departure: bool = False

    @property
    def infinite_servers(self) -> bool:
        """Whether the queue has infinitely many servers (a model gives it none)."""
        return math.isinf(self.default_servers)


_REGISTRY: dict[str, Discipline] = {}


def register(d: Discipline) -> Discipline:
    """Declare a discipline (its name becomes a keyword of the language)."""
    _REGISTRY[d.name] = d
    return d


def get(name: str) -> Discipline:
    """The discipline named ``name`` (KeyError if none: the parser admits only these)."""
    return _REGISTRY[name]


def find(name: str) -> Discipline | None:
    """The discipline named ``name``, or None (a net built in Python may name any)."""
    return _REGISTRY.get(name)


def all_disciplines() -> tuple[Discipline, ...]:
    """Every discipline, in declaration order."""
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    """The disciplines' keywords, in declaration order."""
    return tuple(_REGISTRY)


def names_where(**flags) -> tuple[str, ...]:
    """Names of the disciplines whose attributes equal ``flags``."""
    return tuple(d.name for d in _REGISTRY.values()
                 if all(getattr(d, k) == v for k, v in flags.items()))


register(Discipline("is", "infinite server: every token is served at once, with no wait",
                    default_servers=math.inf, shares_service=True, product_form="any", qpme="IS",
                    ctmc_fifo_departure=True))
register(Discipline("fcfs", "first come, first served", product_form="exponential", qpme="FCFS",
                    ctmc_fifo_departure=True))
register(Discipline("ps", "processor sharing: the servers' capacity is shared by every token",
                    shares_service=True, product_form="any", qpme="PS", ctmc_fifo_departure=True))
register(Discipline("random", "a server that frees takes a waiting token at random",
                    product_form="exponential", qpme="RANDOM"))
register(Discipline("prio", "by priority level, then first come; preemptive unless said",
                    takes_priority=True, qpme="PRIO"))
register(Discipline("lcfs-pr", "last come, first served, preemptive resume", product_form="any"))
register(Discipline("rr", "round robin: time slices of 'quantum', a context switch between them",
                    takes_quantum=True, ctmc="ps"))
