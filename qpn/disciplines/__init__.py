"""Queueing disciplines, each declared once with what the language, the importers and
the solvers need to know of it.

The grammar's ``DISCIPLINE`` keyword, the validator's rules (which options a
discipline takes), the printer, the QPME and PNML mappings, the solvers'
applicability checks and the simulator's queues read these declarations instead of
comparing names.  The simulator serves a queue by its :class:`Scheduling`: who is
served, in which order, and whether a token keeps its server once it has one; a
discipline that is a new combination of those is one new module of this package
(found and registered on import), with no change elsewhere.  The standard ones are
in :mod:`qpn.disciplines.standard`.

>>> [d.name for d in all_disciplines()][:7]      # the standard ones, then the package's others
['is', 'fcfs', 'ps', 'random', 'prio', 'lcfs-pr', 'rr']
>>> get("ps").product_form, get("fcfs").product_form, get("prio").product_form
('any', 'exponential', None)
>>> names_where(takes_quantum=True)
('rr',)
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field

#: who a queue serves: every token at full speed, every token at a share of the
#: servers' capacity, as many tokens as it has servers, the first by ``order``, or every
#: token at a share of the one server it was placed on when it arrived ("cores": the
#: least loaded server then, and it stays there)
SERVES = ("all", "shared", "first", "cores")
#: the orders a simulator can keep: arrival at the queue, latest arrival first, the
#: round-robin ready queue, priority level (then arrival), least remaining work (then
#: arrival), or a uniform draw among the waiting tokens
ORDERS = ("arrival", "last", "ready", "priority", "remaining", "random")


@dataclass(frozen=True)
class Scheduling:
    """How a queue serves its tokens (what the simulator needs of a discipline).

    ``serves``: one of :data:`SERVES`; ``order``: one of :data:`ORDERS` (who goes
    first when there are more tokens than servers); ``holds``: whether a token keeps
    its server until it is done (non-preemptive: the order picks a token when a server
    frees) or the order is applied anew at every change (preemptive resume), None when
    the queue's ``preemptive``/``nonpreemptive`` option decides.

    >>> Scheduling("first", "remaining", holds=False).memoryless_kind()    # SRPT
    >>> Scheduling("first", "arrival").memoryless_kind()                   # FCFS
    'fcfs'
    """
    serves: str = "first"
    order: str = "arrival"
    holds: bool | None = False

    def __post_init__(self):
        if self.serves not in SERVES or self.order not in ORDERS:
            raise ValueError(f"scheduling {self.serves}/{self.order}: serves is one of {SERVES}, "
                             f"order one of {ORDERS}")
        if self.order == "random" and self.holds is not True:
            raise ValueError("a random order is drawn when a server frees: it needs holds=True")

    def memoryless_kind(self, sliced: bool = False) -> str | None:
        """'is', 'ps' or 'fcfs' when, with exponential service, the queue's next completion
        follows from the tokens' classes and arrival order alone (the simulator then
        redraws it at every change), else None (each token's remaining work is kept)."""
        if self.serves == "all":
            return "is"
        if self.serves == "shared":
            return "ps"
        if self.serves == "cores":
            return None                 # which server a token shares is part of the state
        if self.order == "arrival" and not sliced:
            return "fcfs"
        return None


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
    infinity included, has a CTMC.  ``ctmc``: 'exact', 'ps' for a discipline the
    CTMC solves only as processor sharing, on request, or None when its state has no
    finite Markov description (``ctmc_note`` says why).  ``ctmc_fifo_departure``:
    whether the CTMC keeps FIFO departure order after this service.  ``scheduling``:
    how the simulator serves it.
    """
    name: str
    summary: str
    default_servers: float = 1.0
    takes_quantum: bool = False          # 'quantum' and 'switch' (time slicing)
    takes_priority: bool = False         # priority levels, 'preemptive'/'nonpreemptive'
    shares_service: bool = False         # every token present is in service (IS, PS)
    product_form: str | None = None
    qpme: str | None = None
    ctmc: str | None = "exact"
    ctmc_fifo_departure: bool = False
    scheduling: Scheduling = field(default_factory=Scheduling)
    ctmc_note: str = ""

    def why_no_ctmc(self) -> str:
        """Why a CTMC cannot solve a queue of this discipline (for ``ctmc`` None)."""
        return (f"{self.name} has no Markov model with finitely many states "
                f"({self.ctmc_note or 'its order is not a finite state'})")

    @property
    def takes_speed(self) -> bool:
        """Whether a queue of it may have a load-dependent ``speed`` (its servers'
        capacity is shared by every token, so a capacity by token count has a meaning).

        >>> get("ps").takes_speed, get("fcfs").takes_speed
        (True, False)
        """
        return self.scheduling.serves == "shared"

    @property
    def infinite_servers(self) -> bool:
        """Whether the queue has infinitely many servers (a model gives it none)."""
        return math.isinf(self.default_servers)


_REGISTRY: dict[str, Discipline] = {}


def register(d: Discipline) -> Discipline:
    """Declare a discipline (its name becomes a keyword of the language); a module of
    this package calls it when it is imported.

    >>> d = Discipline("lcfs", "last come, first served, non-preemptive",
    ...                scheduling=Scheduling("first", "last", holds=True), ctmc=None)
    >>> d.scheduling.memoryless_kind() is None       # each token's order is kept
    True
    >>> register(Discipline("ps", "something else"))
    Traceback (most recent call last):
    ...
    ValueError: a discipline named 'ps' is declared already (processor sharing: the servers' capacity is shared by every token)
    """
    old = _REGISTRY.get(d.name)
    if old is not None and old != d:
        # a second meaning for a keyword would silently change every model that uses it
        raise ValueError(f"a discipline named {d.name!r} is declared already ({old.summary})")
    _REGISTRY[d.name] = d
    return d


def get(name: str) -> Discipline:
    """The discipline named ``name`` (KeyError if none: the parser admits only these).

    >>> get("rr").takes_quantum, get("ps").shares_service
    (True, True)
    """
    return _REGISTRY[name]


def find(name: str) -> Discipline | None:
    """The discipline named ``name``, or None (a net built in Python may name any).

    >>> find("fcfs").qpme, find("lifo") is None
    ('FCFS', True)
    """
    return _REGISTRY.get(name)


def all_disciplines() -> tuple[Discipline, ...]:
    """Every discipline, in declaration order.

    >>> all_disciplines()[0].name
    'is'
    """
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    """The disciplines' keywords, in declaration order.

    >>> "srpt" in names()
    True
    """
    return tuple(_REGISTRY)


def names_where(**flags) -> tuple[str, ...]:
    """Names of the disciplines whose attributes equal ``flags``.

    >>> names_where(takes_priority=True), names_where(product_form="any")
    (('prio',), ('is', 'ps', 'lcfs-pr'))
    """
    return tuple(d.name for d in _REGISTRY.values()
                 if all(getattr(d, k) == v for k, v in flags.items()))


def _declare_all() -> None:
    """Import the standard declarations, then every other module of this package
    (each registers its disciplines), in name order."""
    importlib.import_module(f"{__name__}.standard")
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if mod != "standard":
            importlib.import_module(f"{__name__}.{mod}")


_declare_all()
