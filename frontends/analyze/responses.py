"""The response time of each open workload, timed in the model from arrival to answer.

A request of an open workload enters at its source's queue and is handed from thread to
thread: taken from a queue, put into the next (a connection, a reply), or released to
a thread that acquires it (a future's completion).  The hand-overs after each take in a
runner's body are the ways on; a take after which its runner hands nothing on ends the
request there.  Of those ends, the one the most hand-overs lead to is the request's (a
client that registers a request with its receiver and sends it to the server: the
answer's receipt ends it, not the registration).

The model times it with a ``timer``: started in the source before its put, stopped right
after the take that ends the request, or, where that take begins its runner's
iteration (a worker that takes a request and then serves it), at the end of the
iteration, the body turned to begin with the take.  The trace's mean response over the
same span is the sum of the ends less the sum of the arrivals over the requests of the
work phase (:func:`mean_response`: the pairing of ends with arrivals does not change the
sum; an arrival no end answers is left out).
"""
from __future__ import annotations

from dataclasses import replace

from qpn.software import ast as sw

from .objects import kind_of
from .reproduce import walk_steps
from .structure import Leaf, leaves

#: fewer requests than this in the trace give no traced response time
MIN_REQUESTS = 10
#: a hand-over done by fewer than this share of a take's executions is no way on
MIN_SHARE = 0.2
#: a take that ends requests must have taken this share of the arrivals (or the timer
#: would fill up or run dry)
MIN_ENDS = 0.8


def mean_response(arrivals: list, ends: list) -> float | None:
    """Mean time from arrival to end, each end paired with an arrival before it.

    Sorted, the k-th end answers one of the first k arrivals or later ones; with
    as many of each the sum of the ends less the sum of the arrivals is the mean
    whatever the pairing.  An arrival more than ends (a readiness probe's empty
    read before the load, a request still open when the trace stopped) is left
    out where the data allow: each end, from the last, takes the latest arrival
    before it that leaves one for every earlier end, so an arrival after the last
    end and one that no end needs stay unpaired.  Where no such pairing exists
    (ends before their arrivals: two clocks), the first ``min(len)`` of each.

    >>> round(mean_response([0, 10, 20], [5, 18, 31]) or 0, 3)
    8.0
    >>> round(mean_response([-120, 0, 10, 20], [5, 18, 31]), 3)   # a probe before the load
    8.0
    >>> round(mean_response([0, 10, 20, 30], [5, 18, 25]), 3)      # one still open at the end
    6.0
    """
    m = min(len(arrivals), len(ends))
    if m == 0:
        return None
    a, e = sorted(arrivals), sorted(ends)[:m]
    chosen, i = [], len(a) - 1
    for j in range(m - 1, -1, -1):
        while i > j and a[i] > e[j]:
            i -= 1                      # answered by no end from here on: unpaired
        if a[i] > e[j]:
            chosen = None
            break
        chosen.append(a[i])
        i -= 1
    if chosen is None:
        chosen = a[:m]
    return (sum(e) - sum(chosen)) / m


def _channels(runners, objects) -> tuple[dict, dict]:
    """Where a request can go on: queue key -> [(runner, leaf index)] of its takes, and
    semaphore key -> acquirers in other runners than its releasers (a hand-over)."""
    takes: dict = {}
    rel: dict = {}
    acq: dict = {}
    for r in runners:
        for i, lf in enumerate(leaves(r.items)):
            a, key = lf.action, lf.token[1]
            if a == "take":
                takes.setdefault(key, []).append((r, i))
            elif a in ("acquire", "release") and kind_of(objects.type(key, "sem")) == "semaphore":
                (acq if a == "acquire" else rel).setdefault(key, []).append((r, i))
    handed = {}
    for key, places in acq.items():
        givers = {id(r) for r, _ in rel.get(key, ())}
        ways = [(r, i) for r, i in places if id(r) not in givers]
        if givers and ways:
            handed[key] = ways
    return takes, handed


