"""asyncio programs traced end to end with ``qpn trace``: every Task is a thread of its own
(a virtual thread), the event loop an object the tasks share (frontends/pytrace/aiopatch.py,
aioconvert.py; docs/trace-format.md, "asyncio")."""
import collections
import os
import re
import subprocess
import sys

import pytest

from qpn.frontends.pytrace import trace_command
from qpn.frontends.pytrace.aioconvert import VIRTUAL, virtual_tid
from qpn.frontends.pytrace.layout import to_event
from qpn.frontends.pytrace.runner import convert
from qpn.frontends.trace import read_trace
from qpn.frontends.trace_query import end_ts, fragments, match_items
from conftest import TESTS_DIR

ROOT = os.path.dirname(TESTS_DIR)
PROGRAMS = os.path.join(TESTS_DIR, "programs", "aio")


def sites(name):
    """{marker: 'tests/programs/aio/<name>:<line>'} from the program's '# site: marker' comments."""
    out = {}
    with open(os.path.join(PROGRAMS, name)) as fh:
        for no, line in enumerate(fh, 1):
            m = re.search(r"# site: ([\w-]+)", line)
            if m:
                out[m.group(1)] = f"tests/programs/aio/{name}:{no}"
    return out


def trace(tmp_path_factory, name, *args, program=None):
    """(trace, stdout) of the program traced."""
    d = tmp_path_factory.mktemp("aio")
    out = d / f"{name}.jsonl"
    path = program or os.path.join("tests", "programs", "aio", name)
    with open(d / "stdout", "w") as fh:
        r = trace_command([sys.executable, path, *map(str, args)], str(out), cwd=ROOT, stdout=fh)
    assert r.returncode == 0 and r.warnings == []
    t = read_trace(out)                     # what was written reads back, strictly
    assert len(t.events) == len(r.trace.events)
    return t, (d / "stdout").read_text()


def tasks_of(t):
    """{virtual tid: its thread_start} of the trace's tasks."""
    return {e["tid"]: e for e in t.events if e["kind"] == "thread_start" and e.get("task")}


def check_threads(t):
    """Every thread (OS or task) starts, ends, and its CPU clock never goes back nor runs
    faster than the wall clock between two events."""
    by = t.by_thread()
    for tid, evs in by.items():
        kinds = [e["kind"] for e in evs]
        assert kinds[0] == "thread_start" and kinds[-1] == "thread_end", tid
        cpu = [e["cpu"] for e in evs if "cpu" in e]
        assert cpu == sorted(cpu), f"CPU time of thread {tid:#x} goes backwards"
        for f in fragments(evs):
            assert f.wall >= 0 and f.cpu is not None and f.cpu <= f.wall + 200_000, f
        for e in evs:
            assert e.get("cpu_dur", 0) <= e.get("dur", 0) + 200_000, e
    return by


@pytest.fixture(scope="module")
def requests(tmp_path_factory):
    return trace(tmp_path_factory, "requests.py", 6)


@pytest.fixture(scope="module")
def echo(tmp_path_factory):
    return trace(tmp_path_factory, "echo.py", 5)


def test_a_task_per_request_is_a_thread_with_its_parent_and_site(requests):
    t, _ = requests
    s = sites("requests.py")
    pid = t.header.program["pid"]
    assert t.header.has("asyncio_tasks")
    tasks = tasks_of(t)
    serials = sorted(tid - virtual_tid(pid, 0) for tid in tasks)
    assert serials == list(range(1, len(tasks) + 1))
    assert all(tid >= VIRTUAL and tid < 1 << 53 for tid in tasks)     # exact in JSON
    loops = [e for e in t.events if e["kind"] == "object" and e["type"] == "loop"]
    assert len(loops) == 1 and loops[0]["tid"] == pid and loops[0]["site"] == s["run"]
    assert {e["loop"] for e in tasks.values()} == {loops[0]["obj"]}
    main = next(e for e in tasks.values() if e["name"] == "main")
    assert main["parent"] == pid and main["site"] == s["run"] and main["cpu"] == 0
    client = next(e for e in tasks.values() if e["name"] == "client")
    assert client["parent"] == main["tid"] and client["site"] == s["client"]
    reqs = [e for e in tasks.values() if e["name"] == "request"]
    assert len(reqs) == 6
    assert {e["parent"] for e in reqs} == {client["tid"]}
    assert {e["site"] for e in reqs} == {s["create"]}
    # the first phase's threads: main, the client and one per request (N + 2)
    assert len([e for e in tasks.values() if e["ts"] <= max(r["ts"] for r in reqs)]) == 6 + 2
    # the client awaits each request in turn: a join on each (also on those already done)
    joins = [e for e in t.events if e["kind"] == "wait" and e["tid"] == client["tid"]
             and e["on"] == "join"]
    assert [e["target"] for e in joins] == [e["tid"] for e in sorted(reqs, key=lambda e: e["ts"])]
    assert {e["site"] for e in joins} == {s["join"]}
    check_threads(t)


