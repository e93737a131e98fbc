"""How many tangible states a CTMC will have, before generating it: a proven
upper bound where the P-invariants allow, else an estimate, and which.

Counted with generating functions (:func:`count_states`): one variable per
P-invariant, so that the coefficient at the invariants' token counts counts
the marking vectors satisfying all of them at once.  What this counts is an
upper bound on the tangible states of the generated chain because every
factor is:

* every unit (place, color) is covered by an invariant, bounded by a capacity,
  or open (then the open units share the exploration's cut-off);
* an open unit whose tokens are a linear function of the other units' on
  every reachable marking (a general, mixed-sign invariant: ``rank C`` does not
  drop without its row) adds no freedom and is left out;
* an ordinary place that an unconditional single-input immediate transition
  empties never holds tokens in a tangible state;
* markings in which an immediate transition is enabled are vanishing; they
  are subtracted by the Bonferroni inequality ``|not any A| <= N - sum |A_j| +
  sum |A_j & A_k|`` (each term is the count with the inputs' tokens set aside);
* a queue's order, phases, FIFO-done and serving flags are counted per token
  or per server, never fewer than the encoding can hold.

When the invariants are too many or too large for the exact count, a product
over a covering set of invariants is still an upper bound, only a looser one.
What the bound does not know is which markings are reachable, so it is close
for closed networks and loose for nets with many synchronizations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from math import comb, factorial, lgamma, log

import numpy as np

GF_CELLS = 2_000_000        # largest generating-function array (float64 cells)
#: cell-terms the generating function may take in all (above it: the product bound)
GF_WORK = 3e9                # about a second
MAX_INVARIANTS = 22         # variables of the generating function
MAX_BONFERRONI = 300        # immediate modes taken into the subtraction
RANK_UNITS = 600            # units x modes beyond which open units are not reduced


@dataclass
class StateEstimate:
    """A state count and what it is: 'upper bound' (proven) or 'estimate'."""
    states: float
    kind: str
    how: str

    def phrase(self) -> str:
        """'at most 1,234 states (an upper bound from the P-invariants)'."""
        n = fmt_count(self.states) + (" state" if self.states == 1 else " states")
        if not math.isfinite(self.states):
            return f"more than 1e308 states ({self.kind} from {self.how})"
        if self.kind == "exact":
            return f"{n} (exact, counted by {self.how})"
        if self.kind == "upper bound":
            return f"at most {n} (a proven upper bound from {self.how})"
        return f"about {n} (an estimate from {self.how}, not a bound)"


def fmt_count(x: float) -> str:
    """A state count for messages.

    >>> fmt_count(15624), fmt_count(3.46e19)
    ('15,624', '3.46e+19')
    """
    if not math.isfinite(x):
        return "more than 1e308"
    return f"{x:,.0f}" if x < 1e7 else f"{x:.3g}"


def _lcomb(n: int, k: int) -> float:
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) if 0 <= k <= n else -math.inf


def _exp(logx: float) -> float:
    return math.exp(logx) if logx < 709 else math.inf


def count_states(spec, totals, unit_of, C) -> StateEstimate:
    """Upper bound on the tangible states of ``spec`` (see the module docstring).

    ``totals``: [(invariant weights over units, token count)]; ``unit_of``: the
    unit of every slot; ``C``: incidence over units (units x modes), or None."""
    c = spec.compiled
    nunits = int(unit_of.max()) + 1 if len(unit_of) else 0
    covered = np.zeros(nunits, dtype=bool)
    for y, _t in totals:
        covered |= np.asarray(y) > 0
    cap_units: dict[int, int] = {}
    for p in c.places:  # bounded by a capacity, not by an invariant
        if p.capacity is not None:
            for k in range(len(p.colors)):
                u = int(unit_of[p.slots[k]])
                if not covered[u]:
                    cap_units[u] = p.capacity
    zero = _vanishing_units(spec, unit_of)
    open_units = [u for u in range(nunits) if not covered[u] and u not in cap_units and u not in zero]
    dropped = _determined(C, open_units) if C is not None else set()
    open_units = [u for u in open_units if u not in dropped]
    bins = _unit_bins(spec, unit_of)
    seq = [q for q in spec.queues if q.layout == "seq"]
    seq_units = {int(unit_of[s]) for q in seq for s in q.classes}
    # generated chains pass the cut-off by up to one firing's growth of the open part; the
    # cut-off stops growth only, so open tokens placed at the start above it stay possible
    # (2^31 of them, drained one by one: 'at most 305 states' for a chain past 20,000)
    cut = max(int(spec.cutoff), _initial_open(spec)) + _overshoot(spec) if open_units else None
    chosen = _choose_invariants(totals, cut)
    ctx = dict(nunits=nunits, zero=zero, dropped=dropped, open_units=open_units, bins=bins,
               seq=seq, seq_units=seq_units, cap_units=cap_units, cut=cut)
    shape = tuple(int(t) + 1 for _y, t in chosen) + ((cut + 1,) if open_units else ())
    cells = float(np.prod(shape, dtype=float)) if shape else 1.0
    biggest_L = max((q.L for q in seq), default=0)
    top = max(shape) if shape else 1
    # the series is convolved once per unit, each time over every cell up to `top` terms
    work = cells * (biggest_L + 1) * max(nunits, 1) * top
    if cells * (biggest_L + 1) <= GF_CELLS and work <= GF_WORK and biggest_L <= 150 and \
            all(int(t) >= 0 for _y, t in chosen):
        est = _generating(spec, chosen, unit_of, ctx)
        how = "the P-invariants" + (" and the cut-off" if open_units else "")
    else:
        est = _product(spec, chosen or totals, unit_of, ctx)
        how = "a product over P-invariants" + (" and the cut-off" if open_units else "")
    return StateEstimate(max(est, 1.0), "upper bound", how)


def _growth(spec, i: int) -> int | None:
    """Open tokens mode i adds (the cut-off stops it within that many of the cut-off),
    or None if it may be disabled with its inputs there (inhibitor, capacity)."""
    c = spec.compiled
    if i in set(c.inh_mode.tolist()):
        return None
    outs = set(np.flatnonzero(spec.post[i]).tolist())
    if any(p.capacity is not None and outs & set(p.slots + (p.qslots or [])) for p in c.places):
        return None
    if spec.cutoff is None:
        return 0
    unc = spec.uncovered[:c.nslots]
    return max(int((spec.post[i] - spec.pre[i])[unc].sum()), 0)


def _initial_open(spec) -> int:
    """Open tokens in the initial marking."""
    c = spec.compiled
    return int(np.asarray(c.m0)[spec.uncovered[:c.nslots]].sum())


def _overshoot(spec) -> int:
    """Largest number of open tokens one firing adds."""
    if spec.cutoff is None or not len(spec.pre):
        return 0
    unc = spec.uncovered[:spec.compiled.nslots]
    return max(int((spec.post - spec.pre)[:, unc].sum(axis=1).max()), 0)


def _always_enabled(spec, i: int) -> bool:
    """Whether immediate mode i fires whenever its inputs are there."""
    return _growth(spec, i) == 0


def _drained_slots(spec) -> set[int]:
    """Slots an unconditional single-input immediate mode empties at once."""
    pre = spec.pre
    out = set()
    for i in spec.immediate:
        ins = np.flatnonzero(pre[i])
        if len(ins) == 1 and pre[i, ins[0]] == 1 and _always_enabled(spec, i):
            out.add(int(ins[0]))
    return out


def _vanishing_units(spec, unit_of) -> set[int]:
    """Ordinary places emptied at once by an unconditional single-input immediate mode."""
    c = spec.compiled
    return {int(unit_of[s]) for s in _drained_slots(spec)
            if not c.places[int(c.slot_place[s])].queueing}


def _determined(C, open_units: list[int]) -> set[int]:
    """Open units whose tokens the other units determine on every reachable marking.

    Reachable markings lie in m0 + span(C); leaving out a set D of rows keeps
    the projection one-to-one exactly when rank C[~D] = rank C.  (A float rank of
    a small integer matrix; beyond RANK_UNITS nothing is left out.)"""
    if not open_units or C.shape[0] * C.shape[1] > RANK_UNITS ** 2 or C.shape[1] == 0:
        return set()
    A = np.asarray(C, dtype=float)
    full = np.linalg.matrix_rank(A)
    keep = np.ones(A.shape[0], dtype=bool)
    out = set()
    for u in open_units:
        keep[u] = False
        if np.linalg.matrix_rank(A[keep]) == full:
            out.add(u)
        else:
            keep[u] = True
    return out


def _unit_bins(spec, unit_of) -> dict[int, int]:
    """Where a token of a queueing place's unit can be, besides a seq queue's line (counted
    on its own): each service phase of a counts layout, and the depository unless an
    immediate transition always empties it (1 bin for an ordinary place, not listed).
    The depository was once left out: 'at most 1 state' for a chain of 4."""
    drained = _drained_slots(spec)
    out = {}
    for q in spec.queues:
        for k, s in enumerate(q.classes):
            phases = q.ph[k].nphases if q.layout == "counts" else 0
            out[int(unit_of[s])] = phases + (0 if q.dslots[k] in drained else 1)
    return out


def _choose_invariants(totals, cutoff) -> list:
    """A covering set of invariants, then more (fewest tokens first) while the
    generating function stays small: every invariant added only removes vectors."""
    if not totals:
        return []
    base = float(cutoff + 1) if cutoff is not None else 1.0
    keep = _covering(totals)
    cells = base * float(np.prod([t + 1 for _y, t in keep], dtype=float))
    kept_ids = {id(x) for x in keep}
    for x in sorted(totals, key=lambda x: int(x[1])):
        if id(x) in kept_ids or len(keep) >= MAX_INVARIANTS:
            continue
        if cells * (int(x[1]) + 1) <= GF_CELLS:
            keep.append(x)
            cells *= int(x[1]) + 1
    return keep


def _covering(totals) -> list:
    """Few invariants covering every unit that any of them covers (greedy: most new
    units first, then the smallest token count).  Nets with many counter places
    (e.g. expanded software layers) have hundreds of minimal invariants."""
    ys = [np.asarray(y) > 0 for y, _ in totals]
    covered = np.zeros(len(ys[0]), dtype=bool)
    keep = []
    while True:
        gains = [int((y & ~covered).sum()) for y in ys]
        best = max(range(len(ys)), key=lambda i: (gains[i], -int(totals[i][1])), default=None)
        if best is None or gains[best] == 0:
            return keep
        keep.append(totals[best])
        covered |= ys[best]


def _directions(chosen, unit_of, ctx) -> dict[int, np.ndarray]:
    """The exponent a token of each unit adds: its invariant weights (and 1 on the
    cut-off variable for open units); zero for units left out."""
    n = ctx["nunits"]
    Y = np.array([np.asarray(y, dtype=np.int64) for y, _ in chosen], dtype=np.int64).reshape(len(chosen), n)
    opened = set(ctx["open_units"])
    dirs = {}
    for u in range(n):
        d = Y[:, u].copy()
        if ctx["open_units"]:
            d = np.append(d, 1 if u in opened else 0)
        if u in ctx["zero"] or u in ctx["dropped"]:
            d[:] = 0
        dirs[u] = d
    return dirs


def _generating(spec, chosen, unit_of, ctx) -> float:
    pops = [int(t) for _y, t in chosen]
    if ctx["open_units"]:
        pops.append(ctx["cut"])
    shape = tuple(p + 1 for p in pops)
    dirs = _directions(chosen, unit_of, ctx)
    gf = np.zeros(shape)
    gf[(0,) * len(pops)] = 1.0
    top = max(shape) if shape else 1
    for u in range(ctx["nunits"]):
        P = ctx["bins"].get(u, 1)
        if P == 0 or not dirs[u].any():
            continue
        gf = _geometric_power(gf, dirs[u], P)
    for q in ctx["seq"]:
        for group in _order_groups(q):
            # a leading axis counts the group's tokens: a series per class, then
            # n! orders of n tokens (the multinomial over the group's classes)
            local = np.zeros((q.L + 1,) + shape)
            local[(0,) * (len(pops) + 1)] = 1.0
            for k in group:
                d = np.concatenate([[1], dirs[int(unit_of[q.classes[k]])]])
                f = _token_factor(q, k)
                local = _conv_dir(local, d, np.array([f ** n / factorial(n) for n in range(q.L + 1)]))
            fact = np.array([factorial(n) for n in range(q.L + 1)], dtype=float)
            gf = _conv_full(gf, np.tensordot(fact, local, axes=(0, 0)))

    def coef(shift: np.ndarray, slack: int = 0) -> float:
        """Weighted count of vectors holding at least `shift` (and, open, at most
        the cut-off less `slack` open tokens)."""
        at = np.asarray(pops) - shift
        if ctx["open_units"]:   # open tokens: any total up to the cut-off
            at[-1] -= slack
            if (at < 0).any():
                return 0.0
            return float(gf[tuple(at[:-1])][: at[-1] + 1].sum())
        if (at < 0).any():
            return 0.0
        return float(gf[tuple(at)]) if len(at) else 1.0

    total = coef(np.zeros(len(pops), dtype=np.int64))
    total = _bonferroni(spec, unit_of, ctx, dirs, coef, total)
    return total * _outside_factor(spec, ctx)


def _token_factor(q, k: int) -> float:
    """States one queued token of class k can be in, beyond its class and place in line."""
    P = q.ph[k].nphases
    if q.order == "priority" and not q.holds and q.serves == "first":
        return P                            # a preempted token keeps its phase
    if q.own_phases:
        return P + 1 if q.fifo[k] else P   # is/ps keep a phase per token; FIFO: or done
    return 1.0                              # fcfs, prio, random: see _outside_factor


def _power(base: float, e: int) -> float:
    """base ** e as a float, inf past the float range (2^31 servers: OverflowError)."""
    try:
        return float(base) ** e
    except OverflowError:
        return math.inf


def _outside_factor(spec, ctx) -> float:
    """Factors independent of the marking: servers' phases and flags, capacity units,
    phases of non-exponential timed transitions."""
    f = 1.0
    for q in ctx["seq"]:
        if q.own_phases:
            continue
        s = int(min(q.servers, q.L))
        done = 1 if any(q.fifo) else 0
        f *= _power(q.max_phases + done, s)
        if q.holds or q.order == "priority":
            # serving tokens move to the front (dynamics._canonical): their classes
            # form a prefix of at most s, the rest keeps the order counted above:
            # sum_{j <= s} K^j of them
            K = len(q.classes)
            f *= float(s + 1) if K == 1 else (_power(K, s + 1) - 1) / (K - 1)
    for u, cap in ctx["cap_units"].items():
        P = ctx["bins"].get(u, 1)
        f *= float(comb(cap + P, P))            # sum over n <= cap of C(n+P-1, P-1)
    for t in spec.timed:
        if t.ph is not None:
            f *= t.ph.nphases
    return f


def _bonferroni(spec, unit_of, ctx, dirs, coef, total: float) -> float:
    """Take away markings where an immediate mode is enabled (they are vanishing)."""
    c = spec.compiled
    pre = spec.pre
    needs = []
    for i in spec.immediate[:MAX_BONFERRONI]:
        ins = np.flatnonzero(pre[i])
        grow = _growth(spec, i)
        # a mode the cut-off can stop is counted only below the cut-off, which the
        # count knows only when no open unit was left out
        if grow is None or (grow > 0 and ctx["dropped"]):
            continue
        if len(ins) == 1 and grow == 0 and int(unit_of[ins[0]]) in ctx["zero"]:
            continue
        units = {}
        ok = len(ins) > 0
        for s in ins:
            u = int(unit_of[s])
            place = c.places[int(c.slot_place[s])]
            # only ordinary places: one slot per unit, one way to hold n tokens
            if place.queueing or u in ctx["dropped"] or u in ctx["zero"] or u in ctx["cap_units"]:
                ok = False
                break
            units[u] = max(units.get(u, 0), int(pre[i, s]))
        if ok:
            needs.append((units, grow))
    if not needs:
        return total

    def shift(units: dict) -> np.ndarray:
        return sum((a * dirs[u] for u, a in units.items()), np.zeros_like(next(iter(dirs.values()))))

    singles = [coef(shift(n), g) for n, g in needs]
    best = total - max(singles)
    pairs = 0.0
    for a in range(len(needs)):
        for b in range(a + 1, len(needs)):
            both = dict(needs[a][0])
            for u, k in needs[b][0].items():
                both[u] = max(both.get(u, 0), k)
            pairs += coef(shift(both), max(needs[a][1], needs[b][1]))
    return max(min(best, total - sum(singles) + pairs), 0.0)


def _product(spec, chosen, unit_of, ctx) -> float:
    """An upper bound as a product: the distributions of each invariant's tokens
    (every covered unit is in one, so a marking is determined by them), the
    open units under the cut-off, every unit's phases and every queue's line."""
    logf = 0.0
    counted = set()
    bound_of: dict[int, int] = {}
    for y, tokens in chosen:
        y = np.asarray(y)
        units = [u for u in np.flatnonzero(y).tolist()
                 if u not in counted and u not in ctx["zero"] and u not in ctx["dropped"]]
        for u in np.flatnonzero(y).tolist():
            b = int(tokens) // int(y[u])
            bound_of[u] = min(bound_of.get(u, b), b)
        counted.update(units)
        k = len(units)
        if k:
            logf += _lcomb(int(tokens) + k, k)     # compositions of at most `tokens`
    k = len(ctx["open_units"])
    if k:
        logf += _lcomb(ctx["cut"] + k, k)
        for u in ctx["open_units"]:
            bound_of[u] = ctx["cut"]
    for u, P in ctx["bins"].items():
        # a seq queue's line and the unit's total fix its depository: no factor for it
        if u not in ctx["seq_units"] and P > 1 and u in bound_of:
            logf += _lcomb(bound_of[u] + P - 1, P - 1)
    for q in ctx["seq"]:
        K = len(q.classes)
        if not K:           # a queue no place uses (a cpu no step runs on) holds nothing
            continue
        per = max(_token_factor(q, k) for k in range(K))
        logf += q.L * (log(K) + log(max(per, 1.0)))
    return _exp(logf) * _outside_factor(spec, ctx)


def _order_groups(q) -> list[list[int]]:
    """Classes whose relative order the queue's state keeps (one group = one order)."""
    K = len(q.classes)
    if any(q.fifo) or q.serves != "first" or q.order in ("arrival", "last"):
        return [list(range(K))]
    if q.order == "random":
        return [[k] for k in range(K)]
    levels: dict[float, list[int]] = {}
    for k in range(K):
        levels.setdefault(q.prio[k], []).append(k)
    return list(levels.values())