def request_end(runners, objects, key) -> tuple | None:
    """(runner, leaf index, hops) of the take that ends the requests entering at queue
    ``key``: the end the most hand-overs lead to; None if nothing takes from it."""
    takes, handed = _channels(runners, objects)
    seen: set = set()
    frontier = [(r, i, 1) for r, i in takes.get(key, ())]
    best = None
    while frontier:
        nxt = []
        for r, i, hops in frontier:
            if (id(r), i) in seen:
                continue
            seen.add((id(r), i))
            lvs = leaves(r.items)
            ways = []
            entries = max(1, len(lvs[i].steps))
            # what the runner does after the take, until its next take: a body written from
            # the loop's header may hand the request on before the take (its code comes
            # first in the text, after it in time): the loop goes round
            after = lvs[i + 1:] + (lvs[:i] if r.mode == "forever" else [])
            for lf in after:
                if lf.action == "take":
                    break
                if len(lf.steps) < MIN_SHARE * entries:
                    continue                 # a rare path (a connection made once per thread)
                if lf.action == "put":
                    ways += takes.get(lf.token[1], [])
                elif lf.action == "release":
                    ways += handed.get(lf.token[1], [])
            ways = [(r2, j) for r2, j in ways if (id(r2), j) not in seen]
            if not ways:
                if best is None or hops > best[2]:
                    best = (r, i, hops)
            nxt += [(r2, j, hops + 1) for r2, j in ways]
        frontier = nxt
    return best


def _insert_after(steps: tuple, target, new) -> tuple | None:
    """``steps`` with ``new`` right after the step ``target`` (searched in nested
    blocks); None if it is not there."""
    out = []
    found = False
    for st in steps:
        if found:
            out.append(st)
            continue
        if st is target:
            out += [st, new]
            found = True
            continue
        sub = _in_children(st, target, new)
        if sub is not None:
            out.append(sub)
            found = True
        else:
            out.append(st)
    return tuple(out) if found else None


def _insert_before(steps: tuple, target, new) -> tuple:
    """``steps`` with ``new`` right before the step ``target`` (at the top level or in
    nested blocks)."""
    out = []
    for st in steps:
        if st is target:
            out += [new, st]
            continue
        sub = None
        if isinstance(st, sw.Branch):
            alts = [replace(a, body=_insert_before(a.body, target, new)) for a in st.alternatives]
            sub = replace(st, alternatives=tuple(alts))
        elif isinstance(getattr(st, "body", None), tuple):
            sub = replace(st, body=_insert_before(st.body, target, new))
        out.append(sub if sub is not None else st)
    return tuple(out)


def _in_children(st, target, new):
    """``st`` rebuilt with ``new`` after ``target`` in its nested body, or None."""
    if isinstance(st, sw.Branch):
        alts = list(st.alternatives)
        for k, alt in enumerate(alts):
            body = _insert_after(alt.body, target, new)
            if body is not None:
                alts[k] = replace(alt, body=body)
                return replace(st, alternatives=tuple(alts))
        return None
    body = getattr(st, "body", None)
    if isinstance(body, tuple):
        nb = _insert_after(body, target, new)
        if nb is not None:
            return replace(st, body=nb)
    return None


