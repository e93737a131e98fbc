"""Exact multi-class MVA with load-dependent (multi-server) stations.

Reiser and Lavenberg's recursion over population vectors: for a population
``n`` and chain ``c`` the arrival theorem gives the residence time at station
``i`` from the network with one customer of ``c`` less,

* delay (IS) station:   ``R[c,i](n) = D[c,i]``
* single server:        ``R[c,i](n) = D[c,i] (1 + Q[i](n - e_c))``
* ``k`` servers:        ``R[c,i](n) = D[c,i]/k (1 + Q[i](n - e_c)
  + sum_{j=0}^{k-2} (k-1-j) p[i](j | n - e_c))``

then ``X[c](n) = n_c / sum_i R[c,i](n)`` and ``Q[i](n) = sum_c X[c] R[c,i]``.
A ``k``-server station needs its marginal probabilities only for
``j = 0..k-1``: ``p(j|n) = 1/j sum_c D[c] X[c](n) p(j-1|n-e_c)`` for
``j >= 1``.  The textbook ``p(0|n) = 1 - sum_j p(j|n)`` (or any identity that
subtracts) loses all accuracy near saturation -- the error grows
geometrically with the population.  We use instead the subtraction-free
``p_i(0|n) = p_i(0|n - e_c) X[c](n) / X^{-i}[c](n)``, where ``X^{-i}`` is the
throughput of the same network without station ``i`` (both sides are
``G^{-i}(n) / G(n)``); the complement networks are solved the same way and
cached, so ``m`` multi-server stations cost ``2^m`` recursions.

Vectors are visited level by level (all vectors with the same total at
once), with numpy over vectors, chains and stations.

>>> r = exact_mva([[1.0, 0.5]], [3], servers=[math.inf, 1])
>>> round(float(r.throughput[0]), 6), r.queue_length.round(4).tolist()
(1.578947, [[1.5789, 1.4211]])
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from qpn.errors import SolverError

MAX_VECTORS = 5_000_000


@dataclass
class MVAResult:
    """Per-chain throughput (per unit visit ratio) and per (chain, station) means.

    >>> r = exact_mva([[1.0, 1.0]], [2], servers=[math.inf, 1])   # 2 jobs: 1 s think, 1 s cpu
    >>> r.algorithm, r.throughput.round(4).tolist(), r.residence.round(4).tolist()
    ('exact', [0.8], [[1.0, 1.5]])
    """
    throughput: np.ndarray     # [C]
    queue_length: np.ndarray   # [C, M] mean customers of chain c at station i
    algorithm: str
    iterations: int            # population vectors (exact) or fixed-point sweeps
    converged: bool = True

    @property
    def residence(self) -> np.ndarray:
        """Residence time per unit visit ratio, ``Q / X`` (Little)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.throughput[:, None] > 0,
                            self.queue_length / np.where(self.throughput > 0, self.throughput, 1)[:, None],
                            0.0)


def population_vectors(population: ArrayLike) -> int:
    """How many population vectors exact MVA visits: ``prod(N_c + 1)``.

    >>> population_vectors([2, 3])          # 3 x 4 vectors for two chains
    12
    """
    return math.prod(int(n) + 1 for n in np.asarray(population).ravel())  # no int64 overflow


def _check(demands: ArrayLike, population: ArrayLike, servers: ArrayLike | None):
    D = np.atleast_2d(np.asarray(demands, dtype=float))
    C, M = D.shape
    N = np.asarray(population, dtype=np.int64).reshape(C)
    s = np.ones(M) if servers is None else np.asarray(servers, dtype=float).reshape(M)
    if np.any(D < 0) or np.any(N < 0) or np.any(s < 1):
        raise ValueError("demands and populations must be >= 0 and servers >= 1")
    return D, N, s


class _Grid:
    """Population vectors 0 <= n <= N in row-major order, grouped by total."""

    def __init__(self, N: np.ndarray):
        C = len(N)
        dims = N + 1
        self.V = int(np.prod(dims))
        self.strides = np.ones(C, dtype=np.int64)
        for c in range(C - 2, -1, -1):
            self.strides[c] = self.strides[c + 1] * dims[c + 1]
        self.vecs = np.indices(dims).reshape(C, -1).T
        level = self.vecs.sum(axis=1)
        order = np.argsort(level, kind="stable")
        bounds = np.searchsorted(level[order], np.arange(int(N.sum()) + 2))
        self.levels = [order[bounds[L]:bounds[L + 1]] for L in range(1, int(N.sum()) + 1)]


