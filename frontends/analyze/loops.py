"""Loops of a runner's body: counted, geometric, or a batch's hand-overs counted at once.

A loop whose every run had the same count (or a count that varies little) is counted,
``loop n_QUEUE times { ... }``, a parameter; one whose counts vary is repeated
geometrically, the same mean.  A counted loop gives every place of its body a color per
pass, so thousands of passes are not counted pass by pass: a batch's hand-overs (N
tasks submitted, N results waited for) are counted at once (:func:`burst`), and any other
loop that long is geometric.
"""
from __future__ import annotations

from qpn.distributions import Det
from qpn.expr import Num, Ref
from qpn.software import ast as sw

from .assumptions import geometric_mean_text
from .fit import fmt_time, number, time_num
from .structure import leaves

#: steps that take no time (a loop of only these must be given some)
INSTANT = (sw.Put, sw.Release, sw.Unlock, sw.Notify)
#: the time given to each pass of such a loop (ns)
INSTANT_NS = 1_000
#: a counted loop of more iterations times leaves than this, whose body only computes and
#: does I/O, is repeated geometrically (the same mean) rather than unfolded
LONG_LOOP = 2_000
#: a loop whose counts vary is counted at their mean when it is at least this and their
#: standard deviation at most this share of it (else: geometric, the same mean)
NARROW_LOOP = (8, 0.25)


def write_loop(w, lp, ctx) -> list:
    """A loop: counted (a parameter) when every run had the same count, geometric
    otherwise."""
    counts = lp.counts
    lvs = leaves(lp.body)
    if lvs:                               # an iteration's first step follows the last one
        ctx.last_site = lvs[-1].token[2]
    body = w.items(lp.body, ctx)
    if not body:
        return []
    if all(isinstance(st, INSTANT) for st in body):
        # items handed over in a burst at one instant (a pool's tasks submitted with
        # one call): the trace saw no time, the language wants some in a loop's body
        body = [sw.Compute(Det(time_num(INSTANT_NS)), w._on("host"),
                           w.names.unique("handover"),
                           doc=f"the loop's hand-overs took no time the trace could see: "
                               f"{fmt_time(INSTANT_NS)} each (a loop must take time)")] + body
    mean = sum(counts) / len(counts)
    sd = (sum((c - mean) ** 2 for c in counts) / len(counts)) ** 0.5
    # a count that varies little (a round's share of tasks taken from a shared queue:
    # 23 to 27) is counted at its mean: a geometric count of the same mean has a spread
    # as large as the mean, and the threads meeting after it would wait for the longest
    narrow = len(set(counts)) > 1 and mean >= NARROW_LOOP[0] and sd <= NARROW_LOOP[1] * mean
    # a counted loop gives every place of its body a color per iteration: thousands of
    # iterations of a body that only computes (a reader's loop over its input) are
    # repeated geometrically instead, the same mean
    # (and so is any loop that long whose hand-overs cannot be counted at once: a
    # consumer's loop over the 60,000 items it takes; the same mean, not a color each)
    long_ = mean * max(1, len(lvs), len(body)) > LONG_LOOP
    if (len(set(counts)) == 1 or narrow) and long_:
        once = burst(w, body, counts[0] if not narrow else round(mean), lp)
        if once is not None:
            return once
    if (len(set(counts)) == 1 or narrow) and not long_:
        n = counts[0] if not narrow else round(mean)
        if n == 1:
            return body
        pname = w.loop_params.get(n)
        if pname is None:
            first = next((lf for lf in leaves(lp.body) if lf.action in ("put", "take")), None)
            base = f"n_{w.obj(first.token[1])}" if first else "n_iterations"
            how = (f"always {n}" if not narrow else
                   f"{min(counts)} to {max(counts)}, mean {mean:.4g}: counted at the mean")
            pname = w.loop_params[n] = w.param(
                base, n, f"iterations of the loop at {loop_site(w, lp)} ({len(counts)} "
                f"run(s) of it, {how})")
        w.info["loops"].append({"runner": ctx.runner.name, "count": n, "param": pname,
                                   "entries": len(counts), "site": loop_site(w, lp)})
        return [sw.Loop(Ref(pname), tuple(body))]
    text = geometric_mean_text(mean)
    w.info["loops"].append({"runner": ctx.runner.name, "count": mean, "param": None,
                               "entries": len(counts), "site": loop_site(w, lp)})
    return [sw.Loop(number(text), tuple(body), geometric=True,
                    doc=f"{len(counts)} runs of this loop, {min(counts)} to {max(counts)} "
                        "iterations" + (" (counted, it would give each place of its body a "
                                        "color per iteration: repeated geometrically, the "
                                        "same mean)" if long_ else ""))]

