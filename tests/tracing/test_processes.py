"""Programs of several processes: `qpn trace` follows Python children, `qpn build` joins the
traces of one run (frontends/processes.py), and the model has a pool and a GIL per
process, with the calls between them as queues matched by the connections' addresses."""
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from qpn.errors import QPNError
from qpn.frontends.analyze import build, read_run
from qpn.frontends.analyze.sockets import link_sockets
from qpn.frontends.analyze.steps import Step
from qpn.frontends.processes import join_traces, process_name, same_run
from qpn.frontends.pytrace import trace_command
from qpn.frontends.trace import Trace, TraceHeader, write_trace
from qpn.frontends.trace_query import connection_spans

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIERS = os.path.join(ROOT, "tests", "programs", "tiers")


def _trace(pid, argv, events, path="t.jsonl", **program):
    return Trace(TraceHeader(source="pytrace", capabilities={"thread_cpu": True},
                             program={"pid": pid, "argv": argv, **program}), events, path)


def test_traces_of_one_run_are_joined_and_repeats_are_not():
    a = _trace(10, ["front.py"], [{"kind": "thread_start", "tid": 10, "ts": 0},
                                  {"kind": "acquire", "tid": 10, "ts": 50, "obj": 5}])
    b = _trace(20, ["back.py"], [{"kind": "thread_start", "tid": 20, "ts": 30},
                                 {"kind": "acquire", "tid": 20, "ts": 40, "obj": 5}])
    later = _trace(30, ["front.py"], [{"kind": "thread_start", "tid": 30, "ts": 100}])
    again = _trace(10, ["front.py"], [{"kind": "thread_start", "tid": 10, "ts": 20}])
    assert same_run([a, b]) and not same_run([a, later]) and not same_run([a, again])
    j = join_traces([a, b])
    assert j.processes == {10: "front", 20: "back"}
    assert [e["tid"] for e in j.events] == [10, 20, 20, 10]          # one clock, sorted
    objs = [e["obj"] for e in j.events if e["kind"] == "acquire"]
    assert objs[0] != objs[1]                # the same address in two processes: two objects
    assert j.header.program["processes"] == ["front", "back"] and j.header.program["pid"] == 10


def test_processes_of_one_script_are_named_by_their_role():
    h = [_trace(p, ["/x/tiers.py", role, "8000"], [{"kind": "thread_start", "tid": p, "ts": 0}])
         for p, role in ((1, "front"), (2, "back"))]
    assert [process_name(t.header) for t in h] == ["tiers", "tiers"]
    assert join_traces(h).header.program["processes"] == ["tiers_front", "tiers_back"]


def test_two_machines_may_have_the_same_thread_ids():
    a = _trace(10, ["front.py"], [{"kind": "thread_start", "tid": 10, "ts": 0},
                                  {"kind": "wait", "tid": 10, "ts": 90, "on": "join",
                                   "target": 11, "dur": 5}])
    b = _trace(10, ["back.py"], [{"kind": "thread_start", "tid": 10, "ts": 5_000},
                                 {"kind": "thread_start", "tid": 11, "ts": 5_010,
                                  "parent": 10}])
    a.header.machine, b.header.machine = {"host": "one"}, {"host": "two"}
    a.header.start_ns, a.header.epoch_ns = 0, 10**18
    b.header.start_ns, b.header.epoch_ns = 5_000, 10**18 + 2      # started 2 ns after a
    assert same_run([a, b])                            # the same pid, but two machines
    j = join_traces([a, b])
    assert sorted(j.processes.items()) == [(10, "front"), (10 + (1 << 52), "back"),
                                            (11 + (1 << 52), "back")]
    moved = [e for e in j.events if e["tid"] != 10]
    assert [e["ts"] for e in moved] == [2, 12]          # on a's clock, by the wall clocks
    assert moved[1]["parent"] == 10 + (1 << 52)
    assert any("the wall clocks' offset (no connection" in w for w in j.warnings)
    assert j.header.program["hosts"] == ["one", "two"]


