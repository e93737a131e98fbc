"""Synchronization objects made per request: one kind of object, not shared mutexes.

A server that makes a lock (or a condition) per connection or per request
creates many objects at one code site while it works; waitress makes a lock,
an RLock and a condition per connection (channel.py).  Taken one by one, every
request's lock is another object: every iteration of a worker then has other
tokens, no two iterations look alike, the loop's work is pruned as tiny
fragments, and identical workers become separate pools.

Such an object only contends within its instance (one connection, one
request), between the few threads that share that instance, never across
requests.  The model therefore does not make it a shared mutex: its
operations fold, so the code run while holding it stays CPU of the fragment
around it, and the time threads waited for it (within one instance) is
reported in the model's header rather than modelled.

A site is *per instance* when it created at least :data:`MIN_CREATED` objects
of a synchronization type during the work phase (or during the whole trace
when there is no work phase).  Objects made once at start-up -- also an array
of lock stripes, made before the work -- stay shared objects.

Objects made *one per thread* are the same thing with threads for requests:
each thread makes its own (numpy's ``default_rng`` has a lock per generator, a
worker its own connection with a lock) and no other thread touches it.  Taken
one by one, two identical workers use different locks and become two pools of
one thread.  A site is *per thread* when at least two of the objects it made
were used, each by one thread only and each by a different one; such objects
fold as well.  An object that one thread alone happened to use, while its site
made only that one, stays a shared object: another configuration may share it.

>>> from qpn.frontends.analyze.objects import ObjectTable
>>> evs = [{"kind": "object", "tid": 1, "ts": t, "obj": 100 + t, "type": "lock", "site": "c.py:65"}
...        for t in (10, 20, 30)] + [{"kind": "object", "tid": 1, "ts": 0, "obj": 7,
...                                   "type": "lock", "site": "m.py:3"}]
>>> found = per_instance_sites(ObjectTable(evs), (5, 40))
>>> sorted(found), len(found["c.py:65"]["keys"])
(['c.py:65'], 3)
"""
from __future__ import annotations

import collections

from .fit import fmt_time
from .objects import ObjectTable
from .steps import fold

#: objects made at one site during the work phase that make the site per-instance
MIN_CREATED = 3
#: object types that are synchronization (per-request queues are hand-overs: kept)
SYNC_TYPES = ("lock", "rlock", "monitor", "cond", "sem", "bsem", "rwlock")
#: step actions on synchronization objects
SYNC_ACTIONS = frozenset({"lock", "unlock", "wait", "notify", "notify_all", "acquire", "release"})


def per_instance_sites(objects: ObjectTable, phase: tuple | None) -> dict:
    """site -> {"type", "created", "keys"} of the sites that make objects per instance."""
    lo, hi = phase if phase is not None else (float("-inf"), float("inf"))
    by_site: dict = collections.defaultdict(list)
    for key in objects.by_type(*SYNC_TYPES):
        ev = objects.info(key)
        if ev.get("site"):
            by_site[(ev["site"], ev["type"])].append((ev["ts"], key))
    out: dict = {}
    for (site, typ), made in by_site.items():
        inside = sum(1 for ts, _ in made if lo <= ts <= hi)
        if inside >= MIN_CREATED:
            d = out.setdefault(site, {"types": {}, "keys": set()})
            d["types"][typ] = len(made)
            d["keys"].update(k for _, k in made)
    return out


