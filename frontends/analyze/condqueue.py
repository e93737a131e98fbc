"""A hand-over through a condition variable and a plain container, as a semaphore.

The hand-written producer / consumer (waitress' task dispatcher, and many more)::

    with lock:                      # producer          with lock:          # each worker
        items.append(x)                                     while not items:
        cond.notify()                                           cond.wait()
                                                            x = items.popleft()

leaves no ``put``/``get`` in the trace (the container is a deque or a list):
only the lock, the waits and the notifies.  Read literally, the workers
``lock; wait; unlock`` with nobody to wake them in the model, and the
producer's notify is lost.  What the code does is a counting semaphore: each
notify announces one item, each pass of a worker through its ``with lock:``
block takes one, whether or not it had to wait.  So, before the analysis, for
every condition whose counts say so (:func:`cond_queues`):

* a semaphore with no permits is declared (``NAME_items``, NAME the condition's);
* the producer's notify becomes a release of one permit, and the lock block
  around it folds (only the producer is left using it for the hand-over);
* each block of a waiter at a site where it waited on the condition becomes
  one acquisition, timed as the block's waits were (no wait: no blocking).

The counts decide: as many single notifies as waiter blocks (give or take
the waiters' last, unfinished blocks and a tenth).  A condition used
otherwise -- ``notify_all`` rounds (barrier-like), a state flag set once,
waits with a timeout in a polling loop -- does not pass and is left alone.

>>> evs = {1: [], 2: []}
>>> for i in range(4):                         # producer: with lock: append; notify
...     t = 100 * i + 10
...     evs[1] += [{"kind": "acquire", "tid": 1, "ts": t, "obj": 5, "site": "p.py:9"},
...                {"kind": "notify", "tid": 1, "ts": t + 1, "obj": 6, "on": "cond", "site": "p.py:10"},
...                {"kind": "release", "tid": 1, "ts": t + 2, "obj": 5, "site": "p.py:9"}]
...     w = 100 * i                              # worker: with lock: while not q: wait
...     evs[2] += [{"kind": "acquire", "tid": 2, "ts": w, "obj": 5, "site": "w.py:3"},
...                {"kind": "wait", "tid": 2, "ts": w + 1, "obj": 6, "on": "cond", "dur": 10,
...                 "site": "w.py:4"},
...                {"kind": "release", "tid": 2, "ts": w + 2, "obj": 5, "site": "w.py:4"},
...                {"kind": "acquire", "tid": 2, "ts": w + 9, "obj": 5, "site": "w.py:4"},
...                {"kind": "release", "tid": 2, "ts": w + 12, "obj": 5, "site": "w.py:3"}]
>>> objs = [{"kind": "object", "tid": 1, "ts": 0, "obj": 5, "type": "lock", "site": "p.py:1"},
...         {"kind": "object", "tid": 1, "ts": 0, "obj": 6, "type": "cond", "lock": 5, "site": "p.py:2"}]
>>> by, new, found = cond_queues(evs, objs)
>>> [(e["kind"], e["ts"], e.get("dur")) for e in by[2][:2]], [e["kind"] for e in by[1][:2]]
([('acquire', 0, 11), ('acquire', 100, 11)], ['release', 'release'])
>>> new[0]["type"], new[0]["name_suffix"], found[0]["notifies"], found[0]["blocks"]
('sem', '_items', 4, 3)

(The worker's last pass is followed by nothing: it took no item, it leaves the trace.)
"""
from __future__ import annotations

from operator import itemgetter

from .futures import SYNTHETIC
from .objects import ObjectTable

#: synthetic ids of the items semaphores: above the futures' ones
ITEMS_BASE = SYNTHETIC + (1 << 40)
_TS = itemgetter("ts")


