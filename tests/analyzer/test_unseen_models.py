"""Models of the programs written blind to the analyzer (tests/programs/unseen, issue 41),
built from recorded traces (python tests/traces/record.py unseen): process pools,
asyncio with an executor, divided work, schedule-keeping clients.  The structure each
class must have; their predictions are measured by their suites (qpn verify suites/...)."""
import re

import pytest

import qpn
from qpn.frontends.analyze import build

from analyze_support import recorded_unseen


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            tr = recorded_unseen(name, tmp_path_factory.mktemp(name[:-3]))
            cache[name] = build(tr)
        return cache[name]
    return get


def _pool(text, name):
    m = re.search(rf"pool {name} size (\w+) \{{\n(.*?)\n    \}}", text, re.S)
    assert m, f"no pool {name}"
    return m[1], m[2]


def test_a_process_pool_is_one_pool_of_processes_with_a_size(models):
    """ProcessPoolExecutor: the worker processes are one pool `worker` sized `workers`,
    without a GIL (each process has its own); the parent puts the chunks and waits for
    their completions; the executor's own threads are no part of the model."""
    res = models("procpool_chunks.py")
    size, body = _pool(res.text, "worker")
    assert size == "workers" and "param workers = 2\n" in res.text
    assert "take pool_q" in body and "release pool_done" in body and "gil" not in body
    assert not re.search(r"pool \w*(thread|feeder)\w* size", res.text)
    main = _pool(res.text, "main")[1]
    assert "put pool_q" in main and "acquire pool_done" in main


def test_a_batch_of_many_small_tasks_is_counted_at_once(models):
    """multiprocessing.Pool.imap_unordered of 500 tasks: the batch's hand-overs counted at
    once (release / acquire of N), not a color per pass; the completions as many as the
    items."""
    res = models("mp_imap.py")
    main = _pool(res.text, "main")[1]
    m = re.search(r"release (\d+) pool_q", main)
    assert m and re.search(rf"acquire {m[1]} pool_done", main)
    assert "semaphore pool_q permits 0" in res.text
    assert "acquire pool_q" in _pool(res.text, "worker")[1]
    qpn.parse(res.text)                          # and it compiles: no color explosion
    assert qpn.compile_net(qpn.parse(res.text)) is not None


def test_worker_processes_given_their_share_are_a_fork_with_a_second_trace_to_take(models):
    """subprocess.Popen of a worker script per share, joined: a fork of a pool of worker
    processes; how the work divides is an assumption one trace cannot decide, and the
    model says which second trace decides it."""
    res = models("subprocess_workers.py")
    body = _pool(res.text, "worker")[1]
    assert re.search(r"acquire \w+_start", body) and re.search(r"release \w+_done", body)
    st = res.info["second_trace"]["worker"]
    assert st["split"] == "split_worker"
    # the program as it was run (its path where it was traced), at 1 worker
    assert st["command"].startswith("qpn trace -o second.jsonl -- python ") and \
        st["command"].endswith("/subprocess_workers.py 1")


def test_asyncio_tasks_share_their_event_loop(models):
    """async_offload: a task per request (a pool of lanes, sized far above the traced
    maximum), its code under the loop's mutex, its executor work a future completed by
    the thread pool, the in-process client an open source with a rate, a response timer
    from the arrival to the future's completion."""
    res = models("async_offload.py")
    text = res.text
    assert "mutex event_loop" in text
    name = next(n for n in res.info["runners"] if n.endswith("one"))
    size, body = _pool(text, name)
    assert re.search(rf"param {size} = (\d+)\n", text) and \
        int(re.search(rf"param {size} = (\d+)\n", text)[1]) >= 64
    locks = len(re.findall(r"(?<!un)lock event_loop\n", body))
    assert locks == body.count("unlock event_loop\n") >= 3
    assert re.search(r"acquire \w+_done\n\s+timer stop response", body)
    # the in-process client keeps a schedule and works for each request: it takes the
    # planned instants from a source, and the response is timed from its hand-over
    assert re.search(r"source \w+ every .*\{\s*put plan_\w+\s*\}", text)
    assert re.search(r"timer start response\s*put \w+", text)
    # the loop's own thread is no runner: its tasks are, with its CPU spread over their steps
    assert "main" in res.info["omitted"] and "main" not in res.info["runners"]


def test_a_client_that_keeps_a_schedule_is_a_source_and_its_receiver_an_event_loop(models):
    """sched_server: the client sleeps until each planned send: an open source (rate
    parameter) read from the timing; its receiver thread waits in a selector for whichever
    connection answers: handlers under one mutex; the response ends at the answer's
    receipt."""
    res = models("sched_server.py")
    text = res.text
    assert re.search(r"param rate_plan_\d+ = [\d.]+\n", text)
    assert "# Schedule:" in text
    assert "mutex loop_receiver" in text
    handler = re.search(r"pool receiver_(\w+) size 1 \{\n((?:(?!\n    \}).)*timer stop response)",
                        text, re.S)
    assert handler and handler[1].startswith("replies")
    assert res.info["timers"]["response"]["hops"] >= 3


def test_senders_sharing_one_schedule_take_it_from_one_plan(models):
    """http_schedule: several sender threads take the next planned request: one source
    into one plan queue, the senders its takers; the response ends at the server's
    answer."""
    res = models("http_schedule.py")
    text = res.text
    plan = re.search(r"source \w+ every .*\{\s*timer start response\s*put (plan_\d+)", text)
    assert plan
    size, body = _pool(text, "sender")
    assert size == "senders" and f"take {plan[1]}" in body and "timer stop response" in body


@pytest.mark.parametrize("name, pool", [("divided_rows.py", "band"),
                                        ("divided_python.py", "analyse")])
def test_work_divided_among_threads_is_read_from_their_arguments(models, name, pool):
    """Threads given adjacent row bounds, or slices of one list: split 1, the evidence
    stated, not an assumption."""
    res = models(name)
    m = re.search(rf"# (share of the work per iteration of pool '{pool}'.*?)\nparam (split_\w+) "
                  r"= 1\n", res.text, re.S)
    assert m and "from what the threads were given" in m[1]
    assert f"#   {m[2]}:" not in res.text            # not among the header's assumptions
    assert res.info["division"][pool]["from_arguments"]


def test_the_traced_response_pairs_each_answer_with_an_arrival_before_it(models):
    """async_streams (the server's trace taken by `qpn verify suites/async_streams`): a
    readiness probe's empty read, 121 ms before the load, is one arrival more than the
    answers.  Paired first with first, every request was timed from the arrival before
    its own and the trace's response read 11.98 ms, above the 2.911 ms the client itself
    measured in that run (planned send to reply, which holds the server's span); each
    answer paired with the latest arrival before it, the span lies between the request's
    CPU in the executor (926.7 us per request) and the client's figure."""
    res = models("async_streams_server.py")
    timer = res.info["timers"]["response"]
    assert 0.9267e6 < timer["trace_ns"] < 2.911e6
    assert res.info["sources"]["requests"]["n"] == 401    # the probe's read stays an arrival