def test_joining_traces_from_two_tracers_or_with_one_thread_twice_is_refused():
    a = _trace(1, ["a.py"], [{"kind": "thread_start", "tid": 1, "ts": 0}])
    b = _trace(2, ["b.py"], [{"kind": "thread_start", "tid": 1, "ts": 0}])
    with pytest.raises(QPNError, match="thread ids .* also in another"):
        join_traces([a, b])
    b.header.source = "strace"
    with pytest.raises(QPNError, match="different tracers"):
        join_traces([a, b])


def _sock(tid, op, ts, dur, **ev):
    e = {"kind": "io", "tid": tid, "ts": ts, "dur": dur, "op": op, **ev}
    return Step(tid, "sock", op, e.get("site"), e, ts, 0, 0, 0, dur)


def test_connects_are_matched_to_accepts_by_their_addresses_across_processes():
    # two listeners on fd 3 in two processes; the front's connect reaches the back end
    # although the front's own accept finished later than the back end's
    front_acc = _sock(1, "accept", 0, 900, fd=3, conn=5, peer="('127.0.0.1', 5001)",
                      local="('127.0.0.1', 8000)", site="front.py:9")
    front_con = _sock(1, "connect", 1000, 10, fd=6, local="('127.0.0.1', 6001)",
                      peer="('127.0.0.1', 8001)", site="front.py:20")
    back_acc = _sock(2, "accept", 0, 1005, fd=3, conn=4, peer="('127.0.0.1', 6001)",
                     local="('127.0.0.1', 8001)", site="back.py:9")
    links = link_sockets({1: [front_acc, front_con], 2: [back_acc]})
    assert front_con.action == "put" and front_con.key == back_acc.key == \
        ("accept", "('127.0.0.1', 8001)")
    assert front_acc.key == ("accept", "('127.0.0.1', 8000)")
    assert links.external == [("accept", "('127.0.0.1', 8000)")]     # its clients are outside


def test_connection_spans_keep_each_process_s_fds_and_leave_out_calls_between_them():
    evs = [  # front (tid 1) accepts a client on fd 5; calls the back end (tid 2) on fd 6
        {"kind": "io", "tid": 1, "ts": 0, "dur": 100, "op": "accept", "fd": 3, "conn": 5,
         "peer": "('127.0.0.1', 5001)", "local": "('127.0.0.1', 8000)"},
        {"kind": "io", "tid": 1, "ts": 110, "dur": 10, "op": "connect", "fd": 6,
         "local": "('127.0.0.1', 6001)", "peer": "('127.0.0.1', 8001)"},
        {"kind": "io", "tid": 2, "ts": 0, "dur": 130, "op": "accept", "fd": 3, "conn": 5,
         "peer": "('127.0.0.1', 6001)", "local": "('127.0.0.1', 8001)"},
        {"kind": "io", "tid": 2, "ts": 200, "dur": 10, "op": "send", "fd": 5},
        {"kind": "io", "tid": 1, "ts": 400, "dur": 20, "op": "send", "fd": 5}]
    assert connection_spans(evs, {1: "front", 2: "back"}) == [320]    # 100 -> 420
    # one fd number closed and reused by a connect: its sends are not the client's
    reuse = [{"kind": "io", "tid": 1, "ts": 0, "dur": 10, "op": "accept", "fd": 3, "conn": 5},
             {"kind": "io", "tid": 1, "ts": 50, "dur": 10, "op": "send", "fd": 5},
             {"kind": "io", "tid": 1, "ts": 70, "dur": 5, "op": "connect", "fd": 5},
             {"kind": "io", "tid": 1, "ts": 900, "dur": 10, "op": "send", "fd": 5}]
    assert connection_spans(reuse) == [50]


