"""Threads started to compute and joined (forks.py): the model's main thread forks and
joins a pool whose size is a parameter.  Found on montecarlo.py, where nothing was
modelled ("nothing to model"); known answers from a synthetic trace without a GIL."""
import pytest

import qpn
from qpn.frontends.analyze import build
from qpn.frontends.analyze.synth import MS, US, _header, _Thread, _trace

WORK = 10 * MS                       # CPU of each of the 2 traced children


def _fork_join(children=2, rounds=1, sleeps=False, prologue=0):
    out: list = []
    main = _Thread(out, 100, 0, "MainThread")
    main.compute(prologue)                 # preparing the data (or start-up: one cannot tell)
    tid = 101
    for _ in range(rounds):
        kids = []
        for k in range(children):
            main.compute(50 * US)
            kids.append(_Thread(out, tid, main.t, f"part-{k}", "f.py:20", 100))
            tid += 1
        for w in kids:
            if sleeps:
                for _ in range(10):
                    w.compute(WORK // 10)
                    w.ev("wait", on="sleep", dur=1 * MS, site="f.py:9")
            else:
                w.compute(WORK)
            w.end()
        for w in kids:
            wait = max(0, w.t - main.t)
            main.ev("wait", on="join", target=w.tid, dur=wait, site="f.py:22")
        main.compute(20 * US)
    main.end()
    return _trace(_header(["f.py"], 2), out)


def test_a_fork_join_round_is_two_semaphores_sized_by_the_pool():
    res = build(_fork_join())
    assert "release (parts) fork_20_start" in res.text
    assert "acquire (parts) fork_20_done" in res.text
    assert res.info["runners"]["part"]["size"] == 2
    assert "split_part" in res.text                    # the division is named an assumption


@pytest.mark.parametrize("k, runs_per_s", [(1, 1 / (2 * WORK / 1e9)), (2, 1 / (WORK / 1e9)),
                                           (4, 1 / (WORK / 1e9))])
def test_divided_work_on_two_cores_known_answer(k, runs_per_s):
    """The children divide 2 x 10 ms of CPU (split 1): a run takes 20 ms at 1 thread and
    10 ms at 2 or more threads on 2 cores, plus the main thread's 0.12 ms."""
    net = qpn.parse(build(_fork_join()).text)
    r = qpn.solve(net, "des", options={"seed": 1, "quiet": True}, parts=k, split_part=1)
    run = 1 / runs_per_s + 0.12e-3             # the main thread: 2 starts and the join
    assert r.get("throughput", "main.begin") == pytest.approx(1 / run, rel=0.03)


def test_rounds_in_a_loop_are_one_fork_each():
    res = build(_fork_join(rounds=5))
    assert res.text.count("release (parts)") == 1 and "fork_20_start" in res.text
    assert res.info["runners"]["main"]["mode"] == "forever"      # a loop of rounds
    assert res.info["runners"]["part"]["size"] == 2                  # 2 at a time, 10 in all
    assert "2 threads at a time, 10 in all" in res.text


def test_children_with_operations_of_their_own_are_left_to_their_loops():
    res = build(_fork_join(sleeps=True))
    assert "fork_" not in res.text


def test_the_main_threads_serial_work_is_an_assumption():
    """30 ms of CPU before the fork: start-up (serial_main = 0, the default) or data each
    run prepares (1): the run takes 10 ms or 40 ms at 2 threads on 2 cores."""
    res = build(_fork_join(prologue=30 * MS))
    assert "cpu det(30.05 ms * serial_main) as prologue" in res.text   # and the first start
    assert "serial_main: 'main': its CPU before and after the modelled run" in res.text
    net = qpn.parse(res.text)
    for serial, run in ((0, 10e-3), (1, 40e-3)):
        r = qpn.solve(net, "des", options={"seed": 1, "quiet": True}, split_part=1,
                      serial_main=serial)
        assert r.get("throughput", "main.begin") == pytest.approx(1 / (run + 0.12e-3), rel=0.03)