def _blocks(evs: list, key, conds_of_lock: dict) -> tuple[list, list]:
    """(blocks, notifies) of one thread.

    A block is the thread's outermost hold of a condition's lock: a dict with
    the entry acquire's index, its release's index (None: still held at the
    end), the waits on each condition inside and the events nested in them.
    A notify is (index, condition key, all?, index of the enclosing block)."""
    blocks, notifies = [], []
    depth: dict = {}                    # lock key -> depth
    open_: dict = {}                    # lock key -> block being built
    wait_end = -1
    for i, e in enumerate(evs):
        k = e["kind"]
        if e["ts"] < wait_end:          # inside a wait: the lock's release and re-acquisition
            for b in open_.values():
                b["nested"].append(i)
            continue
        if k in ("acquire", "release") and "obj" in e and e.get("ok", True) is not False:
            lk = key(e["obj"], e["ts"])
            if lk not in conds_of_lock:
                continue
            d = depth.get(lk, 0)
            if k == "acquire":
                depth[lk] = d + 1
                if d == 0:
                    open_[lk] = {"lock": lk, "entry": i, "exit": None, "waits": [],
                                 "nested": [], "tid": e["tid"]}
            elif d > 0:
                depth[lk] = d - 1
                if d == 1:
                    b = open_.pop(lk)
                    b["exit"] = i
                    blocks.append(b)
        elif k == "wait" and e.get("on") == "cond" and "obj" in e:
            ck = key(e["obj"], e["ts"])
            b = next((b for b in open_.values() if ck in conds_of_lock[b["lock"]]), None)
            if b is not None:
                b["waits"].append((i, ck))
            wait_end = e["ts"] + e.get("dur", 0)
        elif k == "notify" and e.get("on", "cond") == "cond" and "obj" in e:
            ck = key(e["obj"], e["ts"])
            b = next((b for b in open_.values() if ck in conds_of_lock[b["lock"]]), None)
            notifies.append((i, ck, bool(e.get("all")), b))
    blocks.extend(open_.values())       # still held at the end (blocked in a wait)
    return blocks, notifies


def cond_queues(by: dict, objects: list) -> tuple[dict, list, list]:
    """(events by thread rewritten, the semaphores to declare, what was found).

    ``by``: tid -> events sorted by ts (not changed: threads that change get new
    lists); ``objects``: the trace's ``object`` events.  Each found hand-over is
    a dict: condition key, its site, notifies, blocks, waiter threads, notifier
    threads, semaphore id."""
    table = ObjectTable(objects)
    conds_of_lock: dict = {}
    for ck in table.by_type("cond"):
        info = table.info(ck)
        if info.get("lock") is not None:
            conds_of_lock.setdefault(table.key(info["lock"], info["ts"]), set()).add(ck)
    if not conds_of_lock:
        return by, [], []
    per = {}
    for tid, evs in by.items():
        if any(e["kind"] == "wait" and e.get("on") == "cond" or e["kind"] == "notify"
               for e in evs):
            per[tid] = _blocks(evs, table.key, conds_of_lock)
    found = []
    plan: dict = {}                     # tid -> [(block or notify, sem id)]
    for ck in {ck for _, (bl, no) in per.items() for b in bl for _, ck in b["waits"]}:
        lk = table.key(table.info(ck)["lock"], table.info(ck)["ts"])
        # waiter sites: where a thread's block on the lock waited on this condition
        sites = {(tid, by[tid][b["entry"]].get("site")) for tid, (bl, _) in per.items()
                 for b in bl if any(c == ck for _, c in b["waits"])}
        blocks = [(tid, b) for tid, (bl, _) in per.items() for b in bl
                  if b["lock"] == lk and (tid, by[tid][b["entry"]].get("site")) in sites]
        # a waiter's last pass after which it did nothing took no item: it was left blocked
        # when the program stopped, or it left the loop (a stop flag)
        last = {}
        for tid, b in blocks:
            last[tid] = b if tid not in last or b["entry"] > last[tid]["entry"] else last[tid]
        idle = []
        for tid, b in last.items():
            after = by[tid][(b["exit"] if b["exit"] is not None else b["entry"]) + 1:]
            if all(e["kind"] == "thread_end" for e in after):
                b["idle"] = True
                idle.append(b)
        blocks = [(tid, b) for tid, b in blocks if not b.get("idle")]
        ones = [(tid, n) for tid, (_, no) in per.items() for n in no if n[1] == ck and not n[2]]
        alls = sum(1 for _, (_, no) in per.items() for n in no if n[1] == ck and n[2])
        waiters = {tid for tid, _ in sites}
        notifiers = {tid for tid, _ in ones}
        # one item per single notify, one per waiter block; the waiters' last blocks may be
        # unfinished (blocked when the program stopped), and a few notify_all (shut-down)
        # are not rounds
        n, m = len(ones), len(blocks)
        batch = None
        if n < 3 or alls > max(2, 0.1 * n) or notifiers == waiters or \
                abs(n - m) > len(waiters) + max(2, 0.1 * n):
            batch = _batches(by, per, ck, ones, m, waiters)
            if batch is None:
                for b in idle:
                    b.pop("idle")
                continue
        sem = ITEMS_BASE + len(found)
        found.append({"cond": ck, "site": table.info(ck).get("site"), "notifies": n,
                      "blocks": m, "waiters": sorted(waiters), "notifiers": sorted(notifiers),
                      "sem": sem, "lock": lk, "batch": batch and batch[0],
                      "items": batch[2] if batch else n})
        for tid, b in blocks:
            plan.setdefault(tid, []).append(("block", b, sem))
        for b in idle:
            plan.setdefault(b["tid"], []).append(("idle", b, sem))
        if batch is None:
            for tid, nt in ones:
                plan.setdefault(tid, []).append(("notify", nt, sem))
        else:
            for tid, b in batch[1]:
                plan.setdefault(tid, []).append(("item", b, sem))
    if not found:
        return by, [], []
    first = min((evs[0]["ts"] for evs in by.values() if evs), default=0)
    new_objects = [{"kind": "object", "tid": table.info(f["cond"]).get("tid", 0), "ts": first - 1,
                    "obj": f["sem"], "type": "sem", "permits": 0,
                    "site": f["site"], "name_suffix": "_items", "name_type": "cond",
                    **({"batch": f["batch"]} if f["batch"] else {})}
                   for f in found]
    out = dict(by)
    for tid, what in plan.items():
        out[tid] = _rewrite(by[tid], what)
    return out, new_objects, found


