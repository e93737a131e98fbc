"""`qpn build` on kernel-side traces (perf, strace): no code locations, no uncontended lock
operations.  A synthetic trace of a C-style worker pool with known parameters: each round
the main thread hands out TASKS tasks that the workers share (whoever is free takes the
next: 23 to 27 each at 2 workers), each task a pread and WORK of CPU; the workers and the
main thread meet at a barrier; the main thread fsyncs.  The queue's mutex and condition
show only when a thread blocked on them."""
import random

import pytest

import qpn
from qpn.frontends.analyze import build
from qpn.frontends.trace import Trace, TraceHeader

US = 1_000
TASKS, ROUNDS, WORK, READ, FSYNC = 50, 20, 600 * US, 20 * US, 250 * US
LOCK, COND, BAR = 0x180, 0x168, 0x124


def pool_trace(workers: int, seed: int) -> Trace:
    """The events perf would give for the program (thread CPU clocks from the scheduler)."""
    rng = random.Random(seed)
    main, tids = 100, [101 + k for k in range(workers)]
    evs = [{"kind": "thread_start", "tid": main, "ts": 0, "cpu": 0},
           {"kind": "object", "tid": main, "ts": 1, "obj": LOCK, "type": "lock", "name": "mutex_180"},
           {"kind": "object", "tid": main, "ts": 1, "obj": COND, "type": "cond", "name": "cond_168"},
           {"kind": "object", "tid": main, "ts": 1, "obj": BAR, "type": "barrier",
            "parties": workers + 1, "name": "barrier_124"}]
    clock = {t: 0 for t in [main] + tids}
    now = {t: 10 * US for t in tids}
    for t in tids:
        evs.append({"kind": "thread_start", "tid": t, "ts": 5 * US, "cpu": 0, "parent": main})
    t_main = 10 * US
    for r in range(ROUNDS):
        # the round's tasks go to whichever worker is free first (a shared queue)
        for _ in range(TASKS):
            t = min(tids, key=lambda x: (now[x], x))
            work = int(rng.gauss(WORK, 0.05 * WORK))
            if rng.random() < 0.2:              # found the queue's lock taken: blocked on it
                evs.append({"kind": "acquire", "tid": t, "ts": now[t], "cpu": clock[t],
                            "obj": LOCK, "dur": 3 * US, "contended": True})
                now[t] += 3 * US
            evs.append({"kind": "io", "tid": t, "ts": now[t], "cpu": clock[t], "op": "read",
                        "fd": 3, "bytes": 65536, "dur": READ, "cpu_dur": READ, "ok": True})
            now[t] += READ + work
            clock[t] += READ + work
        release = max(max(now.values()), t_main) + 5 * US
        last = max(tids + [main], key=lambda x: now.get(x, t_main))
        for t in tids:
            evs.append({"kind": "wait", "tid": t, "ts": now[t], "cpu": clock[t], "on": "barrier",
                        "obj": BAR, "dur": 0 if t == last else release - now[t], "ok": True})
            now[t] = release
        evs.append({"kind": "wait", "tid": main, "ts": t_main, "cpu": clock[main], "on": "barrier",
                    "obj": BAR, "dur": release - t_main, "ok": True})
        t_main = release + 20 * US
        clock[main] += 20 * US
        evs.append({"kind": "io", "tid": main, "ts": t_main, "cpu": clock[main], "op": "fsync",
                    "fd": 5, "dur": FSYNC, "cpu_dur": 10 * US, "ok": True})
        t_main += FSYNC
        clock[main] += 10 * US
        for t in tids:                          # woken by the next round's first tasks
            evs.append({"kind": "wait", "tid": t, "ts": now[t], "cpu": clock[t], "on": "cond",
                        "obj": COND, "dur": t_main + 15 * US - now[t], "ok": True})
            now[t] = t_main + 15 * US
        for t in tids:
            evs.append({"kind": "notify", "tid": main, "ts": t_main + 10 * US, "cpu": clock[main],
                        "obj": COND, "on": "cond", "waiters": 1})
        t_main += 30 * US
        clock[main] += 30 * US
    end = max(now.values()) + 100 * US
    evs += [{"kind": "thread_end", "tid": t, "ts": end, "cpu": clock[t]} for t in tids + [main]]
    evs.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start"))
    header = TraceHeader(source="perf", capabilities={"thread_cpu": True, "file_io": True},
                         program={"pid": main, "argv": ["./pool", str(workers)]},
                         runtime={"cpus": 2})
    return Trace(header, evs, f"pool{workers}.jsonl")


@pytest.fixture(scope="module")
def model():
    return build(pool_trace(2, seed=1), others=(pool_trace(1, seed=2),))


