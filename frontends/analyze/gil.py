"""How much of a code fragment's CPU time ran without the GIL.

In CPython only the thread holding the global interpreter lock runs Python
code; C code that releases it (hashlib, zlib, numpy, I/O) runs in parallel.
The trace does not see the GIL, but it sees each thread's CPU clock, so:

    GIL-bound CPU of all threads during any interval <= the interval's length.

For one execution i of a fragment (wall w, CPU c, a share f of it GIL-free)
and the GIL-bound CPU ``o`` the other threads used meanwhile,
``(1 - f) c + o <= w``, i.e. ``f >= 1 - (w - o) / c``.  The bound says
something only when the others were busy with Python code (``o`` large): a
fragment that still got CPU at rate ~1 then ran outside the GIL.  Other
threads' CPU during an interval is interpolated from their clocks (a fragment
is assumed to use CPU at a constant rate); their GIL-bound part needs their
own shares, so the estimate is iterated from "everything holds the GIL".

The *capacity bound* of a class pools these bounds over its executions
(:func:`_capacity`).  It cannot decide between symmetric explanations: two
threads hashing side by side on two cores at full speed fit any f >= 0.5
(each could hold the GIL while the other does not).  The *no-wait bound*
decides it: GIL-bound work that meets the others' GIL-bound work waits, so a
class whose executions ran beside others' GIL use without waiting more than
the cores explain is GIL-free (:func:`_no_wait`).  A class's share is the
larger of the two; shares below ``low`` count as 0 and above ``high`` as 1,
since timing noise is of that order.  Where the data cannot tell (one core;
a thread alone; cores saturated), the share stays low: the model then keeps
the GIL.

>>> import numpy as np
>>> # class 0 (hashing) runs at full speed beside class 1 (Python), which
>>> # elsewhere shares the GIL with another class-1 execution at half speed
>>> a = np.array([0, 0, 1e6, 1e6]); b = np.array([1e6, 1e6, 3e6, 3e6]); c = np.full(4, 1e6)
>>> gil_free_shares(a, b, c, np.array([0, 1, 1, 1]), 2, cores=2).tolist()
[1.0, 0.0]
"""
from __future__ import annotations

import numpy as np

LOW, HIGH = 0.15, 0.85
#: the no-wait bound needs the others' GIL use met to be at least this share of
#: a class's CPU: pure-Python fragments shorter than the switch interval hand
#: the GIL over at blocking calls and meet others' GIL use for only ~4% of their
#: CPU (pool program), where not waiting is timing noise, not evidence
EVIDENCE = 0.25


