"""qpn synth: software models run as programs give traces that look like real ones
and whose measured facts are the model's (demands, branch frequencies, pool sizes)
and agree with the solvers (CTMC exactly, the simulator within its CI).

Statistical checks compare against 3 standard errors of the synthetic run
(batch means over 20 batches after the first, or i.i.d. samples); runs are
seeded, so every check is deterministic.
"""
import collections
import math
import os

import numpy as np
import pytest

import qpn
from qpn.frontends.synth import parse_time, synthesize
from qpn.frontends.synth.engine import Sim
from qpn.frontends.synth.servers import Server
from qpn.frontends.trace import read_trace
from qpn.frontends.trace_query import fragments, match_items
from qpn.cli import main
from qpn.errors import QPNError

from conftest import MODELS, TESTS_DIR

HERE = os.path.join(TESTS_DIR, "models_synth")
NB = 20                 # batches for batch-means standard errors


def model(name):
    return qpn.load(os.path.join(HERE if "/" not in name and os.path.exists(
        os.path.join(HERE, name)) else MODELS, name))


def pool_steps(net, runner):
    d = next(d for b in net.software for d in b.decls if getattr(d, "name", None) == runner)
    return d, d.body


def site(st):
    return f"{os.path.basename(st.loc.file)}:{st.loc.line}"


# ------------------------------------------------------------ batch statistics
def _edges(T):
    return np.linspace(0, T, NB + 2)[1:]            # the first batch is warm-up


def rate(times, T):
    """Events per second after warm-up, and its batch-means standard error."""
    e = _edges(T)
    r = np.histogram(np.asarray(times, float), e)[0] / ((e[1] - e[0]) / 1e9)
    return r.mean(), r.std(ddof=1) / math.sqrt(len(r))


