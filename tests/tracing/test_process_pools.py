"""Process pools traced like thread pools whose threads live in other processes
(frontends/pytrace/poolpatch.py, procpatch.py): each program is traced end to end, and the
traces of its processes name the pool's queue, its work items and their futures by the same
run-wide ids (frontends/pytrace/layout.py), so that the joined trace has one pool whose
items the parent puts, the workers get and run, and the parent waits for."""
import collections
import subprocess
import sys

import pytest

from qpn.frontends.analyze import read_run
from qpn.frontends.pytrace import trace_command
from qpn.frontends.pytrace.layout import SHARED_ITEMS, is_shared
from qpn.frontends.trace import read_trace

PPE = '''\
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed, wait


def burn(n):
    t = time.thread_time_ns()
    while time.thread_time_ns() - t < 10_000_000:     # 10 ms of pure Python
        pass
    return n


if __name__ == "__main__":
    with ProcessPoolExecutor(2, mp_context=mp.get_context(sys.argv[1])) as ex:
        fs = [ex.submit(burn, i) for i in range(3)]
        assert [f.result() for f in fs] == [0, 1, 2]
        fs = [ex.submit(burn, i) for i in range(3, 6)]
        assert sorted(f.result() for f in as_completed(fs)) == [3, 4, 5]
        fs = [ex.submit(burn, i) for i in range(6, 9)]
        assert len(wait(fs).done) == 3 and [f.result() for f in fs] == [6, 7, 8]
        assert list(ex.map(burn, range(9, 12))) == [9, 10, 11]
'''

POOL = '''\
import multiprocessing as mp
import sys


def tiny(x):
    return sum(range(3000)) + x


if __name__ == "__main__":
    pool = mp.get_context(sys.argv[1]).Pool(2)
    assert sorted(pool.imap_unordered(tiny, range(20))) == [4498500 + x for x in range(20)]
    assert len(list(pool.imap_unordered(tiny, range(20), chunksize=5))) == 20
    assert pool.map(tiny, range(8), chunksize=2)[7] == 4498507
    assert pool.apply_async(tiny, (1,)).get() == 4498501
    pool.close()
    pool.join()
'''

PROCS = '''\
import multiprocessing as mp
import subprocess
import sys


def producer(q, n):
    for i in range(n):
        q.put(i)
    q.put(None)


def consumer(q):
    while q.get() is not None:
        pass


def burn():
    sum(range(300_000))


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    p = ctx.Process(target=burn)
    p.start()
    p.join()
    q = ctx.Queue()
    two = [ctx.Process(target=producer, args=(q, 30)), ctx.Process(target=consumer, args=(q,))]
    for x in two:
        x.start()
    for x in two:
        x.join()
    child = subprocess.Popen([sys.executable, sys.argv[2]], stdout=subprocess.PIPE)
    assert child.communicate()[0].strip() == b"child"
'''

CHILD = "import time\ntime.sleep(0.02)\nprint('child')\n"


def _run(tmp_path_factory, name, text, method, *args):
    d = tmp_path_factory.mktemp(f"{name}_{method}")
    (d / f"{name}.py").write_text(text)
    (d / "child.py").write_text(CHILD)
    r = trace_command([sys.executable, f"{name}.py", method, *args], str(d / f"{name}.jsonl"),
                      cwd=str(d), stdout=subprocess.DEVNULL)
    assert r.returncode == 0, r.warnings
    assert r.warnings == []
    root = read_trace(r.path)
    kids = {read_trace(p).header.program["pid"]: read_trace(p) for p in r.children}
    return r, root, kids


@pytest.fixture(scope="module", params=["fork", "spawn"])
def ppe(request, tmp_path_factory):
    return _run(tmp_path_factory, "ppe", PPE, request.param)


@pytest.fixture(scope="module", params=["fork", "spawn"])
def pool(request, tmp_path_factory):
    return _run(tmp_path_factory, "pool", POOL, request.param)


