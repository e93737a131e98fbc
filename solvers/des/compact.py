"""Dropping finished lanes from a lockstep kernel's working arrays.

In a run to a fixed horizon, lanes finish at different steps (a lane's event
count over the horizon is random), yet every step costs the same for each
lane the arrays carry, finished or not: with 16k lanes of the central-server
model the last lane needs 27% more steps than the average one.  When few
enough lanes are left, the kernel gathers the live ones into smaller arrays
and steps those; finished lanes' values go back to the full arrays first, and
everything is scattered back at the end.  All per-lane arithmetic is
elementwise, so every lane's numbers are unchanged.

>>> import types
>>> o = types.SimpleNamespace(a=np.arange(6.0), b=[[0], [1], [2], [3], [4], [5]])
>>> w = LaneWindow([(o, "a", -1), (o, "b", 0)])
>>> w.narrow(np.array([1, 4]))
>>> o.a, o.b
(array([1., 4.]), [[1], [4]])
>>> o.a += 10
>>> w.restore()
>>> o.a
array([ 0., 11.,  2.,  3., 14.,  5.])
"""
from __future__ import annotations

import numpy as np


def _get(obj, key):
    return obj[key] if isinstance(obj, list) else getattr(obj, key)


def _set(obj, key, value) -> None:
    if isinstance(obj, list):
        obj[key] = value
    else:
        setattr(obj, key, value)


def _take(full, lmap: np.ndarray, axis: int):
    if isinstance(full, list):
        return [full[i] for i in lmap]
    # C order: kernels write through ravel() views (a gather along the last axis
    # may come back transposed)
    return np.ascontiguousarray(full[lmap] if axis == 0 else full[..., lmap])


class LaneWindow:
    """The lanes a kernel currently works on, as a map into the full lane set.

    ``fields`` lists ``(owner, attribute or list index, lane axis)`` of every
    per-lane array (or list) the kernel steps; ``lmap[i]`` is the full index
    of working lane ``i`` (None: all lanes, in order)."""

    def __init__(self, fields: list):
        self.fields = fields
        self.full: list | None = None
        self.lmap: np.ndarray | None = None

    def sync(self) -> None:
        """Write the working lanes' values into the full arrays."""
        if self.full is None:
            return
        for n, ((obj, key, axis), full) in enumerate(zip(self.fields, self.full)):
            cur = _get(obj, key)
            if not isinstance(full, list) and axis == -1 and cur.shape[:-1] != full.shape[:-1]:
                # the kernel grew an array (a queue's ring buffer) while narrowed: grow the
                # full one alike; finished lanes keep their old rows, which nothing reads again
                grown = np.zeros(cur.shape[:-1] + full.shape[-1:], dtype=full.dtype)
                grown[tuple(slice(0, m) for m in full.shape[:-1])] = full
                self.full[n] = full = grown
            if isinstance(full, list):
                for i, lane in enumerate(self.lmap):
                    full[lane] = cur[i]
            elif axis == 0:
                full[self.lmap] = cur
            else:
                full[..., self.lmap] = cur

    def narrow(self, keep: np.ndarray) -> None:
        """Work on the working lanes ``keep`` (positions in the current arrays) only."""
        if self.full is None:
            self.full = [_get(obj, key) for obj, key, _ in self.fields]
            self.lmap = np.asarray(keep, dtype=np.int64)
        else:
            self.sync()
            self.lmap = self.lmap[keep]
        for (obj, key, axis), full in zip(self.fields, self.full):
            _set(obj, key, _take(full, self.lmap, axis))

    def restore(self) -> None:
        """Back to the full arrays, with the working lanes' latest values."""
        if self.full is None:
            return
        self.sync()
        for (obj, key, _), full in zip(self.fields, self.full):
            _set(obj, key, full)
        self.full = self.lmap = None

    def full_of(self, obj, key) -> np.ndarray:
        """A full-size copy of one field with the working lanes' current values."""
        cur = _get(obj, key)
        if self.full is None:
            return cur
        for (o, k, axis), full in zip(self.fields, self.full):
            if o is obj and k == key:
                out = full.copy()
                if axis == 0:
                    out[self.lmap] = cur
                else:
                    out[..., self.lmap] = cur
                return out
        raise KeyError(key)
