"""LINE's LDES on models/bench/closed3.qpn: a delay (Z = 1 s) and FCFS stations
of 0.2 s and 0.1 s visited in a cycle by N = 20 jobs.

Usage: line_ldes_closed3.py [completions] [--count]
Prints one JSON line: {"completions": n, "seconds": engine s, "wall": subprocess s,
"throughput": cycle throughput, ...}.  completions = service completions at all
three stations, the delay included (LDES's samples).
"""
import json
import sys

from line_solver import ClosedClass, Delay, Exp, Network, Queue, SchedStrategy

from ldes_common import metric, respt_counts, run_ldes


def build(n: int = 20):
    model = Network("closed3")
    think = Delay(model, "think")
    s1, s2 = Queue(model, "s1", SchedStrategy.FCFS), Queue(model, "s2", SchedStrategy.FCFS)
    job = ClosedClass(model, "job", n, think)
    think.set_service(job, Exp(1.0))
    s1.set_service(job, Exp(1 / 0.2))
    s2.set_service(job, Exp(1 / 0.1))
    P = model.init_routing_matrix()
    P.set(job, Network.serial_routing(think, s1, s2))
    model.link(P)
    return model


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3_000_000
    count = "--count" in sys.argv
    doc = run_ldes(build(), n, respt_samples=count)
    out = {"completions": n, "seconds": doc["seconds"], "cpu": doc["cpu"], "wall": doc["wall"], "engine": doc["engine"],
           "events": doc.get("totalSimulatedEvents"), "throughput": metric(doc, "TN", 0),
           "response_s1": metric(doc, "RN", 1), "response_s2": metric(doc, "RN", 2),
           "tokens": [metric(doc, "QN", i) for i in range(3)]}
    if count:
        out["respt_samples"] = respt_counts(doc)
    print(json.dumps(out))
