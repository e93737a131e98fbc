"""Queues of queueing places (numba): arrivals and each queue's next event.

Two representations (chosen per queue by :func:`solvers.des.flat.queue_kind`):

* **rates** — exponential IS, PS and FCFS without FIFO departure
  (:mod:`.rates`): the next completion is redrawn at every change.
  O(classes) per event.
* **work** — every other discipline and distribution: a compact table of
  tokens with class, entry time, remaining work, arrival order and flags;
  between two events of the queue the served set and shares are constant, so
  work is advanced lazily.  A queue is served by its discipline's scheduling
  (:class:`qpn.disciplines.Scheduling`), not by its name: every token (IS), every
  token at a share (PS), or the s first by an order (arrival, latest arrival,
  round-robin ready queue, priority, least remaining work, random), either
  re-chosen at every change (preemptive resume) or kept until done; a sliced
  queue (RR) adds a quantum and a context-switch cost; or every token at a share
  of the server it was placed on when it arrived (JSQ-PS: the server is kept in
  the token's ready-order field, which only sliced queues use otherwise).  FIFO departure holds
  finished tokens until every earlier token of their place has finished.
  O(tokens in the queue) per event.

Busy-server time is accumulated per class (``busy``) before every change.
"""
from __future__ import annotations

import math

from ..flat import (O_ARRIVAL, O_LAST, O_PRIORITY, O_RANDOM, O_READY, Q_RATE_FCFS, Q_WORK,
                    SERVE_CORES, SERVE_FIRST, SERVE_SHARED)
from .draw import draw
from .layout import (CLS_FIFO, CLS_PLACE, CLS_QSLOT, CLS_SAMPLER, GROW_WORK, L_W_CAP,
                     L_W_OFF, N_TIMED, NF_CLS_PRIO, OK, PF_QSERVERS, PF_QUANTUM, PF_SWITCH, Q_HOLD,
                     Q_ORDER, Q_SERVES, Q_SLICED,
                     Q_DRING, Q_DRING_PTR, Q_FIFO, Q_KIND, Q_KPTR, Q_STORE, SF_BUSY, SF_Q_LAST, SF_WQLEFT,
                     SF_WSETUP, SF_WT0, SF_WWORK, SI_INFO, SI_Q_COUNTER, SI_RN, SI_WCLS, SI_WFLAG,
                     SI_WN, SI_WRSEQ, SI_WSEQ, SI_WSRV, SLOT_QUEUE)
from .options import kernel
from .rates import deliver, occupy, rate_account, rate_event, rate_reschedule, shared_share
from .store import ring_push, ring_room, set_ev

SERVING, DONE = 1, 2
INF = math.inf
#: _served's answer for a queue whose tokens each have their own share (JSQ-PS)
PER_TOKEN = -1.0


# ------------------------------------------------------------ room checks
@kernel(inline="always")
def room_for_arrivals(ni, si, kg: int, cnt: int) -> int:
    """OK, or the store to grow (index in info[0], size in info[1]) before ``cnt``
    tokens of class kg arrive."""
    q = ni[ni[SLOT_QUEUE] + ni[ni[CLS_QSLOT] + kg]]
    kind = ni[ni[Q_KIND] + q]
    info = ni[SI_INFO]
    if kind == Q_WORK:
        w = ni[ni[Q_STORE] + q]
        n = si[ni[SI_WN] + w]
        if ni[ni[L_W_CAP] + w] - n < cnt:
            si[info] = w
            si[info + 1] = n + cnt
            return GROW_WORK
        return OK
    r = ni[ni[Q_STORE] + q]
    if kind != Q_RATE_FCFS:
        r += kg - ni[ni[Q_KPTR] + q]
    return ring_room(ni, si, r, cnt)


