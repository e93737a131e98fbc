"""LINE's CTMC on the benchmark closed network (run by benchmarks/test_bench_ctmc.py
with the interpreter named by QPN_LINE_PYTHON, or in-process if line_solver imports).

Prints one JSON line: {"states": ..., "seconds": ..., "throughput": ...}.
"""
import json
import sys
import time

from line_solver import (ClosedClass, Delay, Exp, Network, Queue, SchedStrategy, SolverCTMC)

N = int(sys.argv[1]) if len(sys.argv) > 1 else 25


def build(n: int):
    model = Network("closed")
    delay = Delay(model, "Delay")
    queues = [Queue(model, f"Q{i}", SchedStrategy.FCFS) for i in range(4)]
    job = ClosedClass(model, "C1", n, delay)
    delay.set_service(job, Exp(1.0))
    for q, d in zip(queues, [0.2, 0.1, 0.15, 0.25]):
        q.set_service(job, Exp(1.0 / d))
    P = model.init_routing_matrix()
    P.set(job, Network.serial_routing(delay, *queues))
    model.link(P)
    return model


t0 = time.perf_counter()
table = SolverCTMC(build(N)).avg_table()
seconds = time.perf_counter() - t0
tput = float(table["Tput"].iloc[0])
print(json.dumps({"seconds": seconds, "throughput": tput, "N": N}))
