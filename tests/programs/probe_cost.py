"""The tracer's own cost, seen from inside (a check of probe_ns, not a suite program).

Usage: python probe_cost.py [ROUNDS] [N]

Each round runs N iterations of a few microseconds of pure-Python work inside
``with lock:`` twice: once with a ``threading.Lock`` (traced under ``qpn trace``:
two events per iteration) and once with a raw ``_thread`` lock (never traced).
The second loop's CPU per iteration, from the thread's CPU clock, is what the
first costs without a tracer: its median over the rounds is printed and, when
traced, recorded as the mark ``untraced_ns``.
"""
import _thread
import sys
import threading
import time

try:
    from qpn.frontends.pytrace import mark
except ImportError:                       # runs without qpn installed too
    def mark(name, text=None):
        pass


def work(n=60):
    acc = 0
    for i in range(n):
        acc += i * i
    return acc


def main(rounds=20, n=200):
    traced, raw = threading.Lock(), _thread.allocate_lock()
    untraced = []
    for _ in range(rounds):
        for _ in range(n):
            with traced:
                pass
            work()
        c0 = time.thread_time_ns()
        for _ in range(n):
            with raw:
                pass
            work()
        untraced.append((time.thread_time_ns() - c0) / n)
    untraced.sort()
    median = f"{untraced[len(untraced) // 2]:.0f}"
    mark("untraced_ns", median)
    print(f"untraced_ns {median}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