def test_build_joins_the_children_its_trace_lists_and_warns_of_missing_ones(tmp_path):
    from qpn.frontends.analyze.synth import batch_trace
    t = batch_trace(tasks=10, workers=2)
    t.header.program.update(pid=4242, children=["run.77.jsonl"])
    write_trace(str(tmp_path / "run.jsonl"), t.header, t.events)
    run = read_run(str(tmp_path / "run.jsonl"))
    assert not run.processes and any("run.77.jsonl" in w for w in run.warnings)


def _service(tmp_path, port):
    """Trace tests/programs/tiers/service.py (2 + 2 workers) under 150 requests at 300/s."""
    out = str(tmp_path / "svc.jsonl")
    argv = [sys.executable, os.path.join(TIERS, "service.py"), str(port), "2", "2", "200", "100"]
    res: dict = {}

    def drive():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        load = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "programs",
                                                            "http_load.py"),
                               "127.0.0.1", str(port), "300", "150", "/"],
                              capture_output=True, text=True, timeout=60)
        res["load"] = load
        for pid in os.listdir("/proc"):              # the launcher: it stops its children
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read().split(b"\0")
            except OSError:
                continue
            if cmd[1:3] == [argv[1].encode(), str(port).encode()]:
                os.kill(int(pid), signal.SIGTERM)
    th = threading.Thread(target=drive, daemon=True)
    th.start()
    run = trace_command(argv, out, stdout=subprocess.DEVNULL, timeout=90)
    th.join()
    assert res["load"].returncode == 0, res["load"].stderr
    return run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def service_run(tmp_path_factory):
    port = _free_port()
    while _free_port() == port + 1:
        port = _free_port()
    return _service(tmp_path_factory.mktemp("svc"), port)


def test_a_two_tier_service_traced_as_processes_becomes_a_model_of_two_tiers(service_run):
    run = service_run
    assert len(run.children) == 2                      # back.py and front.py, each traced
    trace = read_run(run.path)
    assert set(trace.processes.values()) == {"service", "front", "back"}
    res = build(trace)
    text = res.text
    runners = res.info["runners"]
    assert runners["front"]["size"] == 2 and runners["back"]["size"] == 2
    # a GIL each; the front's connects put into the back end's accept queue (matched by
    # addresses), its recv takes the back end's replies; the clients' arrivals are a source
    assert "mutex gil_front" in text and "mutex gil_back" in text
    # the front's receives of the back end's answers show how long a wake-up takes: the
    # front's GIL is handed over that much later (frontends/analyze/wakeups.py)
    assert "mutex gil_front handover " in text and "receives blocked when another process" in text
    front = text[text.index("pool front "):]
    back = text[text.index("pool back "):text.index("pool front ")]
    assert "lock gil_front" in front and "gil_back" not in front
    backlog_back = back.split("take ")[1].split()[0]
    assert f"put {backlog_back}" in front and "take replies" in front and "put replies" in back
    [(queue, source)] = res.info["sources"].items()
    assert queue != backlog_back and f"take {queue}" in front
    assert f"source arrivals_{queue} every" in text and f"put {queue}" in text
    # the rate is the accepts' (their count less one over their span: the ends of the front's
    # accepts of clients outside the trace), whatever rate the client kept on a busy machine; a client
    # that keeps a schedule of 300/s (Poisson, unseeded, 150 arrivals: one standard error
    # is 1/sqrt(150) = 8.2%) never runs faster than that by 3 of them; on a quiet machine it
    # measured 250-360, on a loaded one down to 220
    times = sorted(e["ts"] + e.get("dur", 0) for e in trace.of_kind("io")
                   if e["op"] == "accept" and trace.processes.get(e["tid"]) == "front")
    assert source["n"] >= 100 and len(times) >= source["n"]
    kept = times[len(times) - source["n"]:]             # an early probe's accept left out
    assert source["rate"] == pytest.approx((len(kept) - 1) / (kept[-1] - kept[0]) * 1e9, rel=1e-6)
    assert 100 < source["rate"] < 300 + 3 * 300 / math.sqrt(150)