def gil_clock(a, b, c, weight) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative GIL-bound CPU of all threads: (times, CPU ns used up to each).

    Every segment ``[a, b]`` uses ``weight * c`` ns of GIL-bound CPU at a
    constant rate.  ``np.interp(t, *clock)`` gives the amount up to time t.
    """
    w = b - a
    ok = w > 0
    slope = np.where(ok, weight * c / np.where(ok, w, 1), 0.0)
    t = np.concatenate([a[ok], b[ok]]).astype(float)
    d = np.concatenate([slope[ok], -slope[ok]])
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    if not len(t):
        return np.zeros(1), np.zeros(1)
    rate = np.cumsum(d)                                   # total rate right after t[k]
    W = np.concatenate([[0.0], np.cumsum(rate[:-1] * np.diff(t))])
    return t, W


def busy(clock, a, b) -> np.ndarray:
    """GIL-bound CPU all threads used during each interval [a, b]."""
    t, W = clock
    return np.interp(b, t, W) - np.interp(a, t, W)


class _Sweep:
    """:func:`busy` for fixed segments and query intervals and changing weights.

    The event order and each query's position are found once, so an iteration
    of :func:`gil_free_shares` costs linear time (on 10^6 fragments, sorting
    again every iteration would cost more than the rest of the analysis).
    """

    def __init__(self, a, b, qa, qb):
        w = b - a
        self.ok = w > 0
        self.w = np.where(self.ok, w, 1.0)
        t = np.concatenate([a[self.ok], b[self.ok]])
        self.order = np.argsort(t, kind="stable")
        self.t = t[self.order]
        self.dt = np.diff(self.t)
        self.qa, self.qb = self._where(qa), self._where(qb)

    def _where(self, x):
        i = np.searchsorted(self.t, x, side="right") - 1
        before = i < 0
        i = np.maximum(i, 0)
        frac = np.where(before, 0.0, x - self.t[i] if len(self.t) else 0.0)
        return i, frac, before

    def busy(self, cpu) -> np.ndarray:
        """CPU used during each query interval by segments that use ``cpu`` each."""
        if not len(self.t):
            return np.zeros(len(self.qa[0]))
        slope = (cpu / self.w)[self.ok]
        rate = np.cumsum(np.concatenate([slope, -slope])[self.order])
        W = np.concatenate([[0.0], np.cumsum(rate[:-1] * self.dt)])

        def at(q):
            i, frac, before = q
            return np.where(before, 0.0, W[i] + rate[i] * frac)
        return at(self.qb) - at(self.qa)


def gil_free_shares(a, b, c, klass, nclass: int, *, extra=None, cores: int = 1,
                    interval: float = 5e6, fresh=None, hold=None, iters: int = 12,
                    min_cpu: int = 20_000,
                    evidence: float = EVIDENCE, trim: float = 0.1, low: float = LOW, high: float = HIGH,
                    clock: list | None = None, decided: list | None = None) -> np.ndarray:
    """GIL-free share per fragment class.

    ``a``, ``b``, ``c``: start, end and CPU (ns) of every fragment execution;
    ``klass``: its class (0..nclass-1, or -1 for CPU that is not modelled but
    competes: it is taken as GIL-bound).  ``extra`` = (a, b, c) of further
    GIL-bound CPU (operations' own CPU).  ``cores``: the machine's cores (the
    waiting they explain is not the GIL's); ``interval``: the switch interval
    (ns); ``fresh``: whether each execution began after a blocking call (it
    got the GIL afresh); ``hold``: how long each execution first held the GIL,
    where a hand-over shows it (NaN elsewhere; :mod:`.handoff`).  If ``clock`` is a list, the final
    GIL clock (:func:`gil_clock`) is appended to it; if ``decided`` is, an array saying
    for each class whether the trace had evidence either way (it met enough of the others'
    GIL use, a hand-over showed its GIL hold, the capacity bound was above ``low``, or it
    waited more than the cores explain).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    klass = np.asarray(klass, dtype=np.int64)
    if extra is not None:
        ea, eb, ec = (np.asarray(x, dtype=float) for x in extra)
        a2, b2, c2 = np.concatenate([a, ea]), np.concatenate([b, eb]), np.concatenate([c, ec])
        k2 = np.concatenate([klass, np.full(len(ea), -1)])
    else:
        a2, b2, c2, k2 = a, b, c, klass
    f = np.zeros(nclass)
    sel = (c >= min_cpu) & (klass >= 0) & (b > a)
    if nclass == 0 or not sel.any():
        if clock is not None:
            clock.append(gil_clock(a2, b2, c2, np.ones(len(a2))))
        if decided is not None:
            decided.append(np.zeros(nclass, dtype=bool))
        return f
    a, b, c, kl = a[sel], b[sel], c[sel], klass[sel]
    w = b - a
    sweep = _Sweep(a2, b2, a, b)
    mine = np.flatnonzero(sel)                # this execution's own segment in ``sweep``

    def others(cpu2):                         # CPU of the others during each execution
        return sweep.busy(cpu2) - cpu2[mine]

    cpu_c = np.bincount(kl, weights=c, minlength=nclass)
    # the waiting the GIL must explain: the wall time without CPU, less the least
    # the cores explain (the others kept all cores busy for >= O - (cores-1) w)
    idle = np.maximum(w - c, 0.0)
    total = others(c2)
    unexplained = idle - np.clip(total - (cores - 1) * w, 0.0, idle)
    # the share of the others' CPU that surely ran while this execution did
    # (they used at most ``cores`` cores while it waited), times the chance
    # that GIL-bound code would have been interrupted: the holder keeps the GIL
    # until it blocks or others have waited a switch interval, so a fragment
    # that got the GIL afresh (after a blocking call) and is much shorter than
    # the interval runs through anyway.  0 for the executions with the most
    # waiting of each class: a preemption by another process is not the
    # GIL's, and GIL waiting would show in most executions
    q = np.where(total > 0, np.maximum(total - cores * idle, 0.0) / np.maximum(total, 1e-300), 0.0)
    if fresh is not None:
        q = np.where(np.asarray(fresh, dtype=bool)[sel], q * np.minimum(1.0, c / interval), q)
    keep = _below_quantile(unexplained / c, kl, nclass, 1.0 - trim)
    q = np.where(keep, q, 0.0)
    wait = np.bincount(kl, weights=np.where(keep, unexplained, 0.0), minlength=nclass)
    S = np.bincount(kl, weights=q * _same_class(a, b, c, kl, nclass), minlength=nclass)
    handed = _handed_over(np.asarray(hold, dtype=float)[sel], c, kl, nclass) \
        if hold is not None else np.zeros(nclass)
    for _ in range(iters):
        weight = np.where(k2 >= 0, 1.0 - f[np.maximum(k2, 0)], 1.0)
        o = others(weight * c2)
        cap = _capacity(o, w, c, kl, nclass)
        T = np.maximum(np.bincount(kl, weights=q * o, minlength=nclass) - (1 - f) * S, 0.0)
        new = np.maximum(np.maximum(cap, handed), _no_wait(S, T, wait, cpu_c, evidence))
        f = 0.5 * (f + new)
    f = np.where(f < low, 0.0, np.where(f > high, 1.0, f))
    if decided is not None:
        # evidence: it met others' GIL use, a hand-over showed its hold, the capacity
        # bound proves a share, or it waited more than the cores explain (for the GIL)
        decided.append((S + T > evidence * cpu_c) | (handed > 0) | (cap > low)
                       | (wait > evidence * cpu_c))
    if clock is not None:
        weight = np.where(k2 >= 0, 1.0 - f[np.maximum(k2, 0)], 1.0)
        clock.append(gil_clock(a2, b2, c2, weight))
    return f


def _below_quantile(x, kl, nclass: int, p: float) -> np.ndarray:
    """Whether each x is among the lowest share ``p`` of its class (at least one)."""
    order = np.lexsort((x, kl))
    start = np.searchsorted(kl[order], np.arange(nclass + 1))
    rank = np.empty(len(x), dtype=np.int64)
    rank[order] = np.arange(len(x)) - start[kl[order]]
    n = np.diff(start)[kl]
    return rank < np.maximum(np.ceil(p * n), 1)


def _same_class(a, b, c, kl, nclass: int) -> np.ndarray:
    """CPU other executions of the same class used during each execution."""
    out = np.zeros(len(a))
    order = np.argsort(kl, kind="stable")
    bounds = np.searchsorted(kl[order], np.arange(nclass + 1))
    for k in range(nclass):
        idx = order[bounds[k]:bounds[k + 1]]
        if len(idx) > 1:
            out[idx] = _Sweep(a[idx], b[idx], a[idx], b[idx]).busy(c[idx]) - c[idx]
    return out


def _capacity(o, w, c, kl, nclass: int) -> np.ndarray:
    """f >= 1 - (sum w - sum o) / sum c over each class's executions.

    The bounds of single executions are pooled, not averaged: interpolating
    the others' CPU over their fragments moves CPU between intervals but
    keeps the sums.  Two pure-Python threads taking turns give exactly 0,
    whereas a chunk that ran unhindered beside a waiting thread has a
    positive bound of its own (the waiting thread's CPU is spread over it).
    """
    num = np.bincount(kl, weights=w - o, minlength=nclass)
    den = np.bincount(kl, weights=c, minlength=nclass)
    return np.where(den > 0, np.clip(1.0 - num / np.maximum(den, 1e-300), 0.0, 1.0), 0.0)


def _handed_over(hold, c, kl, nclass: int, least: int = 3) -> np.ndarray:
    """1 - (GIL held at the start) / CPU, over the executions whose start a
    hand-over shows (:mod:`.handoff`); 0 for classes with fewer than ``least``.

    The GIL-bound CPU is taken to be the first stretch: code that returns from
    a blocking call runs Python until it blocks again or calls C code that
    releases the GIL.  A fragment that goes back to Python after the C code
    has more GIL-bound CPU than this says.
    """
    known = ~np.isnan(hold)
    n = np.bincount(kl[known], minlength=nclass)
    h = np.bincount(kl[known], weights=hold[known], minlength=nclass)
    cc = np.bincount(kl[known], weights=c[known], minlength=nclass)
    with np.errstate(all="ignore"):
        return np.where((n >= least) & (cc > 0), np.clip(1.0 - h / cc, 0.0, 1.0), 0.0)


def _no_wait(S, T, wait, cpu_c, evidence: float) -> np.ndarray:
    """f >= 1 - g, g the largest GIL-bound share that explains the waiting.

    GIL-bound CPU (a share g of the class's) meets the others' GIL-bound CPU
    that ran at the same time, if the two are independent, and waits then:
    the class's waiting is at least g times that CPU, g (g S + T) summed, S
    from other threads running the same class (whose GIL use is g too) and T
    from the rest.  This tells two threads hashing side by side on two cores
    (no waiting: g ~ 0) from two that take turns with the GIL, which the
    capacity bound cannot (any f >= 0.5 fits it).  Summed over the class:
    single executions are too coarse (a pure-Python fragment runs unhindered
    while the other thread waits, yet the other's CPU is spread over its whole
    fragment).  A class that met little GIL use of others (S + T below
    ``evidence`` of its CPU) says nothing.
    """
    with np.errstate(all="ignore"):
        g = np.where(S > 0, (np.sqrt(T * T + 4 * S * wait) - T) / (2 * S),
                     wait / np.maximum(T, 1e-300))
    return np.where((cpu_c > 0) & (S + T > evidence * cpu_c), 1.0 - np.clip(g, 0.0, 1.0), 0.0)
