"""Token stores and marking changes (numba).

A marking change integrates the slot's token-time, updates the inhibitor and
capacity group sums, and marks the modes whose enabling it may change (the
net's ``simm``/``stim`` lists): the loop re-checks only those.  Tokens of
ordinary places and depositories keep the time they entered the place in a
ring per slot (FIFO order); a token taken out records its residence time.
A place that offers one token at a time (departure fifo, random) keeps the order of
its tokens across colors in an order ring of offer slots (see :mod:`.layout`).

A ring ``r`` is a power-of-two region of the lane's ``rt`` (entry times) and
``rc`` (classes) with a head and a size.
"""
from __future__ import annotations

import math

import numpy as np

from ..stats import LOG_MIN, NB_PER_DECADE, NBINS
from ..stats import bin_of as stats_bin_of
from .layout import (GROW_RING, L_R_CAP, L_R_OFF, N_SLOTS, OK, ORD_PLACE, ORD_RANDOM, ORD_REAL, ORD_RING,
                     PI_POINT, SCAP_IDX, SCAP_PTR, SF_AREA, SF_LAST, SF_RES, SF_RT, SI_OVIS, SLOT_ORD,
                     SI_CAP_SUM, SI_IMM_DIRTY, SI_IMM_MARK, SI_IMM_ND, SI_INFO, SI_INH_SUM, SI_M, SI_RC, SI_RH, SI_RN,
                     SI_TIM_DIRTY, SI_TIM_MARK, SI_TIM_ND, SIMM_IDX, SIMM_PTR, SINH_IDX, SINH_PTR, SLOT_RING,
                     SLOT_UNIT, STIM_IDX, STIM_PTR, N_TIMED, N_QUEUES, SF_EV, SI_EVTREE, EV_TREE_MIN)
from .options import kernel


# ------------------------------------------------------------ event clocks
@kernel(inline="always")
def set_ev(ni, si, sf, c: int, t: float) -> None:
    """Clock ``c`` (a timed mode's column, or N_TIMED + a queue) now ends at ``t``; the
    tournament tree above it, if there is one, follows (ties to the lower clock)."""
    ev = ni[SF_EV]
    sf[ev + c] = t
    n = ni[N_TIMED] + ni[N_QUEUES]
    if n <= EV_TREE_MIN:
        return
    tree = ni[SI_EVTREE]
    P = 1
    while P < n:
        P *= 2
    i = (P + c) >> 1
    while i >= 1:
        a = si[tree + 2 * i]
        b = si[tree + 2 * i + 1]
        if b >= 0 and (a < 0 or sf[ev + b] < sf[ev + a]):
            a = b
        si[tree + i] = a
        i >>= 1


@kernel(inline="always")
def next_ev(ni, si, sf) -> int:
    """The clock that ends first (the first of the least time), -1 if none ends."""
    ev = ni[SF_EV]
    n = ni[N_TIMED] + ni[N_QUEUES]
    if n > EV_TREE_MIN:
        k = si[ni[SI_EVTREE] + 1]
        return k if k >= 0 and sf[ev + k] < math.inf else -1
    k = -1
    tn = math.inf
    for c in range(n):
        if sf[ev + c] < tn:
            tn = sf[ev + c]
            k = c
    return k


# ----------------------------------------------------------------- rings
@kernel(inline="always")
def ring_size(ni, si, r: int) -> int:
    """Tokens in ring r."""
    return si[ni[SI_RN] + r]


@kernel(inline="always")
def ring_free(ni, si, r: int) -> int:
    """Free positions in ring r."""
    return ni[ni[L_R_CAP] + r] - si[ni[SI_RN] + r]


@kernel(inline="always")
def ring_room(ni, si, r: int, cnt: int) -> int:
    """OK if ring r has room for cnt more tokens, else GROW_RING with the size it needs."""
    if ring_free(ni, si, r) >= cnt:
        return OK
    info = ni[SI_INFO]
    si[info] = r
    si[info + 1] = si[ni[SI_RN] + r] + cnt
    return GROW_RING


@kernel(inline="always")
def ring_pos(ni, si, r: int, i: int) -> int:
    """Index in rt/rc (relative to the arena) of the i-th element of ring r (0 = head)."""
    return ni[ni[L_R_OFF] + r] + ((si[ni[SI_RH] + r] + i) & (ni[ni[L_R_CAP] + r] - 1))