@kernel(inline="always")
def room_for_event(ni, si, q: int) -> int:
    """Room in the depositories for what the queue's next event may release."""
    need = 1
    if ni[ni[Q_KIND] + q] == Q_WORK and ni[ni[Q_FIFO] + q]:
        need = si[ni[SI_WN] + ni[ni[Q_STORE] + q]]
    p = ni[Q_DRING_PTR] + q
    for i in range(ni[p], ni[p + 1]):
        r = ring_room(ni, si, ni[ni[Q_DRING] + i], need)
        if r != OK:
            return r
    return OK


# ------------------------------------------------------------------- work
@kernel(inline="always")
def _better(nf, ni, si, sf, order: int, a: int, b: int) -> bool:
    """Token a goes before token b in ``order`` (positions in the work arena); ties go
    to the earlier arrival."""
    if order == O_ARRIVAL:
        return si[ni[SI_WSEQ] + a] < si[ni[SI_WSEQ] + b]
    if order == O_LAST:
        return si[ni[SI_WSEQ] + a] > si[ni[SI_WSEQ] + b]
    if order == O_READY:
        return si[ni[SI_WRSEQ] + a] < si[ni[SI_WRSEQ] + b]
    if order == O_PRIORITY:
        cp = ni[NF_CLS_PRIO]
        pa = nf[cp + si[ni[SI_WCLS] + a]]
        pb = nf[cp + si[ni[SI_WCLS] + b]]
        return pa > pb or (pa == pb and si[ni[SI_WSEQ] + a] < si[ni[SI_WSEQ] + b])
    wa = sf[ni[SF_WWORK] + a]                # O_REMAINING
    wb = sf[ni[SF_WWORK] + b]
    return wa < wb or (wa == wb and si[ni[SI_WSEQ] + a] < si[ni[SI_WSEQ] + b])


@kernel
def _served(ni, nf, si, sf, q: int) -> float:
    """Mark the tokens in service (wsrv); returns their share of a server (PER_TOKEN:
    each has its own, :func:`_core_share`)."""
    w = ni[ni[Q_STORE] + q]
    off = ni[ni[L_W_OFF] + w]
    n = si[ni[SI_WN] + w]
    serves, order = ni[ni[Q_SERVES] + q], ni[ni[Q_ORDER] + q]
    s = sf[ni[PF_QSERVERS] + q]
    flag, srv = ni[SI_WFLAG] + off, ni[SI_WSRV] + off
    nact = 0
    for i in range(n):
        si[srv + i] = 0
        if si[flag + i] & DONE == 0:
            nact += 1
    if nact == 0:
        return 1.0
    if serves == SERVE_FIRST and ni[ni[Q_HOLD] + q]:      # servers kept: those given one
        for i in range(n):
            if si[flag + i] & (DONE | SERVING) == SERVING:
                si[srv + i] = 1
        return 1.0
    if serves != SERVE_FIRST or nact <= s:
        for i in range(n):
            if si[flag + i] & DONE == 0:
                si[srv + i] = 1
        if serves == SERVE_CORES:        # each at its own server's share
            return PER_TOKEN
        if serves == SERVE_SHARED:
            return shared_share(ni, sf, q, nact)
        return 1.0
    for _ in range(int(s)):              # the s first by the discipline's order
        best = -1
        for i in range(n):
            if si[flag + i] & DONE == 0 and si[srv + i] == 0:
                if best < 0 or _better(nf, ni, si, sf, order, off + i, off + best):
                    best = i
        si[srv + best] = 1
    return 1.0


@kernel(inline="always")
def _tokens_on(ni, si, off: int, n: int, c: int) -> int:
    """JSQ-PS: the tokens not done that were placed on server c."""
    flag, core = ni[SI_WFLAG] + off, ni[SI_WRSEQ] + off
    k = 0
    for x in range(n):
        if si[flag + x] & DONE == 0 and si[core + x] == c:
            k += 1
    return k


@kernel(inline="always")
def _core_share(ni, si, off: int, n: int, i: int) -> float:
    """JSQ-PS: the share of token i (position in its table) of the server it was placed
    on, 1 / (tokens not done there)."""
    return 1.0 / _tokens_on(ni, si, off, n, si[ni[SI_WRSEQ] + off + i])