@pytest.fixture(scope="module")
def procs(tmp_path_factory):
    return _run(tmp_path_factory, "procs", PROCS, "fork", "child.py")


def _of(trace, kind, **fields):
    return [e for e in trace.events if e["kind"] == kind
            and all(e.get(k) == v for k, v in fields.items())]


def _workers(kids, q, forked: bool) -> list:
    """The children that got items of queue ``q``: both workers when forked (started at
    once); when spawned, one may start after the other took every item."""
    workers = [t for t in kids.values() if _of(t, "get", obj=q)]
    assert len(workers) == 2 if forked else 1 <= len(workers) <= 2
    return workers


def _forked(trace) -> bool:
    return trace.header.program["argv"][1] == "fork"


def test_a_process_pool_executor_is_a_pool_whose_items_cross_processes(ppe):
    run, root, kids = ppe
    [pool] = _of(root, "object", type="pool")
    q = pool["queue"]
    assert pool["workers"] == 2 and pool["processes"] is True and is_shared(q)
    assert pool["name"] == "ProcessPoolExecutor"
    puts = _of(root, "put", obj=q)
    items = {e["item"] for e in puts}
    assert len(puts) == len(items) == 12 and all(i >= SHARED_ITEMS for i in items)
    workers = _workers(kids, q, _forked(root))     # (spawn: and multiprocessing's tracker)
    gets = [e for w in workers for e in _of(w, "get", obj=q)]
    tasks = [e for w in workers for e in _of(w, "task")]
    assert sorted(e["item"] for e in gets) == sorted(e["item"] for e in tasks) == sorted(items)
    for t in tasks:                                # 10 ms of CPU each, within 30%
        assert t["obj"] == t["item"] and t["func"] == "burn" and t["site"] == "ppe.py:7"
        assert 7_000_000 <= t["cpu_dur"] <= 13_000_000, t
    # the results go back on a queue of their own: a put after each task, pickled between
    results = [e for w in workers for e in w.events if e["kind"] == "put"]
    assert sorted(e["item"] for e in results) == sorted(items)
    assert len({e["obj"] for e in results}) == 1 and results[0]["obj"] != q
    for w in workers:
        evs = [e for e in w.events if e["kind"] in ("get", "task", "put")]
        assert [e["kind"] for e in evs] == ["get", "task", "put"] * (len(evs) // 3)
        for g, t in zip(evs[::3], evs[1::3]):
            assert g["item"] == t["item"] and g["ts"] + g["dur"] <= t["ts"]
    # every result waited for once, by result(), as_completed, wait or map
    waits = _of(root, "wait", on="future")
    assert sorted(e["obj"] for e in waits) == sorted(items)
    assert {e["site"] for e in waits} == {"ppe.py:17", "ppe.py:19", "ppe.py:21", "ppe.py:22"}
    # the workers were started by the main thread (forked or spawned)
    for w in workers:
        start = w.events[0]
        assert start["kind"] == "thread_start" and start["parent"] == root.header.program["pid"]


def test_the_joined_trace_has_one_pool_and_one_queue_shared_by_three_processes(ppe):
    run, root, kids = ppe
    joined = read_run(run.path)
    [pool] = [e for e in joined.events if e["kind"] == "object" and e["type"] == "pool"]
    q = pool["queue"]
    assert len([e for e in joined.events if e["kind"] == "object" and e["obj"] == q]) == 1
    on_q = {joined.processes[e["tid"]] for e in joined.events if e.get("obj") == q}
    assert len(on_q) == 1 + len(_workers(kids, q, _forked(root)))    # forked: 3
    puts = {e["item"] for e in joined.events if e["kind"] == "put" and e["obj"] == q}
    gets = {e["item"] for e in joined.events if e["kind"] == "get" and e["obj"] == q}
    assert puts == gets and len(puts) == 12      # not moved apart between the processes


def test_a_multiprocessing_pool_puts_a_task_per_chunk_and_waits_for_each(pool):
    run, root, kids = pool
    [obj] = _of(root, "object", type="pool")
    q = obj["queue"]
    assert obj["workers"] == 2 and obj["processes"] is True and obj["name"] == "Pool"
    by_site = collections.defaultdict(list)
    for e in _of(root, "put", obj=q):
        by_site[e["site"]].append(e["item"])
    # imap_unordered over 20 items, chunks of 1 and of 5; map of 8 in chunks of 2; apply_async
    assert {s: len(v) for s, v in by_site.items()} == {"pool.py:11": 20, "pool.py:12": 4,
                                                       "pool.py:13": 4, "pool.py:14": 1}
    items = [i for v in by_site.values() for i in v]
    assert len(set(items)) == 29
    workers = _workers(kids, q, _forked(root))
    gets = [e["item"] for w in workers for e in _of(w, "get", obj=q)]
    tasks = [e for w in workers for e in _of(w, "task")]
    assert sorted(gets) == sorted(e["item"] for e in tasks) == sorted(items)
    assert {e["func"] for e in tasks} == {"tiny"}          # a chunk's function is the program's
    results = [e["item"] for w in workers for e in w.events if e["kind"] == "put"]
    assert sorted(results) == sorted(items)
    # the parent waits for each task once, at the call that returned its result
    waits = collections.defaultdict(list)
    for e in _of(root, "wait", on="future"):
        waits[e["site"]].append(e["obj"])
    assert {s: sorted(v) for s, v in waits.items()} == {s: sorted(v) for s, v in by_site.items()}


def test_processes_name_their_parent_and_joins_name_the_child(procs):
    run, root, kids = procs
    pid = root.header.program["pid"]
    joins = _of(root, "wait", on="join")
    assert sorted(e["target"] for e in joins) == sorted(kids)      # three Process, one Popen
    assert all("ok" not in e for e in joins)
    assert [e["site"] for e in joins] == ["procs.py:25", "procs.py:31", "procs.py:31",
                                          "procs.py:33"]
    for k in kids.values():
        start = k.events[0]
        assert start["kind"] == "thread_start" and start["tid"] == k.header.program["pid"]
        assert start["parent"] == pid, start
    popen = next(k for k in kids.values() if k.header.program["argv"][0].endswith("child.py"))
    assert popen.events[0]["site"] == "procs.py:32"          # where the parent started it


def test_a_queue_between_two_processes_pairs_its_puts_and_gets(procs):
    run, root, kids = procs
    [obj] = _of(root, "object", type="queue")
    ch = obj["obj"]
    assert is_shared(ch)
    joined = read_run(run.path)
    puts = sorted((e for e in joined.events if e["kind"] == "put" and e["obj"] == ch),
                  key=lambda e: e["ts"] + e.get("dur", 0))
    gets = sorted((e for e in joined.events if e["kind"] == "get" and e["obj"] == ch),
                  key=lambda e: e["ts"] + e.get("dur", 0))
    assert len(puts) == len(gets) == 31
    assert len({joined.processes[e["tid"]] for e in puts + gets}) == 2    # producer, consumer
    assert [e["item"] for e in puts] == [e["item"] for e in gets]        # FIFO, one to one
    assert len({e["item"] for e in puts}) == 31


def test_each_child_records_the_cpu_the_kernel_counted(ppe, pool, procs):
    for run, root, kids in (ppe, pool, procs):
        for trace in [root, *kids.values()]:
            clocks = {}
            for e in trace.events:
                if "cpu" in e:
                    clocks[e["tid"]] = max(clocks.get(e["tid"], 0), e["cpu"] + e.get("cpu_dur", 0))
            kernel = trace.header.program["cpu_ns"]
            if trace is not root:                     # (the root: threads not traced, probe)
                assert abs(kernel - sum(clocks.values())) <= 0.1 * kernel, (trace.path, kernel, clocks)


# A program of threads, a queue, a lock, an event, a thread pool, a file and a sleep, and its
# events as qpn trace recorded them before process pools were traced (main at 908839e, twice):
# (kind, wait/object type or I/O op, line or "lib") -> count
THREADS_ONLY = '''\
"""Threads, a lock, a queue, an event, a condition, a thread pool, a file and a sleep: no
multiprocessing (its trace must be what it was before process pools were traced)."""
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed, wait

lock = threading.Lock()
q = queue.Queue()
done = threading.Event()
total = [0]


def worker():
    while (x := q.get()) is not None:
        with lock:
            total[0] += x


def square(x):
    return x * x


threads = [threading.Thread(target=worker) for _ in range(2)]
for t in threads:
    t.start()
for i in range(20):
    q.put(i)
for _ in threads:
    q.put(None)
for t in threads:
    t.join()
with ThreadPoolExecutor(1) as ex:
    fs = [ex.submit(square, i) for i in range(4)]
    print(sum(f.result() for f in fs), sum(f.result() for f in as_completed(fs)))
    print(len(wait([ex.submit(square, 5)]).done), list(ex.map(square, range(3))))
with open(sys.argv[1], "w") as fh:
    fh.write(str(total[0]))
time.sleep(0.001)
done.set()
done.wait()
'''
BEFORE = {
    ('acquire', '', '17'): 20, ('get', '', '16'): 22, ('get', '', 'lib'): 9,
    ('io', 'close', '38'): 1, ('io', 'open', '38'): 1, ('io', 'write', '39'): 1,
    ('notify', 'event', '41'): 1, ('object', 'event', '11'): 1, ('object', 'lock', '9'): 1,
    ('object', 'pool', '34'): 1, ('object', 'queue', '10'): 1,
    ('object', 'simple_queue', '34'): 1, ('put', '', '29'): 20, ('put', '', '31'): 2,
    ('put', '', '34'): 1, ('put', '', '35'): 4, ('put', '', '37'): 4, ('put', '', 'lib'): 2,
    ('release', '', '17'): 20, ('task', '', '21'): 8, ('thread_end', '', ''): 4,
    ('thread_start', '', ''): 1, ('thread_start', '', '27'): 2, ('thread_start', '', '35'): 1,
    ('wait', 'event', '42'): 1, ('wait', 'future', '36'): 8, ('wait', 'future', '37'): 3,
    ('wait', 'join', '33'): 2, ('wait', 'join', '34'): 1, ('wait', 'join', 'lib'): 1,
    ('wait', 'sleep', '40'): 1}


def test_a_program_without_multiprocessing_gives_the_events_it_gave_before(tmp_path):
    (tmp_path / "threads_only.py").write_text(THREADS_ONLY)
    r = trace_command([sys.executable, "threads_only.py", "out.txt"],
                      str(tmp_path / "t.jsonl"), cwd=str(tmp_path), stdout=subprocess.DEVNULL)
    assert r.returncode == 0 and r.children == []
    seen = collections.Counter(
        (e["kind"], e.get("on") or e.get("type") or e.get("op") or "",
         e["site"].rsplit(":", 1)[1] if e.get("site", "").startswith("threads_only.py")
         else "lib" if e.get("site") else "") for e in r.trace.events)
    assert dict(seen) == BEFORE
    assert not any(is_shared(e.get("obj")) or is_shared(e.get("item")) for e in r.trace.events)


def test_the_recorder_does_not_import_qpn_or_numpy_into_the_program(tmp_path):
    """The generated sitecustomize loads the recorder's package alone: qpn/__init__.py would
    import numpy (0.3 s of start-up in every traced process, spawned workers included)."""
    (tmp_path / "mods.py").write_text(
        "import sys\nprint(sorted(m for m in ('qpn', 'numpy') if m in sys.modules))\n"
        "from qpn.frontends.pytrace import span\nimport qpn.frontends.pytrace\n"
        "with qpn.frontends.pytrace.span('x'):\n    pass\n")
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        r = trace_command([sys.executable, "mods.py"], str(tmp_path / "m.jsonl"),
                          cwd=str(tmp_path), stdout=fh)
    assert r.returncode == 0 and out.read_text().strip() == "[]"
    assert [e["name"] for e in r.trace.events if e["kind"] == "span"] == ["x"]


def test_joining_keeps_shared_ids_and_declares_a_shared_object_once():
    from qpn.frontends.processes import join_traces
    from qpn.frontends.pytrace.layout import SHARED_IDS, shared_item
    from qpn.frontends.trace import Trace, TraceHeader
    q, item = SHARED_IDS + 4242, shared_item(SHARED_IDS + 4242, 7)

    def trace(pid, evs):
        return Trace(TraceHeader(source="pytrace", program={"pid": pid, "argv": [f"p{pid}.py"]}),
                     [{"kind": "thread_start", "tid": pid, "ts": 0}] + evs, f"{pid}.jsonl")
    a = trace(10, [{"kind": "object", "tid": 10, "ts": 1, "obj": q, "type": "queue"},
                   {"kind": "object", "tid": 10, "ts": 1, "obj": 77, "type": "lock"},
                   {"kind": "put", "tid": 10, "ts": 2, "obj": q, "item": item}])
    b = trace(20, [{"kind": "object", "tid": 20, "ts": 3, "obj": q, "type": "queue"},
                   {"kind": "object", "tid": 20, "ts": 3, "obj": 77, "type": "lock"},
                   {"kind": "get", "tid": 20, "ts": 4, "obj": q, "item": item}])
    j = join_traces([a, b])
    objects = [e["obj"] for e in j.events if e["kind"] == "object"]
    assert objects.count(q) == 1 and len(objects) == 3           # the locks: two objects
    assert [(e["obj"], e["item"]) for e in j.events if e["kind"] in ("put", "get")] == \
        [(q, item), (q, item)]
    assert [(e["kind"], e.get("obj")) for e in j.by_thread()[20]] == [
        ("thread_start", None), ("object", 77 + (1 << 52)), ("get", q)]


SIGNALLED = '''\
import os, signal, threading
threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
threading.Event().wait()
'''


def test_a_wait_the_ending_signal_cut_short_is_recorded(tmp_path):
    (tmp_path / "signalled.py").write_text(SIGNALLED)
    r = trace_command([sys.executable, "signalled.py"], str(tmp_path / "s.jsonl"),
                      cwd=str(tmp_path))
    assert r.returncode == -15 and r.trace.header.program["end"] == "signal 15"
    main = r.trace.header.program["pid"]
    [w] = [e for e in r.trace.events if e["kind"] == "wait" and e["tid"] == main]
    assert (w["on"], w["ok"], w["site"]) == ("event", False, "signalled.py:3")
    assert 150_000_000 < w["dur"] < 2_000_000_000


DUPLEX = '''\
import multiprocessing as mp
import sys


def echo(conn):
    conn.send(conn.recv() * 2)


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    a, b = ctx.Pipe()
    p = ctx.Process(target=echo, args=(b,))
    p.start()
    a.send(21)
    assert a.recv() == 42
    p.join()
'''


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_the_two_directions_of_a_duplex_pipe_are_two_channels(tmp_path_factory, method):
    run, root, kids = _run(tmp_path_factory, "duplex", DUPLEX, method)
    [child] = [k for k in kids.values() if k.header.program["argv"][0] == "duplex.py"]
    sent = {e["obj"]: e["item"] for t in (root, child) for e in t.events if e["kind"] == "put"}
    got = {e["obj"]: e["item"] for t in (root, child) for e in t.events if e["kind"] == "get"}
    assert sent == got and len(sent) == 2 and all(is_shared(c) for c in sent)
