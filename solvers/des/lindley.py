"""Exact simulation of a single-server FCFS queue by the Lindley recursion.

For a net that is one FCFS single-server queue fed by renewal sources (any
inter-arrival and service distributions) whose served tokens leave the net,
customers can be simulated all at once: with arrival times A and service
times S, departures are D_n = C_n + max_{k<=n}(A_k - C_{k-1}) where C are the
partial sums of S (one cumulative sum and one running maximum, vectorized
over customers).  Every measure then follows from the intervals [A_n, D_n]
(in the system) and [D_n - S_n, D_n] (in service), clipped to the observation
window.  Lanes are independent replications, each with its own Generator.
"""
from __future__ import annotations

import time

import numpy as np

from qpn.model import IN_ORDER, ONE_AT_A_TIME
from qpn import disciplines
from qpn.distributions import Exp

from .sampling import Sampler
from .stats import NBINS, Stats, bin_of

CHUNK = 1 << 15


def lindley_plan(net) -> dict | list[str]:
    """Sources, queue and sinks of a G/G/1 net, or why it is not one."""
    c = net.c
    why = []
    if len(c.queues) != 1:
        return ["not a single queue"]
    q = c.queues[0]
    d = disciplines.get(q.discipline)
    in_order = d.scheduling.serves == "first" and d.scheduling.order == "arrival" and not d.takes_quantum
    if not in_order or np.any(net.qservers[0] != 1):
        return ["not a single-server FCFS queue"]
    if any(c.places[p].departure == IN_ORDER for p in q.places) or c.cap.nnz or c.inh.nnz or \
            any(p.departure in ONE_AT_A_TIME for p in c.places):
        return ["a departure discipline, capacities or inhibitors"]
    pre, post = c.pre.tocsr(), c.post.tocsr()
    slot_class = {s: k for k, s in enumerate(q.classes)}
    sources, sinks = [], []
    for j, m in enumerate(c.modes):
        if m.kind == "timed":
            outs = post[j].indices
            if pre[j].nnz or len(outs) != 1 or post[j, outs[0]] != 1 or int(outs[0]) not in slot_class:
                return [f"transition {m.transition}: not a source of the queue"]
            sources.append((j, slot_class[int(outs[0])]))
        else:
            ins = pre[j].indices
            if post[j].nnz or len(ins) != 1 or pre[j, ins[0]] != 1 or int(ins[0]) not in q.dslots:
                return [f"transition {m.transition}: not a sink of the queue"]
            sinks.append((j, q.dslots.index(int(ins[0]))))
    other = set(range(c.nslots)) - set(q.classes) - set(q.dslots)
    if other or not sources:
        return ["other places than the queue"]
    for k in range(len(q.classes)):
        if not any(kk == k for _, kk in sinks):
            return [f"class {k} never leaves"]
    return {"sources": sources, "sinks": sinks, "queue": q}