@kernel(inline="always")
def ring_push(ni, si, sf, r: int, t: float, c: int) -> None:
    """Append a token (entry time t, class c) at the tail of ring r (room checked)."""
    p = ring_pos(ni, si, r, si[ni[SI_RN] + r])
    sf[ni[SF_RT] + p] = t
    si[ni[SI_RC] + p] = c
    si[ni[SI_RN] + r] += 1


@kernel(inline="always")
def ring_pop(ni, si, sf, r: int) -> float:
    """Remove the head of ring r; its entry time."""
    p = ring_pos(ni, si, r, 0)
    h = ni[SI_RH] + r
    si[h] = (si[h] + 1) & (ni[ni[L_R_CAP] + r] - 1)
    si[ni[SI_RN] + r] -= 1
    return sf[ni[SF_RT] + p]


@kernel
def ring_take_any(ni, si, sf, r: int, i: int) -> float:
    """Remove element i of a bag (order not kept: the last element fills the gap)."""
    rt, rc = ni[SF_RT], ni[SI_RC]
    p = ring_pos(ni, si, r, i)
    q = ring_pos(ni, si, r, si[ni[SI_RN] + r] - 1)
    t = sf[rt + p]
    sf[rt + p] = sf[rt + q]
    si[rc + p] = si[rc + q]
    si[ni[SI_RN] + r] -= 1
    return t


@kernel
def ring_take_ordered(ni, si, sf, r: int, i: int):
    """Remove element i of a FIFO, keeping the order: (entry time, class)."""
    rt, rc = ni[SF_RT], ni[SI_RC]
    p = ring_pos(ni, si, r, i)
    t = sf[rt + p]
    c = si[rc + p]
    for k in range(i, 0, -1):                  # the elements ahead move one step back
        dst = ring_pos(ni, si, r, k)
        src = ring_pos(ni, si, r, k - 1)
        sf[rt + dst] = sf[rt + src]
        si[rc + dst] = si[rc + src]
    h = ni[SI_RH] + r
    si[h] = (si[h] + 1) & (ni[ni[L_R_CAP] + r] - 1)
    si[ni[SI_RN] + r] -= 1
    return t, c


# ------------------------------------------------------------ statistics
def _bin_table(sub: int, emin: int, emax: int) -> np.ndarray:
    """Bin of every sub-interval [m, m + 1/(2 sub)) x 2^e of the doubles x = m 2^e, m in
    [1/2, 1), e in [emin, emax); -1 where a bin edge falls inside (about one in eight)."""
    e = np.arange(emin, emax)[:, None]
    s = np.arange(sub)[None, :]
    lo = np.ldexp(0.5 + s / (2 * sub), e)
    last = np.nextafter(np.ldexp(0.5 + (s + 1) / (2 * sub), e), 0.0)
    a, b = stats_bin_of(lo), stats_bin_of(last)      # bins grow with x: equal ends, one bin
    return np.where(a == b, a, -1).astype(np.int16).ravel()


BIN_SUB, BIN_EMIN, BIN_EMAX = 256, -31, 26             # 2^-32 s .. 2^26 s: the bins' range
#: a frozen constant of the compiled loop (28 KB): a residence time's bin without a
#: logarithm (which cost ~10% of an event with histograms on)
BIN_TABLE = _bin_table(BIN_SUB, BIN_EMIN, BIN_EMAX)


@kernel(inline="always")
def _bin_by_log(x: float) -> int:
    if x <= 1e-300:
        return 0
    b = int(math.floor((math.log10(x) - LOG_MIN) * NB_PER_DECADE)) + 1
    if b < 0:
        return 0
    if b > NBINS - 1:
        return NBINS - 1
    return b


@kernel(inline="always")
def bin_of(x: float) -> int:
    """Residence histogram bin (as :func:`solvers.des.stats.bin_of`): from the exponent and
    the first 8 bits of the mantissa, by table; by the logarithm next to a bin edge."""
    if x > 0.0:
        m, e = math.frexp(x)
        if BIN_EMIN <= e < BIN_EMAX:
            b = BIN_TABLE[(e - BIN_EMIN) * BIN_SUB + int((m - 0.5) * (2 * BIN_SUB))]
            if b >= 0:
                return b
    return _bin_by_log(x)


@kernel(inline="always")
def record(ni, si, sf, hist, unit: int, x: float, with_hist: bool) -> None:
    """Add one residence time x of ``unit`` to its sums (and histogram)."""
    r = ni[SF_RES] + 3 * unit
    sf[r] += 1.0
    sf[r + 1] += x
    sf[r + 2] += x * x
    if with_hist:
        hist[unit, si[ni[PI_POINT]], bin_of(x)] += 1


