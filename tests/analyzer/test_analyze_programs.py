"""`qpn build` on real traces of the three suite programs, and predictions checked
against real runs at other configurations.

The structure tests compare what the analyzer recovered from one trace of each
program (module fixtures, small arguments) with what the programs do.  The
prediction tests run 5 rounds of the experiment -- trace at one configuration,
build, change a parameter, simulate, and time the untraced program at that
configuration, alternating traces and timed runs four times in a round (see
analyze_support.paired_rounds) -- and assert the median error.  The
machine is a shared 2-core VM: runs are isolated (own session, autogroup nice
-19); the asserted bound is generous (see BOUND) while every error is printed.
The tests that time real runs or check GIL estimates are marked ``measured`` and
run with ``python -m pytest -m measured`` on a quiet machine.
"""
import re
import statistics

import pytest

import qpn
from analyze_support import (SOURCES, one_trace, paired_rounds, predict_batch_ms,
                             predict_requests_per_s, predict_rounds_ms, simulate, thread_cpu_ns,
                             traces_from, typical)
from qpn.errors import QPNError
from qpn.frontends.analyze import build

#: asserted bound on the median over rounds of |measured - predicted| / measured.
#: The target is 15%.  The machine runs pure-Python code at two speeds ~1.9x
#: apart (see analyze_support.paired_rounds), and its speed can change between
#: a round's trace and its runs, so the assertion is generous and the errors
#: are printed.
BOUND = 0.5
TASKS, WORKERS = 30, 3
ITERATIONS, THREADS = 8, 3
REQUESTS = 40
ROUNDS = 12


@pytest.fixture(scope="module", params=SOURCES)
def source(request):
    """Recorded traces (tests/traces) in the default run; fresh ones when ``measured``."""
    return request.param


@pytest.fixture(scope="module")
def pool(source, tmp_path_factory):
    tr = one_trace(source, tmp_path_factory, "pool_queue_lock.py", TASKS, WORKERS)
    return tr, build(tr)


@pytest.fixture(scope="module")
def barrier(source, tmp_path_factory):
    tr = one_trace(source, tmp_path_factory, "barrier_iterations.py", ITERATIONS, THREADS)
    return tr, build(tr)


@pytest.fixture(scope="module")
def split(source, tmp_path_factory):
    """split_rounds traced at 2 workers (the model's) and at 1."""
    return (one_trace(source, tmp_path_factory, "split_rounds.py", ROUNDS, 2),
            one_trace(source, tmp_path_factory, "split_rounds.py", ROUNDS, 1))


@pytest.fixture(scope="module")
def poll(source, tmp_path_factory):
    return one_trace(source, tmp_path_factory, "sleep_poll.py", 150, 2)


@pytest.fixture(scope="module")
def server(source, tmp_path_factory):
    tr = one_trace(source, tmp_path_factory, "file_server.py", REQUESTS, 2)
    return tr, build(tr)


def report(capsys, line):
    with capsys.disabled():
        print("\n" + line, end="")


def check_model(res):
    net = qpn.parse(res.text)
    assert net.params
    return net


def tids_named(trace, prefix):
    return [t for t, n in trace.thread_names().items() if n.startswith(prefix)]