def _geometric_power(a: np.ndarray, direction: np.ndarray, P: int) -> np.ndarray:
    """Multiply a truncated multivariate series by (1 - x^direction)^-P, the series
    sum_n C(n + P - 1, P - 1) x^(n*direction): P times 1 / (1 - y) with y = x^direction,
    each as the product (1 + y)(1 + y^2)(1 + y^4)... of shifted adds -- log2 of the
    longest run of steps along the direction, not one pass per power.

    >>> a = np.zeros(6); a[0] = 1
    >>> _geometric_power(a, np.array([1]), 2).tolist()       # 1/(1-x)^2 = 1 + 2x + 3x^2 ...
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    >>> b = np.random.default_rng(1).random((4, 5))
    >>> k = np.array([float(comb(n + 2, 2)) for n in range(5)])
    >>> bool(np.allclose(_geometric_power(b, np.array([1, 2]), 3), _conv_dir(b, np.array([1, 2]), k)))
    True
    """
    direction = np.asarray(direction, dtype=np.int64)
    if not direction.any():
        return a.copy()         # (as _conv_dir: the kernel's first term, 1)
    shape = np.array(a.shape)
    out = np.array(a, dtype=float, copy=True)
    for _ in range(P):
        step = direction.copy()
        while not np.any(step >= shape):
            src = tuple(slice(0, dim - o) for dim, o in zip(a.shape, step))
            dst = tuple(slice(o, dim) for dim, o in zip(a.shape, step))
            out[dst] += out[src].copy()
            step = step * 2
    return out


def _conv_dir(a: np.ndarray, direction: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Multiply a truncated multivariate series by sum_n kernel[n] x^(n*direction)."""
    out = np.zeros_like(a)
    direction = np.asarray(direction, dtype=np.int64)
    for n, kv in enumerate(kernel):
        if kv == 0:
            continue
        off = n * direction
        if np.any(off >= np.array(a.shape)):
            break
        src = tuple(slice(0, dim - o) for dim, o in zip(a.shape, off))
        dst = tuple(slice(o, dim) for dim, o in zip(a.shape, off))
        out[dst] += kv * a[src]
        if not direction.any():
            break
    return out


def _conv_full(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncated product of two multivariate series of the same shape."""
    if a.ndim == 0:                     # no invariant chosen: series of one term
        return a * b
    out = np.zeros_like(a)
    for idx in zip(*np.nonzero(b)):
        src = tuple(slice(0, n - i) for n, i in zip(a.shape, idx))
        dst = tuple(slice(i, n) for n, i in zip(a.shape, idx))
        out[dst] += b[idx] * a[src]
    return out
