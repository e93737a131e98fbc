"""The event loop of one lane (numba).

    until the lane has made `target` steps (events):
        next event = earliest timed-transition clock or queue event
        fire the timed mode, or process the queue's event
        settle: fire enabled immediate modes (highest priority first, by
                weight among equals) until none is enabled
        update the clocks of the timed modes whose enabling may have changed
        every `width` steps close a statistics bucket

Only modes that a marking change marked dirty are re-checked (see
:func:`.store.change`); the enabled immediate modes are kept in a list.  An
event whose tokens would not fit a store returns GROW_* before changing
anything (settling and clock updates resume where they stopped: ``phase``),
so the driver grows the store and calls again.
"""
from __future__ import annotations

import math

from ..flat import C_EXP, C_SINGLE
from .draw import draw
from .layout import (CLOCK_KIND, DEADLOCK, DONE, GROW_MULTI, IN_CNT, IN_PTR, IN_SLOT, L_C_CAP,
                     L_C_OFF, MCAP_ADD, MCAP_GRP, MCAP_PTR, MINH_GRP, MINH_PTR, MODE_COL, MODE_MULTI,
                     MODE_SAMPLER, N_MODES, N_QUEUES, N_SLOTS, N_TIMED, NF_PRIO, OK, OUT_CNT, OUT_PTR,
                     OUT_SLOT, PF_SMP_PAR, PF_TSERVERS, PF_WEIGHT, PI_CAP_LIMIT, PI_INH_THR, PI_M0, SF_AREA,
                     SF_BUSY, SF_BUSY_PREV, SF_CCLK, SF_CSTART, SF_DEAD, SF_EFF, SF_EV, SF_FIRES, SF_LAST,
                     SF_RES, SF_T, SF_T_START, SI_CAP_SUM, SI_CN, SI_EN_LIST, SI_EN_N, SI_EN_POS, SI_FIRED,
                     SI_IMM_DIRTY, SI_IMM_EN, SI_IMM_MARK, SI_IMM_ND, SI_INFO, SI_INH_SUM, SI_M, SI_PHASE,
                     SI_STEPS, SI_TIM_DIRTY, SI_TIM_MARK, SI_TIM_ND, SLOT_CLASS, SLOT_QUEUE, SLOT_RING,
                     TIMED_MODES, TRAP, YIELD, N_UNITS, N_CLASSES, ORD_RING, OUT_OROOM, OUT_ROOM, SLOT_ORD)
from .options import CACHE, kernel  # noqa: F401  (CACHE: read by the package)
from .queues import queue_account, queue_arrive, queue_event, room_for_arrivals, room_for_event
from .store import change, mark_timed, next_ev, offer_take, put_tokens, ring_room, set_ev, take_tokens

INF = math.inf
MAX_IMMEDIATE = 100_000          # immediate firings in a row without time passing: a timeless trap
YIELD_EVERY = 1024               # ... of which this many between two looks at the wall clock
P_IDLE, P_SETTLE, P_CLOCKS = 0, 1, 2


# ------------------------------------------------------------- enabling
@kernel(inline="always")
def degree(ni, si, j: int) -> int:
    """Enabling degree of mode j (0 when inhibited or a capacity would overflow)."""
    p = ni[IN_PTR] + j
    a, b = ni[p], ni[p + 1]
    m = ni[SI_M]
    d = 1 if a == b else 1 << 62
    for i in range(a, b):
        v = si[m + ni[ni[IN_SLOT] + i]]
        c = ni[ni[IN_CNT] + i]
        if c != 1:          # most arcs take one token: no division (~20 cycles) for them
            v //= c
        if v < d:
            d = v
    if d == 0:
        return 0
    p = ni[MINH_PTR] + j
    for i in range(ni[p], ni[p + 1]):
        g = ni[ni[MINH_GRP] + i]
        if si[ni[SI_INH_SUM] + g] >= si[ni[PI_INH_THR] + g]:
            return 0
    p = ni[MCAP_PTR] + j
    for i in range(ni[p], ni[p + 1]):
        g = ni[ni[MCAP_GRP] + i]
        if si[ni[SI_CAP_SUM] + g] + ni[ni[MCAP_ADD] + i] > si[ni[PI_CAP_LIMIT] + g]:
            return 0
    return d