def test_reads_and_writes_on_pipes_are_receives_and_sends_not_disk_io(tmp_path):
    p = tmp_path / "pipes.py"
    p.write_text("import subprocess, sys\n"
                 "child = subprocess.Popen([sys.executable, '-c', 'print(input())'],\n"
                 "                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
                 "child.stdin.write(b'ready\\n'); child.stdin.flush()\n"
                 "print(child.stdout.readline()); child.wait()\n"
                 "open(sys.argv[1], 'w').write('x')\n")
    run = trace_command([sys.executable, str(p), str(tmp_path / "f.txt")],
                        str(tmp_path / "p.jsonl"), stdout=subprocess.DEVNULL, follow=False)
    ops = [(e["op"], e.get("path", "")[:3]) for e in run.trace.of_kind("io") if e["op"] != "open"]
    assert ("send", "fd:") in ops and ("recv", "fd:") in ops     # the child's stdin, stdout
    assert ("write", str(tmp_path)[:3]) in ops                  # a file is still a file


def test_traces_of_two_machines_are_aligned_by_their_messages(service_run, tmp_path):
    """The back end's trace as if taken on another machine: its monotonic clock 7 days
    ahead and its wall clock 40 ms wrong.  The messages between the tiers put it back
    within their bounds, and the model gives each machine its cores."""
    from qpn.frontends.analyze import read_grouped
    from qpn.frontends.trace import read_trace
    kids = [read_trace(p) for p in service_run.children]
    back = next(k for k in kids if k.header.program["argv"][0].endswith("back.py"))
    true_ts = [e["ts"] for e in back.events]
    shift, wall_error = 7 * 86_400 * 10**9, 40 * 10**6
    for e in back.events:
        e["ts"] += shift
    back.header.start_ns += shift
    back.header.epoch_ns += wall_error
    back.header.machine["host"] = "other"
    moved = tmp_path / "back_elsewhere.jsonl"
    write_trace(str(moved), back.header, back.events)
    others = [read_grouped(str(moved))] + [read_grouped(p) for p in service_run.children
                                           if "back" not in read_trace(p).header.program["argv"][0]]
    assert same_run([read_grouped(service_run.path)] + others)
    joined = join_traces([read_grouped(service_run.path)] + others)
    note = next(w for w in joined.warnings if "clock aligned" in w)
    assert "connection(s) between them: offset within +-" in note, note
    back_tids = {t for t, p in joined.processes.items() if p == "back"}
    errors = [abs(e["ts"] - t) for e, t in zip(
        sorted((e for e in joined.events if e["tid"] in back_tids), key=lambda e: e["ts"]),
        sorted(true_ts))]
    assert max(errors) < 2_000_000                     # within 2 ms (the wall clocks: 40)
    text = build(joined).text
    assert "cpu host_other cores cores_other" in text
    front = text[text.index("pool front "):]
    assert "on host_" in front and "on host_other" not in front
    back_pool = text[text.index("pool back "):text.index("pool front ")]
    assert "on host_other" in back_pool and "put replies" in back_pool


PROBED = '''
import socket, subprocess, sys, threading
listener = socket.create_server(("127.0.0.1", 0))
port = listener.getsockname()[1]

def serve():
    while True:
        conn, _ = listener.accept()
        with conn:
            conn.recv(100)
            acc = 0
            for i in range(20_000):
                acc = (acc * 31 + i) % 65_521
            conn.sendall(b"ok")

for k in range(2):
    threading.Thread(target=serve, daemon=True).start()
socket.create_connection(("127.0.0.1", port)).close()          # a readiness probe
client = "import socket, sys, time\\n" \\
         "for k in range(30):\\n" \\
         "    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\\n" \\
         "    s.sendall(b'x'); s.recv(10); s.close(); time.sleep(0.002)\\n"
subprocess.run([sys.executable, "-c", client, str(port)], check=True)
'''


