"""Queues kept as rates (numba): exponential IS, PS and FCFS without FIFO departure.

Service is memoryless, so the next completion is redrawn whenever the content changes
(total rate from the counts); the completing class is drawn in proportion to its rate
and the token uniformly within its class (IS, PS: a ring used as a bag of entry times
per class) or by position among the first s (FCFS: one ring in arrival order).
IS and PS keep their occupied classes in a sorted list (``qocc``: a queue's entries at its
first class's index, ``qocc_n`` of them), so an event costs O(occupied classes), not
O(classes): a place colored by a loop counter has thousands of classes and one token;
the sums run in class order as over all classes (adding zeros changes no bit).
:mod:`.queues` chooses between these and per-token work.
"""
from __future__ import annotations

import math

from ..flat import Q_RATE_FCFS, Q_RATE_PS
from .layout import (CLS_DSLOT, CLS_QSLOT, N_TIMED, PF_MU, PF_QSERVERS, PF_QSPEED, Q_KIND, Q_KPTR, Q_SPD_PTR,
                     Q_STORE, SF_BUSY, SF_Q_LAST, SI_QOCC, SI_QOCC_N, SI_RC, SI_RN)
from .options import kernel
from .store import change, put_tokens, ring_pos, ring_take_any, ring_take_ordered, set_ev

INF = math.inf


@kernel(inline="always")
def occupied(ni, si, q: int) -> tuple:
    """(start, count) of queue q's occupied classes in ``qocc`` (global class indices)."""
    return ni[SI_QOCC] + ni[ni[Q_KPTR] + q], si[ni[SI_QOCC_N] + q]


@kernel(inline="always")
def occupy(ni, si, q: int, kg: int) -> None:
    """Class kg of queue q got its first token: into the sorted list."""
    a, n = occupied(ni, si, q)
    i = n
    while i > 0 and si[a + i - 1] > kg:
        si[a + i] = si[a + i - 1]
        i -= 1
    si[a + i] = kg
    si[ni[SI_QOCC_N] + q] = n + 1


@kernel(inline="always")
def vacate(ni, si, q: int, kg: int) -> None:
    """Class kg of queue q lost its last token: out of the sorted list."""
    a, n = occupied(ni, si, q)
    i = 0
    while si[a + i] != kg:
        i += 1
    for x in range(i, n - 1):
        si[a + x] = si[a + x + 1]
    si[ni[SI_QOCC_N] + q] = n - 1


@kernel(inline="always")
def deliver(ni, si, sf, kg: int, t0: float, now: float) -> None:
    """A token of class ``kg`` leaves the queue for its depository, keeping its entry time."""
    change(ni, si, sf, ni[ni[CLS_QSLOT] + kg], -1, now)
    put_tokens(ni, si, sf, ni[ni[CLS_DSLOT] + kg], 1, now, t0)


@kernel(inline="always")
def shared_share(ni, sf, q: int, n: int) -> float:
    """Each token's share of a shared (PS) queue's capacity with n >= 1 tokens in it:
    min(n, servers) / n, or the queue's speed table (its last entry past its end) / n."""
    a, b = ni[ni[Q_SPD_PTR] + q], ni[ni[Q_SPD_PTR] + q + 1]
    if a == b:
        s = sf[ni[PF_QSERVERS] + q]
        return s / n if n > s else 1.0
    i = n - 1 if n <= b - a else b - a - 1
    return sf[ni[PF_QSPEED] + a + i] / n


@kernel(inline="always")
def rate_account(ni, si, sf, q: int, now: float) -> None:
    last = ni[SF_Q_LAST] + q
    dt = now - sf[last]
    sf[last] = now
    if dt <= 0.0:
        return
    k0 = ni[ni[Q_KPTR] + q]
    base = ni[ni[Q_STORE] + q]
    s = sf[ni[PF_QSERVERS] + q]
    busy = ni[SF_BUSY]
    rn = ni[SI_RN]
    if ni[ni[Q_KIND] + q] == Q_RATE_FCFS:
        n = si[rn + base]
        rc = ni[SI_RC]
        for i in range(n):
            if i >= s:
                break
            sf[busy + si[rc + ring_pos(ni, si, base, i)]] += dt
        return
    share = 1.0
    a, m = occupied(ni, si, q)
    if ni[ni[Q_KIND] + q] == Q_RATE_PS:
        n = 0
        for x in range(m):
            n += si[rn + base + si[a + x] - k0]
        if n > 0:
            share = shared_share(ni, sf, q, n)
    for x in range(m):
        k = si[a + x]
        sf[busy + k] += si[rn + base + k - k0] * share * dt


@kernel(inline="always")
def rate_reschedule(ni, si, sf, q: int, now: float, g) -> None:
    k0 = ni[ni[Q_KPTR] + q]
    base = ni[ni[Q_STORE] + q]
    s = sf[ni[PF_QSERVERS] + q]
    mu = ni[PF_MU]
    rn = ni[SI_RN]
    R = 0.0
    if ni[ni[Q_KIND] + q] == Q_RATE_FCFS:
        rc = ni[SI_RC]
        for i in range(si[rn + base]):
            if i >= s:
                break
            R += sf[mu + si[rc + ring_pos(ni, si, base, i)]]
    else:
        n = 0
        a, m = occupied(ni, si, q)
        for x in range(m):
            k = si[a + x]
            c = si[rn + base + k - k0]
            n += c
            R += c * sf[mu + k]
        if ni[ni[Q_KIND] + q] == Q_RATE_PS and n > 0:
            R *= shared_share(ni, sf, q, n)
    set_ev(ni, si, sf, ni[N_TIMED] + q, now + g.standard_exponential() / R if R > 0.0 else INF)


@kernel
def rate_event(ni, si, sf, q: int, now: float, g) -> None:
    rate_account(ni, si, sf, q, now)
    k0, k1 = ni[ni[Q_KPTR] + q], ni[ni[Q_KPTR] + q + 1]
    base = ni[ni[Q_STORE] + q]
    mu = ni[PF_MU]
    rn = ni[SI_RN]
    if ni[ni[Q_KIND] + q] == Q_RATE_FCFS:
        n = si[rn + base]
        s = sf[ni[PF_QSERVERS] + q]
        ns = n if n < s else int(s)
        i = 0
        if ns > 1:                    # which of the tokens in service completes: by rate
            rc = ni[SI_RC]
            R = 0.0
            for x in range(ns):
                R += sf[mu + si[rc + ring_pos(ni, si, base, x)]]
            u = g.random() * R
            acc = 0.0
            i = ns - 1
            for x in range(ns):
                acc += sf[mu + si[rc + ring_pos(ni, si, base, x)]]
                if u < acc:
                    i = x
                    break
        t0, kg = ring_take_ordered(ni, si, sf, base, i)
    else:
        kg = k0
        a, m = occupied(ni, si, q)
        if k1 - k0 > 1:               # the class, in proportion to its rate
            R = 0.0
            for x in range(m):
                k = si[a + x]
                R += si[rn + base + k - k0] * sf[mu + k]
            u = g.random() * R
            acc = 0.0
            for x in range(m):
                k = si[a + x]
                c = si[rn + base + k - k0]
                kg = k
                acc += c * sf[mu + k]
                if u < acc:
                    break
        r = base + kg - k0
        n = si[rn + r]
        i = min(int(g.random() * n), n - 1)     # every token of the class equally likely
        t0 = ring_take_any(ni, si, sf, r, i)
        if n == 1:
            vacate(ni, si, q, kg)
    deliver(ni, si, sf, kg, t0, now)
    rate_reschedule(ni, si, sf, q, now, g)