@kernel(inline="always")
def room_for_mode(ni, si, j: int) -> int:
    """OK if every store mode j puts tokens into has room, else the GROW_* status.  An
    arc's ``out_room`` counts every token the mode puts into the arc's store (classes of a
    FCFS ring or a work table share one), ``out_oroom`` those into its place's order ring
    (a place that offers one token at a time): sums made when the net was laid out."""
    p = ni[OUT_PTR] + j
    for i in range(ni[p], ni[p + 1]):
        s = ni[ni[OUT_SLOT] + i]
        cnt = ni[ni[OUT_ROOM] + i]
        if ni[ni[SLOT_QUEUE] + s] >= 0:
            r = room_for_arrivals(ni, si, ni[ni[SLOT_CLASS] + s], cnt)
        else:
            r = ring_room(ni, si, ni[ni[SLOT_RING] + s], cnt)
            o = ni[ni[OUT_OROOM] + i]
            if r == OK and o > 0:
                r = ring_room(ni, si, ni[ni[ORD_RING] + ni[ni[SLOT_ORD] + s] - ni[N_SLOTS]], o)
        if r != OK:
            return r
    return OK


@kernel
def fire(ni, nf, si, sf, hist, j: int, now: float, g, with_hist: bool) -> None:
    """Fire mode j once (room checked): take its inputs, put its outputs."""
    p = ni[IN_PTR] + j
    S = ni[N_SLOTS]
    for i in range(ni[p], ni[p + 1]):
        s = ni[ni[IN_SLOT] + i]
        if s < S:
            take_tokens(ni, si, sf, hist, s, ni[ni[IN_CNT] + i], now, with_hist)
        else:                   # an offer slot: a place that offers one token at a time
            offer_take(ni, si, sf, hist, s, ni[ni[IN_CNT] + i], now, g, with_hist)
    p = ni[OUT_PTR] + j
    for i in range(ni[p], ni[p + 1]):
        s = ni[ni[OUT_SLOT] + i]
        cnt = ni[ni[OUT_CNT] + i]
        if ni[ni[SLOT_QUEUE] + s] >= 0:
            kg = ni[ni[SLOT_CLASS] + s]
            queue_arrive(ni, nf, si, sf, kg, now, now, g, cnt)
            change(ni, si, sf, s, cnt, now)
        else:
            put_tokens(ni, si, sf, s, cnt, now, now)
    sf[ni[SF_FIRES] + j] += 1.0


# ------------------------------------------------------------- settling
@kernel(inline="always")
def _refresh_immediate(ni, si) -> None:
    """Re-check the dirty immediate modes; keep the list of enabled ones."""
    nd = ni[SI_IMM_ND]
    dirty, mark, en = ni[SI_IMM_DIRTY], ni[SI_IMM_MARK], ni[SI_IMM_EN]
    lst, pos, n = ni[SI_EN_LIST], ni[SI_EN_POS], ni[SI_EN_N]
    for x in range(si[nd]):
        j = si[dirty + x]
        si[mark + j] = 0
        on = degree(ni, si, j) > 0
        if on and si[en + j] == 0:
            si[en + j] = 1
            si[pos + j] = si[n]
            si[lst + si[n]] = j
            si[n] += 1
        elif not on and si[en + j] == 1:
            si[en + j] = 0
            p = si[pos + j]
            last = si[lst + si[n] - 1]
            si[lst + p] = last
            si[pos + last] = p
            si[n] -= 1
    si[nd] = 0


@kernel(inline="always")
def _choose_immediate(ni, nf, si, sf, g) -> int:
    n = si[ni[SI_EN_N]]
    lst = ni[SI_EN_LIST]
    if n == 1:
        return si[lst]
    prio = ni[NF_PRIO]
    top = -INF
    for x in range(n):
        p = nf[prio + si[lst + x]]
        if p > top:
            top = p
    wt = ni[PF_WEIGHT]
    W = 0.0
    cnt = 0
    pick = -1
    for x in range(n):
        j = si[lst + x]
        if nf[prio + j] == top:
            W += sf[wt + j]
            cnt += 1
            pick = j
    if cnt == 1:
        return pick
    u = g.random() * W
    acc = 0.0
    for x in range(n):
        j = si[lst + x]
        if nf[prio + j] == top:
            acc += sf[wt + j]
            if u < acc:
                return j
    return pick