# ------------------------------------------------------------------ structure
def test_pool_queue_lock_structure(pool):
    tr, res = pool
    check_model(res)
    info = res.info
    w = info["runners"]["worker"]
    assert w["mode"] == "forever" and w["size"] == WORKERS and w["size_param"] == "workers"
    assert info["params"]["workers"] == WORKERS
    assert info["runners"]["main"]["mode"] == "counted"
    assert info["objects"]["tasks"]["capacity"] == 8 and info["objects"]["tasks"]["kind"] == "queue"
    assert info["objects"]["results"]["capacity"] is None
    assert any(o["kind"] == "mutex" and o["type"] == "lock" for o in info["objects"].values())
    # the main thread: a counted loop of puts and one of takes, TASKS each
    loops = [lp for lp in info["loops"] if lp["runner"] == "main"]
    assert [lp["count"] for lp in loops] == [TASKS, TASKS] and loops[0]["param"] == "n_tasks"
    body = res.text[res.text.index("pool main"):]
    assert re.search(r"loop n_tasks times \{[^}]*put tasks\s*\}", body)
    assert re.search(r"loop n_tasks times \{[^}]*take results\s*\}", body)
    worker = res.text[res.text.index("pool worker"):]
    order = [worker.index(s) for s in ("take tasks", "as compute", "lock lock", "unlock lock",
                                       "put results")]
    assert order == sorted(order)
    assert "stop markers not modelled" in res.text and w["exits"] == WORKERS
    # mean CPU demand of the tasks vs the workers' measured CPU
    demand = sum(s["mean"] for s in info["steps"]["worker"]) * TASKS
    measured = thread_cpu_ns(tr, tids_named(tr, "ThreadPoolExecutor"))
    assert demand == pytest.approx(measured, rel=0.15)
    assert all(s["gil_free"] == 0 for s in info["steps"]["worker"])   # pure Python


def test_sources_elsewhere(pool):
    """Names come from the program's source; a trace read where its recorded working
    directory does not exist says so, and --source-dir points at the files."""
    import copy
    import os
    from qpn.frontends.analyze import Options
    from qpn.errors import QPNError
    tr, res = pool
    moved = copy.copy(tr)
    moved.header = copy.deepcopy(tr.header)
    moved.header.program["cwd"] = "/nonexistent/checkout"
    bare = build(moved)
    assert any("not at /nonexistent/checkout" in w for w in bare.warnings)
    assert "as compute" not in bare.text and "n_tasks" not in bare.text
    found = build(moved, Options(source_dir=tr.header.program["cwd"]))
    assert not any("not at" in w for w in found.warnings)
    assert found.text == res.text
    with pytest.raises(QPNError, match="no such directory"):
        build(moved, Options(source_dir=os.path.join(tr.header.program["cwd"], "nope")))


def test_barrier_iterations_structure(barrier):
    tr, res = barrier
    check_model(res)
    info = res.info
    w = info["runners"]["worker"]
    assert w["mode"] == "forever" and w["size"] == THREADS
    assert info["omitted"] == {"main": info["omitted"]["main"]}      # main only waits
    b = next(o for o in info["objects"].values() if o["kind"] == "barrier")
    assert b["parties"] == THREADS
    assert re.search(r"barrier \w+ parties workers", res.text)       # follows the pool size
    sem = next(o for o in info["objects"].values() if o["kind"] == "semaphore")
    assert sem["permits"] == 2
    # the condition the last worker notifies and the start event: recovered, not in the
    # steady state (the main thread that waits on them is not modelled)
    unused = info["objects_unused"]
    assert unused["finished"] == {"kind": "condition", "type": "cond", "lock": "finished"}
    assert unused["start"]["kind"] == "event"
    body = res.text[res.text.index("pool worker"):]
    assert re.search(r"acquire (writers\w*)\s+release \1\s+(# .*\s+|cpu .*\s+)*await barrier\w*\s+\}",
                     body)
    # one fragment per iteration: pure Python (GIL) then hashlib (no GIL).  Timed alone,
    # python_work(16000) takes ~0.68 ms and sha256 of 2 MiB ~1.15 ms: a GIL-free share
    # of ~0.63, or ~0.47 when the machine runs Python at its slow speed (hashlib is not
    # affected).  The estimate sees the GIL hand-overs after each barrier trip (handoff.py).
    (step,) = [s for s in info["steps"]["worker"] if s["mean"] > 100_000]
    assert 0.35 <= step["gil_free"] <= 0.8, step
    measured = thread_cpu_ns(tr, tids_named(tr, "worker")) / (ITERATIONS * THREADS)
    assert step["mean"] == pytest.approx(measured, rel=0.15)