def test_task_cpu_clocks_rise_only_in_their_steps(requests):
    t, out = requests
    by = check_threads(t)
    pid = t.header.program["pid"]
    tasks = tasks_of(t)
    total = {tid: by[tid][-1]["cpu"] for tid in tasks}
    reqs = [tid for tid, e in tasks.items() if e["name"] == "request"]
    # each request burns 1.5 ms in one step; the client sleeps meanwhile and used little
    assert all(total[tid] >= 1_400_000 for tid in reqs)
    client = next(tid for tid, e in tasks.items() if e["name"] == "client")
    life = by[client][-1]["ts"] - by[client][0]["ts"]
    assert life > 6 * 1_500_000 and total[client] < 2_000_000
    # an await's CPU is its task's (the end of one step, the start of the next), not the
    # CPU of the tasks that ran while it waited
    for tid in tasks:
        for e in by[tid]:
            if e["kind"] in ("wait", "acquire") and e.get("dur", 0) > 1_000_000:
                assert e.get("cpu_dur", 0) < 500_000, e
    # the tasks' CPU plus the loop's own is the loop thread's
    loop_own = by[pid][-1]["cpu"]
    measured = int(re.search(r"loop thread cpu (\d+)", out).group(1))
    assert abs(loop_own + sum(total.values()) - measured) <= max(0.01 * measured, 1_000_000)
    assert sum(total.values()) > 6 * 1_400_000          # the burns are the tasks', not the loop's


def test_sleeps_and_a_semaphore_of_two_shared_by_five(requests):
    t, _ = requests
    s = sites("requests.py")
    sleeps = [e for e in t.events if e["kind"] == "wait" and e.get("site") == s["req-sleep"]]
    assert len(sleeps) == 6 and all(e["on"] == "sleep" and e["requested"] == 3_000_000
                                    and e["dur"] >= 3_000_000 for e in sleeps)
    sem = next(e for e in t.events if e["kind"] == "object" and e.get("site") == s["sem"])
    assert sem["type"] == "sem" and sem["permits"] == 2
    # (the client's semaphore, freed by now, may have had the same id)
    acq = [e for e in t.events if e["kind"] == "acquire" and e["obj"] == sem["obj"]
           and e["ts"] > sem["ts"]]
    rel = [e for e in t.events if e["kind"] == "release" and e["obj"] == sem["obj"]
           and e["ts"] > sem["ts"]]
    assert len(acq) == len(rel) == 5 and {e["site"] for e in acq} == {s["sem-acquire"]}
    free = [e for e in acq if not e["contended"]]
    waited = [e for e in acq if e["contended"]]
    assert len(free) == 2 and all(e["dur"] == 0 for e in free)
    assert len(waited) == 3
    # two hold it 5 ms, two more wait for them, the last for a second round: 5 + 5 + 10 ms
    assert 18_000_000 <= sum(e["dur"] for e in waited) <= 40_000_000
    for e in waited:            # each wait ends after another task released a permit
        assert any(r["tid"] != e["tid"] and e["ts"] <= r["ts"] <= end_ts(e) for r in rel)


def test_executor_futures_awaited_are_the_workers_tasks(requests):
    t, _ = requests
    s = sites("requests.py")
    waits = [e for e in t.events if e["kind"] == "wait" and e["on"] == "future"]
    spans = [e for e in t.of_kind("task") if e["func"] == "burn"]
    assert len(waits) == len(spans) == 6
    assert {e["site"] for e in waits} == {s["offload"]}
    tasks = tasks_of(t)
    offload = {tid for tid, e in tasks.items() if e["name"] == "offload"}
    assert {e["tid"] for e in waits} == offload
    paired = []
    for w in waits:             # the span of the same future that ran before the wait ended
        same = [sp for sp in spans if sp["obj"] == w["obj"] and sp["ts"] <= end_ts(w)]
        assert same, w
        paired.append(id(max(same, key=lambda sp: sp["ts"])))
    assert len(set(paired)) == 6                            # one to one
    # the pool's threads were started by the tasks that submitted the first work
    workers = {e["tid"] for e in spans}
    starts = {e["tid"]: e for e in t.events if e["kind"] == "thread_start" and e["tid"] in workers}
    assert {e["parent"] for e in starts.values()} <= offload


