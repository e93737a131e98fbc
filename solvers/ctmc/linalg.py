"""Steady state and transient solution of a CTMC generator (scipy.sparse).

>>> import numpy as np, scipy.sparse as sp
>>> Q = generator(np.array([0, 1]), np.array([1, 0]), np.array([2.0, 3.0]), 2)
>>> pi, info = steady_state(Q)
>>> np.round(pi, 12).tolist(), info["method"]
([0.6, 0.4], 'direct')
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

DIRECT_LIMIT = 3_000      # sparse LU fills in badly on multi-dimensional chains
#: dense GTH elimination (n^3 / 3 multiply-adds: 0.3 s at 1,000 states) for small chains the
#: LU solve cannot do: it adds only positive numbers, so probabilities hundreds of orders of
#: magnitude apart keep their digits (a weight of 1.6e60 left LU at residual 0.18, and the
#: iterative chain took 6.5 s for 165 states)
GTH_LIMIT = 1_000
#: the flow imbalance (see _residual) at which an iterative solve stops; a direct solve's
#: answer is accepted up to 1e3 times it
TARGET = 5e-11
#: Gauss-Seidel sweeps whose likeliest state is pinned when a direct solve failed
PIN_SWEEPS = 20
#: restarts of a Krylov solve from its last iterate (sharing its iteration budget)
RESTARTS = 3
#: the cost of one iteration of an iterative solver in multiply-adds, at least: numpy and
#: scipy's overhead per call dominates on small chains
ITERATION_OVERHEAD = 50_000


def generator(src, dst, rate, n: int) -> sp.csr_matrix:
    """Q with off-diagonal rates summed per (src, dst) and a diagonal of -row sums."""
    keep = src != dst
    Q = sp.csr_matrix((rate[keep], (src[keep], dst[keep])), shape=(n, n))
    Q.sum_duplicates()
    out = np.asarray(Q.sum(axis=1)).ravel()
    return (Q - sp.diags(out)).tocsr()


def _residual(Q: sp.csr_matrix, pi: np.ndarray) -> float:
    """The flow imbalance of ``pi``: |pi Q|_1 over the total probability flow sum_j pi_j q_j.

    Scale-free: the fraction of the flow out of states that is not matched by a flow
    in, so a chain with a 1 ns step beside 200 s of think time is judged like any
    other.  (The largest entry of |pi Q| against 1e-13 times the fastest rate accepted
    2.5e-4 on such a chain: throughputs of one cycle 26% apart, status ok.)

    >>> Q = generator(np.array([0, 1]), np.array([1, 0]), np.array([1e9, 1.0]), 2)
    >>> _residual(Q, np.array([1e-9, 1.0]) / (1 + 1e-9)) < 1e-15, round(_residual(Q, np.array([0.5, 0.5])), 6)
    (True, 2.0)
    """
    if not Q.shape[0]:
        return 0.0
    flow = float(pi @ -Q.diagonal())
    imbalance = float(np.abs(Q.T @ pi).sum())
    return imbalance / flow if flow > 0 else (0.0 if imbalance == 0 else math.inf)


def steady_state(Q: sp.csr_matrix, method: str = "auto", tol: float = 1e-12,
                 maxiter: int = 5000) -> tuple[np.ndarray, dict]:
    """pi with pi Q = 0, sum(pi) = 1; info has method, residual (the flow imbalance of
    pi, see ``_residual``), iterations."""
    n = Q.shape[0]
    if n == 1:
        return np.ones(1), {"method": "trivial", "residual": 0.0}
    closed = _closed_class(Q)
    if closed is not None:
        # transient states have probability 0; the chain on its closed class is irreducible
        # (pinning a transient state's probability to 1 gave a wrong answer, residual 0.09)
        sub, info = steady_state(Q[closed][:, closed].tocsr(), method, tol, maxiter)
        pi = np.zeros(n)
        pi[closed] = sub
        info = dict(info, transient_states=int(n - len(closed)), residual=_residual(Q, pi))
        return pi, info
    target = TARGET
    if method == "direct" or (method == "auto" and n <= DIRECT_LIMIT):
        # the chain is irreducible here, so a singular or inaccurate factor is numerical:
        # probabilities 15 orders of magnitude apart (an unstable queue against its cut-off)
        # lose every digit when the pinned state is a rare one.  Pin a likely state and solve
        # again: the likeliest after a few Gauss-Seidel sweeps (a failed solve's own argmax
        # can be a rare state: 1,896 states at residual 0.56 three times, then 6 s of GMRES),
        # then the best candidate's; never return a residual nobody would accept
        pi, res, pins = None, math.inf, [None, "sweeps", "best"]
        for pin in pins:
            if pin == "sweeps":
                pin = int(np.argmax(_gauss_seidel(Q, 0.0, maxiter=PIN_SWEEPS)[0]))
            elif pin == "best":
                pin = int(np.argmax(pi))
            try:
                cand = _direct(Q, pin)
            except RuntimeError:
                cand = None
            if cand is not None and _residual(Q, cand) < res:
                pi, res = cand, _residual(Q, cand)
            if res <= 1e3 * target or (pi is None and pin is not None):
                break
        if pi is not None and (res <= 1e3 * target or method == "direct"):
            return pi, {"method": "direct", "residual": res}
        if method == "direct":
            raise RuntimeError("Factor is exactly singular")
        if method == "auto" and n <= GTH_LIMIT:
            g = _gth(Q, int(np.argmax(pi)) if pi is not None else 0)
            if g is not None:
                gres = _residual(Q, g)
                if gres <= 1e3 * target or gres <= res:
                    return g, {"method": "gth", "residual": gres}
    tried = []
    chain = {"auto": ("gauss-seidel", "bicgstab", "gmres"), "gauss-seidel": ("gauss-seidel",),
             "bicgstab": ("bicgstab",), "gmres": ("gmres",), "power": ()}.get(method)
    if chain is None:
        raise ValueError(f"unknown steady-state method {method!r}")
    best = None
    for m in chain:
        if m == "gauss-seidel":
            pi, info = _gauss_seidel(Q, target, maxiter=2000 if method == "auto" else 50_000)
        elif m == "bicgstab":
            pi, info = _bicgstab_gs(Q, maxiter)
        else:
            pi, info = _iterative(Q, "gmres", tol, maxiter)
        tried.append(f"{m}: imbalance {info['residual']:.1e}")
        if best is None or info["residual"] < best[1]["residual"]:
            best = (pi, info)
        if info["residual"] <= target:
            break
    if best is None or best[1]["residual"] > 1e3 * target:
        pp, pinfo = _power(Q, 1e-14, 200_000, x0=None if best is None else best[0])
        tried.append(f"power: imbalance {pinfo['residual']:.1e}")
        if best is None or pinfo["residual"] < best[1]["residual"]:
            best = (pp, pinfo)
    pi, info = best
    if len(tried) > 1:
        info["tried"] = tried
    return pi, info


def _gth(Q: sp.csr_matrix, first: int) -> np.ndarray | None:
    """Grassmann-Taksar-Heyman elimination on the dense generator, ``first`` (best: the
    likeliest state) as the reference; None if it breaks down (not irreducible, overflow)."""
    n = Q.shape[0]
    order = np.r_[first, np.delete(np.arange(n), first)]
    A = Q.toarray()[np.ix_(order, order)].astype(float)
    np.fill_diagonal(A, 0.0)
    with np.errstate(all="ignore"):
        for k in range(n - 1, 0, -1):
            out = A[k, :k].sum()
            if not out > 0:
                return None
            A[:k, k] /= out
            A[:k, :k] += np.outer(A[:k, k], A[k, :k])
        x = np.zeros(n)
        x[0] = 1.0
        for k in range(1, n):
            x[k] = x[:k] @ A[:k, k]
        total = x.sum()
    if not np.isfinite(total) or not total > 0:
        return None
    pi = np.empty(n)
    pi[order] = x / total
    return pi


def _closed_class(Q: sp.csr_matrix) -> np.ndarray | None:
    """The states of the chain's one closed class when some states are transient (None when
    the chain is irreducible); RuntimeError when there are several closed classes."""
    from scipy.sparse.csgraph import connected_components
    n = Q.shape[0]
    G = Q.tocoo()
    off = (G.row != G.col) & (G.data > 0)
    A = sp.csr_matrix((np.ones(int(off.sum())), (G.row[off], G.col[off])), shape=(n, n))
    nc, lab = connected_components(A, directed=True, connection="strong")
    if nc == 1:
        return None
    leaves_ = np.ones(nc, dtype=bool)                   # classes with no edge out
    cross = lab[A.tocoo().row] != lab[A.tocoo().col]
    leaves_[lab[A.tocoo().row[cross]]] = False
    closed = np.flatnonzero(leaves_)
    if len(closed) > 1:
        raise RuntimeError(f"{len(closed)} closed classes of states")
    return np.flatnonzero(lab == closed[0])


def _direct(Q: sp.csr_matrix, pin: int | None = None) -> np.ndarray:
    """Pin pi[k] = 1 for the state with the largest outflow (or ``pin``) and solve the rest.

    Dropping one balance equation keeps the system sparse (a normalization row
    of ones would be dense and make the LU factors fill in)."""
    A, b, keep, k = _pinned(Q, pin)
    import warnings
    with warnings.catch_warnings():
        # a singular system is an answer ("no unique steady state"), not a warning line
        warnings.simplefilter("error", spla.MatrixRankWarning)
        try:
            x = spla.spsolve(A, b, permc_spec="COLAMD")
        except spla.MatrixRankWarning:
            raise RuntimeError("Factor is exactly singular") from None
    return _unpin(x, keep, k)


def _pinned(Q: sp.csr_matrix, pin: int | None = None):
    """The system with pi[k] = 1 pinned: A x = b over the other states."""
    n = Q.shape[0]
    k = int(np.argmin(Q.diagonal())) if pin is None else pin
    At = Q.T.tocsr()
    keep = np.ones(n, dtype=bool)
    keep[k] = False
    A = At[keep][:, keep].tocsc()
    b = -np.asarray(At[keep][:, [k]].todense()).ravel()
    return A, b, keep, k


def _unpin(x, keep, k):
    pi = np.empty(len(keep))
    pi[keep] = x
    pi[k] = 1.0
    pi = np.maximum(pi, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):   # a failed solve: nan, residual says so
        return pi / pi.sum()


def _triangular(M: sp.spmatrix):
    """A factorization object whose solve() is a C triangular solve (no fill)."""
    return spla.splu(M.tocsc(), permc_spec="NATURAL", diag_pivot_thresh=0.0,
                     options=dict(SymmetricMode=True))


def _gauss_seidel(Q, target, maxiter=2000):
    """Gauss-Seidel sweeps on pi Q = 0 in generation (breadth-first) order."""
    n = Q.shape[0]
    At = Q.T.tocsc()
    lower = _triangular(sp.tril(At, format="csc"))
    U = sp.triu(At, k=1, format="csr")
    x = np.full(n, 1.0 / n)
    res = math.inf
    it = 0
    for it in range(1, maxiter + 1):
        x = lower.solve(-(U @ x))
        x = np.abs(x)
        x /= x.sum()
        if it % 25 == 0:
            res = _residual(Q, x)
            if res <= target:
                break
    res = _residual(Q, x)
    return x, {"method": "gauss-seidel", "iterations": it, "residual": res}


def _bicgstab_gs(Q, maxiter):
    """BiCGSTAB on the pinned system, preconditioned by Gauss-Seidel."""
    A, b, keep, k = _pinned(Q)
    lower = _triangular(sp.tril(A, format="csc"))
    M = spla.LinearOperator(A.shape, lower.solve)
    its = [0]

    def count(_):
        its[0] += 1
    x, code = spla.bicgstab(A, b, M=M, rtol=1e-12, maxiter=_krylov_iterations(A, maxiter, 0),
                            callback=count)
    pi = _unpin(x, keep, k)
    return pi, {"method": "bicgstab", "preconditioner": "gauss-seidel", "iterations": its[0],
                "residual": _residual(Q, pi)}


def _krylov_iterations(A, maxiter: int, restart: int) -> int:
    """``maxiter`` bounded by POWER_WORK multiply-adds (a matrix and a preconditioner
    product, and GMRES's orthogonalization, per iteration): a stiff chain that the
    direct solver could not do would otherwise keep GMRES for seconds per cut-off."""
    per = max(3 * A.nnz + restart * A.shape[0] + 1, ITERATION_OVERHEAD)
    return int(min(maxiter, max(100, POWER_WORK // per)))


def _iterative(Q, method, tol, maxiter):
    """Krylov solve (GMRES or BiCGSTAB) preconditioned by an incomplete LU.

    A cheap ILU (drop 1e-2, natural order) is tried first, then a stronger one;
    the true residual |pi Q| decides, not the solver's own stopping rule."""
    A, b, keep, k = _pinned(Q)
    info = {"method": method}
    target = TARGET
    maxiter = _krylov_iterations(A, maxiter, 60 if method == "gmres" else 0)
    best = None
    for drop, fill in ((1e-2, 2), (1e-4, 6)):
        try:
            ilu = spla.spilu(A, drop_tol=drop, fill_factor=fill, permc_spec="NATURAL")
            M = spla.LinearOperator(A.shape, ilu.solve)
            pre = f"ilu(drop {drop:g})"
        except RuntimeError:
            d = A.diagonal()
            d[d == 0] = 1.0
            M = sp.diags(1.0 / d)
            pre = "jacobi"
        x = None
        its = [0]

        def count(_):
            its[0] += 1
        # restarts from the current iterate refine the answer; they share the iterations
        # (each had them all: 6 GMRES calls took 4.5 s on a 1,896-state chain)
        per = max(1, maxiter // RESTARTS)
        for _ in range(RESTARTS):
            if method == "bicgstab":
                x, code = spla.bicgstab(A, b, x0=x, M=M, rtol=1e-10, maxiter=per, callback=count)
            else:
                x, code = spla.gmres(A, b, x0=x, M=M, rtol=1e-10, restart=60, maxiter=max(1, per // 60),
                                     callback=count, callback_type="pr_norm")
            pi = _unpin(x, keep, k)
            res = _residual(Q, pi)
            if best is None or res < best[1]:
                best = (pi, res, pre, its[0], code)
            if res <= target:
                break
        if best[1] <= target:
            break
    pi, res, pre, nits, code = best
    info.update(preconditioner=pre, iterations=nits, residual=res, converged=res <= target)
    if res > 1e3 * TARGET:
        pp, pinfo = _power(Q, 1e-14, 100_000, x0=pi)
        if pinfo["residual"] < res:
            pinfo["note"] = f"{method} stalled at flow imbalance {res:.1e}; power iteration used"
            return pp, pinfo
    return pi, info


#: multiply-adds the power-iteration fallback may spend (about a second): in a stiff chain
#: (rates 10^10 apart) it would need millions of sweeps and the others have failed already
POWER_WORK = 3e8


def _power(Q, tol, maxiter, x0=None):
    n = Q.shape[0]
    lam = float(-Q.diagonal().min()) * 1.02 or 1.0
    P = (sp.identity(n, format="csr") + Q / lam).T.tocsr()
    maxiter = min(maxiter, max(100, int(POWER_WORK // max(P.nnz, ITERATION_OVERHEAD // 10))))
    pi = np.full(n, 1.0 / n) if x0 is None else x0.copy()
    for it in range(1, maxiter + 1):
        nxt = P @ pi
        nxt /= nxt.sum()
        if it % 10 == 0 and np.abs(nxt - pi).max() < tol:
            pi = nxt
            break
        pi = nxt
    return pi, {"method": "power", "iterations": it, "residual": _residual(Q, pi)}


def transient(Q: sp.csr_matrix, p0: np.ndarray, times, eps: float = 1e-12) -> list[np.ndarray]:
    """State probabilities at each time by uniformization (Poisson-weighted powers)."""
    n = Q.shape[0]
    lam = float(-Q.diagonal().min()) if n else 0.0
    if lam <= 0:
        return [p0.copy() for _ in times]
    P = (sp.identity(n, format="csr") + Q / lam).T.tocsr()
    out = []
    for t in times:
        if t < 0:
            raise ValueError("times must be >= 0")
        a = lam * t
        # truncation point of the Poisson(a) series (right tail below eps)
        kmax = int(a + 10 * math.sqrt(a) + 30)
        from scipy.stats import poisson
        weights = poisson.pmf(np.arange(kmax + 1), a)
        while poisson.sf(kmax, a) > eps:
            kmax *= 2
            weights = poisson.pmf(np.arange(kmax + 1), a)
        v = p0.copy()
        acc = weights[0] * v
        for k in range(1, kmax + 1):
            v = P @ v
            if weights[k] > 0:
                acc += weights[k] * v
        out.append(acc / acc.sum())
    return out