def _solve(Dall: np.ndarray, sall: np.ndarray, keep: tuple, grid: _Grid, cache: dict):
    """MVA of the sub-network of (global) stations ``keep``: (X for every vector, last X, last R)."""
    if keep in cache:
        return cache[keep]
    D, s = Dall[:, list(keep)], sall[list(keep)]
    C, M = D.shape
    delay = np.isinf(s)
    ms = np.flatnonzero(~delay & (s > 1))          # multi-server stations
    k = s[ms].astype(np.int64)
    kmax = int(k.max()) if len(ms) else 1
    j = np.arange(kmax)
    valid = j[None, :] < k[:, None]                # p(j) kept for j < k
    wq = np.where(j[None, :] <= k[:, None] - 2, k[:, None] - 1 - j[None, :], 0)  # (k-1-j)
    # throughput without each multi-server station, and the chains left without demand there
    comp = [_solve(Dall, sall, tuple(x for x in keep if x != keep[i]), grid, cache)[0]
            for i in ms]
    lost = [(D.sum(axis=1) - D[:, i]) <= 0 for i in ms]
    Xall = np.zeros((grid.V, C))
    Q = np.zeros((grid.V, M))
    P = np.zeros((grid.V, len(ms), kmax))
    P[0, :, 0] = 1.0                               # the empty network
    X = np.zeros((1, C))
    R = np.zeros((1, C, M))
    Dms = D[:, ms]
    for idx in grid.levels:
        n = grid.vecs[idx]
        has = n > 0
        prev = np.where(has, idx[:, None] - grid.strides[None, :], 0)   # [B, C]
        Qp = Q[prev]                                                    # [B, C, M]
        A = 1.0 + Qp
        if len(ms):
            Pp = P[prev]                                                # [B, C, nms, kmax]
            A[:, :, ms] = (1.0 + Qp[:, :, ms] + (Pp * wq).sum(-1)) / k
        A[:, :, delay] = 1.0
        R = D[None] * A * has[:, :, None]
        tot = R.sum(axis=2)
        # a chain without demand here only occurs in a complement network: it then
        # has no customers anywhere, and its X is never used
        X = np.where(has & (tot > 0), n / np.where(tot > 0, tot, 1.0), 0.0)
        Xall[idx] = X
        Q[idx] = np.einsum("bc,bcm->bm", X, R)
        if len(ms):
            Pn = np.zeros((len(idx), len(ms), kmax))
            if kmax > 1:
                Pn[:, :, 1:] = np.einsum("bc,cm,bcmj->bmj", X, Dms, Pp[..., :-1]) / j[1:]
            c = np.argmax(has, axis=1)                                  # any chain present
            rows = np.arange(len(idx))
            for m in range(len(ms)):
                ratio = X[rows, c] / np.where(comp[m][idx, c] > 0, comp[m][idx, c], np.inf)
                p0 = P[prev[rows, c], m, 0] * ratio
                # a customer whose chain has no demand elsewhere must be at this station
                Pn[:, m, 0] = np.where((has & lost[m][None, :]).any(axis=1), 0.0, p0)
            P[idx] = Pn * valid
    cache[keep] = (Xall, X[-1], R[-1])
    return cache[keep]


def exact_mva(demands: ArrayLike, population: ArrayLike,
              servers: ArrayLike | None = None) -> MVAResult:
    """Exact MVA of a closed multi-chain product-form network.

    ``demands[c, i]``: visit ratio x mean service time of chain ``c`` at
    station ``i``; ``population[c]``; ``servers[i]``: 1, ``k`` or ``math.inf``
    (a delay station).

    >>> r = exact_mva([[1.0, 1.0]], [2], servers=[math.inf, 1])
    >>> round(float(r.throughput[0]), 6), r.queue_length.round(6).tolist()
    (0.8, [[0.8, 1.2]])
    >>> r = exact_mva([[0.5, 1.0], [1.0, 0.2]], [2, 1], servers=[1, 2])   # two chains
    >>> r.throughput.round(4).tolist(), r.iterations
    ([0.902, 0.4902], 6)
    """
    D, N, s = _check(demands, population, servers)
    # a station with at least as many servers as there are customers never queues: it is
    # a delay station (and its marginal probabilities need not be kept per server)
    s = np.where(s >= max(int(N.sum()), 1), np.inf, s)
    C, M = D.shape
    if np.any((N > 0) & (D.sum(axis=1) <= 0)):
        raise ValueError("a chain with customers has no service demand anywhere")
    V = population_vectors(N)
    used = np.flatnonzero(D.sum(axis=0) > 0)       # unvisited stations never hold anyone
    multi = int(np.sum(~np.isinf(s[used]) & (s[used] > 1)))
    if V * 2 ** multi > MAX_VECTORS:
        raise SolverError(f"exact MVA would visit {V} population vectors in {2 ** multi} "
                          f"network(s) (limit {MAX_VECTORS} in all)", construct="population",
                          methods=("mva (linearizer)",))
    if N.sum() == 0:
        return MVAResult(np.zeros(C), np.zeros((C, M)), "exact", V)
    _, X, R = _solve(D, s, tuple(used.tolist()), _Grid(N), {})
    Q = np.zeros((C, M))
    Q[:, used] = X[:, None] * R
    return MVAResult(np.asarray(X, dtype=float), Q, "exact", V)


__all__ = ["exact_mva", "MVAResult", "population_vectors", "MAX_VECTORS"]