def test_gather_joins_each_child(requests):
    t, _ = requests
    s = sites("requests.py")
    tasks = tasks_of(t)
    main = next(tid for tid, e in tasks.items() if e["name"] == "main")
    children = sorted((e for e in tasks.values() if e["name"] == "child"), key=lambda e: e["ts"])
    assert len(children) == 3 and {e["parent"] for e in children} == {main}
    joins = [e for e in t.events if e["kind"] == "wait" and e["tid"] == main
             and e.get("site") == s["gather"]]
    assert [e["on"] for e in joins] == ["join"] * 3
    assert [e["target"] for e in joins] == [e["tid"] for e in children]
    first, *rest = joins
    assert first["dur"] >= 3_000_000                        # the longest child: 3 ms
    assert all(e["dur"] == 0 and e["ts"] == end_ts(first) for e in rest)


def test_queue_puts_and_gets_pair_by_item(requests):
    t, _ = requests
    s = sites("requests.py")
    q = next(e for e in t.events if e["kind"] == "object" and e.get("site") == s["queue"])
    assert q["type"] == "queue" and q["capacity"] == 3
    tasks = tasks_of(t)
    prod = next(tid for tid, e in tasks.items() if e["name"] == "producer")
    cons = next(tid for tid, e in tasks.items() if e["name"] == "consumer")
    pairs = [(p, g) for p, g in match_items(t.events) if p["obj"] == q["obj"]]
    assert len(pairs) == 11                                 # 10 items and the None
    assert all(p["tid"] == prod and g["tid"] == cons for p, g in pairs)
    assert {g["site"] for p, g in pairs} == {s["get"]}
    puts = [e for e in t.events if e["kind"] == "put" and e["obj"] == q["obj"]]
    assert max(e["size"] for e in puts) <= 3
    assert any(e["dur"] > 0 and e.get("cpu_dur", 0) < e["dur"] for e in puts)   # it blocked


def test_streams_connect_accept_and_io(echo):
    t, out = echo
    assert "echoed 5" in out
    s = sites("echo.py")
    pid = t.header.program["pid"]
    tasks = tasks_of(t)
    connect = [e for e in t.events if e["kind"] == "io" and e["op"] == "connect"]
    accept = [e for e in t.events if e["kind"] == "io" and e["op"] == "accept"]
    assert len(connect) == len(accept) == 1
    c, a = connect[0], accept[0]
    assert c["site"] == s["connect"] and c["tid"] in tasks and c["dur"] > 0
    assert (c["local"], c["peer"]) == (a["peer"], a["local"])          # one connection
    handler = next(e for e in tasks.values() if e["name"] == "handle")
    assert a["tid"] == handler["parent"] == pid                        # the loop accepted it
    by_site = collections.defaultdict(list)
    for e in t.events:
        if e["kind"] == "io" and e["op"] in ("send", "recv"):
            by_site[e["site"]].append(e)
    assert [e["bytes"] for e in by_site[s["client-send"]]] == [7] * 5
    assert [e["bytes"] for e in by_site[s["client-recv"]]] == [7] * 5
    assert [e["bytes"] for e in by_site[s["server-recv"]]] == [7] * 5 + [0]     # then EOF
    assert [e["bytes"] for e in by_site[s["server-send"]]] == [7] * 5
    assert {e["fd"] for e in by_site[s["client-send"]] + by_site[s["client-recv"]]} == {c["fd"]}
    assert {e["fd"] for e in by_site[s["server-recv"]] + by_site[s["server-send"]]} == {a["conn"]}
    assert {e["tid"] for e in by_site[s["server-recv"]]} == {handler["tid"]}
    # the loop's own socket calls (its wake-up pipe, the transports' reads) are not events
    assert all(e["tid"] in tasks or e["op"] == "accept"
               for e in t.events if e["kind"] == "io")
    check_threads(t)


