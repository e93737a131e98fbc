"""LINE's exact MVA on the 3-class model of benchmarks/test_bench_mva.py.

Prints one JSON line: {"seconds": ..., "throughput": [Xa, Xb, Xc]}.
"""
import json
import time

from line_solver import ClosedClass, Delay, Exp, Network, Queue, SchedStrategy, SolverMVA

DEMANDS = [[0.01, 0.02, 0.03, 0.04], [0.02, 0.03, 0.04, 0.05], [0.05, 0.04, 0.03, 0.01]]


def build(n: int = 30):
    model = Network("mva3")
    delay = Delay(model, "think")
    ps = [Queue(model, f"s{i + 1}", SchedStrategy.PS) for i in range(4)]
    jobs = [ClosedClass(model, name, n, delay) for name in ("a", "b", "c")]
    P = model.init_routing_matrix()
    for job, dem in zip(jobs, DEMANDS):
        delay.set_service(job, Exp(1.0))
        for st, d in zip(ps, dem):
            st.set_service(job, Exp(1.0 / d))
        P.set(job, Network.serial_routing(delay, *ps))
    model.link(P)
    return model


t0 = time.perf_counter()
table = SolverMVA(build(), method="exact").avg_table()
seconds = time.perf_counter() - t0
tput = [float(x) for x in table[table["Station"] == "think"]["Tput"]]
print(json.dumps({"seconds": seconds, "throughput": tput}))