def test_an_accept_queue_fed_from_outside_and_by_a_traced_probe_keeps_its_source(tmp_path):
    """Connections the traced threads made are known by their addresses; the others came
    from outside the trace (here an untraced client): the queue keeps a source for them
    although a traced thread (a readiness probe) connected there too."""
    p = tmp_path / "probed.py"
    p.write_text(PROBED)
    run = trace_command([sys.executable, str(p)], str(tmp_path / "p.jsonl"), follow=False)
    assert run.returncode == 0
    res = build(run.trace)
    [(queue, source)] = res.info["sources"].items()
    assert source["n"] == 30                          # the client's connections, not the probe
    assert f"source arrivals_{queue} every" in res.text


def test_a_launcher_starting_a_tier_while_another_waits_for_work_is_start_up():
    """The work phase begins when the first item is taken, not when a worker begins to
    wait for it: a back end waiting in accept from its start-up while the launcher still
    starts the front (its pipe to the child opened at 200) leaves that start-up outside
    the phase, however much CPU the launcher's fork cost on a loaded machine (CI saw the
    launcher's start-up reach the 3% a runner needs and become a task)."""
    from qpn.frontends.analyze.phases import work_phase

    def step(tid, action, ts, dur):
        return Step(tid, action, ("accept", "x") if action == "take" else "open", "f.py:1",
                    {"ts": ts}, ts, 0, 0, 0, dur)
    walks = {1: [step(1, "take", 100, 400), step(1, "take", 700, 50)],
             2: [step(2, "io", 200, 10)]}
    lo, hi = work_phase(walks)
    assert (lo, hi) == (500, 750) and walks[2][0].ts < lo


def test_the_two_tier_model_is_written_as_lqn_layers(service_run):
    """The joined model exported to LQN (qpn convert --to lqn, dsl/lqn_layers.py): a task
    per tier with the pool's threads, the front's call to the back end synchronous, the
    clients' arrivals open; read back by qpn's LQN reader."""
    import qpn
    from qpn.dsl.lqn import read_lqn
    from qpn.dsl.lqn_export import qpn_to_lqn
    res = build(read_run(service_run.path))
    lqn, notes = qpn_to_lqn(qpn.parse(res.text))
    m = read_lqn(lqn.encode(), "two_tier.lqn")
    assert {t.name: t.multiplicity for t in m.tasks.values()} == {"back_task": 2,
                                                                   "front_task": 2}
    assert [(c.kind, c.target) for c in m.entries["front"].calls] == [("y", "back")]
    rate = next(iter(res.info["sources"].values()))["rate"]
    assert m.entries["front"].open_rate == pytest.approx(rate, rel=1e-3)
    assert any("GIL" in n for n in notes)


def test_an_answer_is_matched_by_its_connection_even_when_its_receive_did_not_wait():
    c, s = "('127.0.0.1', 6001)", "('127.0.0.1', 8001)"
    client = [_sock(1, "connect", 0, 10, fd=4, local=c, peer=s, site="c.py:3"),
              _sock(1, "send", 20, 5, fd=4, site="c.py:4"),
              _sock(1, "recv", 900, 3, fd=4, site="c.py:5")]        # the answer was there
    server = [_sock(2, "accept", 0, 15, fd=3, conn=5, local=s, peer=c, site="s.py:9"),
              _sock(2, "recv", 30, 4, fd=5, site="s.py:10"),
              _sock(2, "send", 400, 6, fd=5, site="s.py:12"),
              _sock(2, "send", 950, 6, fd=7, site="s.py:20")]          # another fd, later
    links = link_sockets({1: client, 2: server}, processes={1: "c", 2: "s"})
    assert (client[2].action, client[2].key) == ("take", ("reply", "s.py:12"))
    assert server[2].action == "put" and server[3].action == "sock"
    assert links.replies[("reply", "s.py:12")]["takes"] == 1
