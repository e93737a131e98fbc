"""One definition of every measure, shared by all solvers.

A solver only produces three raw quantities for a compiled net:

* ``slot_tokens[..., nslots]``: time-averaged tokens per slot (token/depository
  and queue slots, see :mod:`qpn.compile`);
* ``mode_rates[..., nmodes]``: firings per second of every compiled mode;
* ``class_busy``: list over queues of arrays ``[..., nclasses]`` with the mean
  number of busy servers serving each class of the queue.

Leading axes (``...``) are lanes or replications: the simulator derives
measures per replication and then confidence intervals across them.
:func:`derive` turns these into every measure of :mod:`solvers.result`;
:func:`to_result` fills a :class:`~solvers.result.Result`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from qpn.colors import color_label

from .result import Result

MEASURE_ORDER = ("tokens", "queue_tokens", "depository_tokens", "arrivals", "departures", "residence",
                 "response", "depository_residence", "utilization", "throughput")


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.asarray(a).dtype == object or np.asarray(b).dtype == object:
        return a / b  # symbolic (sympy) values
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)


def class_labels(compiled, qi: int) -> list[str]:
    """Labels of the classes of queue ``qi``: color, or place[.color] when shared."""
    q = compiled.queues[qi]
    shared = len(set(q.places)) > 1
    out = []
    for slot, p in zip(q.classes, q.places):
        col = color_label(compiled.slot_color[slot])
        if shared:
            name = compiled.places[p].name
            out.append(f"{name}({col})" if col else name)
        else:
            out.append(col)
    return out


def derive(compiled, slot_tokens, mode_rates, class_busy) -> list[tuple[str, str, str, np.ndarray]]:
    """All measures as (measure, element, color, values[...]) rows."""
    symbolic = np.asarray(slot_tokens).dtype == object or np.asarray(mode_rates).dtype == object
    dtype = object if symbolic else float
    slot_tokens = np.asarray(slot_tokens, dtype=dtype)
    mode_rates = np.asarray(mode_rates, dtype=dtype)
    lead = slot_tokens.shape[:-1]
    nm, ns = len(compiled.modes), compiled.nslots
    # tokens entering / leaving each slot per second
    if nm == 0:
        into = outof = np.zeros(lead + (ns,), dtype=dtype)
    elif symbolic:
        flat = mode_rates.reshape(-1, nm)
        into = (flat @ compiled.post.toarray().astype(object)).reshape(lead + (ns,))
        outof = (flat @ compiled.pre.toarray().astype(object)).reshape(lead + (ns,))
    else:
        flat = mode_rates.reshape(-1, nm)
        into = np.asarray(compiled.post.T @ flat.T).T.reshape(lead + (ns,))
        outof = np.asarray(compiled.pre.T @ flat.T).T.reshape(lead + (ns,))
    rows: list[tuple[str, str, str, np.ndarray]] = []
    for p in compiled.places:
        # a place's colors side by side (the last axis): one operation per measure and
        # place, not per color (a loop counter may color a place thousands of ways)
        slots = np.asarray(p.slots[:len(p.colors)], dtype=np.int64)
        tok = slot_tokens[..., slots]
        dep = outof[..., slots]
        if p.queueing:
            qslots = np.asarray(p.qslots[:len(p.colors)], dtype=np.int64)
            qtok = slot_tokens[..., qslots]
            tok = tok + qtok
            arr = into[..., qslots]
        else:
            qtok, arr = None, into[..., slots]
        labels = [color_label(col) for col in p.colors]
        if not labels:
            continue
        parts = [(lab, k) for k, lab in enumerate(labels)]
        if len(labels) > 1 or labels[0] != "":
            parts = [("", None)] + parts      # the place's total first, then each color
        cols = {"tokens": tok, "arrivals": arr, "departures": dep}
        if p.queueing:
            cols["queue_tokens"] = qtok
        total = {k: v.sum(axis=-1) for k, v in cols.items()}
        measures = ["tokens"] + (["queue_tokens"] if p.queueing else []) + ["arrivals", "departures",
                                                                             "residence"]
        if p.queueing:
            measures += ["response", "depository_tokens", "depository_residence"]
        for which in (total, cols):
            which["residence"] = _ratio(which["tokens"], which["arrivals"])
            if p.queueing:
                which["response"] = _ratio(which["queue_tokens"], which["arrivals"])
                which["depository_tokens"] = which["tokens"] - which["queue_tokens"]
                which["depository_residence"] = _ratio(which["depository_tokens"], which["arrivals"])
        for lab, k in parts:
            for m in measures:
                rows.append((m, p.name, lab, total[m] if k is None else cols[m][..., k]))
    for qi, q in enumerate(compiled.queues):
        busy = np.asarray(class_busy[qi], dtype=dtype)
        total = busy.sum(axis=-1)
        cap = q.peak
        util = total / cap if not math.isinf(cap) else total
        rows.append(("utilization", q.name, "", util))
        labels = class_labels(compiled, qi)
        if len(labels) > 1:
            for k, lab in enumerate(labels):
                u = busy[..., k] / cap if not math.isinf(cap) else busy[..., k]
                rows.append(("utilization", q.name, lab, u))
    by_t: dict[str, list[int]] = {}
    for i, m in enumerate(compiled.modes):
        by_t.setdefault(m.transition, []).append(i)
    for t in compiled.transitions:
        idx = by_t.get(t, [])
        total = mode_rates[..., idx].sum(axis=-1) if idx else np.zeros(lead, dtype=dtype)
        rows.append(("throughput", t, "", total))
        if len(idx) > 1:
            unnamed = 0
            for i in idx:
                lab = compiled.modes[i].label[len(t):].lstrip(".")
                if not lab:     # an unnamed mode: its place among them, not the total's ''
                    unnamed += 1
                    lab = f"mode {unnamed}"
                rows.append(("throughput", t, lab, mode_rates[..., i]))
    order = {m: k for k, m in enumerate(MEASURE_ORDER)}
    rows.sort(key=lambda r: order.get(r[0], 99))
    return rows


def to_result(compiled, rows, method: str, *, ci: dict | None = None, level: float | None = None,
              **info: Any) -> Result:
    """A Result from derived rows (scalars); ``ci`` maps (measure, element, color) -> half-width."""
    res = Result(method=method, model=compiled.net.name, level=level)
    for measure, element, color, value in rows:
        v = float(np.asarray(value))
        h = None if ci is None else ci.get((measure, element, color))
        res.add(measure, element, v, color=color, ci=h)
    res.info.update(info)
    return res