def per_thread_sites(objects: ObjectTable, walks: dict, skip: dict = ()) -> dict:
    """site -> {"types", "keys"} of the sites (not in ``skip``) whose objects each belong to
    one thread: every object made there that was used, was used by one thread only, no two
    by the same thread, and at least two were used.

    >>> from qpn.frontends.analyze.steps import Step
    >>> evs = [{"kind": "object", "tid": 1, "ts": t, "obj": o, "type": "lock", "site": "r.py:9"}
    ...        for t, o in ((1, 50), (2, 60))]
    >>> def lock(tid, obj, ts):
    ...     return Step(tid, "lock", (obj, 1), "r.py:12", {"ts": ts}, ts, 1, 1, 0, 0)
    >>> walks = {2: [lock(2, 50, 10), lock(2, 50, 20)], 3: [lock(3, 60, 15)]}
    >>> found = per_thread_sites(ObjectTable(evs), walks)
    >>> found["r.py:9"]["types"], sorted(found["r.py:9"]["keys"])
    ({'lock': 2}, [(50, 1), (60, 1)])
    >>> walks[3].append(lock(3, 50, 30))         # thread 3 takes thread 2's lock too
    >>> per_thread_sites(ObjectTable(evs), walks)
    {}
    """
    by_site: dict = collections.defaultdict(list)
    for key in objects.by_type(*SYNC_TYPES):
        ev = objects.info(key)
        if ev.get("site") and ev["site"] not in skip:
            by_site[(ev["site"], ev["type"])].append(key)
    by_site = {k: keys for k, keys in by_site.items() if len(keys) >= 2}
    if not by_site:                    # the common case: no pass over the steps
        return {}
    candidates = {k for keys in by_site.values() for k in keys}
    users: dict = collections.defaultdict(set)
    for tid, w in walks.items():
        for st in w:
            if st.key in candidates and st.action in SYNC_ACTIONS:
                users[st.key].add(tid)
    out: dict = {}
    for (site, typ), keys in by_site.items():
        used = [users[k] for k in keys if users.get(k)]
        owners = [next(iter(u)) for u in used if len(u) == 1]
        if len(used) >= 2 and len(owners) == len(used) and len(set(owners)) == len(owners):
            d = out.setdefault(site, {"types": {}, "keys": set()})
            d["types"][typ] = len(keys)
            d["keys"].update(keys)
    return out


def fold_per_instance(walks: dict, sites: dict, per_thread: dict | None = None) -> tuple[dict, list[str]]:
    """(walks with the per-instance (and per-thread) objects' steps folded, header lines
    saying so)."""
    per_thread = per_thread or {}
    lines = _fold_notes(walks, sites, "Objects made per request (many at one site while working) "
                        "contend only within their instance")
    lines += _fold_notes(walks, per_thread, "Objects made one per thread (each used by its own "
                         "thread only) never contend")
    both = {**sites, **per_thread}
    if not both:
        return walks, []
    site_of = {k: s for s, d in both.items() for k in d["keys"]}
    out = {}
    for tid, w in walks.items():
        hit = any(s.action in SYNC_ACTIONS and s.key in site_of for s in w)
        out[tid] = fold(w, lambda s: not (s.action in SYNC_ACTIONS and s.key in site_of),
                        discard_leading=False, in_place=True) if hit else w
    return out, lines


def _fold_notes(walks: dict, sites: dict, why: str) -> list[str]:
    """The header lines of folded sites: what was made there and how it was used."""
    if not sites:
        return []
    site_of = {k: s for s, d in sites.items() for k in d["keys"]}
    stats: dict = {s: {"locks": 0, "contended": 0, "waited": 0, "waits": 0} for s in sites}
    for w in walks.values():
        for s in w:
            if s.action in SYNC_ACTIONS and s.key in site_of:
                st = stats[site_of[s.key]]
                if s.action == "lock":
                    st["locks"] += 1
                    if s.blocked:
                        st["contended"] += 1
                        st["waited"] += s.blocked
                elif s.action == "wait":
                    st["waits"] += 1
                    st["waited"] += s.blocked
    lines = [f"# {why}: not modelled as shared objects; code run while holding them stays CPU "
             "of the fragment around it:"]
    for site in sorted(sites):
        d, st = sites[site], stats[site]
        made = ", ".join(f"{n} {t}" for t, n in sorted(d["types"].items()))
        what = f"{st['locks']} acquisitions, {st['contended']} contended"
        if st["waits"]:
            what += f", {st['waits']} condition waits"
        if st["waited"]:
            what += f", {fmt_time(st['waited'])} waited in all (not modelled)"
        lines.append(f"#   {site}: {made} made; {what} in all")
    return lines


__all__ = ["per_instance_sites", "per_thread_sites", "fold_per_instance", "MIN_CREATED"]
