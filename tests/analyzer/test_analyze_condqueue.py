"""Hand-overs through a condition and a container, and objects made per request
(frontends/analyze/condqueue.py, instances.py): on synthetic events and on a real
trace of tests/programs/cond_queue.py (a shape other than waitress': workers that
stop on a flag, per-item locks made by the producer)."""
import os
import re
import sys

import pytest

from qpn.frontends.analyze import build
from qpn.frontends.analyze.condqueue import cond_queues
from qpn.frontends.pytrace import trace_command
from qpn.frontends.trace import read_trace
from conftest import ROOT_DIR

ROOT = ROOT_DIR
PROGRAM = os.path.join(ROOT, "tests", "programs", "cond_queue.py")
SITE = "tests/programs/cond_queue.py"          # sites are relative to the traced cwd
OBJS = [{"kind": "object", "tid": 1, "ts": 0, "obj": 5, "type": "lock", "site": "p.py:1"},
        {"kind": "object", "tid": 1, "ts": 0, "obj": 6, "type": "cond", "lock": 5, "site": "p.py:2"}]


def _pass(tid, t, wait):
    """A worker's `with lock: while not items: cond.wait()` block at time t."""
    evs = [{"kind": "acquire", "tid": tid, "ts": t, "obj": 5, "site": "w.py:3", "cpu": t}]
    if wait:
        evs += [{"kind": "wait", "tid": tid, "ts": t + 1, "obj": 6, "on": "cond", "dur": 50,
                 "cpu_dur": 4, "site": "w.py:4"},
                {"kind": "release", "tid": tid, "ts": t + 2, "obj": 5, "site": "w.py:4"},
                {"kind": "acquire", "tid": tid, "ts": t + 49, "obj": 5, "site": "w.py:4"}]
    return evs + [{"kind": "release", "tid": tid, "ts": t + 60, "obj": 5, "site": "w.py:3"},
                  {"kind": "io", "tid": tid, "ts": t + 70, "op": "write", "dur": 5}]


def _notify(t, all_=False):
    return [{"kind": "acquire", "tid": 1, "ts": t, "obj": 5, "site": "p.py:9"},
            {"kind": "notify", "tid": 1, "ts": t + 1, "obj": 6, "on": "cond", "site": "p.py:10",
             **({"all": True} if all_ else {})},
            {"kind": "release", "tid": 1, "ts": t + 2, "obj": 5, "site": "p.py:9"}]


def test_every_pass_takes_one_item_waiting_or_not():
    by = {1: [e for i in range(6) for e in _notify(100 * i + 40)],
          2: [e for i in range(6) for e in _pass(2, 100 * i, wait=i % 2 == 0)]}
    out, sems, found = cond_queues(by, OBJS)
    acq = [e for e in out[2] if e["kind"] == "acquire"]
    # one acquisition of the semaphore per pass; a pass that waited blocks as long as it did
    assert [(e["obj"], e["ts"], e["dur"], e["contended"]) for e in acq] == \
        [(sems[0]["obj"], 100 * i, 51 if i % 2 == 0 else 0, i % 2 == 0) for i in range(6)]
    assert [e["kind"] for e in out[1]] == ["release"] * 6         # the lock block folds
    assert not any(e["kind"] in ("wait", "release") for e in out[2])
    assert (found[0]["notifies"], found[0]["blocks"], found[0]["waiters"]) == (6, 6, [2])


def test_a_condition_used_for_rounds_is_left_alone():
    # notify_all each round (barrier-like): no items to count
    by = {1: [e for i in range(6) for e in _notify(100 * i + 40, all_=True)],
          2: [e for i in range(6) for e in _pass(2, 100 * i, wait=True)]}
    assert cond_queues(by, OBJS) == (by, [], [])


def test_counts_that_disagree_are_left_alone():
    # a state flag: 3 notifies, 20 passes (the waiter mostly finds the flag set)
    by = {1: [e for i in range(3) for e in _notify(1000 * i + 40)],
          2: [e for i in range(20) for e in _pass(2, 100 * i, wait=i < 3)]}
    assert cond_queues(by, OBJS)[2] == []


