"""Per-lane FIFO rings of token entry times, one per token slot."""
from __future__ import annotations

import numpy as np


class Rings:
    def __init__(self, L: int, slots: list[int], cap: int = 8):
        self.index = {s: i for i, s in enumerate(slots)}
        self.L, self.cap = L, cap
        n = max(len(slots), 1)
        self.buf = np.zeros((L, n, cap))
        self.head = np.zeros((L, n), dtype=np.int64)
        self.size = np.zeros((L, n), dtype=np.int64)

    def _grow(self):
        new = self.cap * 2
        idx = (self.head[:, :, None] + np.arange(self.cap)[None, None, :]) % self.cap
        buf = np.zeros((self.L, self.buf.shape[1], new))
        buf[:, :, :self.cap] = np.take_along_axis(self.buf, idx, axis=2)
        self.buf, self.cap = buf, new
        self.head[:] = 0

    def push(self, lanes: np.ndarray, slot: int, t) -> None:
        i = self.index[slot]
        if (self.size[lanes, i] >= self.cap).any():
            self._grow()
        pos = (self.head[lanes, i] + self.size[lanes, i]) % self.cap
        self.buf[lanes, i, pos] = t
        self.size[lanes, i] += 1

    def pop(self, lanes: np.ndarray, slot: int) -> np.ndarray:
        i = self.index[slot]
        h = self.head[lanes, i]
        t = self.buf[lanes, i, h]
        self.head[lanes, i] = (h + 1) % self.cap
        self.size[lanes, i] -= 1
        return t
