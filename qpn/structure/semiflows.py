"""Minimal semiflows (P- and T-invariants) by the Farkas algorithm, exactly.

Works on Python integers (numpy object arrays), so there is no rounding and
no overflow.  A P-semiflow y >= 0 satisfies y^T C = 0 for the incidence
matrix C (places x transitions); a T-semiflow x >= 0 satisfies C x = 0.

>>> import numpy as np
>>> C = np.array([[-1, 1], [1, -1]])   # two places, a cycle of two transitions
>>> p_semiflows(C)
[[1, 1]]
>>> t_semiflows(C)
[[1, 1]]
"""
from __future__ import annotations

from math import gcd

import numpy as np

MAX_ROWS = 20_000
#: cells of the starting tableau [C | I]: a colored net of 10^4 slots would need 10^8
#: Python integers and hours of elimination; its invariants are not computed
MAX_CELLS = 2_000_000


class TooManySemiflows(Exception):
    """The Farkas tableau grew beyond the limit (the answer would be huge)."""


def _normalize(row: np.ndarray) -> np.ndarray:
    g = 0
    for v in row:
        if v:
            g = gcd(g, int(v))
            if g == 1:
                return row
    return row // g if g > 1 else row


def p_semiflows(C, max_rows: int = MAX_ROWS) -> list[list[int]]:
    """Minimal-support nonnegative integer y with y^T C = 0 (rows = places).

    Each row of the tableau is [y^T C | y].  The identity part y stays nonnegative, so
    the support of a combination of two rows is the union of theirs (kept as sets, not
    recomputed), and the signs of the C part, which choose the columns, are kept in a
    small integer matrix.  The rows carried over from a step are already minimal among
    themselves: only the new combinations are compared with the others, so a net whose
    steps create few rows (a ring, a chain of subnets) costs O(n^2), not O(n^3).
    """
    C = np.asarray(C)
    n, m = C.shape
    if n == 0:
        return []
    if n * (m + n) > MAX_CELLS:
        raise TooManySemiflows(f"the tableau would have {n:,} x {m + n:,} cells (more than "
                               f"{MAX_CELLS:,})")
    # tableau [C | I] with Python ints
    D = np.empty((n, m + n), dtype=object)
    D[:, :m] = C.astype(object) if C.size else np.zeros((n, m), dtype=object)
    D[:, m:] = np.eye(n, dtype=np.int64).astype(object)
    S = _signs(D[:, :m])
    rows = list(D)      # the rows, not copied from step to step (only the signs are)
    sups = [frozenset((i,)) for i in range(n)]
    cols = list(range(m))
    while cols:
        # eliminate the column that creates the fewest new rows (a standard heuristic)
        block = S[:, cols]
        pos = (block > 0).sum(axis=0).astype(np.int64)
        neg = (block < 0).sum(axis=0).astype(np.int64)
        cost = pos * neg - pos - neg
        j = cols[int(np.argmin(cost))]      # the first of the cheapest, as a scan would pick
        cols.remove(j)
        sj = S[:, j]
        zero = np.flatnonzero(sj == 0)
        pos_rows = np.flatnonzero(sj > 0)
        neg_rows = np.flatnonzero(sj < 0)
        count = len(zero)
        new_rows, new_sups = [], []
        for a in pos_rows:
            for b in neg_rows:
                ra, rb = rows[a], rows[b]
                new_rows.append(_normalize(ra * (-rb[j]) + rb * ra[j]))
                new_sups.append(sups[a] | sups[b])
                count += 1
                if count > max_rows:
                    raise TooManySemiflows(f"more than {max_rows} candidate invariants")
        if count == 0:
            return []
        old_sups = [sups[i] for i in zero]
        old_rows = [rows[i] for i in zero]
        keep_old, keep_new = _minimal(old_sups, new_sups, new_rows, old_rows, m)
        if not keep_old and not keep_new:
            return []
        sparts = [S[zero[keep_old]]]
        if keep_new:
            sparts.append(_signs(np.array([new_rows[k][:m] for k in keep_new], dtype=object)))
        S = np.concatenate(sparts) if len(sparts) > 1 else sparts[0]
        rows = [old_rows[k] for k in keep_old] + [new_rows[k] for k in keep_new]
        sups = [old_sups[k] for k in keep_old] + [new_sups[k] for k in keep_new]
    flows = [list(map(int, r[m:])) for r in rows if any(r[m:])]
    return _dedupe_minimal(flows)


def _signs(block: np.ndarray) -> np.ndarray:
    """The signs (-1, 0, 1) of an object array of Python integers, as int8."""
    return (block > 0).astype(np.int8) - (block < 0).astype(np.int8)


def _support(row) -> frozenset:
    return frozenset(i for i, v in enumerate(row) if v)


def _minimal(old_sups: list, new_sups: list, new_rows: list, old_rows: list,
             m: int) -> tuple[list[int], list[int]]:
    """Which rows stay: a row goes if another's support (identity part) lies strictly
    within its own, or if it repeats a row that stays.  The ``old`` rows (carried over)
    are minimal among themselves already; the indices of the old and new rows kept."""
    drop_old: set[int] = set()
    by_sup: dict[frozenset, list] = {}
    for i, s in enumerate(old_sups):
        by_sup.setdefault(s, []).append(("old", i))
    keep_new: list[int] = []
    order = sorted(range(len(new_sups)), key=lambda k: len(new_sups[k]))
    for k in order:
        s = new_sups[k]
        if not s:
            continue
        if any(o < s for o in old_sups) or any(new_sups[q] < s for q in keep_new):
            continue
        same = by_sup.get(s)
        if same:
            key = tuple(new_rows[k][m:])
            if any(key == tuple((old_rows[i] if w == "old" else new_rows[i])[m:])
                   for w, i in same):
                continue
        for i, o in enumerate(old_sups):
            if s < o:
                drop_old.add(i)
        by_sup.setdefault(s, []).append(("new", k))
        keep_new.append(k)
    keep_old = [i for i in range(len(old_sups)) if i not in drop_old]
    return keep_old, sorted(keep_new)


def _dedupe_minimal(flows: list[list[int]]) -> list[list[int]]:
    out = []
    sups = []
    for f in sorted(flows, key=lambda r: (sum(1 for v in r if v), r)):
        s = _support(f)
        if any(k <= s for k in sups):
            continue
        sups.append(s)
        out.append(f)
    return out


def t_semiflows(C, max_rows: int = MAX_ROWS) -> list[list[int]]:
    """Minimal-support nonnegative integer x with C x = 0 (rows = transitions)."""
    return p_semiflows(np.asarray(C).T, max_rows)