def test_unusual_asyncio_programs_run_as_untraced(tmp_path_factory):
    """A loop run inside a task, loops in two threads, a task cancelled, one never awaited,
    one whose exception nobody retrieves, a task factory, a Task made directly, uvloop
    absent: the program prints what it prints untraced, and the trace holds together."""
    t, out = trace(tmp_path_factory, "odd.py")
    plain = subprocess.run([sys.executable, os.path.join(PROGRAMS, "odd.py")], cwd=ROOT,
                           capture_output=True, text=True, check=True)
    lines = [ln for ln in out.splitlines() if not ln.startswith("cpu ")]
    assert lines == [ln for ln in plain.stdout.splitlines() if not ln.startswith("cpu ")]
    assert plain.stderr == ""
    by = check_threads(t)
    tasks = tasks_of(t)
    loops = [e for e in t.events if e["kind"] == "object" and e["type"] == "loop"]
    assert len(loops) == 6              # asyncio.run's and a nested one, in three threads
    assert len({e["tid"] for e in loops}) == 3

    def thread_of(task):                # a loop's id may come back once it is freed
        return max((e for e in loops if e["obj"] == task["loop"]
                    and e["ts"] <= by[task["tid"]][-1]["ts"]), key=lambda e: e["ts"])["tid"]
    # per loop thread: its tasks' CPU plus its own is what the thread measured
    names = t.thread_names()
    measured = {names[tid]: tid for tid in by if tid < VIRTUAL}
    for label, cpu in re.findall(r"cpu (\S+) (\d+)", out):
        tid = measured["MainThread" if label == "main" else
                       f"Thread-{int(label[-1]) + 1} (in_thread)"]
        mine = [v for v, e in tasks.items() if thread_of(e) == tid]
        tot = by[tid][-1]["cpu"] + sum(by[v][-1]["cpu"] for v in mine)
        assert abs(tot - int(cpu)) <= max(0.01 * int(cpu), 1_000_000), label
    nested = [e for e in tasks.values() if e["name"] == "both"]
    assert len(nested) == 3 and all(tasks[e["parent"]]["name"] == "nesting" for e in nested)
    # a task with no code of the program (create_task(asyncio.sleep(5))): its events are
    # at the site that made it, not in asyncio's loop
    sleepers = [e for e in tasks.values() if e["name"] == "sleep"]
    assert len(sleepers) == 3
    for e in sleepers:
        waits = [w for w in by[e["tid"]] if w["kind"] == "wait"]
        assert [w["on"] for w in waits] == ["sleep"] and waits[0]["site"] == e["site"]
        assert waits[0]["ok"] is False                       # cancelled at asyncio.run's end


def test_a_threading_program_gives_the_events_it_gave(tmp_path_factory):
    """No asyncio imported, no virtual thread, no loop, no new capability; and the
    conversion of its records is the one the runner made before asyncio's tasks."""
    prog = tmp_path_factory.mktemp("plain") / "threads.py"
    prog.write_text("import sys, threading, time\n"
                    "lock = threading.Lock()\n"
                    "def work():\n"
                    "    with lock:\n"
                    "        time.sleep(0.001)\n"
                    "ts = [threading.Thread(target=work) for _ in range(3)]\n"
                    "[t.start() for t in ts]\n"
                    "[t.join() for t in ts]\n"
                    "print('asyncio' in sys.modules)\n")
    t, out = trace(tmp_path_factory, "threads.py", program=str(prog))
    assert out.strip() == "False"
    assert not t.header.has("asyncio_tasks")
    assert all(e["tid"] < VIRTUAL for e in t.events)
    assert not any(e["kind"] == "object" and e["type"] == "loop" for e in t.events)
    assert len(t.thread_names()) == 4
    # records as the recorder makes them, a thread_start with the time its start() was called
    recs = [("thread_start", 1, 100, 5, None, "MainThread", None, False, 4242),
            ("object", 1, 110, 6, 1, 77, "lock", None),
            ("thread_start", 2, 150, 0, 1, "Thread-1", 1, False, 4243, 140),
            ("acquire", 2, 160, 3, 1, 77, 0, False),
            ("release", 2, 170, 9, 1, 77, 10),
            ("thread_end", 2, 180, 12, None),
            ("wait", 1, 145, 7, 1, "join", 88, 40, None, None, 4243, None, None),
            ("thread_end", 1, 200, 20, None)]
    raw = [("H", {"pid": 4242, "cwd": ROOT}), ("E", recs, [(1, os.path.join(ROOT, "p.py"), 3)]),
           ("X", {"reason": "exit"})]
    header, events, warnings = convert(raw, 0)
    tids: dict = {}
    before = sorted((to_event(r, {1: "p.py:3"}, tids) for r in recs), key=lambda e: e["ts"])
    assert events == before and warnings == [] and "asyncio_tasks" not in header.capabilities


