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
    """Minimal-support nonnegative integer y with y^T C = 0 (rows = places)."""
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
    cols = list(range(m))
    while cols:
        # eliminate the column that creates the fewest new rows (a standard heuristic)
        block = D[:, cols]
        pos = (block > 0).sum(axis=0).astype(np.int64)
        neg = (block < 0).sum(axis=0).astype(np.int64)
        cost = pos * neg - pos - neg
        j = cols[int(np.argmin(cost))]      # the first of the cheapest, as a scan would pick
        cols.remove(j)
        col = D[:, j]
        zero = [i for i in range(D.shape[0]) if col[i] == 0]
        pos = [i for i in range(D.shape[0]) if col[i] > 0]
        neg = [i for i in range(D.shape[0]) if col[i] < 0]
        new_rows = [D[i] for i in zero]
        for a in pos:
            for b in neg:
                ra, rb = D[a], D[b]
                row = ra * (-rb[j]) + rb * ra[j]
                new_rows.append(_normalize(row))
                if len(new_rows) > max_rows:
                    raise TooManySemiflows(f"more than {max_rows} candidate invariants")
        if not new_rows:
            return []
        D = np.array(new_rows, dtype=object)
        D = _minimal(D, m)
    flows = [list(map(int, r[m:])) for r in D if any(r[m:])]
    return _dedupe_minimal(flows)


def _support(row) -> frozenset:
    return frozenset(i for i, v in enumerate(row) if v)


def _minimal(D: np.ndarray, m: int) -> np.ndarray:
    """Drop rows whose support (identity part) contains another row's support."""
    rows = list(D)
    sups = [_support(r[m:]) for r in rows]
    keep = []
    order = sorted(range(len(rows)), key=lambda i: len(sups[i]))
    kept_sups: list[frozenset] = []
    seen = set()
    for i in order:
        s = sups[i]
        if not s:
            continue
        if any(k <= s for k in kept_sups if k != s):
            continue
        key = tuple(rows[i][m:])
        if key in seen:
            continue
        seen.add(key)
        kept_sups.append(s)
        keep.append(rows[i])
    if not keep:
        return np.empty((0, D.shape[1]), dtype=object)
    return np.array(keep, dtype=object)


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