# --------------------------------------------------------------- marking
@kernel(inline="always")
def mark_timed(ni, si, j: int) -> None:
    """Put timed mode j on the list of clocks to re-check (once)."""
    m = ni[SI_TIM_MARK] + j
    if si[m] == 0:
        si[m] = 1
        n = ni[SI_TIM_ND]
        si[ni[SI_TIM_DIRTY] + si[n]] = j
        si[n] += 1


@kernel(inline="always")
def change(ni, si, sf, s: int, d: int, now: float) -> None:
    """Add ``d`` tokens to slot ``s`` at ``now``; mark the modes to re-check."""
    m = ni[SI_M] + s
    a = ni[SF_AREA] + s
    last = ni[SF_LAST] + s
    sf[a] += si[m] * (now - sf[last])
    sf[last] = now
    si[m] += d
    p = ni[SINH_PTR] + s
    g = ni[SI_INH_SUM]
    for i in range(ni[p], ni[p + 1]):
        si[g + ni[ni[SINH_IDX] + i]] += d
    p = ni[SCAP_PTR] + s
    g = ni[SI_CAP_SUM]
    for i in range(ni[p], ni[p + 1]):
        si[g + ni[ni[SCAP_IDX] + i]] += d
    p = ni[SIMM_PTR] + s
    mark, dirty, nd = ni[SI_IMM_MARK], ni[SI_IMM_DIRTY], ni[SI_IMM_ND]
    for i in range(ni[p], ni[p + 1]):
        j = ni[ni[SIMM_IDX] + i]
        if si[mark + j] == 0:
            si[mark + j] = 1
            si[dirty + si[nd]] = j
            si[nd] += 1
    p = ni[STIM_PTR] + s
    for i in range(ni[p], ni[p + 1]):
        mark_timed(ni, si, ni[ni[STIM_IDX] + i])


@kernel(inline="always")
def take_tokens(ni, si, sf, hist, s: int, cnt: int, now: float, with_hist: bool) -> None:
    """Take ``cnt`` tokens (oldest first) from token slot ``s``; record their residence."""
    r = ni[ni[SLOT_RING] + s]
    u = ni[ni[SLOT_UNIT] + s]
    for _ in range(cnt):
        t0 = ring_pop(ni, si, sf, r)
        record(ni, si, sf, hist, u, now - t0, with_hist)
    change(ni, si, sf, s, -cnt, now)


@kernel(inline="always")
def offer_put(ni, si, sf, v: int, cnt: int, now: float) -> None:
    """``cnt`` tokens reached a place that offers one token at a time, in the color of
    offer slot ``v``: offered at once while the place offers none, else queued in order."""
    k = v - ni[N_SLOTS]
    vis = ni[SI_OVIS] + ni[ni[ORD_PLACE] + k]
    r = ni[ni[ORD_RING] + k]
    for _ in range(cnt):
        if si[vis] == 0:
            si[vis] = v + 1
            change(ni, si, sf, v, 1, now)
        else:
            ring_push(ni, si, sf, r, 0.0, v)


@kernel
def offer_take(ni, si, sf, hist, v: int, cnt: int, now: float, g, with_hist: bool) -> None:
    """The token offered in offer slot ``v`` leaves (``cnt`` is 1: an arc taking more
    is never enabled); the next one is offered: the oldest (fifo) or a random one."""
    k = v - ni[N_SLOTS]
    take_tokens(ni, si, sf, hist, ni[ni[ORD_REAL] + k], cnt, now, with_hist)
    change(ni, si, sf, v, -cnt, now)
    vis = ni[SI_OVIS] + ni[ni[ORD_PLACE] + k]
    si[vis] = 0
    r = ni[ni[ORD_RING] + k]
    n = ring_size(ni, si, r)
    if n > 0:
        i = 0
        if ni[ni[ORD_RANDOM] + k] != 0:
            i = min(int(g.random() * n), n - 1)
        _, nv = ring_take_ordered(ni, si, sf, r, i)
        si[vis] = nv + 1
        change(ni, si, sf, nv, 1, now)


@kernel(inline="always")
def put_tokens(ni, si, sf, s: int, cnt: int, now: float, t0: float) -> None:
    """Put ``cnt`` tokens that entered the place at ``t0`` into token slot ``s``."""
    r = ni[ni[SLOT_RING] + s]
    for _ in range(cnt):
        ring_push(ni, si, sf, r, t0, 0)
    change(ni, si, sf, s, cnt, now)
    v = ni[ni[SLOT_ORD] + s]
    if v >= 0:
        offer_put(ni, si, sf, v, cnt, now)