def busy(intervals, T):
    """Time-average number of intervals open (e.g. lock utilization) and its SE."""
    e = _edges(T)
    w = e[1] - e[0]
    per = np.zeros(NB)
    for a, b in intervals:
        for k in range(max(0, int((a - e[0]) // w)), min(NB, int((b - e[0]) // w) + 1)):
            per[k] += max(0.0, min(b, e[k + 1]) - max(a, e[k]))
    per /= w
    return per.mean(), per.std(ddof=1) / math.sqrt(NB)


def batch_mean(times, values, T):
    """Mean of ``values`` grouped by the batch of ``times``, and its SE."""
    e = _edges(T)
    k = np.digitize(times, e) - 1
    vals = np.asarray(values, float)
    per = np.array([vals[k == i].mean() for i in range(NB)])
    return per.mean(), per.std(ddof=1) / math.sqrt(NB)


def iid(xs):
    xs = np.asarray(xs, float)
    return xs.mean(), xs.std(ddof=1) / math.sqrt(len(xs))


def cpu_busy(events, T, cores):
    """Utilization of the cores from the thread CPU clocks (batch means)."""
    e = _edges(T)
    per = np.zeros(NB)
    last: dict = {}
    for ev in events:
        c, t = ev.get("cpu"), ev["ts"]
        if c is None:
            continue
        prev = last.get(ev["tid"])
        last[ev["tid"]] = c
        if prev is not None and c > prev:
            k = np.searchsorted(e, t, side="right") - 1
            if 0 <= k < NB:
                per[k] += c - prev
    per /= (e[1] - e[0]) * cores
    return per.mean(), per.std(ddof=1) / math.sqrt(NB)


def requests(events):
    """(end ts, response ns) of every request that began and ended."""
    begin = {e["req"]: e["ts"] for e in events if e["kind"] == "request" and e["phase"] == "begin"}
    return [(e["ts"], e["ts"] - begin[e["req"]]) for e in events
            if e["kind"] == "request" and e["phase"] == "end"]


def within(value, ref, se, extra=0.0, k=3.0):
    assert abs(value - ref) <= k * se + extra, f"{value} vs {ref}: more than {k} SE ({se}) + {extra}"


def near(value_se, ref):
    """``value_se`` = (estimate, its standard error) within 3 SE of ``ref``."""
    within(value_se[0], ref, value_se[1])


# ------------------------------------------------------------------ the format
def test_trace_passes_the_checker_and_looks_like_a_traced_program(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert main(["synth", os.path.join(MODELS, "sw_server.qpn"), "-o", str(out),
                 "--time", "20s", "--seed", "7"]) == 0
    assert "wrote" in capsys.readouterr().err
    assert main(["trace-check", str(out)]) == 0
    t = read_trace(out)                                 # strict: every line validated
    h = t.header
    assert h.source == "synth" and not h.has("gil") and h.runtime["gil"] is False
    for cap in ("thread_cpu", "lock_hold", "lock_uncontended", "queue_items", "sites",
                "file_io", "socket_io"):
        assert h.has(cap), cap
    assert h.runtime["cpus"] == 2 and h.runtime["switch_interval_ns"] == 10_000_000
    assert h.extra["synth"]["params"]["threads"] == 8
    real = {"thread_start", "thread_end", "object", "acquire", "release", "put", "get", "io",
            "wait", "request"}
    assert {e["kind"] for e in t.events} == real
    ts = [e["ts"] for e in t.events]
    assert ts == sorted(ts)
    for tid, evs in t.by_thread().items():
        assert evs[0]["kind"] == "thread_start" and evs[-1]["kind"] == "thread_end"
        cpus = [e["cpu"] for e in evs]
        assert cpus == sorted(cpus), tid                # the CPU clock never runs back
        for e in evs[1:-1]:
            assert e["site"].startswith("sw_server.qpn:")
    for e in t.of_kind("acquire", "get", "put"):
        assert e["dur"] >= 0
    for e in t.of_kind("release"):
        assert e["hold"] >= 0
    # every hand-over is followed by its item, every release matches an acquire's end
    puts = [e for e in t.of_kind("put") if e["obj"] == t.of_kind("get")[0]["obj"]]
    pairs = match_items(t.events)
    assert len(pairs) == len(t.of_kind("get")) and len(pairs) >= len(puts) - 50
    assert all(p["ts"] + p["dur"] <= g["ts"] + g["dur"] for p, g in pairs)


def test_same_seed_same_trace_other_seed_other_trace(tmp_path):
    path = os.path.join(MODELS, "sw_server.qpn")
    outs = []
    for i, seed in enumerate((3, 3, 4)):
        out = tmp_path / f"{i}.jsonl"
        assert main(["synth", path, "-o", str(out), "--time", "3", "--seed", str(seed),
                     "--set", "threads=3"]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0] != outs[2]
    t = read_trace(tmp_path / "0.jsonl")
    assert sorted(n for n in t.thread_names().values() if n.startswith("workers")) == \
        ["workers-1", "workers-2", "workers-3"]


def test_errors_are_reported(tmp_path, capsys):
    assert main(["synth", os.path.join(MODELS, "mm1.qpn"), "-o", str(tmp_path / "x")]) == 2
    assert "no software block" in capsys.readouterr().err
    assert main(["synth", os.path.join(MODELS, "sw_server.qpn"), "-o", str(tmp_path / "x"),
                 "--set", "hit=1.5"]) == 2
    assert "sw_server.qpn:46" in capsys.readouterr().err
    with pytest.raises(QPNError):
        parse_time("soon")
    assert parse_time("250 ms") == 0.25 and parse_time("2min") == 120
    with pytest.raises(QPNError):
        synthesize(model("sw_server.qpn"), time=0)


# ------------------------------------------------------------- the model's facts
@pytest.fixture(scope="module")
def server():
    net = model("sw_server.qpn")
    res = synthesize(net, time=150, seed=11)
    return net, res


def test_threads_objects_and_structure_of_sw_server(server):
    net, res = server
    t = res.trace()
    pool, body = pool_steps(net, "workers")
    starts = [e for e in t.events if e["kind"] == "thread_start" and e.get("parent") == 1000]
    workers = [e for e in starts if e["name"].startswith("workers-")]
    assert len(workers) == 8 == res.info["threads"]["workers"]
    assert {e["site"] for e in workers} == {site(pool)}
    assert [e["name"] for e in starts if not e["name"].startswith("workers")] == ["clients"]
    objs = {o["name"]: o for o in t.objects().values()}
    assert objs["requests"]["type"] == "queue" and objs["requests"]["capacity"] == 50
    assert objs["cache"]["type"] == "lock"
    # the source: one acceptor thread, an accept per request
    accepts = [e for e in t.of_kind("io") if e["op"] == "accept"]
    assert res.info["sources"] == {"clients": "acceptor"}
    puts = [e for e in t.of_kind("put") if e["obj"] == objs["requests"]["obj"]]
    assert len(accepts) == len(puts) > 5000 and res.info["sinks"]["rejected"] == 0
    # lock acquisitions: one per pass through `lock cache`, each released
    take, parse, lock, lookup, unlock, branch, render, stop, put = body
    acq = [e for e in t.of_kind("acquire") if e["site"] == site(lock)]
    rel = [e for e in t.of_kind("release") if e["site"] == site(unlock)]
    gets = [e for e in t.of_kind("get") if e["site"] == site(take)]
    assert len(acq) == len(t.of_kind("acquire")) and len(acq) - len(rel) in (0, 1)
    passes = sum(1 for f in _frags(t) if f.site == (site(lock), site(unlock)))
    assert passes == len(rel)
    assert 0 <= len(gets) - len(acq) <= 8               # taken, not yet at the lock
    sends = [e for e in t.of_kind("io") if e["op"] == "send"]
    assert len(sends) == res.info["sinks"]["replies"] == res.info["timers"]["response"]


def _frags(t):
    out = []
    for evs in t.by_thread().values():
        out += fragments(evs)
    return out


def test_cpu_demands_and_branch_frequencies_are_the_models(server):
    net, res = server
    t = res.trace()
    env = net.param_values()
    _, body = pool_steps(net, "workers")
    take, parse, lock, lookup, unlock, branch, render, stop, put = body
    frags = _frags(t)
    by = collections.defaultdict(list)
    for f in frags:
        by[f.site].append(f.cpu)
    samples = {
        "parse": by[(site(take), site(lock))],
        "lookup": by[(site(lock), site(unlock))],
        "render": [f.cpu for f in frags if f.site[1] == site(stop)],     # up to `timer stop`
    }
    for st in (parse, lookup, render):
        xs = samples[st.label]
        assert len(xs) > 5000
        m, se = iid(xs)
        within(m, st.dist.mean(env) * 1e9, se)
    # the cache-miss branch: an io read on disk0 in 1 - hit of the passes
    reads = [e for e in t.of_kind("io") if e["op"] == "read"]
    n = len(samples["lookup"])
    p, hit = len(reads) / n, env["hit"]
    within(p, 1 - hit, math.sqrt(hit * (1 - hit) / n))
    assert {e["path"] for e in reads} == {"/data/disk0/read.dat"}
    # the disk: exp(12 ms) service, FCFS, one server, so response >= service
    m, se = iid([e["dur"] for e in reads])
    assert m >= 12e6 - 3 * se
    # the release that ends a pass holds the lock for the lookup (and its CPU wait)
    holds = [e["hold"] for e in t.of_kind("release")]
    assert np.mean(holds) >= np.mean(samples["lookup"])


# ------------------------------------------------------------- against the solvers
@pytest.fixture(scope="module")
def small():
    net = model("small_server.qpn")
    res = synthesize(net, time=300, seed=2)
    ev = res.events
    T = res.info["time"] * 1e9
    sends = collections.defaultdict(list)
    fd_name = {}
    for e in ev:
        if e["kind"] == "io" and e["op"] == "send":
            sends[e["fd"]].append(e["ts"])
    # replies are sent by the workers, rejections by the acceptor thread
    for fd, times in sends.items():
        tids = {e["tid"] for e in ev if e["kind"] == "io" and e.get("fd") == fd}
        fd_name[fd] = "rejected" if tids == {1001} else "replies"
    got = {fd_name[fd]: rate(times, T) for fd, times in sends.items()}
    reqs = requests(ev)
    got["response"] = batch_mean([a for a, _ in reqs], [b / 1e9 for _, b in reqs], T)
    got["host"] = cpu_busy(ev, T, 2)
    lock = next(o["obj"] for o in ev if o["kind"] == "object" and o["name"] == "cache")
    got["cache"] = busy([(e["ts"] - e["hold"], e["ts"]) for e in ev
                         if e["kind"] == "release" and e["obj"] == lock], T)
    return net, res, got


CELLS = {"replies": ("throughput", "replies.leave"), "rejected": ("throughput", "rejected.leave"),
         "response": ("residence", "response.running"), "host": ("utilization", "host"),
         "cache": ("tokens", "cache.held")}


def test_small_server_agrees_with_the_ctmc(small):
    net, res, got = small
    ref = qpn.solve(net, "ctmc", options={"limit": 10**9})
    for name, cell in CELLS.items():
        value, se = got[name]
        within(value, ref.get(*cell), se)
    # rejections matter: a fifth of the requests find the queue full
    assert 0.1 < ref.get("throughput", "rejected.leave") / 150 < 0.3


def test_small_server_throughput_agrees_with_the_simulator(small):
    net, res, got = small
    # a fixed simulated time (not a wall-clock cap), so the reference is deterministic
    ref = qpn.solve(net, "des", options={"time": 6, "replications": 8, "seed": 1,
                                         "quiet": True})
    for name in ("replies", "rejected", "response"):
        value, se = got[name]
        cell = CELLS[name]
        within(value, ref.get(*cell), se, extra=ref.ci(*cell))


def test_mutex_pool_lock_utilization_agrees_with_the_ctmc():
    net = model("mutex_pool.qpn")
    res = synthesize(net, time=400, seed=5)
    ev, T = res.events, res.info["time"] * 1e9
    ref = qpn.solve(net, "ctmc")
    util, se = busy([(e["ts"] - e["hold"], e["ts"]) for e in ev if e["kind"] == "release"], T)
    within(util, ref.get("tokens", "m.held"), se)
    assert 0.3 < util < 0.8                            # a busy lock: the check means something
    thr, se = rate([e["ts"] for e in ev if e["kind"] == "acquire"], T)
    within(thr, ref.get("throughput", "workers.begin"), se)
    host, se = cpu_busy(ev, T, 2)
    within(host, ref.get("utilization", "host"), se)
    # contention is seen: some acquisitions waited, and said so
    waited = [e for e in ev if e["kind"] == "acquire" and e["contended"]]
    assert waited and all(e["dur"] >= 0 for e in waited)
    assert all(e["dur"] == 0 for e in ev if e["kind"] == "acquire" and not e["contended"])


# ------------------------------------------------------------- every construct
def test_barrier_rounds_agree_with_the_ctmc():
    net = model("sw_barrier.qpn")
    res = synthesize(net, time=200, seed=3)
    ev, T = res.events, res.info["time"] * 1e9
    waits = [e for e in ev if e["kind"] == "wait" and e["on"] == "barrier"]
    ends = collections.Counter(e["ts"] + e["dur"] for e in waits)
    assert set(ends.values()) == {3}                   # parties 3: released together
    obj = next(e for e in ev if e["kind"] == "object" and e["type"] == "barrier")
    assert obj["parties"] == 3
    ref = qpn.solve(net, "ctmc")
    trips, se = rate(sorted(ends), T)
    within(trips, ref.get("throughput", "round.trip"), se)


def test_producers_consumers_with_timeouts_agree_with_the_ctmc():
    net = model("sw_producer_consumer.qpn").with_params(patience="40 ms")
    res = synthesize(net, time=300, seed=4)
    ev, T = res.events, res.info["time"] * 1e9
    ref = qpn.solve(net, "ctmc")
    gets = [e for e in ev if e["kind"] == "get"]
    ok = [e["ts"] + e["dur"] for e in gets if e.get("ok", True)]
    late = [e for e in gets if e.get("ok") is False]
    near(rate(ok, T), ref.get("throughput", "consumer.take_buffer.done"))
    near(rate([e["ts"] + e["dur"] for e in late], T),
         ref.get("throughput", "consumer.take_buffer.timeout"))
    assert late and all("item" not in e and abs(e["timeout"] - e["dur"]) <= 1 for e in late)
    cap = next(e for e in ev if e["kind"] == "object")["capacity"]
    assert cap == 4 and max(e["size"] for e in ev if e["kind"] == "put") <= cap
    blocked = [e for e in ev if e["kind"] == "put" and e["dur"] > 0]
    assert blocked                                      # producers wait on a full queue


def test_services_model_runs_every_remaining_construct():
    net = model("sw_services.qpn").with_params(users=6)
    res = synthesize(net, time=120, seed=6)
    ev, T = res.events, res.info["time"] * 1e9
    t = res.trace()
    objs = {o["name"]: o for o in t.objects().values()}
    assert objs["connections"]["type"] == "sem" and objs["connections"]["permits"] == 2
    assert objs["files"]["type"] == "bsem" and objs["files"]["permits"] == 2
    assert objs["dirty"]["type"] == "cond" and objs["dirty"]["lock"] == objs["journal"]["obj"]
    assert objs["config"]["type"] == "rwlock"
    # the semaphore: never more than 2 connections held
    level, top = 0, 0
    for e in ev:
        if e.get("obj") == objs["connections"]["obj"] and e["kind"] in ("acquire", "release"):
            level += 1 if e["kind"] == "acquire" else -1
            top = max(top, level)
    assert top == 2
    # the rwlock: readers share it, a writer has it alone
    readers, writer, shared = 0, 0, False
    for e in sorted((e for e in ev if e.get("obj") == objs["config"]["obj"]
                     and e["kind"] in ("acquire", "release")),
                    key=lambda e: (e["ts"] + e.get("dur", 0), e["kind"] == "acquire")):
        d = 1 if e["kind"] == "acquire" else -1
        if e["mode"] == "read":
            readers += d
        else:
            writer += d
        assert writer in (0, 1) and not (writer and readers)
        shared |= readers > 1
    assert shared
    # the fork's children, joined by their parent
    kids = {e["tid"]: e for e in ev if e["kind"] == "thread_start" and e["name"].startswith("Thread-")}
    joins = [e for e in ev if e["kind"] == "wait" and e["on"] == "join" and e["tid"] != 1000]
    assert kids and {j["target"] for j in joins} <= set(kids)
    assert {kids[j["target"]]["parent"] for j in joins} == {j["tid"] for j in joins}
    assert len({k["name"].split(" ")[1] for k in kids.values()}) == 2   # two blocks
    # a condition wait contains the release and re-acquire of its mutex
    for tid, evs in t.by_thread().items():
        for i, e in enumerate(evs):
            if e["kind"] == "wait" and e["on"] == "cond" and e["dur"] >= 2:
                inner = [x for x in evs[i + 1:] if x["ts"] < e["ts"] + e["dur"]]
                assert [x["kind"] for x in inner] == ["release", "acquire"]
                assert inner[1]["ts"] + inner[1]["dur"] == e["ts"] + e["dur"]
    # closed users: think, then a request timed from begin to end
    ref = qpn.solve(net, "ctmc", options={"limit": 10**12})     # 1,730 states really
    reqs = requests(ev)
    near(rate([a for a, _ in reqs], T), ref.get("throughput", "users.begin"))
    near(batch_mean([a for a, _ in reqs], [b / 1e9 for _, b in reqs], T),
         ref.get("residence", "request.running"))


def test_a_limit_fails_when_exhausted_and_the_error_route_runs():
    net = model("sw_services.qpn").with_params(users=40)
    res = synthesize(net, time=30, seed=2)
    ev = res.events
    files = next(e["obj"] for e in ev if e["kind"] == "object" and e["name"] == "files")
    tries = [e for e in ev if e["kind"] == "acquire" and e["obj"] == files]
    failed = [e for e in tries if e.get("ok") is False]
    assert failed and all(e["contended"] and e["dur"] == 0 for e in failed)
    frees = [e for e in ev if e["kind"] == "release" and e["obj"] == files]
    assert len(tries) - len(failed) - len(frees) in (0, 1, 2)     # at most 2 held at the end
    # every request that began ends, on the error route too (`refuse`, then `return`)
    begun = sum(1 for e in ev if e["kind"] == "request" and e["phase"] == "begin")
    assert 0 <= begun - res.info["timers"]["request"] <= 40


# ------------------------------------------------------------- sources and servers
def test_sources_as_threads_or_an_acceptor():
    net = model("sw_server.qpn")
    a = synthesize(net, time=5, seed=1)
    b = synthesize(net, time=5, seed=1, sources="threads")
    assert a.info["sources"] == {"clients": "acceptor"}
    assert b.info["sources"] == {"clients": "threads"}
    reqs = [e for e in b.events if e["kind"] == "thread_start" and e["name"].startswith("clients-")]
    ends = {e["tid"] for e in b.events if e["kind"] == "thread_end"}
    assert len(reqs) == b.info["threads"]["clients"] > 100
    assert {e["tid"] for e in reqs} <= ends
    # the same arrivals either way (the body never waits)
    put = lambda r: [e["ts"] for e in r.events if e["kind"] == "put"]  # noqa: E731
    assert put(a) == put(b)
    # a source whose body computes is a thread per request
    net = qpn.parse("""
    software {
        cpu host cores 1 ps
        source clients every exp(20 ms) { cpu exp(5 ms) as work }
    }""")
    r = synthesize(net, time=2, seed=1)
    assert r.info["sources"] == {"clients": "threads"}


def _finish_times(discipline, works, **kw):
    sim = Sim(horizon=100)
    srv = Server(sim, "s", servers=1, discipline=discipline, **kw)
    out = {}

    def job(th, w):
        srv.submit(th, w)
        yield
        out[th.name] = round(sim.now, 9)
    for i, w in enumerate(works):
        sim.spawn(f"j{i}", lambda th, w=w: job(th, w), parent=None)
    sim.run()
    return out


def test_processor_disciplines_schedule_exactly():
    assert _finish_times("fcfs", [0.03, 0.03]) == {"j0": 0.03, "j1": 0.06}
    assert _finish_times("ps", [0.03, 0.01]) == {"j0": 0.04, "j1": 0.02}
    # round robin, 10 ms slices: j0 0-10, j1 10-20, j0 20-30, j1 30-40 (done), j0 40-50
    assert _finish_times("rr", [0.03, 0.02], quantum=0.01) == {"j0": 0.05, "j1": 0.04}
    # a context switch of 1 ms at every start from the ready queue, none to go on alone
    assert _finish_times("rr", [0.03, 0.01], quantum=0.01, switch=0.001) == \
        {"j0": 0.043, "j1": 0.022}


def test_the_analyzer_reads_a_synthetic_trace():
    from qpn.frontends.analyze import build
    net = model("sw_server.qpn")
    res = synthesize(net, time=30, seed=1)
    built = build(res.trace())
    sizes = sorted(r["size"] for r in built.info["runners"].values())
    assert 8 in sizes
    assert "capacity 50" in built.text


def test_a_disk_bound_pool_is_modelled_and_predicts_its_throughput():
    """Threads that only sleep and read from a disk use no CPU: their work is the I/O.
    The analyzer left them out before ('nothing to model'); the model built from the
    synthetic trace of docs/software/disk_load.qpn now predicts the source model's
    throughput (its CTMC) within 5%."""
    from qpn.frontends.analyze import build
    src = qpn.load(os.path.join(os.path.dirname(MODELS), "docs", "software", "disk_load.qpn"))
    res = build(synthesize(src, time=60, seed=3).trace())
    assert res.info["runners"]["readers"]["mode"] == "forever"
    built = qpn.parse(res.text)
    assert any(p.name.endswith("read_10_miss") for p in built.flatten().places)
    predicted = qpn.solve(built).get("throughput", "readers.begin")
    exact = qpn.solve(src, "ctmc").get("throughput", "readers.begin")
    assert abs(predicted - exact) / exact < 0.05, (predicted, exact)
