"""qpn: hierarchical colored queueing Petri nets for performance prediction.

>>> import qpn
>>> net = qpn.parse("place idle init 3\\nplace busy\\ntransition t : idle -> busy")
>>> len(net.places), net.param_values()
(2, {})

Typical use::

    net = qpn.load("models/mm1.qpn")        # parse + validate
    flat = net.flatten()                    # hierarchy -> flat net
    res = qpn.solve(net, method="auto")     # analytic or simulation
    print(res.table())

Heavy dependencies (scipy, sympy, lark) are imported on first use.
"""
from __future__ import annotations

import os
from typing import Any

# qpn's linear algebra is sparse or small, and numpy's and scipy's OpenBLAS each start a
# thread per core that spins when idle: 12% of the CPU time of a short simulation, taken
# from the simulator's own threads (measured with perf).  Set OPENBLAS_NUM_THREADS before
# importing qpn (or numpy) to choose otherwise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from typing import TYPE_CHECKING

from .errors import Loc, ModelError, ParameterError, QPNError, SolverError

if TYPE_CHECKING:
    from .model import (Arc, EnumColors, Include, Instance, Mode, Param, Place, Port, Queue,
                        QueueingPlace, RangeColors, RecordColors, Service, Subnet, SubnetParam,
                        Term, Transition)
    from .net import Net

#: the model's classes, imported on first use: `import qpn` (and every command line that
#: only prints, checks or formats) costs no numpy (0.13 s of CPU here)
_LAZY = {**{name: "model" for name in (
    "Arc", "EnumColors", "Include", "Instance", "Mode", "Param", "Place", "Port", "Queue",
    "QueueingPlace", "RangeColors", "RecordColors", "Service", "Subnet", "SubnetParam", "Term",
    "Transition")}, "Net": "net"}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'qpn' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__version__ = "0.1.0"


def parse(text: str, path: str | None = None) -> Net:
    """Parse model text (the qpn language) into a validated :class:`Net`.

    ``path`` names the net and the locations of its error messages.

    >>> net = parse("place idle init 3\\nplace busy\\ntransition t : idle -> busy delay exp(1)",
    ...             "tiny.qpn")
    >>> net.name, [p.name for p in net.places], net.transitions[0].kind
    ('tiny', ['idle', 'busy'], 'timed')
    """
    from qpn.dsl.parser import parse as _parse
    return _parse(text, path)


def load(path: str) -> Net:
    """Read, parse and validate a model file: ``.qpn``, or QPME ``.qpe``, PNML ``.pnml`` and
    LQN ``.lqn`` files (translated on reading).

    >>> net = load("models/mm1.qpn")
    >>> net.name, [p.name for p in net.places]
    ('mm1', ['server'])
    """
    from qpn.dsl.parser import load as _load
    return _load(path)


def check(net: Net):
    """Structural analysis: invariants, traps, dead transitions, connectivity.

    >>> rep = check(parse("place a init 2\\nplace b\\ntransition t : a -> b delay exp(1)\\n"
    ...                   "transition u : b -> a delay exp(1)"))
    >>> [str(i) for i in rep.p_invariants], rep.bounded
    (['a + b = 2'], True)
    """
    from .structure.check import check_net
    return check_net(net)


def compile_net(net: Net, params: dict[str, Any] | None = None):
    """Unfold a net, with ``params`` overriding its parameters, into the arrays the
    solvers read (see :mod:`qpn.compile`).

    >>> c = compile_net(load("models/mm1.qpn"), {"lambda": 0.5})
    >>> c.params["lambda"], len(c.modes)
    (0.5, 2)
    """
    from .compile import compile_net as _compile
    return _compile(net, params)


def solve(net: Net, method: str = "auto", **params: Any):
    """Solve a net; ``method`` is auto, mva, ctmc, symbolic or des; ``options={...}``
    and parameter values go on to :func:`solvers.solve`, which lists every option.

    >>> res = solve(load("models/mm1.qpn"), "mva", **{"lambda": 0.5})
    >>> round(res.get("tokens", "server"), 9), res.info["algorithm"]
    (1.0, 'open')
    """
    from qpn.solvers import solve as _solve
    return _solve(net, method=method, **params)


__all__ = ["Net", "Place", "QueueingPlace", "Port", "Queue", "Transition", "Mode", "Arc", "Term",
           "Param", "EnumColors", "RangeColors", "RecordColors", "Service", "Subnet", "SubnetParam",
           "Instance", "Include", "Loc", "ModelError", "ParameterError", "QPNError", "SolverError",
           "parse", "load", "check", "compile_net", "solve"]
