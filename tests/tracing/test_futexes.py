"""Futex addresses told apart by their waits and wakes (frontends/futexes.py), and strace's
own cost taken off a log's times (frontends/strace_import.py)."""
import shutil

import pytest

from qpn.frontends.futexes import WAKE_ALL, FutexCall, classify, futex_events
from qpn.frontends.strace_import import StraceCost, calibrate, strace_to_events


def W(tid, ts, addr, val, dur=10, bitset=False, ret=0):
    return FutexCall(tid, ts, dur, addr, "wait", bitset, val, ret)


def K(tid, ts, addr, n=1, ret=1):
    return FutexCall(tid, ts, 1, addr, "wake", False, n, ret)


def test_each_kind_by_its_protocol():
    calls = [W(2, 0, 0x10, 2), K(1, 5, 0x10),                     # mutex: wait for 2, wake 1
             W(2, 20, 0x20, 0, bitset=True), K(1, 25, 0x20),      # condition: bitset wait
             W(2, 40, 0x30, 6), K(1, 45, 0x30, WAKE_ALL),         # barrier: woken all at once
             W(1, 60, 0x40, 2, bitset=True),                      # join: a wait for a tid (2)
             W(1, 80, 0x50, 7, ret=-1),                           # neither: a timed-out wait
             FutexCall(2, 90, 3, 0x60, "lock", False, 0, 0),      # a PI mutex
             K(3, 95, 0x70)]                                      # an unlock nobody waited for
    kinds = {addr: k for (_, addr), k in classify(calls, threads={1, 2, 3}).items()}
    assert kinds == {0x10: "mutex", 0x20: "cond", 0x30: "barrier", 0x40: "join",
                     0x50: "other", 0x60: "mutex", 0x70: "mutex"}


def test_a_condition_waits_on_either_of_its_two_words():
    # glibc's __g_signals[2]: 8-byte aligned, the second 4 bytes after the first
    calls = [W(2, 0, 0x168, 0, bitset=True), K(1, 5, 0x168),
             W(3, 10, 0x16C, 0, bitset=True), K(1, 15, 0x16C)]
    evs, objs = futex_events(calls, threads={1, 2, 3})
    assert [(o["type"], o["obj"]) for o in objs] == [("cond", 0x168)]
    assert {e["obj"] for e in evs} == {0x168}


def test_back_to_back_waits_for_a_mutex_are_one_acquisition():
    # woken, beaten to the lock (EAGAIN), waits again: one contended acquisition
    # (within merge_gap of each other); a wait long after is another acquisition
    calls = [W(2, 100, 0x10, 2, dur=40), W(2, 150, 0x10, 2, dur=5, ret=-1),
             W(2, 160, 0x10, 2, dur=90), K(1, 245, 0x10), W(2, 400, 0x10, 2, dur=10)]
    evs, _ = futex_events(calls, threads={1, 2}, merge_gap=20)
    acq = [(e["ts"], e["dur"]) for e in evs if e["kind"] == "acquire"]
    assert acq == [(100, 150), (400, 10)]


def test_a_barrier_s_parties_are_the_threads_that_took_part():
    calls = []
    for r in range(3):                     # threads 1..4; the last to arrive differs by round
        last = 1 + r % 4
        t = 1000 * r
        calls += [W(tid, t + tid, 0x30, r * 4, dur=500) for tid in (1, 2, 3, 4) if tid != last]
        calls.append(K(last, t + 600, 0x30, WAKE_ALL, ret=3))
    evs, objs = futex_events(calls, threads={1, 2, 3, 4})
    assert objs[0]["type"] == "barrier" and objs[0]["parties"] == 4
    assert sum(1 for e in evs if e["on"] == "barrier") == 12       # every party, every round
    assert sorted(e["tid"] for e in evs if e["dur"] == 0) == [1, 2, 3]


LOG = """\
7 1.000000 openat(AT_FDCWD, "/d", O_RDONLY) = 3 <0.000050>
7 1.000200 read(3, "x", 10) = 1 <0.000060>
7 1.000500 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3, 0) = 0x7f00 <0.000050>
7 1.001000 read(3, "x", 10) = 1 <0.000060>
"""


def test_strace_s_cost_is_taken_off_durations_and_the_busy_clock():
    raw = strace_to_events(LOG)
    reads = [e for e in raw.events if e.get("op") == "read"]
    # no cost given: the clock is the time outside the calls (the mmap's too)
    assert [(e["cpu"], e["dur"]) for e in reads] == [(150_000, 60_000), (840_000, 60_000)]
    cut = strace_to_events(LOG, cost=StraceCost(gap=40_000, call=45_000))
    reads = [e for e in cut.events if e.get("op") == "read"]
    # each gap loses 40 us (150 - 40; then 240 - 40 and 450 - 40 more); each call 45 us
    assert [(e["cpu"], e["dur"]) for e in reads] == [(110_000, 15_000), (720_000, 15_000)]
    assert cut.header.extra["strace_cost_ns"] == {"gap": 40_000, "call": 45_000}
    assert cut.header.capabilities["cpu_from_gaps"] and not cut.header.capabilities["thread_cpu"]


@pytest.mark.skipif(shutil.which("strace") is None or shutil.which("dd") is None,
                    reason="needs strace and dd (Debian packages strace, coreutils)")
def test_calibrate_measures_a_cost_per_call():
    cost = calibrate(calls=400)
    # ptrace stops cost tens of microseconds on this kind of machine, never nothing
    assert cost is not None and 1_000 <= cost.call <= 2_000_000 and cost.gap >= 1_000
