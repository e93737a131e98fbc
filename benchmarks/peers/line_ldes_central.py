"""LINE's LDES on models/central_server.qpn: two classes (8 a, 6 b) at terminals
(Z = 5 s), a PS CPU (a 50 ms, b 80 ms), disk1 FCFS 30 ms, disk2 FCFS 2 servers
60 ms; after the CPU: disk1 0.3, disk2 0.2, terminals 0.5.

Usage: line_ldes_central.py [completions] [--count]
Prints one JSON line: {"completions": n, "seconds": engine s, "wall": subprocess s,
"throughput": [Xa, Xb] at the terminals, ...}.  completions = service
completions at all four stations (LDES's samples).
"""
import json
import sys

from line_solver import ClosedClass, Delay, Exp, Network, Queue, SchedStrategy

from ldes_common import metric, respt_counts, run_ldes


def build():
    model = Network("central_server")
    term = Delay(model, "terminals")
    cpu = Queue(model, "cpu", SchedStrategy.PS)
    d1 = Queue(model, "disk1", SchedStrategy.FCFS)
    d2 = Queue(model, "disk2", SchedStrategy.FCFS)
    d2.set_number_of_servers(2)
    a, b = ClosedClass(model, "a", 8, term), ClosedClass(model, "b", 6, term)
    P = model.init_routing_matrix()
    for job, cpu_s in ((a, 0.050), (b, 0.080)):
        term.set_service(job, Exp(1 / 5.0))
        cpu.set_service(job, Exp(1 / cpu_s))
        d1.set_service(job, Exp(1 / 0.030))
        d2.set_service(job, Exp(1 / 0.060))
        P.set(job, job, term, cpu, 1.0)
        P.set(job, job, cpu, d1, 0.3)
        P.set(job, job, cpu, d2, 0.2)
        P.set(job, job, cpu, term, 0.5)
        P.set(job, job, d1, cpu, 1.0)
        P.set(job, job, d2, cpu, 1.0)
    model.link(P)
    return model


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 2_000_000
    count = "--count" in sys.argv
    doc = run_ldes(build(), n, respt_samples=count)
    out = {"completions": n, "seconds": doc["seconds"], "cpu": doc["cpu"], "wall": doc["wall"], "engine": doc["engine"],
           "events": doc.get("totalSimulatedEvents"), "throughput": [metric(doc, "TN", 0, k) for k in (0, 1)],
           "cpu_response": [metric(doc, "RN", 1, k) for k in (0, 1)]}
    if count:
        out["respt_samples"] = respt_counts(doc)
    print(json.dumps(out))