def test_rounds_of_shared_tasks_closed_by_the_barrier(model):
    text = model.text
    net = qpn.parse(text)
    assert net is not None
    pool = text[text.index("pool thread size threads"):]
    # a round: the thread's share of the tasks (a counted loop, not a geometric one), the
    # last task's CPU, the barrier; the barrier's parties follow the pool
    assert "loop n_iterations times" in pool and "loop about" not in pool
    assert pool.index("loop n_iterations") < pool.index("await barrier_b")
    assert "barrier barrier_b parties threads + 1" in text
    loops = [lp for lp in model.info["loops"] if lp["runner"] == "thread"]
    assert [lp["count"] for lp in loops] == [TASKS // 2]
    # the second trace (1 worker: 50 tasks a round) fits the divided share: all of it
    assert model.info["params"]["split_thread"] == 1
    # a round's CPU, known: 25 tasks of WORK (the fragment into a round's first read is
    # empty: the thread came from the barrier; the reads are page-cache hits, their own CPU)
    inner, last = model.info["steps"]["thread"]
    assert inner["n"] + last["n"] == 1038 and last["n"] == 40       # 2 x 20 rounds, 2 ends
    assert TASKS // 2 * inner["mean"] + last["mean"] == pytest.approx(TASKS // 2 * WORK, rel=0.01)
    assert "read__hit" in model.text and "det(20 us) as read__hit" in model.text


def test_locks_and_conditions_seen_only_when_blocked_are_left_out_and_named(model):
    text = model.text
    assert "Seen only when a thread blocked" in text
    assert "cond cond_168 (40 waits)" in text and "lock mutex_180" in text
    body = text[text.index("software {"):]
    assert "wait cond" not in body and "notify" not in body and "lock mutex" not in body


def test_one_worker_predicts_the_serial_round(model):
    res = qpn.solve(qpn.parse(model.text), "des", threads=1, options={"seed": 3})
    trip = res.get("throughput", "barrier_b.trip")
    # one worker does the round's 50 tasks (WORK + READ each) alone; the main thread's fsync
    # overlaps the next round (the condition it waited on is not in the model)
    assert trip == pytest.approx(1e9 / (TASKS * (WORK + READ)), rel=0.04)


def compute_pool_trace(workers: int) -> Trace:
    """A compressor's shape: the main thread starts WORKERS threads, reads its input and
    writes its output (a loop of 200 reads and writes); each worker only computes, taking
    its blocks through a condition that shows when it waited; the process exits with the
    workers still waiting for more (they are killed, not joined)."""
    main, tids = 200, [201 + k for k in range(workers)]
    evs = [{"kind": "thread_start", "tid": main, "ts": 0, "cpu": 0},
           {"kind": "object", "tid": main, "ts": 1, "obj": COND, "type": "cond", "name": "cond_168"}]
    for k, t in enumerate(tids):
        evs.append({"kind": "thread_start", "tid": t, "ts": 10 * US + k, "cpu": 0, "parent": main})
    ts = cpu = 20 * US
    for i in range(200):
        evs.append({"kind": "io", "tid": main, "ts": ts, "cpu": cpu, "op": "read", "fd": 3,
                    "bytes": 8192, "dur": 3 * US, "cpu_dur": 3 * US, "ok": True})
        evs.append({"kind": "io", "tid": main, "ts": ts + 5 * US, "cpu": cpu + 5 * US, "op": "write",
                    "fd": 4, "bytes": 2048, "dur": 5 * US, "cpu_dur": 5 * US, "ok": True})
        ts, cpu = ts + 1000 * US, cpu + 20 * US
    per = 200 * 1000 * US // workers                 # the work, divided
    for t in tids:
        evs.append({"kind": "wait", "tid": t, "ts": 12 * US, "cpu": 0, "on": "cond", "obj": COND,
                    "dur": 8 * US, "ok": True})
        evs.append({"kind": "thread_end", "tid": t, "ts": ts + 50 * US, "cpu": per})
    evs.append({"kind": "thread_end", "tid": main, "ts": ts + 40 * US, "cpu": cpu})
    evs.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start"))
    header = TraceHeader(source="perf", capabilities={"thread_cpu": True, "file_io": True},
                         program={"pid": main, "argv": ["./zip", str(workers)]},
                         runtime={"cpus": 2})
    return Trace(header, evs, f"zip{workers}.jsonl")


def test_workers_that_only_compute_are_forked_and_joined():
    res = build(compute_pool_trace(2), others=(compute_pool_trace(4),))
    text = res.text
    qpn.parse(text)
    assert "# Joins inferred: 2 thread(s)" in text
    main = text[text.index("pool main"):text.index("pool thread")]
    # the fork before the main thread's loop, the join after it: the run is both
    assert main.index("release (threads) sem_start") < main.index("loop ") < \
        main.index("acquire (threads) sem_done")
    pool = text[text.index("pool thread"):]
    assert "acquire sem_start" in pool and "release sem_done" in pool
    assert "cpu det(100 ms * work_thread" in pool                   # 200 ms of work, 2 threads
    assert res.info["params"]["split_thread"] == 1                  # 50 ms each at 4 threads


def test_a_log_cut_short_after_a_fork_still_builds_a_model():
    """Found by mutating strace logs: a log that ends as its one child does (the child
    forked and joined only by inference, the main thread its parent) once raised KeyError
    in the model writer; now a model, the fork of one thread."""
    import os
    from qpn.frontends.strace_import import read_strace
    from conftest import TESTS_DIR
    tr = read_strace(os.path.join(TESTS_DIR, "data", "strace", "cut_short.strace"), strict=False)
    assert tr.warnings                                   # a resumed line without its start
    res = build(Trace(tr.header, tr.events, "cut_short.jsonl"))
    qpn.parse(res.text)


def jit_pool_trace(jit: bool) -> Trace:
    """Two pool threads of a JIT runtime: each task's CPU is 2 ms for the first 60 tasks
    (interpreted), then 0.7 ms (compiled); a file read per task."""
    main, tids = 300, [301, 302]
    evs = [{"kind": "thread_start", "tid": main, "ts": 0, "cpu": 0, "name": "main"}]
    for t in tids:
        evs.append({"kind": "thread_start", "tid": t, "ts": 10, "cpu": 0, "parent": main,
                    "name": f"pool-1-thread-{t - 300}", "site": "App.main:30"})
        ts = cpu = 100
        for i in range(400):
            work = 2 * MS if i < 60 else 700 * US
            ts, cpu = ts + work, cpu + work
            evs.append({"kind": "io", "tid": t, "ts": ts, "cpu": cpu, "op": "read", "ok": True,
                        "path": "/d/data.bin", "bytes": 65536, "dur": 5 * US, "site": "App.task:12"})
            ts += 5 * US
        evs.append({"kind": "thread_end", "tid": t, "ts": ts, "cpu": cpu})
    evs.append({"kind": "thread_end", "tid": main, "ts": max(e["ts"] for e in evs) + 1, "cpu": 50})
    evs.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start"))
    header = TraceHeader(source="jfr", capabilities={"cpu_from_gaps": True, "file_io": True,
                                                     "sites": True},
                         program={"pid": main}, runtime={"cpus": 2, "jit": jit})
    return Trace(header, evs, "jit.jsonl")


MS = 1_000_000


def test_a_jit_s_warm_up_is_left_out():
    warm, cold = build(jit_pool_trace(True)), build(jit_pool_trace(False))
    (w,) = [s for s in warm.info["steps"]["pool_1_thread"]]
    (c,) = [s for s in cold.info["steps"]["pool_1_thread"]]
    # MSER-5 cuts at the 60th task (the 12th batch of 5): the compiled code's 0.7 ms
    assert w["mean"] == pytest.approx(700 * US, rel=0.01)
    assert "the first 120 (the JIT's warm-up, warmup.py) left out" in warm.text
    assert c["mean"] == pytest.approx((60 * 2 * MS + 339 * 700 * US) / 399, rel=0.01)


@pytest.mark.parametrize("which", ["strace", "perf", "jfr"])
def test_a_trace_cut_short_gives_a_partial_model_that_says_so(which, tmp_path):
    """Each importer keeps what a truncated input holds, with a warning; the model built
    from it says it describes the valid part only."""
    import os
    from conftest import TESTS_DIR
    data = os.path.join(TESTS_DIR, "data")
    if which == "strace":
        from qpn.frontends.strace_import import strace_to_events
        with open(os.path.join(data, "strace", "server.strace")) as fh:
            text = fh.read()
        tr = strace_to_events(text[:text.index("read(3, 0x7ffc") + 20], "cut.strace", strict=False)
    elif which == "perf":
        from qpn.frontends.perf_import import perf_to_events
        with open(os.path.join(data, "perf", "server.perf.txt")) as fh:
            text = fh.read()
        tr = perf_to_events(text[:text.index("sys_exit_fsync") + 5], "cut.txt", root=100,
                            strict=False)
    else:
        from qpn.frontends.jfr_import import read_jfr_json
        with open(os.path.join(data, "jfr", "app.json")) as fh:
            text = fh.read()
        cut = tmp_path / "cut.json"
        cut.write_text(text[:text.index('"jdk.FileWrite"') + 30])
        tr = read_jfr_json(str(cut), strict=False)
    assert tr.warnings
    res = build(Trace(tr.header, tr.events, "cut.jsonl", list(tr.warnings), complete=False))
    qpn.parse(res.text)
    assert "# The trace was malformed; this model describes its valid part only." in res.text


def fork_rounds_trace(children: int) -> Trace:
    """Rounds of fork and join (tests/programs/forkjoin.c's shape): each round the main
    thread starts CHILDREN threads that compute 20 ms / CHILDREN each, joins them (a join
    shows only when a child was still running: the first one), then writes a line."""
    main, tid = 400, 401
    evs = [{"kind": "thread_start", "tid": main, "ts": 0, "cpu": 0}]
    ts = cpu = 1000
    for r in range(20):
        kids = []
        for k in range(children):
            evs.append({"kind": "thread_start", "tid": tid, "ts": ts + 10 * US * k, "cpu": 0,
                        "parent": main})
            kids.append(tid)
            tid += 1
        ts, cpu = ts + 100 * US, cpu + 100 * US              # creating them
        end = ts + 20 * MS // children * max(1, children // 2)
        for i, kid in enumerate(kids):
            evs.append({"kind": "thread_end", "tid": kid, "ts": end - 50 * US * i,
                        "cpu": 20 * MS // children})
        evs.append({"kind": "wait", "tid": main, "ts": ts, "cpu": cpu, "on": "join",
                    "target": kids[0], "dur": end - ts, "ok": True})
        ts, cpu = end + 40 * US, cpu + 40 * US
        evs.append({"kind": "io", "tid": main, "ts": ts, "cpu": cpu, "op": "write", "fd": 5,
                    "bytes": 24, "dur": 5 * US, "cpu_dur": 5 * US, "ok": True})
        ts += 10 * US
    evs.append({"kind": "thread_end", "tid": main, "ts": ts, "cpu": cpu})
    evs.sort(key=lambda e: (e["ts"], e["kind"] != "thread_start"))
    header = TraceHeader(source="perf", capabilities={"thread_cpu": True, "file_io": True},
                         program={"pid": main}, runtime={"cpus": 2})
    return Trace(header, evs, f"forks{children}.jsonl")


def test_rounds_of_forks_stay_the_main_thread_s_loop():
    res = build(fork_rounds_trace(2), others=(fork_rounds_trace(1),))
    text = res.text
    qpn.parse(text)
    main = text[text.index("pool main"):text.index("pool thread")]
    assert "steady state: the loop" in text and "loop " not in main.split("{", 1)[1][:40]
    assert main.index("release (threads) sem_start") < main.index("acquire (threads) sem_done")
    assert res.info["params"]["split_thread"] == 1                 # 10 ms each at 2, 20 at 1
    assert "cpu det(10 ms * work_thread" in text


def test_a_barrier_waited_at_in_one_round_only_is_left_out():
    """A futex woken all at once once (a start signal, a library word that waited in a
    rare case) reads as a barrier; among threads that repeat another barrier it is no
    round of the work, and in the model it would never be reached again (a deadlock)."""
    from qpn.frontends.trace import Trace, TraceHeader
    h = TraceHeader(source="perf", capabilities={"thread_cpu": True},
                    program={"pid": 1, "argv": ["p"]}, runtime={"cpus": 2})
    evs = [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0, "name": "main"},
           {"kind": "thread_start", "tid": 2, "ts": 1, "cpu": 0, "name": "worker", "parent": 1},
           {"kind": "object", "tid": 1, "ts": 0, "obj": 100, "type": "barrier", "parties": 2},
           {"kind": "object", "tid": 1, "ts": 0, "obj": 148, "type": "barrier", "parties": 2}]
    for tid in (1, 2):                                   # the one-round word, at start
        evs.append({"kind": "wait", "tid": tid, "ts": 10 + tid, "cpu": 5, "on": "barrier",
                    "obj": 148, "dur": 3 - tid, "ok": True})
    t = 1_000
    for r in range(12):                                   # the rounds of the work
        for tid in (1, 2):
            evs.append({"kind": "wait", "tid": tid, "ts": t + 400 * tid, "on": "barrier",
                        "cpu": 10 + 500 * (r + 1), "obj": 100, "dur": 900 - 400 * tid,
                        "ok": True})
        t += 1_000
    evs.sort(key=lambda e: e["ts"])
    res = build(Trace(h, evs, "b.jsonl"))
    assert "Barriers waited at in one round only" in res.text
    body = res.text[res.text.index("software {"):]
    assert body.count("await ") == 2 and "barrier_2 " not in body    # only the repeated one
