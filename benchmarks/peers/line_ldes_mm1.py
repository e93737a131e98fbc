"""LINE's LDES on the M/M/1 of models/mm1.qpn (lambda = 0.8, mean service 1 s).

Usage: line_ldes_mm1.py [customers] [--count]
Prints one JSON line: {"customers": n, "seconds": engine s, "wall": subprocess s,
"mean_response": R, ...}.  customers = service completions of the server
(LDES's samples); --count checks that against the response-time samples.
"""
import json
import sys

from line_solver import Exp, Network, OpenClass, Queue, SchedStrategy, Sink, Source

from ldes_common import metric, respt_counts, run_ldes


def build():
    model = Network("mm1")
    source, server, sink = Source(model, "src"), Queue(model, "server", SchedStrategy.FCFS), Sink(model, "sink")
    job = OpenClass(model, "job")
    source.set_arrival(job, Exp(0.8))
    server.set_service(job, Exp(1.0))
    model.link(Network.serial_routing(source, server, sink))
    return model


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 2_000_000
    count = "--count" in sys.argv
    doc = run_ldes(build(), n, respt_samples=count)
    out = {"customers": n, "seconds": doc["seconds"], "cpu": doc["cpu"], "wall": doc["wall"], "engine": doc["engine"],
           "events": doc.get("totalSimulatedEvents"), "mean_response": metric(doc, "RN", 1),
           "throughput": metric(doc, "TN", 1), "utilization": metric(doc, "UN", 1)}
    if count:
        out["respt_samples"] = respt_counts(doc)
    print(json.dumps(out))