@kernel(inline="always")
def _least_loaded(ni, si, off: int, n: int, servers: int) -> int:
    """JSQ-PS: the server with the fewest tokens not done (the lowest index of a tie)."""
    best, best_k = 0, -1
    for c in range(servers):
        k = _tokens_on(ni, si, off, n, c)
        if best_k < 0 or k < best_k:
            best, best_k = c, k
    return best


@kernel
def _advance(ni, nf, si, sf, q: int, now: float) -> None:
    """Progress the work of the tokens in service up to ``now``; busy time per class."""
    last = ni[SF_Q_LAST] + q
    dt = now - sf[last]
    sf[last] = now
    if dt <= 0.0:
        return
    w = ni[ni[Q_STORE] + q]
    off = ni[ni[L_W_OFF] + w]
    n = si[ni[SI_WN] + w]
    share = _served(ni, nf, si, sf, q)
    rr = ni[ni[Q_SLICED] + q] != 0
    srv, cls, busy = ni[SI_WSRV] + off, ni[SI_WCLS] + off, ni[SF_BUSY]
    work, setup, qleft = ni[SF_WWORK] + off, ni[SF_WSETUP] + off, ni[SF_WQLEFT] + off
    for i in range(n):
        if si[srv + i] == 0:
            continue
        own = share if share != PER_TOKEN else _core_share(ni, si, off, n, i)
        sf[busy + si[cls + i]] += own * dt
        if rr:
            used = min(sf[setup + i], dt)
            run = dt - used
            sf[setup + i] -= used
            sf[work + i] -= run
            sf[qleft + i] -= run
        else:
            sf[work + i] -= own * dt


@kernel
def _until(ni, sf, i: int, share: float, rr: bool) -> float:
    """Time to the token's next event at its current share (i: position in the arena)."""
    if rr:
        return sf[ni[SF_WSETUP] + i] + min(max(sf[ni[SF_WWORK] + i], 0.0), max(sf[ni[SF_WQLEFT] + i], 0.0))
    return max(sf[ni[SF_WWORK] + i], 0.0) / share


@kernel(inline="always")
def _next_done(ni, si, sf, off: int, n: int, share: float, rr: bool):
    """(time until the first token in service ends its work or quantum, its index; -1: none)."""
    srv = ni[SI_WSRV] + off
    j = -1
    best = INF
    for i in range(n):
        if si[srv + i]:
            u = _until(ni, sf, off + i, share if share != PER_TOKEN else _core_share(ni, si, off, n, i), rr)
            if u < best:
                best = u
                j = i
    return best, j


@kernel
def _work_reschedule(ni, nf, si, sf, q: int, now: float) -> None:
    w = ni[ni[Q_STORE] + q]
    off = ni[ni[L_W_OFF] + w]
    share = _served(ni, nf, si, sf, q)
    best, _ = _next_done(ni, si, sf, off, si[ni[SI_WN] + w], share, ni[ni[Q_SLICED] + q] != 0)
    set_ev(ni, si, sf, ni[N_TIMED] + q, now + best)


@kernel
def _start(ni, nf, si, sf, q: int, g) -> None:
    """Disciplines whose tokens keep their server: give free servers to waiting tokens."""
    if ni[ni[Q_SERVES] + q] != SERVE_FIRST or not ni[ni[Q_HOLD] + q]:
        return
    order = ni[ni[Q_ORDER] + q]
    w = ni[ni[Q_STORE] + q]
    off = ni[ni[L_W_OFF] + w]
    n = si[ni[SI_WN] + w]
    s = sf[ni[PF_QSERVERS] + q]
    flag = ni[SI_WFLAG] + off
    while True:
        serving = 0
        waiting = 0
        for i in range(n):
            f = si[flag + i]
            if f & DONE == 0:
                if f & SERVING:
                    serving += 1
                else:
                    waiting += 1
        if serving >= s or waiting == 0:
            return
        pick = -1
        if order == O_RANDOM:
            x = min(int(g.random() * waiting), waiting - 1)
            for i in range(n):
                if si[flag + i] & (DONE | SERVING) == 0:
                    if x == 0:
                        pick = i
                        break
                    x -= 1
        else:
            for i in range(n):
                if si[flag + i] & (DONE | SERVING) == 0:
                    if pick < 0 or _better(nf, ni, si, sf, order, off + i, off + pick):
                        pick = i
        si[flag + pick] |= SERVING


