"""Objects made one per thread (instances.per_thread_sites): identical workers that each
use their own lock (numpy's ``default_rng`` has one per generator) are one pool, and the
locks are not modelled as shared mutexes.  Found on tests/programs/montecarlo.py, where
two workers became two one-thread pools."""
import copy

import qpn
from qpn.frontends.analyze import build
from qpn.frontends.analyze.synth import batch_trace

WORKERS = 2


def _own_locks(trace):
    """batch_trace's workers share lock 13; give each worker its own, made by itself at
    one site (as a per-thread object would be)."""
    tr = copy.deepcopy(trace)
    starts = {e["tid"]: e for e in tr.events if e["kind"] == "thread_start" and e.get("parent")}
    mine = {tid: 300 + k for k, tid in enumerate(sorted(starts))}
    for e in tr.events:
        if e.get("obj") == 13 and e["tid"] in mine:
            e["obj"] = mine[e["tid"]]
    for tid, obj in mine.items():
        t = starts[tid]["ts"] + 1
        tr.events.append({"kind": "object", "tid": tid, "ts": t, "cpu": 0, "obj": obj,
                          "type": "lock", "site": "batch.py:18"})
    tr.events.sort(key=lambda e: e["ts"])
    return tr


def test_workers_with_a_lock_each_are_one_pool():
    res = build(_own_locks(batch_trace(tasks=60, workers=WORKERS, seed=3)))
    pools = {k: (v["mode"], v["size"]) for k, v in res.info["runners"].items()}
    assert [v for k, v in pools.items() if k.startswith("worker")] == [("counted", WORKERS)] or \
        [v[1] for k, v in pools.items() if k.startswith("worker")] == [WORKERS], pools
    assert "Objects made one per thread" in res.text
    assert "batch.py:18: 2 lock made; 60 acquisitions, 0 contended in all" in res.text
    net = qpn.parse(res.text)
    assert not any(p.name.startswith("lock_") and p.name.endswith(".free") for p in net.places)


def test_a_shared_lock_stays_a_mutex():
    res = build(batch_trace(tasks=60, workers=WORKERS, seed=3))
    assert "one per thread" not in res.text
    assert any(o["kind"] == "mutex" for o in res.info["objects"].values())


def test_code_before_a_quick_read_is_kept():
    """A loop reading a log back record by record and checking each (batcher.py's shut-down
    loop): the reads take microseconds, the checking a millisecond.  The reads are pruned,
    the checking is not (it was pruned with them, leaving an empty pool the parser refused)."""
    from qpn.frontends.analyze.synth import MS, US, _header, _Thread, _trace
    out: list = []
    main = _Thread(out, 100, 0, "MainThread")
    for i in range(60):
        main.compute(1 * MS)
        main.ev("io", dur=2 * US, op="read", path="/tmp/log", fd=5, bytes=8, site="check.py:7")
    main.end()
    res = build(_trace(_header(["check.py"], 2), out))
    net = qpn.parse(res.text)
    (cpu,) = [p for p in net.places if p.name.startswith("main.") and "cpu" in p.name]
    assert "mean 1 ms" in res.text
