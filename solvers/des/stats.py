"""Statistics of a simulation run, per lane, in buckets.

Lanes advance one event per step, so bucket boundaries (every ``width``
steps) are common to all lanes; when the bucket array fills, neighbours are
merged and the width doubles.  A bucket holds sums (token-time per slot,
firings per mode, busy-server time per queue class, residence-time count /
sum / sum of squares per place-color), so merged buckets stay exact.  At the
end, MSER picks a warm-up truncation per lane on the bucket means, and the
estimates are the sums over the buckets after it.  Residence-time
distributions are pooled over the lanes of a sweep point in log-spaced
histograms for percentiles.
"""
from __future__ import annotations

import math

import numpy as np

from qpn.truncation import mser

NB_PER_DECADE = 100
MAX_EPOCHS = 24                    # closed epochs kept: the last 1/64 of a run and on are fine-grained
LOG_MIN, LOG_MAX = -9, 7           # 1 ns .. 10^7 s
NBINS = (LOG_MAX - LOG_MIN) * NB_PER_DECADE + 2
EPOCH_GROWTH = 2 ** 0.25                      # histogram epochs grow geometrically


def bin_of(x: np.ndarray) -> np.ndarray:
    """Histogram bin of residence times (bin 0: below 1 ns, last: above the range)."""
    with np.errstate(divide="ignore"):
        b = np.floor((np.log10(np.maximum(x, 1e-300)) - LOG_MIN) * NB_PER_DECADE).astype(np.int64) + 1
    return np.clip(b, 0, NBINS - 1)


def bin_edges() -> np.ndarray:
    """The residence histograms' bin edges: 0, then log-spaced, then infinity."""
    e = 10.0 ** (LOG_MIN + np.arange(NBINS - 1) / NB_PER_DECADE)
    return np.concatenate([[0.0], e, [np.inf]])


_EDGES = bin_edges()
_EDGES.flags.writeable = False