@kernel
def _remove(ni, si, sf, w: int, i: int) -> None:
    """Remove the token at position i of table w (the table's last token fills the gap)."""
    off = ni[ni[L_W_OFF] + w]
    last = si[ni[SI_WN] + w] - 1
    if i != last:
        for f in (SF_WT0, SF_WWORK, SF_WQLEFT, SF_WSETUP):
            sf[ni[f] + off + i] = sf[ni[f] + off + last]
        for f in (SI_WCLS, SI_WSEQ, SI_WFLAG, SI_WRSEQ):
            si[ni[f] + off + i] = si[ni[f] + off + last]
    si[ni[SI_WN] + w] -= 1


@kernel
def _release(ni, si, sf, w: int, now: float) -> None:
    """FIFO departure: finished tokens leave once no earlier token of their place is pending."""
    off = ni[ni[L_W_OFF] + w]
    flag, cls, seq = ni[SI_WFLAG] + off, ni[SI_WCLS] + off, ni[SI_WSEQ] + off
    place = ni[CLS_PLACE]
    while True:
        n = si[ni[SI_WN] + w]
        best = -1
        for i in range(n):
            if si[flag + i] & DONE == 0:
                continue
            pl = ni[place + si[cls + i]]
            ok = True
            for k in range(n):
                if si[flag + k] & DONE == 0 and ni[place + si[cls + k]] == pl and si[seq + k] < si[seq + i]:
                    ok = False
                    break
            if ok and (best < 0 or si[seq + i] < si[seq + best]):
                best = i
        if best < 0:
            return
        kg = si[cls + best]
        t0 = sf[ni[SF_WT0] + off + best]
        _remove(ni, si, sf, w, best)
        deliver(ni, si, sf, kg, t0, now)


@kernel
def _work_event(ni, nf, si, sf, q: int, now: float, g) -> None:
    _advance(ni, nf, si, sf, q, now)
    w = ni[ni[Q_STORE] + q]
    off = ni[ni[L_W_OFF] + w]
    n = si[ni[SI_WN] + w]
    share = _served(ni, nf, si, sf, q)
    rr = ni[ni[Q_SLICED] + q] != 0
    srv, rseq = ni[SI_WSRV] + off, ni[SI_WRSEQ] + off
    best, j = _next_done(ni, si, sf, off, n, share, rr)
    if j < 0:
        set_ev(ni, si, sf, ni[N_TIMED] + q, INF)
        return
    eps = 1e-12 * max(1.0, abs(now))
    if rr:
        # quanta ending at the same instant go in ready order (as a scheduler would)
        for i in range(n):
            if si[srv + i] and _until(ni, sf, off + i, share, rr) <= best + eps and si[rseq + i] < si[rseq + j]:
                j = i
    if rr and sf[ni[SF_WWORK] + off + j] > eps:
        # quantum over: to the back of the ready queue; a switch only if another token waits
        c = ni[SI_Q_COUNTER] + q
        si[rseq + j] = si[c]
        si[c] += 1
        sf[ni[SF_WQLEFT] + off + j] = sf[ni[PF_QUANTUM] + q]
        nact = 0
        for i in range(n):
            if si[ni[SI_WFLAG] + off + i] & DONE == 0:
                nact += 1
        sf[ni[SF_WSETUP] + off + j] = sf[ni[PF_SWITCH] + q] if nact > sf[ni[PF_QSERVERS] + q] else 0.0
    else:
        kg = si[ni[SI_WCLS] + off + j]
        if ni[ni[CLS_FIFO] + kg]:
            si[ni[SI_WFLAG] + off + j] |= DONE
            _release(ni, si, sf, w, now)
        else:
            t0 = sf[ni[SF_WT0] + off + j]
            _remove(ni, si, sf, w, j)
            deliver(ni, si, sf, kg, t0, now)
    _start(ni, nf, si, sf, q, g)
    _work_reschedule(ni, nf, si, sf, q, now)