def _append(tid, t, notify):
    """A producer's `with lock: items.append(x); if len(items) >= 8: cond.notify()` at t."""
    evs = [{"kind": "acquire", "tid": tid, "ts": t, "obj": 5, "site": "p.py:9", "cpu": t}]
    if notify:
        evs.append({"kind": "notify", "tid": tid, "ts": t + 1, "obj": 6, "on": "cond",
                    "site": "p.py:10"})
    return evs + [{"kind": "release", "tid": tid, "ts": t + 2, "obj": 5, "site": "p.py:9"}]


def test_a_consumer_that_takes_a_batch_per_pass():
    """batcher.py's shape: the producer notifies only when 8 items wait (and then at every
    append, as the list stays full), the flusher takes 8 per pass and mostly does not wait.
    Every producer pass is an item, every flusher pass takes a batch of 8."""
    prod = [e for i in range(160) for e in _append(1, 10 * i, notify=i % 8 >= 7 or i > 40)]
    flush = [e for j in range(20) for e in _pass(2, 80 * j + 75, wait=j == 0)]
    out, sems, found = cond_queues({1: prod, 2: flush}, OBJS)
    assert (found[0]["batch"], found[0]["items"], found[0]["blocks"]) == (8, 160, 20)
    assert sems[0]["batch"] == 8
    assert [e["kind"] for e in out[1]] == ["release"] * 160      # the blocks fold
    assert sum(e["kind"] == "acquire" for e in out[2]) == 20


def test_batches_need_twice_as_many_items_as_passes():
    prod = [e for i in range(30) for e in _append(1, 60 * i, notify=i % 2 == 0)]
    flush = [e for j in range(20) for e in _pass(2, 100 * j + 5, wait=j % 3 == 0)]
    assert cond_queues({1: prod, 2: flush}, OBJS)[2] == []


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    d = tmp_path_factory.mktemp("cq")
    out = str(d / "cq.jsonl")
    with open(d / "stdout", "w") as fh:
        run = trace_command([sys.executable, PROGRAM, "120", "3", "1000"], out, cwd=ROOT,
                            stdout=fh, timeout=120)
    assert run.returncode == 0
    assert (d / "stdout").read_text() == "done 120\n"
    tr = read_trace(out)
    return tr, build(tr)


def test_cond_queue_program_is_a_semaphore_between_producer_and_pool(traced):
    tr, res = traced
    text = res.text
    # named after the condition (self.ready), which the semaphore stands for
    assert "semaphore ready_items permits 0" in text
    assert ("# Hand-over through the condition created at "
            f"{SITE}:40 and a container: its 120 notifies are releases of a semaphore of "
            "items (suffix _items), and the 120 passes of the waiting threads through their "
            "lock block acquire one each, waiting or not.") in text
    # the three identical workers are one pool whose loop takes an item
    assert res.info["runners"]["worker"]["size"] == 3
    assert set(res.info["runners"]) == {"main", "worker"}
    ops = {pool: [ln.split()[0] + " " + ln.split()[1] for ln in body.splitlines()
                  if re.match(r"\s+(acquire|release|lock|unlock|wait|notify)\b", ln)
                  and ln.split()[1] != "gil"]              # the model's GIL, not the program's
           for pool, body in re.findall(r"pool (\w+) size \w+ \{\n(.*?)\n    \}", text, re.S)}
    assert ops == {"main": ["release ready_items"],
                   "worker": ["acquire ready_items", "lock count_lock", "unlock count_lock"]}


def test_per_item_locks_fold_and_the_work_stays(traced):
    tr, res = traced
    text = res.text
    assert (f"#   {SITE}:25: 120 lock made; 120 acquisitions, 0 contended in all\n") in text
    assert f"#   lock lock at {SITE}:25 (120 objects)\n" in text
    assert re.findall(r"^    mutex (\w+)", text, re.M) == ["gil", "count_lock"]   # the GIL's own
    # the hashing and spinning the workers do per item is in the model: their loop keeps
    # nearly all its CPU (fragments below 3% pruned, at most a few)
    m = re.search(r"pool worker size workers \{\n(?:.*\n)*?.*?pruned: \d+ fragment\(s\).*?"
                  r"([\d.]+)% in all", text)
    assert m is None or float(m.group(1)) < 10.0
    cpu = [float(x) for x in re.findall(
        r"cpu \w+\((?:\d+, )?([\d.]+) us \* work_worker", text)]
    assert cpu and sum(cpu) > 100          # spin(3000) + sha256 of 256 copies: > 100 us
