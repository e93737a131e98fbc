"""Software blocks -> core items (the entry point of the software layer).

1. names and references are checked (:mod:`qpn.software.check`), with the
   default parameter values where they help (probabilities, counts);
2. every resource declares its places and queues;
3. every runner's steps become a control-flow graph of stations
   (:mod:`qpn.software.cfg`);
4. each exit of each station becomes one transition.

The result is a list of ordinary color sets, shared queues, places and
transitions named by paths (``m.free``, ``workers.lock_m``), so every solver
and every check works on it unchanged.
"""
from __future__ import annotations

from ..model import Instance, Param, Place, Queue, Transition
from ..params import values_of
from . import ast as sw
from .cfg import emit_exit
from .check import Numbers, Table, check
from .env import DECL_BUILDERS, Env
from .kit import Kit
from .runners import build_runner

# the modules register their builders on import
from . import control, locks, mpi, omp, omp_sync, processors, queues, sync  # noqa: F401,E402


def _core_names(core_items) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in core_items:
        if isinstance(it, Place):
            out[it.name] = "place"
        elif isinstance(it, Transition):
            out[it.name] = "transition"
        elif isinstance(it, Instance):
            out[it.name] = "instance"
        elif isinstance(it, Queue):
            out[it.name] = "shared queue"
    return out


def _param_values(core_items) -> dict:
    """The parameters' values; a parameter without one is the model's error, raised here:
    expanded without values, the software layer's checks of counts saw nothing and a
    'parallel for 0' reached a division by zero (campaign 50)."""
    params = [it for it in core_items if isinstance(it, Param)]
    return values_of(params)


def expand(blocks, core_items=()) -> list:
    """Core items of the software ``blocks`` (:class:`~qpn.software.ast.Software`)."""
    decls = [d for b in blocks for d in b.decls]
    if not decls:
        return []
    core_items = list(core_items)
    table = Table(decls, _core_names(core_items))
    unbalanced = check(table, Numbers(_param_values(core_items)))
    kit = Kit()
    kit.taken = {n: None for n in _core_names(core_items)}
    root = Env(kit, table, unbalanced, "", (), None, {}, [])
    for d in decls:
        if type(d) in DECL_BUILDERS:
            DECL_BUILDERS[type(d)](d, root)
    for d in decls:
        if isinstance(d, sw.RUNNERS):
            build_runner(d, root)
    for station in list(root.stations):
        for ex in station.exits:
            emit_exit(kit, station, ex)
    return kit.items()