# --------------------------------------------------------------- dispatch
@kernel
def queue_arrive(ni, nf, si, sf, kg: int, t0: float, now: float, g, cnt: int) -> None:
    """``cnt`` tokens of class ``kg`` (entered their place at ``t0``) join their queue (room
    checked).  A work queue is rescheduled once for the batch: its scan is O(tokens), so a
    barrier releasing 65,536 tokens must not scan once per token."""
    q = ni[ni[SLOT_QUEUE] + ni[ni[CLS_QSLOT] + kg]]
    kind = ni[ni[Q_KIND] + q]
    if kind != Q_WORK:
        for _ in range(cnt):
            rate_account(ni, si, sf, q, now)
            r = ni[ni[Q_STORE] + q]
            if kind != Q_RATE_FCFS:
                r += kg - ni[ni[Q_KPTR] + q]
                if si[ni[SI_RN] + r] == 0:
                    occupy(ni, si, q, kg)
            ring_push(ni, si, sf, r, t0, kg)
            rate_reschedule(ni, si, sf, q, now, g)
        return
    _advance(ni, nf, si, sf, q, now)
    w = ni[ni[Q_STORE] + q]
    c = ni[SI_Q_COUNTER] + q
    sliced = ni[ni[Q_SLICED] + q] != 0
    cores = ni[ni[Q_SERVES] + q] == SERVE_CORES
    for _ in range(cnt):
        off = ni[ni[L_W_OFF] + w]
        n = si[ni[SI_WN] + w]
        i = off + n
        si[ni[SI_WN] + w] += 1
        si[ni[SI_WCLS] + i] = kg
        si[ni[SI_WSEQ] + i] = si[c]
        si[ni[SI_WRSEQ] + i] = si[c]
        if cores:
            si[ni[SI_WRSEQ] + i] = _least_loaded(ni, si, off, n, int(sf[ni[PF_QSERVERS] + q]))
        si[ni[SI_WFLAG] + i] = 0
        si[c] += 1
        sf[ni[SF_WT0] + i] = t0
        sf[ni[SF_WWORK] + i] = draw(ni, nf, si, sf, ni[ni[CLS_SAMPLER] + kg], g)
        if sliced:
            # a token that starts running at once pays the context switch too
            sf[ni[SF_WSETUP] + i] = sf[ni[PF_SWITCH] + q]
            sf[ni[SF_WQLEFT] + i] = sf[ni[PF_QUANTUM] + q]
        else:
            sf[ni[SF_WSETUP] + i] = 0.0
            sf[ni[SF_WQLEFT] + i] = 0.0
        _start(ni, nf, si, sf, q, g)
    _work_reschedule(ni, nf, si, sf, q, now)


@kernel
def queue_event(ni, nf, si, sf, q: int, now: float, g) -> None:
    """The queue's next event (a completion, or a quantum's end); room checked."""
    if ni[ni[Q_KIND] + q] == Q_WORK:
        _work_event(ni, nf, si, sf, q, now, g)
    else:
        rate_event(ni, si, sf, q, now, g)


@kernel
def queue_account(ni, nf, si, sf, q: int, now: float) -> None:
    """Busy time up to ``now`` (before statistics are read)."""
    if ni[ni[Q_KIND] + q] == Q_WORK:
        _advance(ni, nf, si, sf, q, now)
    else:
        rate_account(ni, si, sf, q, now)
