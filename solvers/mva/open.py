"""Open (Jackson/BCMP) networks in closed form, and mixed networks.

In an open product-form network every station behaves as if it were alone
with Poisson arrivals of its total offered load ``A = sum_c lambda_c D_c``
(busy servers):

* IS:          ``Q = A``
* one server:  ``Q = rho / (1 - rho)`` with ``rho = A`` (M/M/1, PS, LCFS-PR)
* ``k`` servers: ``Q = A + C(k, A) rho / (1 - rho)``, ``rho = A / k``, with
  Erlang's C formula (the probability of waiting) computed from Erlang B,
  the Poisson pmf over cdf at ``k``: ``C = B / (1 - rho (1 - B))``.

Each class gets the share ``a_c / A`` of its station's customers (the
multinomial split of BCMP).  ``rho >= 1`` raises :class:`SolverError`
naming the saturated station.

Mixed networks (Lazowska et al., ch. 7): the open chains use a fraction
``rho_i`` of each single-server station, so the closed chains see demands
``D / (1 - rho_i)``; then an open class finds the closed customers there,
``Q_o = a_o (1 + Q_closed) / (1 - rho)``.  Delay stations are unaffected.
A multi-server station visited by both kinds is not handled (its open load
would change the closed chains' load-dependent rates).

>>> Q, U = open_network([[0.8]], [1])
>>> round(float(Q[0, 0]), 9), float(U[0])
(4.0, 0.8)
>>> round(erlang_c(4, 3.0), 6)
0.509434
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from qpn.errors import SolverError

from ..status import Unstable

from .exact import MVAResult


def erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival waits in an M/M/``servers`` queue with offered ``load``.

    >>> round(erlang_c(1, 0.5), 6), round(erlang_c(2, 1.0), 6)    # M/M/1: rho; M/M/2: 1/3
    (0.5, 0.333333)
    """
    from scipy.special import gammaln, pdtr, xlogy  # lazy: a large import, rarely needed

    # Erlang B = Poisson pmf / cdf at k (the truncated Poisson's last term)
    pmf = np.exp(xlogy(servers, load) - load - gammaln(servers + 1))
    b = pmf / pdtr(servers, load)
    rho = load / servers
    return float(b / (1.0 - rho * (1.0 - b)))


def _names(names: Sequence[str] | None, M: int) -> list[str]:
    return list(names) if names is not None else [f"station {i}" for i in range(M)]


def open_network(loads: ArrayLike, servers: ArrayLike,
                 names: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean customers per (open chain, station) and utilization per station.

    ``loads[c, i]``: arrivals per second of chain ``c`` at station ``i`` times
    the mean service time (offered load in busy servers).

    >>> Q, U = open_network([[0.5, 0.25]], [1, 1], names=["cpu", "disk"])
    >>> Q.round(4).tolist(), U.tolist()                 # rho / (1 - rho) at each
    ([[1.0, 0.3333]], [0.5, 0.25])
    >>> Q, U = open_network([[0.3, 0.2], [0.2, 0.3]], [1, 2])    # two chains share the load
    >>> Q.round(4).tolist()
    [[0.6, 0.2133], [0.4, 0.32]]
    """
    a = np.atleast_2d(np.asarray(loads, dtype=float))
    s = np.asarray(servers, dtype=float).reshape(a.shape[1])
    names = _names(names, a.shape[1])
    A = a.sum(axis=0)
    U = np.where(np.isinf(s), A, A / s)
    _stable(U, s, names, "the open workload")
    Q = np.zeros_like(a)
    for i in range(a.shape[1]):
        if A[i] == 0:
            continue
        if math.isinf(s[i]):
            total = A[i]
        elif s[i] == 1:
            total = U[i] / (1.0 - U[i])
        else:
            total = A[i] + erlang_c(int(s[i]), A[i]) * U[i] / (1.0 - U[i])
        Q[:, i] = total * a[:, i] / A[i]
    return Q, U


def _stable(U, s, names, what):
    for i in np.flatnonzero(~np.isinf(s) & (U >= 1.0)):
        raise Unstable(f"{what} saturates {names[i]}: utilization {U[i]:.6g} >= 1 "
                       f"(no steady state: its tokens grow without bound)", construct=names[i])


def check_open_load(qn) -> None:
    """Raise :class:`Unstable` when the open chains of product-form network ``qn``
    offer a finite-server station a utilization of 1 or more: no method can give a
    steady state (the simulator checks this before it runs, as auto does).

    >>> import qpn
    >>> from qpn.solvers.mva.productform import product_form
    >>> qn = product_form(qpn.compile_net(qpn.load("models/mm1.qpn"), {"lambda": 2}))
    >>> try:
    ...     check_open_load(qn)
    ... except Unstable as exc:
    ...     print(exc)
    the open workload saturates place server: utilization 2 >= 1 (no steady state: its tokens grow without bound)
    """
    if not qn.open:
        return
    s = np.array([st.servers for st in qn.stations], dtype=float)
    A = qn.demands()[qn.open].sum(axis=0)
    _stable(np.where(np.isinf(s), A, A / s), s, [st.element for st in qn.stations], "the open workload")


def mixed_network(demands: ArrayLike, population: ArrayLike, loads: ArrayLike,
                  servers: ArrayLike, closed_solver: Callable[..., MVAResult],
                  names: Sequence[str] | None = None) -> tuple[MVAResult, np.ndarray]:
    """Closed chains (``demands``, ``population``) sharing stations with open chains (``loads``).

    ``closed_solver(demands, population, servers)`` is any closed MVA
    (exact or approximate).  Returns its result for the closed chains and the
    mean customers per (open chain, station).

    >>> from qpn.solvers.mva import exact_mva
    >>> res, Qo = mixed_network([[1.0, 1.0]], [2], [[0.0, 0.5]], [math.inf, 1], exact_mva)
    >>> round(float(res.throughput[0]), 4), Qo.round(4).tolist()   # closed X = 6/13
    (0.4615, [[0.0, 2.5385]])
    """
    D = np.atleast_2d(np.asarray(demands, dtype=float))
    a = np.atleast_2d(np.asarray(loads, dtype=float)).reshape(-1, D.shape[1])
    s = np.asarray(servers, dtype=float).reshape(D.shape[1])
    names = _names(names, D.shape[1])
    A = a.sum(axis=0)
    U = np.where(np.isinf(s), A, A / s)
    _stable(U, s, names, "the open workload")
    multi = ~np.isinf(s) & (s > 1)
    for i in np.flatnonzero(multi & (A > 0) & (D.sum(axis=0) > 0)):
        raise SolverError(f"{names[i]}: a multi-server station visited by both open and closed "
                          f"chains (mixed MVA handles single-server and delay stations)",
                          construct=names[i], methods=("ctmc", "des"))
    single = ~np.isinf(s) & (s == 1)
    Din = np.where(single[None, :], D / np.where(single, 1.0 - U, 1.0)[None, :], D)
    res = closed_solver(Din, population, s)
    Qc = res.queue_length.sum(axis=0)
    Qo, _ = open_network(np.where(single[None, :], 0.0, a), s, names)
    Qo[:, single] = a[:, single] * (1.0 + Qc[single]) / (1.0 - U[single])
    return res, Qo


__all__ = ["open_network", "mixed_network", "erlang_c"]
