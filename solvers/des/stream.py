"""Per-lane random streams, read in lockstep or through per-lane pointers.

Each lane has its own numpy Generator (``SeedSequence`` child by lane key, as
in :mod:`.rng`).  :class:`LockstepStream` gives every lane the same number
of numbers per step: a lane's block (``block`` steps x ``width``) is drawn in
one call, then blocks are laid out lane-last so a step reads one contiguous
(width x lanes) slice.  :class:`LaneStream` hands numbers only to the lanes
that ask, through per-lane pointers.  Either way, what a lane reads depends
only on its key and its own history, so runs are bit-identical however many
lanes run beside it.

>>> s = LaneStream(1, [0, 1, 2])
>>> a = s.exponential(np.array([True, False, True]))
>>> b = LaneStream(1, [2]).exponential(np.array([True]))
>>> bool(a[2] == b[0] and a[1] == 0.0)
True
"""
from __future__ import annotations

import numpy as np

TILE = 256


def _generators(seed, keys) -> list:
    entropy = np.random.SeedSequence(seed).entropy
    return [np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(int(k),))))
            for k in np.asarray(keys)]


class LockstepStream:
    """Random numbers for kernels that step every lane at once: per step, ``n_exp``
    exponentials and ``n_uni`` uniforms for each lane, drawn in blocks from the lanes'
    own Generators and laid out lane-last."""

    def __init__(self, seed, keys, n_exp: int, n_uni: int, block: int = 256):
        self.gens = _generators(seed, keys)
        L = len(self.gens)
        self.n_exp, self.n_uni, self.block = int(n_exp), int(n_uni), block
        # one tile of lanes drawn lane-major, then transposed: a small scratch that stays in cache
        self.raw_e = np.empty((TILE, block, max(self.n_exp, 1)))
        self.raw_u = np.empty((TILE, block, max(self.n_uni, 1)))
        self.exp = np.empty((block, max(self.n_exp, 1), L))
        self.uni = np.empty((block, max(self.n_uni, 1), L))
        self.i = block

    def _refill(self):
        L = len(self.gens)
        for l0 in range(0, L, TILE):   # tiled transposition: lane-last rows
            n = min(TILE, L - l0)
            for j in range(n):
                g = self.gens[l0 + j]
                if self.n_exp:
                    g.standard_exponential(out=self.raw_e[j])
                if self.n_uni:
                    g.random(out=self.raw_u[j])
            if self.n_exp:
                self.exp[:, :, l0:l0 + n] = self.raw_e[:n].transpose(1, 2, 0)
            if self.n_uni:
                self.uni[:, :, l0:l0 + n] = self.raw_u[:n].transpose(1, 2, 0)
        self.i = 0

    def lane_fields(self) -> list:
        """The per-lane state a kernel working on a subset of lanes narrows (see :mod:`.compact`)."""
        return [(self, "gens", 0), (self, "exp", -1), (self, "uni", -1)]

    def next(self) -> tuple[np.ndarray, np.ndarray]:
        """This step's exponential variates (n_exp, lanes) and uniforms (n_uni, lanes)."""
        if self.i == self.block:
            self._refill()
        i = self.i
        self.i += 1
        return self.exp[i], self.uni[i]


class _Buf:
    def __init__(self, L: int, block: int, fill):
        self.block = block
        self.data = np.empty((L, block))
        self.ptr = np.full(L, block, dtype=np.int64)
        self.fill = fill

    def take(self, lanes: np.ndarray) -> np.ndarray:
        """The next buffered number of each of ``lanes`` (refilling empty buffers)."""
        p = self.ptr[lanes]
        empty = p >= self.block
        if empty.any():
            for lane in lanes[empty]:
                self.fill(lane, self.data[lane])
            p[empty] = 0
        self.ptr[lanes] = p + 1
        return self.data.ravel()[lanes * self.block + p]


class LaneStream:
    """Random numbers drawn per lane on demand, each lane from its own Generator, so
    that a lane's numbers do not depend on which other lanes drew."""

    def __init__(self, seed, keys, block: int = 1024):
        self.gens = _generators(seed, keys)
        self.L = len(self.gens)
        self._exp = _Buf(self.L, block, lambda lane, out: self.gens[lane].standard_exponential(out=out))
        self._uni = _Buf(self.L, block, lambda lane, out: self.gens[lane].random(out=out))

    def exponential(self, mask: np.ndarray) -> np.ndarray:
        """Full-length array: a standard exponential for masked lanes, 0 elsewhere."""
        return self._masked(self._exp, mask)

    def uniform(self, mask: np.ndarray) -> np.ndarray:
        """Full-length array: a uniform in [0, 1) for masked lanes, 0 elsewhere."""
        return self._masked(self._uni, mask)

    def _masked(self, stream, mask: np.ndarray) -> np.ndarray:
        out = np.zeros(self.L)
        lanes = np.flatnonzero(mask)
        if len(lanes):
            out[lanes] = stream.take(lanes)
        return out

    def uniform_at(self, lanes: np.ndarray) -> np.ndarray:
        """A uniform in [0, 1) for each of ``lanes``."""
        return self._uni.take(lanes)