@kernel
def settle(ni, nf, si, sf, hist, g, with_hist: bool) -> int:
    """Fire enabled immediate modes (by priority, then weight) until none is enabled:
    OK, a GROW_* status, YIELD every YIELD_EVERY firings, TRAP after MAX_IMMEDIATE."""
    now = sf[ni[SF_T]]
    # the count of firings in a row lives in the lane (info[2]), so that it survives a
    # return to grow a store: a trap that fills a queue must still be caught
    row = ni[SI_INFO] + 2
    while si[row] < MAX_IMMEDIATE:
        _refresh_immediate(ni, si)
        if si[ni[SI_EN_N]] == 0:
            si[row] = 0
            return OK
        j = _choose_immediate(ni, nf, si, sf, g)
        r = room_for_mode(ni, si, j)
        if r != OK:
            return r
        fire(ni, nf, si, sf, hist, j, now, g, with_hist)
        si[row] += 1
        if si[row] % YIELD_EVERY == 0 and si[row] < MAX_IMMEDIATE:
            # each firing may cost O(tokens) in a growing queue: let the caller check the clock
            return YIELD
    si[ni[SI_INFO]] = -1
    return TRAP


# --------------------------------------------------------------- clocks
@kernel
def _drop_clock(ni, si, sf, c: int, i: int) -> None:
    n = ni[SI_CN] + c
    last = ni[ni[L_C_OFF] + c] + si[n] - 1
    clk, start = ni[SF_CCLK], ni[SF_CSTART]
    sf[clk + i] = sf[clk + last]
    sf[start + i] = sf[start + last]
    sf[clk + last] = INF
    sf[start + last] = INF
    si[n] -= 1


@kernel
def _multi_clock(ni, nf, si, sf, j: int, deg: int, fired: bool, now: float, g) -> int:
    """Non-exponential delay with several servers: one clock per concurrent firing."""
    c = ni[ni[MODE_MULTI] + j]
    servers = sf[ni[PF_TSERVERS] + j]
    target = deg if servers == INF else min(deg, int(servers))
    if target > ni[ni[L_C_CAP] + c]:
        si[ni[SI_INFO]] = c
        si[ni[SI_INFO] + 1] = target
        return GROW_MULTI
    off = ni[ni[L_C_OFF] + c]
    n = ni[SI_CN] + c
    clk, start = ni[SF_CCLK], ni[SF_CSTART]
    if fired:                # the firing's own clock ends
        best = off
        for i in range(off, off + si[n]):
            if sf[clk + i] < sf[clk + best]:
                best = i
        _drop_clock(ni, si, sf, c, best)
    while si[n] > target:    # abandon the most recently started firing
        last = off
        for i in range(off, off + si[n]):
            if sf[start + i] > sf[start + last]:
                last = i
        _drop_clock(ni, si, sf, c, last)
    while si[n] < target:
        i = off + si[n]
        sf[clk + i] = now + draw(ni, nf, si, sf, ni[ni[MODE_SAMPLER] + j], g)
        sf[start + i] = now
        si[n] += 1
    nxt = INF
    for i in range(off, off + si[n]):
        if sf[clk + i] < nxt:
            nxt = sf[clk + i]
    set_ev(ni, si, sf, ni[ni[MODE_COL] + j], nxt)
    return OK


@kernel
def update_clocks(ni, nf, si, sf, g) -> int:
    """Redraw or keep the clocks of the dirty timed modes (race with enabling memory)."""
    now = sf[ni[SF_T]]
    nd = ni[SI_TIM_ND]
    while si[nd] > 0:
        j = si[ni[SI_TIM_DIRTY] + si[nd] - 1]
        deg = degree(ni, si, j)
        col = ni[ni[MODE_COL] + j]
        fired = si[ni[SI_FIRED] + j] == 1
        kind = ni[ni[CLOCK_KIND] + j]
        if kind == C_EXP:
            # memoryless: redrawn whenever min(degree, servers) changes, or when it fired
            eff = min(float(deg), sf[ni[PF_TSERVERS] + j])
            e = ni[SF_EFF] + j
            if eff != sf[e] or fired:
                sf[e] = eff
                if eff > 0.0:
                    mean = sf[ni[PF_SMP_PAR] + 4 * ni[ni[MODE_SAMPLER] + j]]
                    set_ev(ni, si, sf, col, now + mean * g.standard_exponential() / eff)
                else:
                    set_ev(ni, si, sf, col, INF)
        elif kind == C_SINGLE:
            # enabling memory: drawn when enabled, kept while enabled, dropped when disabled
            cur = INF if fired else sf[ni[SF_EV] + col]
            if deg > 0:
                if cur == INF:
                    cur = now + draw(ni, nf, si, sf, ni[ni[MODE_SAMPLER] + j], g)
            else:
                cur = INF
            set_ev(ni, si, sf, col, cur)
        else:
            r = _multi_clock(ni, nf, si, sf, j, deg, fired, now, g)
            if r != OK:
                return r
        si[ni[SI_FIRED] + j] = 0
        si[ni[SI_TIM_MARK] + j] = 0
        si[nd] -= 1
    return OK