def response_timers(w, body: list) -> list:
    """The runners' declarations ``body`` (from :meth:`Writer.runners`) with a response
    timer for each source whose requests end in a take of a modelled runner; the timers
    are declared, and ``w.info["timers"]`` says where each stops and what the trace
    measured."""
    an = w.an
    live = [r for r in an.runners if r.mode != "omitted" and (r.name in w.pools or r.name in w.handlers)]
    sources = [d for d in body if isinstance(d, sw.Source)]
    out = list(body)
    w.info.setdefault("timers", {})
    for src in sources:
        put = next((st for st in src.body if isinstance(st, sw.Put)), None)
        key = next((k for k, n in w.objnames.items() if put is not None and n == put.target), None)
        if key is None:
            continue
        arrivals = w.arrivals.get(put.target, [])
        relay = w.relays.get(key)
        hand = None
        if relay is not None and relay[0] in w.pools and relay[1] in w.objnames:
            # a client that keeps the schedule and works for each request: a request
            # starts when the client hands it over (where it would stamp it), not at the
            # planned instant
            client, key, arrivals = relay
            hand = next((st for st in walk_steps(w.pools[client][0].body)
                         if isinstance(st, sw.Put) and st.target == w.objnames[key]), None)
            if hand is None:
                continue
        end = request_end(live, an.objects, key)
        if end is None:
            continue
        r, i, hops = end
        lf = leaves(r.items)[i]
        if arrivals and not MIN_ENDS <= len(lf.steps) / len(arrivals) <= 1 / MIN_ENDS:
            w.info["timers_skipped"] = w.info.get("timers_skipped", []) + [
                f"source '{src.name}': its {len(arrivals)} arrivals end in {len(lf.steps)} "
                f"takes at {lf.token[2]}: no response timer"]
            continue
        name = w.names.unique("response" if len(sources) == 1 else f"response_{put.target}")
        stop = sw.TimerStep(name, "stop")
        handler = w.handlers.get(r.name, {}).get(lf.token[1])
        if handler is not None:            # an event loop's handler: it takes, then serves
            pool = handler
            new_body = pool.body + (stop,)
            ends = sorted(s.end for s in lf.steps)
            where = f"at the end of the handling by '{pool.name}' (event loop '{r.name}')"
            mine, top = [], None
        else:
            pool, _ = w.pools[r.name]
            mine = [st for st in walk_steps(pool.body) if w.origin.get(id(st)) is lf]
            top = bool(mine) and pool.body[:len(mine)] == tuple(mine) and r.mode == "forever" \
                and isinstance(r.items[0], Leaf) and r.items[0] is lf
        if top is None:
            pass
        elif top:               # the take begins the iteration: serve, then stop; turn the body
            op, frag = mine[-1], mine[:-1]
            new_body = (op,) + pool.body[len(mine):] + tuple(frag) + (stop,)
            # a request ends where its thread's next take begins (each thread's first take
            # ends nothing)
            per: dict = {}
            for s_ in lf.steps:
                per.setdefault(s_.tid, []).append(s_.ts)
            ends = sorted(t for ts in per.values() for t in sorted(ts)[1:])
            where = f"at the end of an iteration of '{r.name}' (which takes it first)"
        else:
            op = next((st for st in reversed(mine)), None)
            new_body = _insert_after(pool.body, op, stop) if op is not None else None
            ends = sorted(s.end for s in lf.steps)
            where = f"when '{r.name}' takes it ({lf.action} at {lf.token[2]})"
        if new_body is None:
            continue
        new_pool = replace(pool, body=new_body)
        out[out.index(pool)] = new_pool
        if handler is not None:
            w.handlers[r.name][lf.token[1]] = new_pool
        else:
            w.pools[r.name] = (new_pool, r)
        traced = mean_response(arrivals, ends) if min(len(arrivals), len(ends)) >= \
            MIN_REQUESTS else None
        if hand is None:
            new_src = replace(src, body=(sw.TimerStep(name, "start"),) + tuple(src.body))
            out[out.index(src)] = new_src
        else:
            cpool, cr = w.pools[relay[0]]
            started = replace(cpool, body=_insert_before(cpool.body, hand,
                                                         sw.TimerStep(name, "start")))
            out[out.index(cpool)] = started
            w.pools[relay[0]] = (started, cr)
            where += f"; from the hand-over by '{relay[0]}', which takes the planned requests"
        w.decls[("timer", name)] = (len(w.decls), sw.Timer(name, doc=(
            f"response time of the requests of source '{src.name}': from the arrival to the "
            f"end of the request, {where}, {hops} hand-over(s) on; `residence "
            f"{name}.running` is its mean")))
        w.info["timers"][name] = {"source": src.name, "runner": r.name, "hops": hops,
                                  "trace_ns": traced, "where": where}
    return out


__all__ = ["response_timers", "request_end", "mean_response"]
