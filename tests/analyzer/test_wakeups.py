"""The wake-up time read from messages between processes (frontends/analyze/wakeups.py):
which receives count.  The GIL hand-over it gives a model: tests/tracing/test_processes.py."""
from qpn.frontends.analyze.wakeups import wake_latencies


def _conn(tid_c, tid_s, port, t):
    """A connection from a client thread to a server thread opened at t (both ends)."""
    a, b = f"A:{port}", "B:80"
    return [{"kind": "io", "tid": tid_c, "ts": t, "dur": 5, "op": "connect", "fd": port,
             "local": a, "peer": b},
            {"kind": "io", "tid": tid_s, "ts": t, "dur": 6, "op": "accept", "fd": 3,
             "conn": port, "local": b, "peer": a}]


PROCS = {1: "client", 2: "server", 3: "server"}


def test_a_blocked_receive_counts_from_the_send_s_end_to_its_return():
    evs = _conn(1, 2, 1000, 0) + [
        {"kind": "io", "tid": 2, "ts": 10, "dur": 600, "op": "recv", "fd": 1000},
        {"kind": "io", "tid": 1, "ts": 100, "dur": 50, "op": "send", "fd": 1000}]
    assert wake_latencies(evs, {1: "client", 2: "server"}) == {"server": [460]}


def test_receives_that_did_not_wait_or_could_wait_for_the_gil_do_not_count():
    evs = _conn(1, 2, 1000, 0) + _conn(1, 2, 1001, 1000) + [
        # the data was there before the receive: no wake-up
        {"kind": "io", "tid": 1, "ts": 10, "dur": 5, "op": "send", "fd": 1000},
        {"kind": "io", "tid": 2, "ts": 20, "dur": 5, "op": "recv", "fd": 1000},
        # thread 3 of the server ran Python (between its calls) when the send ended: the
        # receive may have waited for its GIL too
        {"kind": "io", "tid": 3, "ts": 900, "dur": 100, "op": "recv", "fd": 7},
        {"kind": "io", "tid": 3, "ts": 1400, "dur": 100, "op": "recv", "fd": 7},
        {"kind": "io", "tid": 2, "ts": 1010, "dur": 800, "op": "recv", "fd": 1001},
        {"kind": "io", "tid": 1, "ts": 1100, "dur": 50, "op": "send", "fd": 1001}]
    assert wake_latencies(evs, PROCS) == {}
    # thread 3 inside a call at the send instead: it counts
    evs[-4]["dur"] = 1000
    assert wake_latencies(evs, PROCS) == {"server": [1810 - 1150]}
    # outside the work phase: left out; in one process: left out
    assert wake_latencies(evs, PROCS, span=(0, 1000)) == {}
    assert wake_latencies(evs, {1: "p", 2: "p", 3: "p"}) == {}