def _batches(by: dict, per: dict, ck, ones: list, m: int, waiters: set):
    """A consumer that takes a batch per pass (a flusher woken when enough items wait):
    (items per pass, the producers' blocks, items) or None.  The items are the notifying
    threads' passes through the block in which they notify -- each appends one, and
    notifies only when enough are waiting -- and there are at least twice as many as
    the waiter's passes."""
    if m < 3 or not ones:
        return None
    sites = {(tid, by[tid][b["entry"]].get("site")) for tid, (_, no) in per.items()
             for _, c, _, b in no if c == ck and b is not None}
    passes: dict = {}
    for tid, (bl, _) in per.items():
        for b in bl:
            k = (tid, by[tid][b["entry"]].get("site"))
            if k in sites and tid not in waiters:
                passes.setdefault(k, []).append((tid, b))
    # a site passed once or twice (a close() that wakes the consumer) hands nothing over
    items = [x for ps in passes.values() if len(ps) >= 3 for x in ps]
    if not items or any(tid in waiters for tid, _ in items) or len(items) < 2 * m:
        return None
    return round(len(items) / m), items, len(items)


def _rewrite(evs: list, what: list) -> list:
    """The thread's events with its blocks and notifies turned into semaphore ops."""
    drop: set = set()
    put: dict = {}                      # index -> replacement event
    for how, x, sem in what:
        if how == "idle":               # the last pass took no item: it leaves the trace
            drop.update([x["entry"], *(i for i, _ in x["waits"]), *x["nested"]])
            if x["exit"] is not None:
                drop.add(x["exit"])
        elif how == "block":
            entry = evs[x["entry"]]
            end = entry["ts"] + entry.get("dur", 0)
            own = entry.get("cpu_dur", 0)
            for i, _ in x["waits"]:
                w = evs[i]
                end = w["ts"] + w.get("dur", 0)
                own += w.get("cpu_dur", 0)
                drop.add(i)
            drop.update(x["nested"])
            if x["exit"] is not None:
                drop.add(x["exit"])
            acq = {k: v for k, v in entry.items() if k not in ("contended", "cpu_dur", "dur")}
            acq.update(obj=sem, dur=end - entry["ts"], cpu_dur=own,
                       contended=bool(x["waits"]))
            put[x["entry"]] = acq
        elif how == "item":             # a producer's pass: one item, the block folds
            e = evs[x["entry"]]
            put[x["entry"]] = {"kind": "release", "tid": e["tid"], "ts": e["ts"], "obj": sem,
                               **{k: e[k] for k in ("cpu", "site") if k in e}}
            last = x["exit"] if x["exit"] is not None else x["entry"]
            drop.update(range(x["entry"] + 1, last + 1))
        else:
            i, _, _, b = x
            e = evs[i]
            put[i] = {"kind": "release", "tid": e["tid"], "ts": e["ts"], "obj": sem,
                      **{k: e[k] for k in ("cpu", "site") if k in e}}
            if b is not None:           # the lock block around the notify folds
                drop.add(b["entry"])
                if b["exit"] is not None:
                    drop.add(b["exit"])
    return [put.get(i, e) for i, e in enumerate(evs) if i not in drop or i in put]


__all__ = ["cond_queues", "ITEMS_BASE"]