class LindleyKernel:
    """The kernel interface (simulate, busy, flush, statistics) over the Lindley
    recursion: every customer of a chunk at once, per lane."""

    def __init__(self, net, plan: dict, keys, seed, units: dict, unit_of_slot, *, histograms=True,
                 buckets: int = 64):
        c = net.c
        self.net, self.c, self.plan, self.L = net, c, plan, net.L
        self.units, self.unit = units, unit_of_slot
        self.notes: list[str] = []
        entropy = np.random.SeedSequence(seed).entropy
        self.gens = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(int(k),))))
                     for k in np.asarray(keys)]
        self.stats = Stats(self.L, c.nslots, len(c.modes), [len(plan["queue"].classes)], len(units),
                           buckets=buckets, width=1, histograms=histograms, point=net.point, npoints=net.npoints)
        self.t = np.zeros(self.L)
        self.steps = np.zeros(self.L, dtype=np.int64)
        q = plan["queue"]
        self.K = len(q.classes)
        self.src = plan["sources"]
        self.src_samplers = [net.delay[j] for j, _ in self.src]
        self.svc = net.service[0]
        self.sinks = plan["sinks"]

    def _draw(self, lane: int, sampler: Sampler, n: int) -> np.ndarray:
        """n samples of lane's parameters from the lane's own Generator."""
        g = self.gens[lane]
        if sampler.kind is Exp:
            return g.standard_exponential(n) * sampler.mean[lane]
        one = _OneLane(g)
        return sampler.draw_many(one, lane, n)

    def _lane(self, lane: int, T: float, ncust: int | None):
        """Customers of one lane up to time T (or ncust customers)."""
        K = self.K
        arrivals, classes, modes = [], [], []
        for (j, k), smp in zip(self.src, self.src_samplers):
            parts, total, tnow = [], 0, 0.0
            # about as many arrivals as the horizon needs (plus a margin), in chunks
            want = ncust if ncust is not None else T / max(float(smp.mean[lane]), 1e-300)
            chunk = int(min(max(want * 1.02 + 4 * want ** 0.5 + 16, 64), CHUNK))
            while True:
                gaps = self._draw(lane, smp, chunk)
                at = tnow + np.cumsum(gaps)
                parts.append(at)
                tnow = at[-1]
                total += chunk
                if (ncust is None and tnow > T) or (ncust is not None and total >= ncust):
                    break
            a = np.concatenate(parts)
            arrivals.append(a)
            classes.append(np.full(len(a), k))
            modes.append(np.full(len(a), j))
        A = np.concatenate(arrivals)
        cls = np.concatenate(classes)
        src_mode = np.concatenate(modes)
        if len(arrivals) > 1:
            order = np.argsort(A, kind="stable")
            A, cls, src_mode = A[order], cls[order], src_mode[order]
        if ncust is not None:
            A, cls, src_mode = A[:ncust], cls[:ncust], src_mode[:ncust]
            T = float(A[-1])
        else:
            keep = A <= T
            A, cls, src_mode = A[keep], cls[keep], src_mode[keep]
        S = np.empty(len(A))
        for k in range(K):
            sel = cls == k
            S[sel] = self._draw(lane, self.svc[k], int(sel.sum()))
        C = np.cumsum(S)
        Cprev = C - S
        D = C + np.maximum.accumulate(A - Cprev)
        return A, S, D, cls, src_mode, T

    def simulate(self, T: float | None, events: int | None, lanes=None) -> float:
        """(Re-)simulate ``lanes`` (default all) from time 0 with fresh numbers of their streams."""
        st = self.stats
        B = st.B
        q = self.plan["queue"]
        sink_modes = {k: [j for j, kk in self.sinks if kk == k] for k in range(self.K)}
        ncust = None if events is None else max(int(events) // 2, 1)
        lanes = np.arange(self.L) if lanes is None else np.asarray(lanes)
        hist = None
        if st.hist is not None:
            # histogram epochs = the B time buckets of the lanes (cut at the warm-up bucket)
            if not st.epochs:
                self._hist = np.zeros((B,) + st.hist.shape, dtype=np.int32)
                st.epochs = list(self._hist)
                st.epoch_start = list(range(B + 1))
            hist = self._hist
            hist[:, :, np.unique(st.point[lanes])] = 0
        for lane in lanes:
            A, S, D, cls, src_mode, Tl = self._lane(lane, T if T is not None else 0.0, ncust)
            self.t[lane] = Tl
            self.steps[lane] = int(len(A) + np.count_nonzero(D <= Tl))
            edges = np.linspace(0.0, Tl, B + 1)
            st.bk_time[:, lane] = np.diff(edges)
            for k in range(self.K):
                sel = cls == k
                a, s, d = A[sel], S[sel], D[sel]
                qslot, dslot = q.classes[k], q.dslots[k]
                st.bk_area[:, qslot, lane] = _overlap(a, d, edges)
                st.bk_busy[0][:, k, lane] = _overlap(d - s, d, edges)
                done = d <= Tl
                dbin = np.minimum((d[done] / Tl * B).astype(np.int64), B - 1)
                r = (d - a)[done]
                unit = self.unit[qslot]
                st.bk_res[:, unit, 0, lane] = np.bincount(dbin, minlength=B)
                st.bk_res[:, unit, 1, lane] = np.bincount(dbin, weights=r, minlength=B)
                st.bk_res[:, unit, 2, lane] = np.bincount(dbin, weights=r * r, minlength=B)
                if hist is not None:
                    hb = np.bincount(dbin * NBINS + bin_of(r), minlength=B * NBINS)
                    hist[:, unit, st.point[lane]] += hb.reshape(B, NBINS).astype(np.int32)
                # sinks: a weighted choice when several transitions take the tokens
                sm = sink_modes[k]
                if len(sm) == 1:
                    st.bk_fires[:, sm[0], lane] = np.bincount(dbin, minlength=B)
                else:
                    w = self.net.weight[lane, sm]
                    cum = np.cumsum(w / w.sum())
                    u = self.gens[lane].random(len(dbin))
                    pick = np.minimum((u[:, None] >= cum[None, :]).sum(axis=1), len(sm) - 1)
                    for i, j in enumerate(sm):
                        st.bk_fires[:, j, lane] = np.bincount(dbin[pick == i], minlength=B)
            abin = np.minimum((A / Tl * B).astype(np.int64), B - 1)
            for j, _ in self.src:
                st.bk_fires[:, j, lane] = np.bincount(abin[src_mode == j], minlength=B)
        st.nb = B
        st.nb_l[:] = B
        st.width_l[:] = 1
        return float(self.t.mean())

    def busy(self):
        """Busy time of the one server per lane (the kernel interface's form)."""
        return [self.stats.bk_busy[0].sum(axis=0)]

    def flush(self):
        """Nothing to close: :meth:`simulate` fills whole buckets."""


def _overlap(lo: np.ndarray, hi: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Total length of intervals [lo, hi] inside each window of ``edges``."""
    out = np.zeros(len(edges) - 1)
    T = edges[-1]
    lo = np.clip(lo, 0, T)
    hi = np.clip(hi, 0, T)
    width = edges[1] - edges[0]
    if width <= 0:
        return out
    b0 = np.minimum((lo / width).astype(np.int64), len(out) - 1)
    b1 = np.minimum((hi / width).astype(np.int64), len(out) - 1)
    same = b0 == b1
    out += np.bincount(b0[same], weights=(hi - lo)[same], minlength=len(out))
    # intervals crossing window edges: first part, full windows, last part
    x = ~same
    if x.any():
        l0, h1, s0, s1 = lo[x], hi[x], b0[x], b1[x]
        out += np.bincount(s0, weights=edges[s0 + 1] - l0, minlength=len(out))
        out += np.bincount(s1, weights=h1 - edges[s1], minlength=len(out))
        for gap in range(1, int((s1 - s0).max())):
            mid = s1 - s0 > gap
            out += np.bincount(s0[mid] + gap, weights=np.full(int(mid.sum()), width), minlength=len(out))
    return out


class _OneLane:
    """Adapter: a lane's Generator seen through the LaneRandom interface."""

    def __init__(self, g):
        self.g = g

    def uniform(self, lanes):
        """One uniform number per lane."""
        return self.g.random(len(lanes))

    def exponential(self, lanes):
        """One unit-mean exponential number per lane."""
        return self.g.standard_exponential(len(lanes))


__all__ = ["lindley_plan", "LindleyKernel", "time"]
