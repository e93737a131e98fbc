"""One firing that puts several tokens into one queue store must find room for all of them.

The classes of a FCFS queue with exponential service share one ring (in arrival order),
and the classes of a per-token ("work") queue one table; a mode with arcs into two such
classes (two colors of one place, or two places on one shared queue) once had each arc's
room checked alone.  With the store one short, the second token overwrote the token in
service: from then on the queue's counts and its store disagreed, and a token stayed in
the queue for ever (found in SPECjms2007, QPME's regression model RT4: one replication in
fifteen had a stuck token in the shared FCFS queue MOM_Disk).  Here the store starts full
but for one position, and the firing puts two tokens in.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import qpn
from qpn.solvers.des.events import EventEngine
from qpn.solvers.des.jit.layout import region
from qpn.solvers.des.lanes import build_lanes

OWN = """place cpu : c
    queue fcfs
    service a: {s}, b: {s}
    init 7 a
transition go : think(a), think(b) -> cpu(a), cpu(b)
transition back {{
    mode ma : cpu(a) -> think(a)
    mode mb : cpu(b) -> think(b)
}}"""
SHARED = """shared queue disk : fcfs
place pa
    on disk
    service {s}
    init 7
place pb
    on disk
    service {s}
transition go : think(a), think(b) -> pa, pb
transition back_a : pa -> think(a)
transition back_b : pb -> think(b)"""
HEAD = """net burst
colors c = {a, b}
place think : c
    queue is
    service a: exp(0.01), b: exp(0.01)
    init 1 a, 1 b
"""


def _queue_contents(e: EventEngine) -> tuple[Counter, Counter]:
    """(tokens per queue slot by the marking, by the queue's store) in lane 0."""
    f = e.flat
    m = region(e.si, e.where, "m")[0]
    marking, stored = Counter(), Counter()
    for q in range(f.nqueues):
        k0, k1 = int(f.q_kptr[q]), int(f.q_kptr[q + 1])
        for kg in range(k0, k1):
            marking[int(f.cls_qslot[kg])] += int(m[f.cls_qslot[kg]])
        base = int(f.q_store[q])
        if f.q_kind[q] == 3:                       # work table: compact, first wn entries
            n = int(region(e.si, e.where, "wn")[0][base])
            off = int(e.sizes.stores["w_off"][base])
            classes = region(e.si, e.where, "wcls")[0][off:off + n]
        else:
            rings = [base] if f.q_kind[q] == 2 else [base + k for k in range(k1 - k0)]
            classes = []
            for r in rings:
                n, h = int(region(e.si, e.where, "rn")[0][r]), int(region(e.si, e.where, "rh")[0][r])
                off, cap = int(e.sizes.stores["r_off"][r]), int(e.sizes.stores["r_cap"][r])
                pos = off + (h + np.arange(n)) % cap
                ring_classes = region(e.si, e.where, "rc")[0][pos]
                classes.extend(ring_classes if f.q_kind[q] == 2 else [k0 + r - base] * n)
        for kg in classes:
            stored[int(f.cls_qslot[int(kg)])] += 1
    return marking, stored


@pytest.mark.parametrize("body", [OWN, SHARED], ids=["two-colors", "shared-queue"])
@pytest.mark.parametrize("service", ["exp(100)", "det(100)"], ids=["fcfs-ring", "work-table"])
def test_a_firing_into_one_store_grows_it_for_all_its_tokens(body, service):
    c = qpn.compile_net(qpn.parse(HEAD + body.format(s=service), "burst.qpn"))
    e = EventEngine(build_lanes([c], 1), [0], seed=1, threads=1)
    e.start()
    for steps in range(1, 41):
        e.advance(steps, float("inf"))
        marking, stored = _queue_contents(e)
        assert marking == stored, f"after {steps} steps the queue holds {dict(stored)}, the marking says {dict(marking)}"


def test_a_firing_into_two_colors_of_a_fifo_place_grows_its_order_ring_for_both():
    """A place that offers one token at a time keeps all its colors' waiting tokens in one
    order ring: 8 there (one offered, 7 waiting in a ring of 8), one firing adds an a and a b."""
    text = HEAD + """place line : c
    departure fifo
    init 8 a
place gate
transition go : think(a), think(b) -> line(a), line(b)
transition pass {
    mode ma : line(a), gate -> think(a)
    mode mb : line(b), gate -> think(b)
}
"""
    c = qpn.compile_net(qpn.parse(text, "line.qpn"))
    e = EventEngine(build_lanes([c], 1), [0], seed=1, threads=1)
    e.start()
    e.advance(5, float("inf"))
    f = e.flat
    r = int(f.ord_ring[0])
    waiting = int(region(e.si, e.where, "rn")[0][r])
    m = region(e.si, e.where, "m")[0]
    line = [s for s in range(f.nslots) if f.slot_ord[s] >= 0]
    held = sum(int(m[s]) for s in line)
    offered = sum(int(m[v]) for v in f.slot_ord[line])
    assert (held, offered, waiting) == (10, 1, 9)        # every token kept: 1 offered, 9 in order
    assert int(e.sizes.stores["r_cap"][r]) >= 9
