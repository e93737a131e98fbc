"""SimPy M/M/1 (rho = 0.8): the classic process-based model, for the side-by-side benchmark.

Prints one JSON line: {"customers": n, "seconds": s, "mean_response": r}.
"""
import json
import random
import sys
import time

import simpy


def run(customers: int, seed: int = 1):
    random.seed(seed)
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    total = [0.0, 0]

    def customer(env):
        arrive = env.now
        with server.request() as req:
            yield req
            yield env.timeout(random.expovariate(1.0))
        total[0] += env.now - arrive
        total[1] += 1

    def source(env):
        while total[1] < customers:
            yield env.timeout(random.expovariate(0.8))
            env.process(customer(env))

    env.process(source(env))
    t0 = time.perf_counter()
    c0 = time.process_time()
    env.run()
    cpu = time.process_time() - c0
    return {"customers": total[1], "seconds": time.perf_counter() - t0, "cpu": cpu,
            "cpu_process": time.process_time(),
            "mean_response": total[0] / max(total[1], 1)}


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)))
