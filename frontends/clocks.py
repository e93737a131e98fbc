"""Clocks of traces taken on different machines, aligned by the messages between them.

Each trace's timestamps are its machine's ``CLOCK_MONOTONIC`` (time since boot): on two
machines they have nothing in common.  The header's ``epoch_ns`` (the wall clock at
``start_ns``) gives a first offset, as good as the machines' wall clocks agree
(milliseconds with NTP).  The messages between the traced processes then bound the
offset, in the manner of logical clocks: a message is received after it was sent.

With ``d`` the offset that maps machine B's clock onto A's (``t_A = t_B + d``):

* a connection A made to B (A's ``connect``, matched to B's ``accept`` by the two
  addresses) and the first bytes A sent on it: B's accept returned, and B's first
  receive on it ended, after A began them: ``d >= ts_A - end_B``;
* B's first answer on that connection: A's receive of it ended after B began to send:
  ``d <= end_A - ts_B``.

The offset is the middle of the tightest bounds (their width is the alignment's
uncertainty); bounds that contradict each other (drift, or a pair wrongly matched) leave
the epoch's offset, with a warning.

>>> a = [{"kind": "io", "tid": 1, "ts": 100, "dur": 5, "op": "connect", "fd": 4,
...       "local": "A:1", "peer": "B:80"},
...      {"kind": "io", "tid": 1, "ts": 110, "dur": 2, "op": "send", "fd": 4},
...      {"kind": "io", "tid": 1, "ts": 112, "dur": 100, "op": "recv", "fd": 4}]
>>> b = [{"kind": "io", "tid": 2, "ts": 5000, "dur": 3, "op": "accept", "fd": 3, "conn": 5,
...       "peer": "A:1", "local": "B:80"},
...      {"kind": "io", "tid": 2, "ts": 5003, "dur": 20, "op": "recv", "fd": 5},
...      {"kind": "io", "tid": 2, "ts": 5100, "dur": 4, "op": "send", "fd": 5}]
>>> message_bounds(a, b)       # t_A = t_B + d: d in [100 - 5003, 212 - 5100]
(-4903, -4888, 1)
"""
from __future__ import annotations

from .trace_query import connections, end_ts


def _ends(events: list, opened_by: str, processes: dict | None) -> list:
    """[(own, peer), events] of the connection ends ``opened_by`` connect or accept whose
    addresses were recorded (:func:`trace_query.connections`)."""
    return [(k, evs) for k, evs in connections(events, processes)
            if evs[0]["op"] == opened_by and k[0] != "fd"]


def message_bounds(a: list, b: list, processes: dict | None = None) -> tuple:
    """Bounds (low, high) on ``d`` with ``t_A = t_B + d`` from the connections A made to
    B, and how many connections gave one; None where no message gives that bound
    (``processes``: tid -> process, when A's or B's events are of several)."""
    taken: dict = {}                     # (own, peer) -> B's ends by that name, in order
    for k, evs in _ends(b, "accept", processes):
        taken.setdefault(k, []).append(evs)
    low = high = None
    pairs = 0
    for (local, peer), ca in _ends(a, "connect", processes):
        if not taken.get((peer, local)):
            continue
        cb = taken[(peer, local)].pop(0)     # a client's port used again: the next one
        pairs += 1
        # the connect began before the accept returned; A's first send before B's first
        # receive ended
        los = [ca[0]["ts"] - end_ts(cb[0])]
        send_a = next((e for e in ca if e["op"] == "send"), None)
        recv_b = next((e for e in cb if e["op"] == "recv"), None)
        if send_a is not None and recv_b is not None:
            los.append(send_a["ts"] - end_ts(recv_b))
        lo = max(los)
        low = lo if low is None else max(low, lo)
        # B's first send: A's receive that ended next after it (in A's clock: its first
        # receive after A's own first send)
        send_b = next((e for e in cb if e["op"] == "send"), None)
        if send_b is not None and send_a is not None:
            recv_a = next((e for e in ca if e["op"] == "recv" and end_ts(e) >= send_a["ts"]),
                          None)
            if recv_a is not None:
                hi = end_ts(recv_a) - send_b["ts"]
                high = hi if high is None else min(high, hi)
    return low, high, pairs


def offset(a_events: list, b_events: list, first_guess: int,
           processes: dict | None = None) -> tuple[int, str]:
    """The offset mapping B's clock onto A's, and how it was found (for the model's
    header): from the messages both ways between the two traces, else ``first_guess``
    (the wall clocks') kept within the bounds they give."""
    lo1, hi1, n1 = message_bounds(a_events, b_events, processes)     # A called B
    lo2, hi2, n2 = message_bounds(b_events, a_events, processes)     # B called A: t_B = t_A + d
    los = [x for x in (lo1, None if hi2 is None else -hi2) if x is not None]
    his = [x for x in (hi1, None if lo2 is None else -lo2) if x is not None]
    low, high = (max(los) if los else None), (min(his) if his else None)
    n = n1 + n2
    if low is not None and high is not None:
        if low <= high:
            return (low + high) // 2, (f"{n} connection(s) between them: offset within "
                                       f"+-{(high - low) / 2e6:.3g} ms")
        return first_guess, (f"the messages' bounds contradict each other ({n} connection(s)):"
                             " the wall clocks' offset kept")
    if low is not None or high is not None:
        d = max(first_guess, low) if low is not None else min(first_guess, high)
        return d, f"the wall clocks' offset, bounded one way by {n} connection(s)"
    return first_guess, "the wall clocks' offset (no connection between them)"