def test_split_rounds_barrier_and_divided_work(split):
    """A barrier whose parties are the pool plus the main thread, and rows divided among
    the workers: the barrier follows the pool size, the division is a named assumption
    from one trace and fitted from traces at two pool sizes."""
    two, one = split
    res = build(two)
    check_model(res)
    assert re.search(r"barrier (\w+) parties workers \+ 1\n", res.text)
    assert res.info["objects"][re.search(r"barrier (\w+) parties", res.text)[1]]["parties"] == 3
    # one trace: the division is an assumption, in the header and as a param
    assert "param split_worker = 0\n" in res.text
    assert re.search(r"# Assumptions .*\n#   split_worker: pool 'worker'", res.text)
    assert re.search(r"cpu \w+\(.* \* work_worker / speedup_\w+\)", res.text)
    # a runner that only waits on the barrier is kept, however little CPU it uses: left out
    # (as "3.0% of the CPU and no hand-overs" once under load), the barrier kept 3 parties
    # for 2 modelled threads and the model deadlocked
    from qpn.frontends.analyze import Options
    lean = build(two, Options(prune=0.5))
    assert "main" in lean.info["runners"] and "parties workers + 1\n" in lean.text
    # one worker: two parties, no deadlock (it had `parties 3` and printed NaN)
    x1 = simulate(res.text, time=0.3, replications=4, workers=1).get("throughput", "main.begin")
    x2 = simulate(res.text, time=0.3, replications=4, workers=2).get("throughput", "main.begin")
    assert x1 > 0 and x1 == pytest.approx(x2, rel=0.15)      # the work per thread is kept
    # with the trace at 1 worker: a thread's CPU per round doubles, so the share is ~1
    both = build(two, others=(one,))
    s = both.info["across"]["pools"]["worker"]["split"]
    assert 0.7 <= s <= 1.0, both.info["across"]
    assert f"param split_worker = {s:g}\n" in both.text and "#   split_worker:" not in both.text
    y1 = simulate(both.text, time=0.3, replications=4, workers=1).get("throughput", "main.begin")
    y2 = simulate(both.text, time=0.3, replications=4, workers=2).get("throughput", "main.begin")
    # one worker does all 48 rows: (1 - s) + 2 s times a worker's traced round
    assert y1 / y2 == pytest.approx(1 / (1 + s), rel=0.15)


