"""Freud's micro-benchmark (Rogora, Probabilistic Performance Annotations, Appendix A) in
Python: functions whose running time is a known function of their arguments, each called
CALLS times with the arguments that matter named by ``qpn.frontends.pytrace.feature``.

Usage: python freud_microbench.py [CALLS [WORKERS [FUNCTION ...]]]

Freud's functions ``usleep``; a sleep is not CPU, and ``qpn build`` fits the CPU demand
of a fragment, so here ``usleep(us)`` spends ``us`` microseconds of the thread's own CPU
time: a loop on ``time.thread_time_ns`` to a deadline that each call moves on by ``us``
(so the loop's overhead is absorbed, and being descheduled costs nothing: the demand is
the generator's, not the machine load's).  Freud's usleep cost its argument plus 72-137
us, which is why its slopes are above the generators'; here slope = argument.

Each call is ``mark("begin", "A.1")``, the features, the function, ``mark("end", "A.1")``
on the main thread (WORKERS 0, the default), or, with WORKERS > 0, an item of a queue
that a pool of WORKERS threads takes (a model's worker fragment then follows the feature).
The arguments are drawn with a fixed seed; Freud does not give its ranges, these are ours.
Prints the calls done per function.

Left out: A.2, A.3, A.6-A.8 (a feature in a register, a pointer, a struct, a class, an
XMM register: the same thing in Python, where the program names the feature), A.18 (a
C++ dynamic type as a partition).  A.17's constant case is 10 ms, not 100 ms (Freud
measured 10.4 ms for it), to keep the run short.
"""
import math
import queue
import random
import sys
import threading
import time

try:
    from qpn.frontends.pytrace import feature, mark
except ImportError:                     # run without qpn installed: no features
    def feature(name, value):
        return None

    def mark(name, text=None):
        return None


class Cpu:
    """``usleep`` on the CPU: spend microseconds of this thread's CPU time."""

    __slots__ = ("deadline",)

    def __init__(self):
        self.deadline = time.thread_time_ns()

    def usleep(self, us: float) -> None:
        self.deadline += int(us * 1000)
        while time.thread_time_ns() < self.deadline:
            pass


GLOBAL_FEATURE = 0                      # A.4 reads a global


# --- the generators, Appendix A (C's rand() is the argument rnd: a random.Random) ------

def test_linear_int(t):                                          # A.1
    c = Cpu()
    for _ in range(t):
        c.usleep(250)


def test_global_feature():                                       # A.4
    c = Cpu()
    for _ in range(GLOBAL_FEATURE):
        c.usleep(70)


def test_linear_charptr(s):                                      # A.5
    c = Cpu()
    for _ in range(len(s)):
        c.usleep(100)


def test_linear_vector(v):                                       # A.9
    c = Cpu()
    for _ in range(len(v)):
        c.usleep(250)


class Derived:                                                   # A.10's derived_class
    def __init__(self, pv):
        self.pv = pv


def test_derived_class(obj):                                     # A.10
    Cpu().usleep(obj.pv)


def test_quad_int(t):                                            # A.11
    c = Cpu()
    for _ in range(t):
        c.usleep(t)


def test_nlogn_int(t):                                           # A.12 (log2 not truncated)
    c = Cpu()
    for _ in range(t):
        c.usleep(math.log2(t))


def test_quad_int_wn(t, rnd):                                    # A.13
    c = Cpu()
    for _ in range(t):
        noise = rnd.randrange(t) * 100                           # rand() % t * 100
        c.usleep(t + noise)


def test_interaction_linear_quad(a, b):                          # A.14
    c = Cpu()
    for _ in range(a):
        c.usleep(b * b)


def test_linear_branches(a, b, c_):                              # A.15
    c = Cpu()
    if a > 10:
        for _ in range(b):
            c.usleep(b)
    else:
        for _ in range(c_):
            c.usleep(450)


def test_linear_branches_one_f(a):                               # A.16
    c = Cpu()
    if a < 10:
        for _ in range(10 - a):
            c.usleep(400)
    else:
        c.usleep(4000)
        for _ in range(a - 10):
            c.usleep(400)


CMD_CONSTANT, CMD_LINEAR, CMD_QUAD = 0, 1, 2