class Stats:
    """Accumulators and buckets, lane-last: every array ends with the lane axis.

    Each lane owns its buckets: ``nb_l[l]`` is how many it has.  Live lanes
    advance in lockstep (one event per step), so they always share the bucket
    count and width; a lane that stops is closed at the next flush and never
    touched again.  A lane's buckets therefore depend on its own trajectory
    only, never on how many other lanes run with it.

    Residence histograms are pooled over the lanes of a sweep point, in epochs
    of steps whose bounds depend on the step count alone (each epoch about
    2^(1/4) times longer than the steps before it): a point's histogram is
    the same whichever lanes run together, and shards of lanes add up.
    """

    eager = False   # True when the owner accumulates token-time itself every step
    # full lane index of each working lane when the owner steps a subset of the lanes
    # (see :mod:`.compact`): the per-lane accumulators are then the subset's, while the
    # buckets (bk_*, nb_l, width_l) always span every lane
    lmap: np.ndarray | None = None

    def lane_fields(self) -> list:
        """The per-lane arrays a kernel working on a subset of lanes narrows."""
        return ([(self, a, -1) for a in ("area", "last", "fires", "res", "t_start", "open", "point")]
                + [(self.busy_prev, q, -1) for q in range(len(self.busy_prev))])

    def __init__(self, L: int, nslots: int, nmodes: int, qclasses: list[int], nunits: int,
                 buckets: int = 64, width: int = 32, histograms: bool = True,
                 point: np.ndarray | None = None, npoints: int | None = None):
        self.L, self.S, self.M, self.R = L, nslots, nmodes, nunits
        self.qclasses = qclasses
        from qpn import resources
        per_lane = (buckets + 2) * (2 * nslots + nmodes + 3 * nunits + sum(qclasses) + 1)
        # the open histogram (int64) and at most MAX_EPOCHS closed ones (int32)
        hist = nunits * (npoints or 1) * NBINS * (1 + MAX_EPOCHS / 2) if histograms else 0
        resources.require(f"the simulator's statistics ({L:,} lanes x {nslots:,} slots x "
                          f"{buckets} buckets)", 8.0 * (L * per_lane + hist),
                          hint="use fewer replications or sweep points")
        self.B = buckets
        self.width = width                     # steps per bucket (of the live lanes)
        self.point = np.zeros(L, dtype=np.int64) if point is None else np.asarray(point, dtype=np.int64)
        self.P = npoints or (int(self.point.max()) + 1 if L else 1)
        self.area = np.zeros((nslots, L))
        self.last = np.zeros((nslots, L))
        self.fires = np.zeros((nmodes, L))
        self.res = np.zeros((nunits, 3, L))    # count, sum, sum of squares
        self.hist = np.zeros((nunits, self.P, NBINS), dtype=np.int64) if histograms else None
        self.busy_prev = [np.zeros((k, L)) for k in qclasses]
        self.t_start = np.zeros(L)
        self.nb = 0                            # buckets of the live lanes
        self.nb_l = np.zeros(L, dtype=np.int64)
        self.width_l = np.full(L, width, dtype=np.int64)
        self.open = np.ones(L, dtype=bool)     # lanes the next flush closes a bucket for
        self.gstep = 0                          # steps of the live lanes at the last flush
        self.epochs: list[np.ndarray] = []      # closed histogram epochs (units, P, bins)
        self.epoch_start: list[int] = [0]       # first step of every epoch, the open one last
        self.bk_time = np.zeros((buckets, L))
        self.bk_area = np.zeros((buckets, nslots, L))
        self.bk_fires = np.zeros((buckets, nmodes, L))
        self.bk_busy = [np.zeros((buckets, k, L)) for k in qclasses]
        self.bk_res = np.zeros((buckets, nunits, 3, L))

    # ------------------------------------------------------------- record
    def touch(self, lanes: np.ndarray, slot: int, t: np.ndarray, m: np.ndarray) -> None:
        """Token-time of ``slot`` up to ``t`` (call before its marking changes); m is (L, S)."""
        self.area[slot, lanes] += m[lanes, slot] * (t - self.last[slot, lanes])
        self.last[slot, lanes] = t

    def residence(self, lanes: np.ndarray, unit: int, x: np.ndarray) -> None:
        """Add residence times x (one per lane of ``lanes``) of ``unit`` to its sums."""
        r = self.res[unit]
        r[0, lanes] += 1
        r[1, lanes] += x
        r[2, lanes] += x * x
        self.record_hist(lanes, unit, x)

    def record_hist(self, lanes: np.ndarray, unit: int, x: np.ndarray) -> None:
        """Count residence times x of ``unit`` in its histogram (when kept)."""
        if self.hist is None or not len(x):
            return
        if self.P == 1:
            self.hist[unit, 0] += np.bincount(bin_of(x), minlength=NBINS)
        else:
            idx = self.point[lanes] * NBINS + bin_of(x)
            self.hist[unit] += np.bincount(idx, minlength=self.P * NBINS).reshape(self.P, NBINS)

    def flush(self, lanes_t: np.ndarray, m: np.ndarray | None, busy: list[np.ndarray],
              alive: np.ndarray | None = None, regular: bool = True) -> None:
        """Close the current bucket of the open lanes at their time; ``busy`` are cumulative (K, L)."""
        F = self.open
        if not F.any():
            return
        w0 = self.width                          # steps in the bucket being closed
        every = bool(F.all())
        ix = slice(None) if every else F
        if not self.eager:
            self.area[:, ix] += m.T[:, ix] * (lanes_t[ix][None, :] - self.last[:, ix])
            self.last[:, ix] = lanes_t[ix][None, :]
        b = self.nb
        fx = ix if self.lmap is None else self.lmap[ix]    # the same lanes in the buckets
        self.bk_time[b, fx] = lanes_t[ix] - self.t_start[ix]
        self.bk_area[b][:, fx] = self.area[:, ix]
        self.bk_fires[b][:, fx] = self.fires[:, ix]
        for q, cur in enumerate(busy):
            self.bk_busy[q][b][:, fx] = cur[:, ix] - self.busy_prev[q][:, ix]
            self.busy_prev[q][:, ix] = cur[:, ix]
        self.bk_res[b][..., fx] = self.res[..., ix]
        self.nb = b + 1
        if self.nb == self.B:        # merge at once, so every later bucket has the new width
            self._merge(fx)
        self.nb_l[fx] = self.nb
        self.width_l[fx] = self.width
        self.t_start[ix] = lanes_t[ix]
        self.area[:, ix] = 0
        self.fires[:, ix] = 0
        self.res[..., ix] = 0
        if alive is not None:
            self.open = alive.copy()
        if regular:
            self.gstep += w0
            if self.hist is not None and self.gstep >= EPOCH_GROWTH * self.epoch_start[-1] + 64:
                self.epochs.append(self.hist.astype(np.int32))
                self.epoch_start.append(self.gstep)
                self.hist[:] = 0
                if len(self.epochs) > MAX_EPOCHS:
                    # the two oldest (and smallest: epochs grow geometrically) become one
                    # that starts at the first's start: a warm-up cut can only drop more
                    self.epochs[1] += self.epochs[0]
                    del self.epochs[0], self.epoch_start[1]

    def _merge(self, ix):
        """Merge neighbouring buckets of the open lanes ``ix`` (a slice, a mask or indices)."""
        h = self.B // 2
        if isinstance(ix, slice):
            keep = None
        else:
            merged = np.zeros(self.bk_time.shape[-1], dtype=bool)
            merged[ix] = True
            keep = np.flatnonzero(~merged)            # closed lanes: untouched
        for arr in [self.bk_time, self.bk_area, self.bk_fires, self.bk_res] + self.bk_busy:
            saved = arr[..., keep] if keep is not None else None
            arr[:h] = arr[0::2] + arr[1::2]
            arr[h:] = 0
            if saved is not None:
                arr[..., keep] = saved
        self.nb = h
        self.width *= 2

    # ------------------------------------------------------------- analyse
    def truncation(self, fixed: int | None = None) -> np.ndarray:
        """First bucket kept in each lane.

        MSER runs per sweep point on the bucket means averaged over the point's
        lanes (every slot's tokens and every mode's firing rate a channel, the
        largest cut wins): one lane's series is
        too noisy, and MSER on it tends to cut off high excursions, which biases
        the estimates low.  Lanes whose buckets are finer (they ended before a
        merge) are first merged to the point's coarsest width, so that the
        averaged buckets cover the same steps."""
        out = np.zeros(self.L, dtype=np.int64)
        if fixed is not None:
            return np.minimum(fixed, np.maximum(self.nb_l - 2, 0)).astype(np.int64)
        for p in np.unique(self.point):
            lanes = np.flatnonzero(self.point == p)
            wmax = int(self.width_l[lanes].max())
            f = wmax // self.width_l[lanes]                       # powers of two
            n = int((self.nb_l[lanes] // f).min())
            if n < 4:
                continue
            acc = np.zeros((n, self.S + self.M))
            for fv in np.unique(f):
                sub = lanes[f == fv]
                if sub[-1] - sub[0] + 1 == len(sub):           # contiguous (a point's lanes): no copy
                    sub = slice(int(sub[0]), int(sub[-1]) + 1)
                t = self.bk_time[:n * fv][:, sub]
                nl = t.shape[-1]
                t = t.reshape(n, fv, nl).sum(axis=1)
                a = self.bk_area[:n * fv][:, :, sub].reshape(n, fv, self.S, nl).sum(axis=1)
                r = self.bk_fires[:n * fv][:, :, sub].reshape(n, fv, self.M, nl).sum(axis=1)
                inv = 1.0 / np.maximum(t, 1e-300)[:, None, :]
                acc[:, :self.S] += (a * inv).sum(axis=2)       # token means
                acc[:, self.S:] += (r * inv).sum(axis=2)       # firing rates (throughputs)
            d = int(mser((acc / len(lanes))[None])[0])
            out[lanes] = d * f
        return out

    def keep_mask(self, first: np.ndarray, upto: int | None = None) -> np.ndarray:
        """Buckets x lanes: 1 for the buckets kept (from each lane's ``first`` after the
        warm-up, up to ``upto``), 0 for the others."""
        nb = self.nb_l if upto is None else np.minimum(self.nb_l, upto)
        b = np.arange(self.B)[:, None]
        return ((b >= first[None, :]) & (b < nb[None, :])).astype(float)       # (B, L)

    def totals(self, first: np.ndarray, upto: int | None = None):
        """Sums over each lane's buckets first..end: time (L,), area (L, S), fires (L, M),
        busy [(L, K)], res (L, R, 3)."""
        n = max(int(self.nb_l.max(initial=0)), 1)  # buckets past every lane's last: never read
        k = self.keep_mask(first, upto)[:n]
        time = (self.bk_time[:n] * k).sum(axis=0)
        area = np.einsum("bsl,bl->ls", self.bk_area[:n], k)
        fires = np.einsum("bml,bl->lm", self.bk_fires[:n], k)
        busy = [np.einsum("bkl,bl->lk", b[:n], k) for b in self.bk_busy]
        res = np.einsum("brcl,bl->lrc", self.bk_res[:n], k)
        return time, area, fires, busy, res

    def warmup_steps(self, lanes: np.ndarray, first: np.ndarray) -> int:
        """Steps of the longest warm-up among ``lanes`` (bucket j of a lane starts at step j*width)."""
        return int((first[lanes] * self.width_l[lanes]).max(initial=0))

    def point_hist(self, p: int, lanes: np.ndarray, first: np.ndarray) -> np.ndarray | None:
        """Residence histograms (units, bins) of point ``p`` from the first epoch that
        starts after the warm-up of all its lanes (the open epoch included)."""
        if self.hist is None:
            return None
        cut = self.warmup_steps(lanes, first)
        e0 = int(np.searchsorted(np.asarray(self.epoch_start), cut, side="left"))
        e0 = min(e0, len(self.epoch_start) - 1)
        h = self.hist[:, p].astype(np.int64)
        for e in range(e0, len(self.epochs)):
            h += self.epochs[e][:, p]
        return h


def student_t(level: float, df: np.ndarray | int) -> np.ndarray:
    """Two-sided Student-t quantile (scipy.special: importing scipy.stats costs 0.6 s)."""
    from scipy.special import stdtrit
    return stdtrit(np.maximum(df, 1), 0.5 + level / 2)


def percentiles_from_hist(h: np.ndarray, qs) -> list[float]:
    """Percentiles ``qs`` of pooled samples, interpolated log-linearly inside a bin (one
    cumulative sum for all of them).  A percentile below 1 ns (the first bin) is 0: the
    histograms resolve no shorter time; one above 10^7 s is that bound.

    >>> h = np.zeros(NBINS); h[[100, 200]] = 1
    >>> p50, p100 = percentiles_from_hist(h, (0.5, 1.0))
    >>> bool(bin_edges()[100] <= p50 <= bin_edges()[101] <= bin_edges()[200] <= p100 <= bin_edges()[201])
    True
    >>> h = np.zeros(NBINS); h[0] = 9; h[300] = 1     # nine residences below 1 ns
    >>> percentiles_from_hist(h, (0.9,))
    [0.0]
    """
    total = h.sum()
    if total == 0:
        return [math.nan] * len(qs)
    cum = np.cumsum(h)
    edges = _EDGES
    out = []
    for q in qs:
        target = q * total
        b = int(np.searchsorted(cum, target, side="left"))
        lo, hi = edges[b], edges[b + 1]
        before = cum[b - 1] if b > 0 else 0
        frac = (target - before) / max(h[b], 1)
        if lo <= 0:            # below 1 ns, the histograms' floor: no finer value is known
            out.append(0.0)
        elif not np.isfinite(hi):
            out.append(float(lo))
        else:
            out.append(float(lo * (hi / lo) ** frac))
    return out
