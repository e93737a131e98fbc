"""A thread that serves whichever of its channels is ready: an event loop.

A thread that waits in ``select`` (a selector, ``serve_forever``, a receiver over many
sockets) takes whatever is ready: a new registration, then an answer, then two
answers.  Its iterations follow no fixed sequence, and a body of branches with the
traced frequencies of each sequence takes items at rates of its own, not at the rates
they arrive (in a model, one queue then grows without bound).  What the thread does
is serve events one at a time: one *handler* per channel, each taking its channel's
items as they come and doing what the thread did after such a take (its CPU, the
items it handed on), and one mutex, the thread, that lets one handler run at a time
(``mutex loop_NAME``), as an event loop runs one callback at a time.

A runner is read so when it is one thread that waited in ``select`` and takes from two
or more channels.  A handler's CPU is the CPU its thread used from each take of its
channel to the next take (of any channel); an operation on the way (a put, a release)
is the handler's when it followed at least half of its takes.

>>> fake = [("take", "a", 10), ("put", "x", 5), ("take", "b", 7), ("take", "a", 12),
...         ("put", "x", 4), ("take", "b", 9)]
>>> sorted((k, v["cpu"], v["ops"]) for k, v in after_takes(fake).items())
[('a', [12, 13], [('put', 'x')]), ('b', [12], [])]
"""
from __future__ import annotations

import collections

from qpn.expr import Num
from qpn.software import ast as sw

from .fit import fit
from .structure import leaves

#: a following operation is part of a handler when it followed this share of its takes
FOLLOWS = 0.5


def is_event_loop(r, select_tids) -> bool:
    """One thread, in steady state, that waited in ``select`` and takes from two or more
    channels."""
    if r.mode != "forever" or len(r.group.tids) != 1 or r.group.tids[0] not in select_tids:
        return False
    keys = {lf.token[1] for lf in leaves(r.items) if lf.action == "take"}
    return len(keys) >= 2


def after_takes(seq) -> dict:
    """Per channel key: the CPU from each of its takes to the next take (the fragments
    of the steps up to and including that take's own), and the operations that followed
    at least :data:`FOLLOWS` of its takes.  ``seq``: (action, key, fragment CPU) in the
    thread's order."""
    out: dict = {}
    cur, acc, ops_seen = None, 0, set()
    counts: dict = collections.defaultdict(collections.Counter)
    takes: collections.Counter = collections.Counter()
    for action, key, cpu in seq:
        if cur is not None:
            acc += cpu or 0
        if action == "take":
            if cur is not None:
                out.setdefault(cur, {"cpu": [], "ops": []})["cpu"].append(acc)
                counts[cur].update(ops_seen)
            cur, acc, ops_seen = key, 0, set()
            takes[key] += 1
        elif cur is not None and action in ("put", "release"):
            ops_seen.add((action, key))
    for key, d in out.items():
        d["ops"] = sorted(op for op, n in counts[key].items() if n >= FOLLOWS * takes[key])
    for key in takes:
        out.setdefault(key, {"cpu": [], "ops": []})
    return out


def handlers(w, r) -> list:
    """The pools of event-loop runner ``r``: a handler per channel and the loop's mutex
    (declared); ``w.handlers[r.name]`` maps each channel's key to its pool."""
    steps = [s for it in r.walks for s in it]
    seq = [(s.action, s.key, s.cpu) for s in steps]
    by_key = after_takes(seq)
    loop = w.names.unique(f"loop_{r.name}")
    w.decls[("loop", r.name)] = (len(w.decls), sw.Mutex(loop, doc=(
        f"thread '{r.name}' waits in select for whichever of its channels is ready and serves "
        "one event at a time:\nits handlers (pools named after it) hold this mutex while "
        "they run (eventloop.py)")))
    lvs = leaves(r.items)
    cpu_tot = sum(s.cpu or 0 for lf in lvs for s in lf.steps)
    share = (sum((s.cpu or 0) * w.an.shares.get(id(lf), 0.0) for lf in lvs for s in lf.steps)
             / cpu_tot) if cpu_tot and w.an.gil else 0.0
    out = []
    w.handlers[r.name] = {}
    for key, d in by_key.items():
        q = w.obj(key)
        name = w.names.unique(f"{r.name}_{q}")
        body: list = [sw.Take(q), sw.Lock(loop)]
        xs = [x for x in d["cpu"] if x is not None]
        if xs and sum(xs) > 0:
            f = fit(xs)
            sp = w.param(f"speedup_{name}", 1, None)
            body += w.split(f, share, sp, None, name + "_cpu")
            cpu_note = f"{f.describe()} of CPU from each take to the next"
        else:
            cpu_note = "no CPU measured"
        for action, k in d["ops"]:
            body.append((sw.Put if action == "put" else sw.Release)(w.obj(k)))
        body.append(sw.Unlock(loop))
        pool = sw.Pool(name, Num(1), tuple(body), doc=(
            f"events of '{q}' served by thread '{r.name}' ({', '.join(r.group.thread_names)}"
            f"), an event loop: {len(d['cpu'])} of them; {cpu_note}"))
        w.handlers[r.name][key] = pool
        out.append(pool)
    w.info["runners"][r.name] = {
        "mode": r.mode, "size": 1, "size_param": None, "threads": list(r.group.tids),
        "thread_names": list(r.group.thread_names), "cycle": "one event",
        "iterations": r.iterations, "exits": r.exits, "event_loop": [p.name for p in out]}
    return out


__all__ = ["is_event_loop", "after_takes", "handlers"]