def burst(w, body: list, n: int, lp) -> list | None:
    """A counted loop of thousands of passes whose body is code and one hand-over (a
    batch's N tasks submitted, its N results waited for) as the code repeated
    geometrically (the same mean) and the hand-over counted at once: ``release (n)``
    of the queue's items, which becomes a semaphore (:func:`counted_queues`), or
    ``acquire (n)``.  Counted pass by pass, every place of the body would carry a
    color per pass (a net of tens of thousands of slots)."""
    ops = [st for st in body if not isinstance(st, sw.Compute) and not (
        isinstance(st, (sw.Lock, sw.Unlock)) and st.target in w.cpus)]
    if n * len(body) <= LONG_LOOP or len(ops) != 1:
        return None
    op = ops[0]
    if isinstance(op, sw.Put) and op.timeout is None and not op.otherwise and \
            not bounded(w, op.target):
        w.counted.add(op.target)
        w.burst_n[op.target] = n
        hand = sw.Release(op.target, Num(n), doc=f"{n} items handed over at once (a "
                          f"batch; the loop at {loop_site(w, lp)} put them one by one)")
    elif isinstance(op, sw.Acquire) and isinstance(op.count, Num) and op.count.value == 1:
        # the completions of a batch this runner handed over: as many as it handed over
        # (a wait the tracer could not see, a result already there, leaves a few out)
        put = w.burst_n.get(done_of(w, op.target))
        note = ""
        if put is not None and put != n and abs(put - n) <= 0.05 * put:
            note = f"; {n} waits traced, as many as the {put} items of its batch"
            n = put
        hand = sw.Acquire(op.target, Num(n), doc=f"{n} permits at once (the loop at "
                          f"{loop_site(w, lp)} took them one by one{note})")
    else:
        return None
    code = [st for st in body if st is not op]
    out = [sw.Loop(number(geometric_mean_text(n)), tuple(code), geometric=True, doc=(
        f"the code of the loop's {n} passes, repeated geometrically (the same mean)"))] \
        if any(isinstance(st, sw.Compute) for st in code) else []
    w.info["loops"].append({"runner": None, "count": n, "param": None, "burst": True,
                               "site": loop_site(w, lp)})
    return out + [hand]

def done_of(w, sem: str) -> str | None:
    """The queue whose tasks' completions the semaphore named ``sem`` counts (futures.py)."""
    for key, name in w.objnames.items():
        if name == sem:
            q = w.an.objects.info(key).get("queue")
            if q is not None:
                return next((n for k, n in w.objnames.items()
                             if isinstance(k, tuple) and k[0] == q), None)
    return None

def bounded(w, queue: str) -> bool:
    """Whether the declared queue named ``queue`` has a capacity."""
    for key, name in w.objnames.items():
        if name == queue:
            return bool(w.an.objects.info(key).get("capacity"))
    return False

def loop_site(w, lp) -> str:
    return w.an.tokens.tokens[lp.header][2] or "?"


__all__ = ["write_loop", "burst", "LONG_LOOP", "NARROW_LOOP"]
