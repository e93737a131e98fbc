"""The solver registry: the methods by name, each registered by its own module on import.

Nothing here imports a solver module by name in the code; :func:`get_solver` imports the
module that :data:`_MODULES` names the first time a method is asked for, so the registry
sits below every solver and every module that lists them (options, the CLI, ``auto``).

>>> get_solver("mva").name, METHODS[0]
('mva', 'auto')
"""
from __future__ import annotations

from typing import Protocol

from qpn.errors import SolverError

from .result import Result


class Solver(Protocol):
    """What a method offers: a name, its options dataclass, and the two calls below.

    >>> import qpn
    >>> mva = get_solver("mva")             # every registered method has this shape
    >>> mva.name, mva.Options.__name__
    ('mva', 'MVAOptions')
    >>> c = qpn.compile_net(qpn.load("models/mm1.qpn"))
    >>> mva.problems(c, {}), round(mva.solve(c, {}).get("utilization", "server"), 6)
    ([], 0.8)
    """
    name: str
    Options: type

    def problems(self, compiled, options: dict) -> list[str]:
        """Why this method cannot solve ``compiled`` (empty if it can), each naming the construct.

        >>> import qpn
        >>> c = qpn.compile_net(qpn.load("models/mutex.qpn"))
        >>> get_solver("ctmc").problems(c, {})
        []
        >>> [p.split(":")[0] for p in get_solver("mva").problems(c, {})]   # not product form
        ['place lock', 'transition acquire', 'transition release']
        """

    def solve(self, compiled, options: dict) -> Result:
        """The measures of ``compiled`` (a :class:`qpn.compile.CompiledNet`).

        >>> import qpn
        >>> c = qpn.compile_net(qpn.load("models/mutex.qpn"))
        >>> res = get_solver("ctmc").solve(c, {})
        >>> res.method, round(res.get("utilization", "critical"), 4)
        ('ctmc', 0.7151)
        """


REGISTRY: dict[str, Solver] = {}
_MODULES = {"auto": "qpn.solvers.auto", "mva": "qpn.solvers.mva", "ctmc": "qpn.solvers.ctmc",
            "symbolic": "qpn.solvers.symbolic", "des": "qpn.solvers.des"}
#: the method names, in the order help texts list them
METHODS = tuple(_MODULES)


def register(solver: Solver) -> Solver:
    """Make ``solver`` available under ``solver.name`` (its module does this on import).

    >>> class Echo:                          # a toy method that refuses every net
    ...     name = "echo"
    ...     Options = get_solver("mva").Options
    ...     def problems(self, compiled, options):
    ...         return ["echo solves nothing"]
    ...     def solve(self, compiled, options):
    ...         raise NotImplementedError
    >>> register(Echo()) is get_solver("echo")
    True
    >>> del REGISTRY["echo"]                 # (the example leaves the registry as it was)
    >>> register(Echo()) and register(type("Other", (Echo,), {})())
    Traceback (most recent call last):
    ...
    ValueError: a solver named 'echo' is registered already (Echo)
    >>> del REGISTRY["echo"]
    """
    old = REGISTRY.get(solver.name)
    if old is not None and type(old).__qualname__ != type(solver).__qualname__:
        # (the same class again is a module imported twice, e.g. reloaded)
        raise ValueError(f"a solver named {solver.name!r} is registered already "
                         f"({type(old).__qualname__})")
    REGISTRY[solver.name] = solver
    return solver


def get_solver(method: str) -> Solver:
    """The solver registered as ``method`` (importing its module); a SolverError with a
    did-you-mean for an unknown name.

    >>> get_solver("ctmc").Options.of({"cutoff": "80"}).cutoff
    80
    """
    if method not in REGISTRY:
        mod = _MODULES.get(method)
        if mod is None:
            from qpn.errors import suggest
            s = suggest(method, METHODS)
            raise SolverError(f"unknown method '{method}'" + (f"; did you mean '{s}'?" if s else ""),
                              methods=METHODS)
        try:
            __import__(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
            raise SolverError(f"method '{method}' is not available in this version of qpn",
                              methods=tuple(m for m in METHODS if m in REGISTRY)) from None
    if method not in REGISTRY:
        raise SolverError(f"method '{method}' is not available in this version of qpn",
                          methods=tuple(m for m in METHODS if m in REGISTRY))
    return REGISTRY[method]


def all_solvers() -> list[Solver]:
    """Every available solver, in :data:`METHODS` order (importing their modules).

    >>> [s.name for s in all_solvers()]
    ['auto', 'mva', 'ctmc', 'symbolic', 'des']
    """
    out = []
    for m in METHODS:
        try:
            out.append(get_solver(m))
        except SolverError:
            continue
    return out
