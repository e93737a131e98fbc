"""The work phase of a program without hand-overs (phases.threads_phase): found on
batcher.py, whose producers put records into a list under a condition and whose main
thread reads the output back after they ended."""
import qpn
from qpn.frontends.analyze import build
from qpn.frontends.analyze.synth import MS, US, _header, _Thread, _trace


def _trace_with_check_after(workers=2, rounds=80, checks=100):
    out: list = []
    main = _Thread(out, 100, 0, "MainThread")
    main.ev("object", obj=5, type="lock", site="w.py:3")
    ws = []
    for k in range(workers):
        main.compute(50 * US)
        ws.append(_Thread(out, 101 + k, main.t, f"worker-{k}", "w.py:20", 100))
    end = 0
    for w in ws:                       # a loop of work under a shared lock, no hand-overs
        for _ in range(rounds):
            w.compute(300 * US)
            w.ev("acquire", obj=5, site="w.py:12")
            w.compute(20 * US)
            w.ev("release", obj=5, site="w.py:12")
        w.end()
        end = max(end, w.t)
    main.t = end
    main.ev("wait", on="join", dur=0, site="w.py:30")
    for _ in range(checks):            # then reads the output back, checking each record
        main.ev("io", dur=3 * US, op="read", path="/tmp/out", fd=7, bytes=8, site="w.py:40")
        main.compute(1 * MS)
    main.end()
    return _trace(_header(["w.py"], 4), out)


def test_without_hand_overs_the_work_is_while_the_started_threads_run():
    res = build(_trace_with_check_after())
    assert "while the threads the main thread started ran" in res.text
    assert res.info["runners"]["worker"]["mode"] == "forever"
    assert "main" not in res.info["runners"]          # its loop comes after the work
    qpn.parse(res.text)


def test_a_main_thread_alone_keeps_its_whole_trace():
    out: list = []
    main = _Thread(out, 100, 0, "MainThread")
    for _ in range(50):
        main.ev("io", dur=3 * US, op="read", path="/tmp/out", fd=7, bytes=8, site="m.py:4")
        main.compute(1 * MS)
    main.end()
    res = build(_trace(_header(["m.py"], 2), out))
    assert "Work phase" not in res.text
    assert res.info["runners"]["main"]["mode"] == "forever"