def test_the_loop_threads_cpu_is_split_among_its_tasks_and_itself():
    """The runner's side alone, on records made by hand: a loop thread (OS tid 100) runs
    task 1, then its own work, then task 2, then task 1 again, which runs a loop of its
    own inside its step (as nest_asyncio does) with a step of task 2 in it."""
    L = 7000
    recs = [("thread_start", 1, 0, 1000, None, "MainThread", None, False, 100),
            ("aio_task", 1, 10, None, 1, 1, None, "main", L, True),
            ("aio_task", 1, 25, None, 1, 2, "worker", "work", L, False),
            ("object", 1, 30, 1108, 1, 77, "lock", None),
            ("wait", 1, 35, 1112, 1, "sleep", None, 70, None, None, None, 5, 91),
            ("aio_acquire", 1, 38, 1113, 1, 77, 1, None),
            ("aio_step", 1, 20, 1100, 1, 20, 15, None),
            ("io", 1, 45, 1120, 1, "accept", 5, None, 3, None, 2, None, "p", None, None, 4, "l"),
            ("aio_step", 1, 50, 1125, 2, 30, 20, ("join", 1, 1)),
            ("mark", 1, 105, 1203, 1, "before", None),
            ("mark", 1, 115, 1208, 1, "nested", None),
            ("aio_step", 1, 110, 1205, 2, 10, 8, None),
            ("mark", 1, 130, 1230, 1, "after", None),
            ("wait", 1, 140, 1235, 1, "join", None, 0, None, None, -2, None, None),
            ("aio_step", 1, 100, 1200, 1, 50, 40, None),
            ("thread_end", 1, 200, 1300, None)]
    raw = [("H", {"pid": 100, "cwd": ROOT}), ("E", recs, [(1, os.path.join(ROOT, "p.py"), 3)]),
           ("X", {"reason": "exit"})]
    header, events, warnings = convert(raw, 0)
    assert header.capabilities["asyncio_tasks"] and warnings == []
    t1, t2 = virtual_tid(100, 1), virtual_tid(100, 2)
    by = collections.defaultdict(list)
    for e in events:
        by[e["tid"]].append(e)
    assert [(e["kind"], e["ts"], e.get("cpu")) for e in by[100]] == [
        ("thread_start", 0, 1000), ("object", 20, 1100), ("io", 45, 1105),
        ("thread_end", 200, 1225)]
    loop = by[100][1]
    assert loop["type"] == "loop" and loop["obj"] == L and loop["site"] == "p.py:3"
    start1, start2 = by[t1][0], by[t2][0]
    assert (start1["parent"], start1["name"], start1["task"], start1["loop"]) == (
        100, "main", True, L)
    assert (start2["parent"], start2["name"], start2["cpu"]) == (t1, "worker", 0)
    marks = {e["name"]: (e["tid"], e["cpu"]) for e in events if e["kind"] == "mark"}
    assert marks == {"before": (t1, 18), "nested": (t2, 23), "after": (t1, 37)}
    sleep = next(e for e in by[t1] if e.get("on") == "sleep")
    assert (sleep["cpu"], sleep["cpu_dur"]) == (12, 6)         # its task's CPU, both steps'
    acq = next(e for e in by[t1] if e["kind"] == "acquire")
    assert acq["contended"] is False and acq["dur"] == 0      # it did not wait for a step
    joins = [e for e in events if e.get("on") == "join"]
    assert [(e["tid"], e["target"], e["ts"], e["dur"]) for e in joins] == [
        (t2, t1, 80, 30), (t1, t2, 140, 0)]                  # step-end and recorded joins
    ends = {e["tid"]: (e["ts"], e["cpu"]) for e in events if e["kind"] == "thread_end"}
    assert ends[t1] == (150, 15 + 40 - 8) and ends[t2] == (120, 20 + 8)
    assert ends[100][1] + ends[t1][1] + ends[t2][1] == 1300   # the thread's CPU, all of it


@pytest.mark.measured
def test_async_offload_overhead(tmp_path):
    """tests/programs/unseen/async_offload.py at 2 threads, traced against untraced: the
    ratio of the medians of 5 wall times each, run in turn (quiet machine: -m measured)."""
    import statistics
    import time
    prog = [sys.executable, os.path.join("tests", "programs", "unseen", "async_offload.py"), "2"]
    plain, traced = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run(prog, cwd=ROOT, check=True, capture_output=True)
        plain.append(time.perf_counter() - t0)
        with open(tmp_path / "out", "w") as fh:
            r = trace_command(prog, str(tmp_path / "t.jsonl"), cwd=ROOT, stdout=fh)
        traced.append(r.program_seconds)
    ratio = statistics.median(traced) / statistics.median(plain)
    print(f"async_offload.py 2: traced/untraced wall {ratio:.3f}")
    assert ratio <= 1.15