# ----------------------------------------------------------- statistics
@kernel
def flush(ni, nf, si, sf, lane: int, bk_time, bk_area, bk_fires, bk_busy, bk_res,
          nb_l, width_l) -> None:
    """Close the lane's current statistics bucket at its time; merge pairs when full."""
    now = sf[ni[SF_T]]
    S, M, K, U = ni[N_SLOTS], ni[N_MODES], ni[N_CLASSES], ni[N_UNITS]
    area, last, m = ni[SF_AREA], ni[SF_LAST], ni[SI_M]
    for s in range(S):
        sf[area + s] += si[m + s] * (now - sf[last + s])
        sf[last + s] = now
    for q in range(ni[N_QUEUES]):
        queue_account(ni, nf, si, sf, q, now)
    b = nb_l[lane]
    bk_time[b, lane] = now - sf[ni[SF_T_START]]
    for s in range(S):
        bk_area[b, s, lane] = sf[area + s]
        sf[area + s] = 0.0
    fires = ni[SF_FIRES]
    for j in range(M):
        bk_fires[b, j, lane] = sf[fires + j]
        sf[fires + j] = 0.0
    busy, prev = ni[SF_BUSY], ni[SF_BUSY_PREV]
    for k in range(K):
        bk_busy[b, k, lane] = sf[busy + k] - sf[prev + k]
        sf[prev + k] = sf[busy + k]
    res = ni[SF_RES]
    for u in range(U):
        for x in range(3):
            bk_res[b, u, x, lane] = sf[res + 3 * u + x]
            sf[res + 3 * u + x] = 0.0
    b += 1
    B = bk_time.shape[0]
    if b == B:               # merge neighbours: every later bucket has twice the width
        h = B // 2
        for i in range(h):
            bk_time[i, lane] = bk_time[2 * i, lane] + bk_time[2 * i + 1, lane]
            for s in range(S):
                bk_area[i, s, lane] = bk_area[2 * i, s, lane] + bk_area[2 * i + 1, s, lane]
            for j in range(M):
                bk_fires[i, j, lane] = bk_fires[2 * i, j, lane] + bk_fires[2 * i + 1, j, lane]
            for k in range(K):
                bk_busy[i, k, lane] = bk_busy[2 * i, k, lane] + bk_busy[2 * i + 1, k, lane]
            for u in range(U):
                for x in range(3):
                    bk_res[i, u, x, lane] = bk_res[2 * i, u, x, lane] + bk_res[2 * i + 1, u, x, lane]
        for i in range(h, B):
            bk_time[i, lane] = 0.0
            for s in range(S):
                bk_area[i, s, lane] = 0.0
            for j in range(M):
                bk_fires[i, j, lane] = 0.0
            for k in range(K):
                bk_busy[i, k, lane] = 0.0
            for u in range(U):
                for x in range(3):
                    bk_res[i, u, x, lane] = 0.0
        b = h
        width_l[lane] *= 2
    nb_l[lane] = b
    sf[ni[SF_T_START]] = now


# ------------------------------------------------------------------ run
@kernel(nogil=True)
def start_lane(ni, nf, si, sf, g) -> None:
    """Initial tokens at time 0 (queued ones start service); settling and clocks follow
    in the first run_lane call.  The stores must hold the initial marking."""
    m0 = ni[PI_M0]
    S = ni[N_SLOTS]
    rounds = 0
    for s in range(S):
        n0 = si[m0 + s]
        if n0 == 0:
            continue
        if ni[ni[SLOT_QUEUE] + s] >= 0:
            kg = ni[ni[SLOT_CLASS] + s]
            queue_arrive(ni, nf, si, sf, kg, 0.0, 0.0, g, n0)
            change(ni, si, sf, s, n0, 0.0)
        elif ni[ni[SLOT_ORD] + s] >= 0:
            rounds = max(rounds, n0)
        else:
            put_tokens(ni, si, sf, s, n0, 0.0, 0.0)
    for x in range(rounds):     # ordered places: initial tokens in turns of their colors
        for s in range(S):
            if ni[ni[SLOT_ORD] + s] >= 0 and si[m0 + s] > x:
                put_tokens(ni, si, sf, s, 1, 0.0, 0.0)
    for x in range(ni[N_TIMED]):
        mark_timed(ni, si, ni[ni[TIMED_MODES] + x])
    si[ni[SI_PHASE]] = P_SETTLE