def test_multi_enum(cmd, a):                                     # A.17
    c = Cpu()
    if cmd == CMD_CONSTANT:
        c.usleep(10_000)
    elif cmd == CMD_LINEAR:
        for _ in range(a):
            c.usleep(100)
    else:
        for _ in range(a):
            c.usleep(a)


def test_linear_main_component(a, rnd):                          # A.19
    c = Cpu()
    p = rnd.randrange(100)
    if p < 25:
        c.usleep(rnd.randrange(1500) + 10_000)
    elif p < 50:
        c.usleep(rnd.randrange(100))
    else:
        for _ in range(a):
            c.usleep(1000)


def test_random_clustering(a, rnd):                              # A.20 (a is not used)
    c = Cpu()
    r = rnd.randrange(100)
    c.usleep(900 if r < 30 else 600 if r < 70 else 300)


# --- the calls: (function, arguments and named features of one call) ------------------

def _a1(r):
    t = r.randint(1, 20)
    return test_linear_int, (t,), [("t", t)]


def _set_global_and_test(g):
    global GLOBAL_FEATURE
    GLOBAL_FEATURE = g
    test_global_feature()


def _a4(r):
    g = r.randint(1, 40)
    return _set_global_and_test, (g,), [("g", g)]


def _a5(r):
    s = "x" * r.randint(1, 50)
    return test_linear_charptr, (s,), [("s", len(s))]


def _a9(r):
    v = list(range(r.randint(1, 20)))
    return test_linear_vector, (v,), [("size", len(v))]


def _a10(r):
    obj = Derived(r.randint(100, 2000))
    return test_derived_class, (obj,), [("c", obj.pv)]


def _a11(r):
    t = r.randint(1, 80)
    return test_quad_int, (t,), [("t", t)]


def _a12(r):
    t = r.randint(2, 2048)
    return test_nlogn_int, (t,), [("t", t)]


def _a13(r):
    t = r.randint(1, 25)
    return test_quad_int_wn, (t, r), [("t", t)]


def _a14(r):
    a, b = r.randint(1, 10), r.randint(1, 30)
    return test_interaction_linear_quad, (a, b), [("a", a), ("b", b)]


def _a15(r):
    a, b, c = r.randint(0, 20), r.randint(1, 60), r.randint(1, 20)
    return test_linear_branches, (a, b, c), [("a", a), ("b", b), ("c", c)]


def _a16(r):
    a = r.randint(0, 20)
    return test_linear_branches_one_f, (a,), [("a", a)]


def _a17(r):
    cmd, a = r.choice((CMD_CONSTANT, CMD_LINEAR, CMD_QUAD)), r.randint(1, 60)
    return test_multi_enum, (cmd, a), [("c", cmd), ("a", a)]


def _a19(r):
    a = r.randint(1, 20)
    return test_linear_main_component, (a, r), [("a", a)]


def _a20(r):
    a = r.randint(1, 100)
    return test_random_clustering, (a, r), [("a", a)]


#: Freud's number -> the call maker
CALLS = {"A.1": _a1, "A.4": _a4, "A.5": _a5, "A.9": _a9, "A.10": _a10, "A.11": _a11,
         "A.12": _a12, "A.13": _a13, "A.14": _a14, "A.15": _a15, "A.16": _a16,
         "A.17": _a17, "A.19": _a19, "A.20": _a20}


def call(fn, args, feats) -> None:
    for name, value in feats:
        feature(name, value)
    fn(*args)


def worker(q: queue.Queue, done: list) -> None:
    while True:
        item = q.get()
        if item is None:
            return
        call(*item)
        done.append(1)


def main(calls: int, workers: int, names: list) -> None:
    for name in names:
        rng = random.Random(f"freud-{name}")
        if workers == 0:
            for _ in range(calls):
                fn, args, feats = CALLS[name](rng)
                mark("begin", name)
                call(fn, args, feats)
                mark("end", name)
            print(name, calls)
            continue
        q: queue.Queue = queue.Queue()
        done: list = []
        threads = [threading.Thread(target=worker, args=(q, done), name=f"worker-{k}")
                   for k in range(workers)]
        for t in threads:
            t.start()
        for _ in range(calls):
            q.put(CALLS[name](rng))
        for _ in threads:
            q.put(None)
        for t in threads:
            t.join()
        print(name, len(done))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150,
         int(sys.argv[2]) if len(sys.argv) > 2 else 0,
         sys.argv[3:] or list(CALLS))
