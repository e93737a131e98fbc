"""Threads started one per item (frontends/analyze/spawns.py): a thread-per-connection
server and a load generator's thread per request are a hand-over to a pool."""
import os
import sys

from qpn.frontends.analyze import build
from qpn.frontends.analyze.spawns import spawns_as_pool
from qpn.frontends.pytrace import trace_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _thread(tid, start, end, parent=1, site="s.py:9"):
    return [{"kind": "thread_start", "tid": tid, "ts": start, "cpu": 0, "parent": parent,
             "site": site, "name": f"Thread-{tid}"},
            {"kind": "io", "tid": tid, "ts": start + 1, "cpu": 1, "op": "send", "dur": 1},
            {"kind": "thread_end", "tid": tid, "ts": end, "cpu": 5}]


def test_a_burst_of_threads_at_start_up_is_a_pool_not_a_thread_per_item():
    main = [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0, "name": "MainThread"},
            {"kind": "io", "tid": 1, "ts": 100, "cpu": 9, "op": "accept", "dur": 1}]
    by = {1: main, **{t: _thread(t, 10 * t, 300 + t) for t in (2, 3, 4, 5)}}
    assert spawns_as_pool(by) == (by, [])            # started back to back: a pool
    by[1] = main[:1] + [{"kind": "io", "tid": 1, "ts": 25, "cpu": 1, "op": "accept",
                         "dur": 0}] + main[1:]       # an operation between two starts
    new, objs = spawns_as_pool(by)
    assert len(objs) == 1 and objs[0]["type"] == "queue"
    assert sorted(new) == [1, 2, 3, 4, 5]            # all alive at once: four lanes
    assert [e["item"] for e in new[1] if e["kind"] == "put"] == [2, 3, 4, 5]
    two = {1: by[1], 2: _thread(2, 20, 50), 3: _thread(3, 30, 60)}
    assert spawns_as_pool(two) == (two, [])          # fewer than MIN_THREADS


def test_a_thread_per_connection_server_is_a_pool_fed_by_its_acceptor(tmp_path):
    run = trace_command([sys.executable, os.path.join(ROOT, "tests", "programs",
                                                      "thread_per_conn.py"), "30", "200"],
                        str(tmp_path / "t.jsonl"))
    assert run.returncode == 0
    res = build(run.trace)
    text = res.text
    runners = res.info["runners"]
    assert {"main", "acceptor", "process_request_thread"} <= set(runners)
    handler = text[text.index("pool process_request_thread "):]
    acceptor = text[text.index("pool acceptor "):text.index("pool process_request_thread ")]
    spawn = handler.split("take ")[1].split()[0]
    assert spawn.startswith("spawn_") and f"put {spawn}" in acceptor
    # the handler's answer and the client's wait for it: one connection's two ends
    assert "take backlog" in acceptor and "put replies" in handler
    assert "30 items handed over" in text
    # one request at a time: a few lanes (a thread may still be ending as the next ones
    # begin, more so on a loaded machine), not 30 threads that each ran once
    assert runners["process_request_thread"]["size"] < 10