@kernel
def _finish_event(ni, nf, si, sf, hist, g, with_hist: bool) -> int:
    """Settle, then update clocks; resumable after a store has grown."""
    ph = ni[SI_PHASE]
    if si[ph] == P_SETTLE:
        r = settle(ni, nf, si, sf, hist, g, with_hist)
        if r != OK:
            return r
        si[ph] = P_CLOCKS
    if si[ph] == P_CLOCKS:
        r = update_clocks(ni, nf, si, sf, g)
        if r != OK:
            return r
        si[ph] = P_IDLE
    return OK


@kernel(nogil=True)
def run_lane(ni, nf, si, sf, hist, g, lane: int, target: int, t_end: float, with_hist: bool,
             bk_time, bk_area, bk_fires, bk_busy, bk_res, nb_l, width_l) -> int:
    """Advance one lane (its rows pi, pf, si, sf) until it has made ``target`` steps or
    its next event is past ``t_end``; returns OK, DONE, DEADLOCK or GROW_*/TRAP/YIELD."""
    steps = ni[SI_STEPS]
    if si[ni[SI_PHASE]] != P_IDLE:
        r = _finish_event(ni, nf, si, sf, hist, g, with_hist)
        if r != OK:
            return r
        if si[steps] > 0 and si[steps] % width_l[lane] == 0:
            flush(ni, nf, si, sf, lane, bk_time, bk_area, bk_fires, bk_busy, bk_res, nb_l, width_l)
    ev = ni[SF_EV]
    nt = ni[N_TIMED]
    t = ni[SF_T]
    while si[steps] < target:
        k = next_ev(ni, si, sf)
        tn = sf[ev + k] if k >= 0 else INF
        if tn > t_end:
            if t_end < INF:
                sf[t] = max(sf[t], t_end)
            return DONE
        if k < 0:
            sf[ni[SF_DEAD]] = sf[t]
            return DEADLOCK
        j = -1
        if k < nt:
            j = ni[ni[TIMED_MODES] + k]
            r = room_for_mode(ni, si, j)
        else:
            r = room_for_event(ni, si, k - nt)
        if r != OK:
            return r
        sf[t] = tn
        si[steps] += 1
        if k < nt:
            fire(ni, nf, si, sf, hist, j, tn, g, with_hist)
            si[ni[SI_FIRED] + j] = 1
            mark_timed(ni, si, j)
        else:
            queue_event(ni, nf, si, sf, k - nt, tn, g)
        si[ni[SI_PHASE]] = P_SETTLE
        r = _finish_event(ni, nf, si, sf, hist, g, with_hist)
        if r != OK:
            return r
        if si[steps] % width_l[lane] == 0:
            flush(ni, nf, si, sf, lane, bk_time, bk_area, bk_fires, bk_busy, bk_res, nb_l, width_l)
    return OK


@kernel(nogil=True, _nrt=True)
def run_lanes(ni, nf, si, sf, hist, gens, lanes, codes, target: int, t_end: float, with_hist: bool,
              bk_time, bk_area, bk_fires, bk_busy, bk_res, nb_l, width_l) -> None:
    """:func:`run_lane` for each of ``lanes`` (rows of si, sf; Generators in the typed
    list ``gens``), its status in ``codes``: one call from Python for many lanes (a call
    costs ~14 us, most of it for passing a Generator).  Reference counting is on here
    only, for the typed list."""
    for x in range(len(lanes)):
        lane = lanes[x]
        codes[x] = run_lane(ni, nf, si[lane], sf[lane], hist, gens[lane], lane, target, t_end, with_hist,
                            bk_time, bk_area, bk_fires, bk_busy, bk_res, nb_l, width_l)