def test_sleep_takes_what_was_asked_plus_what_the_os_added(poll):
    """A 1 ms sleep lasts longer (Linux's timer slack alone is 50 us for a normal thread):
    the model's sleep is the request plus the lower quartile of the overshoot in the trace
    (it was the bare request, 7-12% fast on this program's rounds)."""
    res = build(poll)
    check_model(res)
    durs = sorted(e["dur"] - e["requested"] for e in poll.events
                  if e["kind"] == "wait" and e.get("on") == "sleep")
    extra = durs[len(durs) // 4]
    assert extra >= 40_000                                   # ns: the timer slack at least
    m = re.search(r"asked for 1 ms, took ([\d.]+) us longer .*\n\s*sleep det\(([\d.]+) ms\)",
                  res.text)
    assert m, res.text
    # the model keeps the steady-state loop's sleeps (not the first and last): nearly all
    assert float(m[1]) * 1000 == pytest.approx(extra, rel=0.03)
    assert float(m[2]) * 1e6 == pytest.approx(1e6 + float(m[1]) * 1000, rel=1e-3)


def test_identical_workers_are_one_pool_in_every_trace(source, tmp_path_factory):
    """Traces of one configuration of cache_workers: which worker evicts the cache and
    which writes the log changes from run to run.  In short runs (40 requests) one worker
    may take only the one rare path and the other only the other: two identical workers
    were then two one-thread pools (2 of 6 traces); they must be one pool of 2.  Five
    longer runs give the same runners, sizes and objects, and together report the pool's
    spread."""
    for tr, _ in traces_from(source, tmp_path_factory, "cache_workers.py", 40, 2, runs=5):
        sizes = {n: r["size"] for n, r in build(tr).info["runners"].items()}
        assert sizes == {"main": 1, "worker": 2}, sizes
    traces = [t for t, _ in traces_from(source, tmp_path_factory, "cache_workers.py", 120, 2, runs=5)]
    shapes, texts = set(), {}
    for tr in traces:
        res = build(tr)
        check_model(res)
        shape = (tuple(sorted((n, r["size"]) for n, r in res.info["runners"].items())),
                 tuple(sorted(o["kind"] for o in res.info["objects"].values())))
        shapes.add(shape)
        texts[shape] = res.text
    assert len(shapes) == 1, "\n\n".join(texts.values())
    ((runners, _),) = shapes
    assert dict(runners)["worker"] == 2
    both = build(traces[0], others=tuple(traces[1:]))
    pool = both.info["across"]["pools"]["worker"]
    assert pool["sizes"] == [2] * 5 and len(pool["work_ns"]) == 5
    assert "#   pool 'worker' at 2 threads in 5 traces: CPU per iteration" in both.text
    # short runs on a VM whose cores run Python at two speeds ~1.9x apart (see BOUND)
    assert 0 <= pool["work_spread"] < 1.0, pool


def test_repeated_traces_pool_their_cpu_samples(source, tmp_path_factory):
    """Five traces of one configuration of cache_workers: alone, the hashing step's GIL-free
    share ranged from about 0.6 to 1.0 from one trace to the next.  Built together, each CPU
    step is fitted from the samples of all five, so the model no longer depends on which
    trace comes first (its demands and shares agree whichever is the model's)."""
    traces = [t for t, _ in traces_from(source, tmp_path_factory, "cache_workers.py", 120, 2, runs=5)]

    def steps(res):
        return {st["name"]: st for sts in res.info["steps"].values() for st in sts}
    alone = [steps(build(t)) for t in traces]
    firsts = [steps(build(traces[i], others=tuple(traces[:i] + traces[i + 1:]))) for i in (0, 3)]
    for a in firsts:
        for st in a.values():
            assert st["traces"] == 5, st
    common = set(firsts[0]) & set(firsts[1])
    assert "sha256" in common
    for name in common:
        a, b = firsts[0][name], firsts[1][name]
        assert a["mean"] == pytest.approx(b["mean"], rel=0.03), (name, a, b)
        assert abs(a["gil_free"] - b["gil_free"]) < 0.1, (name, a, b)
    # the hashing step's samples: every trace's, and more than the first trace alone had
    sha = firsts[0]["sha256"]
    assert sha["n"] > 2 * alone[0]["sha256"]["n"]
    shares = [al["sha256"]["gil_free"] for al in alone if "sha256" in al]
    assert min(shares) - 1e-9 <= sha["gil_free"] <= max(shares) + 1e-9


def test_open_loop_client_becomes_a_source_with_a_rate(source, tmp_path_factory):
    """A client thread that sleeps until its next scheduled arrival is an open workload:
    a `source` with a rate parameter (it was a thread looping over literal sleeps, and a
    user could not ask for another load).  A client that sleeps a fixed time after each
    request stays a thread: its period includes its own work."""
    tr = one_trace(source, tmp_path_factory, "open_client.py", 300, 2, 400)
    res = build(tr)
    check_model(res)
    # the client works for each request (0.1 ms under the GIL, what holds its arrivals
    # back when the workers are busy): it stays a thread taking the planned instants, and
    # the response is timed from its hand-over
    (client, q), = res.info["open_loop"].items()
    assert client == "client" and "client" in res.info["runners"]
    m = re.search(rf"param (rate_{q}) = ([\d.]+)\n", res.text)
    assert m and 300 <= float(m[2]) <= 520, res.text        # 400/s drawn: the sum of 300
    assert re.search(rf"source \w+ every exp\(1 / {m[1]}\) {{\s*put {q}\s*}}", res.text)
    body = res.text[res.text.index("pool client "):res.text.index("pool worker ")]
    assert f"take {q}" in body and re.search(r"timer start response\s*put \w+\s*\}", body)
    x = simulate(res.text, time=2.0, replications=4, **{m[1]: 1000}).get("throughput", "worker.begin")
    assert x == pytest.approx(1000, rel=0.05)             # the rate parameter drives the load
    fixed = build(one_trace(source, tmp_path_factory, "open_client.py", 200, 2, 400, 1))
    assert fixed.info["open_loop"] == {} and "client" in fixed.info["runners"]


def test_future_waits_hold_the_submitter_to_the_pool(source, tmp_path_factory):
    """executor.map: the main thread waits on the futures of the chunks it submitted.
    Folded, those waits vanished and the model's main thread put chunks 6x faster than
    the pool took them (an unstable queue, predicted 71-164x off).  They are a semaphore
    now: the pool releases one permit per task, the waiter acquires one per wait, and
    the main thread's loop is one round per iteration."""
    tr = one_trace(source, tmp_path_factory, "mapreduce.py", 10, 2)
    res = build(tr)
    check_model(res)
    m = re.search(r"semaphore (\w+_done) permits 0", res.text)
    assert m, res.text
    worker = res.text[res.text.index("pool worker"):]
    main = res.text[res.text.index("pool main"):res.text.index("pool worker")]
    assert f"release {m[1]}" in worker and f"acquire {m[1]}" in main
    # a round: submit 12 chunks, then wait for 12 results (not a put loop with a rare
    # branch into 12 waits, which waited for chunks not yet submitted and deadlocked)
    assert re.search(r"loop (n_\w+) times \{[^}]*put \w+\s*\}\s*loop \1 times \{[^}]*acquire", main)
    r = simulate(res.text, time=0.5, replications=4)
    rounds, took = r.get("throughput", "main.begin"), r.get("throughput", "worker.begin")
    assert took == pytest.approx(12 * rounds, rel=0.05)       # flow balance: a stable model


def test_file_server_structure(server):
    tr, res = server
    check_model(res)
    info = res.info
    runners = info["runners"]
    assert {k: (v["mode"], v["size"]) for k, v in runners.items()} == {
        "acceptor": ("forever", 1), "worker": ("forever", 2), "client": ("forever", 2)}
    assert "main" in info["omitted"]
    assert info["objects"]["connections"]["capacity"] == 16
    assert {"backlog", "replies"} <= set(info["objects"])
    acc = res.text[res.text.index("pool acceptor"):res.text.index("pool worker")]
    assert acc.index("take backlog") < acc.index("put connections")
    wk = res.text[res.text.index("pool worker"):res.text.index("pool client")]
    assert wk.index("take connections") < wk.index("render_header") < wk.index("put replies")
    cl = res.text[res.text.index("pool client"):]
    assert cl.index("put backlog") < cl.index("take replies")
    assert not info["sources"]                       # the clients are in the trace: closed
    # CPU per request: the model's worker steps vs the workers' measured CPU
    demand = sum(s["mean"] for s in info["steps"]["worker"])
    measured = thread_cpu_ns(tr, tids_named(tr, "worker")) / REQUESTS
    assert demand == pytest.approx(measured, rel=0.2)


# ---------------------------------------------------------------- predictions
def predict_in_rounds(capsys, tmp_path_factory, name, traced, configs, targets, predict, measured,
                      reps=3):
    """Trace, build, predict, measure: once per round (see :func:`paired_rounds`).

    ``targets``: labels of what is predicted; ``predict(res, label)`` and
    ``measured(runs, label)`` give the two values.  Each round's error is
    printed; the median over the rounds is asserted within BOUND and returned.
    The guide's yardstick for this machine is printed too: the error against
    max(15%, 2 x the measured spread), the spread being that of the measured
    value over the rounds, (max - min) / min.
    """
    errs: dict = {t: [] for t in targets}
    seen: dict = {t: [] for t in targets}
    for k, (tr, runs) in enumerate(paired_rounds(tmp_path_factory, name, traced, configs,
                                                          reps=reps)):
        res = build(tr)
        for t in targets:
            p, m = predict(res, t), measured(runs, t)
            errs[t].append(abs(m - p) / m)
            seen[t].append(m)
            report(capsys, f"prediction {name} {t}, round {k + 1}: measured {m:.2f}, "
                           f"predicted {p:.2f}, error {100 * errs[t][-1]:.1f}%")
    for t in targets:
        med = statistics.median(errs[t])
        spread = (max(seen[t]) - min(seen[t])) / min(seen[t])
        yardstick = max(0.15, 2 * spread)
        report(capsys, f"prediction {name} {t}: median error over {len(errs[t])} rounds "
                       f"{100 * med:.1f}%; measured spread {100 * spread:.1f}%, yardstick "
                       f"{100 * yardstick:.1f}%: {'within' if med <= yardstick else 'OUTSIDE'}")
        assert med < BOUND
    return errs


@pytest.mark.measured
def test_predict_pool_queue_lock(tmp_path_factory, capsys):
    """Built at 3 workers; predicted at 2 and 1: the batch's run time (ms)."""
    predict_in_rounds(capsys, tmp_path_factory, "pool_queue_lock.py", (TASKS, WORKERS),
                      [(TASKS, 2), (TASKS, 1)], (2, 1),
                      lambda res, w: predict_batch_ms(res, w, TASKS),
                      lambda runs, w: typical(runs[TASKS, w]))


@pytest.mark.measured
def test_predict_barrier_iterations(tmp_path_factory, capsys):
    """Built at 3 threads; predicted at 2 and 1 (barrier parties follow): run time (ms)."""
    predict_in_rounds(capsys, tmp_path_factory, "barrier_iterations.py", (ITERATIONS, THREADS),
                      [(ITERATIONS, 2), (ITERATIONS, 1)], (2, 1),
                      lambda res, w: predict_rounds_ms(res, w, ITERATIONS),
                      lambda runs, w: typical(runs[ITERATIONS, w]))


@pytest.mark.measured
def test_predict_file_server(tmp_path_factory, capsys):
    """Built at 2 workers; predicted at 1: requests per second.  The measured
    throughput is marginal, (120 - 40) requests / (T(120) - T(40)), which takes
    out the program's fixed start-up and shut-down time."""
    def measured(runs, w):
        # a difference of two means: 5 runs per process (20 per round) for its noise
        return 80 / (typical(runs[120, w]) - typical(runs[40, w])) * 1000

    predict_in_rounds(capsys, tmp_path_factory, "file_server.py", (REQUESTS, 2),
                      [(40, 1), (120, 1)], (1,), predict_requests_per_s, measured, reps=5)


def test_cores_as_per_core_run_queues_on_request(split):
    """A barrier among more threads than cores: the ps model names the choice in its
    header; --cpu jsq-ps gives per-core run queues, and with equal work per thread a round
    then takes the busiest core's share (3 workers + main on 2 cores)."""
    from qpn.frontends.analyze import Options
    two, _ = split
    ps = build(two)
    assert "cpu host cores cores ps\n" in ps.text and "#   --cpu: every thread shares every core" in ps.text
    jsq = build(two, Options(cpu="jsq-ps"))
    assert "cpu host cores cores jsq-ps\n" in jsq.text and "#   --cpu:" not in jsq.text
    # at 1 worker (2 threads on 2 cores) the two agree; at 3 workers jsq-ps is slower
    x = {(m, w): simulate(r.text, time=0.3, replications=4, workers=w).get("throughput", "main.begin")
         for m, r in (("ps", ps), ("jsq", jsq)) for w in (1, 3)}
    assert x["jsq", 1] == pytest.approx(x["ps", 1], rel=0.1)
    assert x["jsq", 3] < 0.95 * x["ps", 3]
    with pytest.raises(QPNError, match="--cpu fcfs: the cores are shared by ps or jsq-ps"):
        Options(cpu="fcfs")
