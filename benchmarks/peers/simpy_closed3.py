"""SimPy version of models/bench/closed3.qpn: N = 20 jobs cycling through a delay
(Z = 1 s) and FCFS stations of 0.2 s and 0.1 s (one process per job).

Usage: simpy_closed3.py [completions]
Prints one JSON line: {"completions": n, "seconds": s, "throughput": cycles/s,
"response_s1": R1}.  completions = service completions at all three stations
(the delay included), as the LDES peer counts them.
"""
import json
import random
import sys
import time

import simpy


def run(completions: int, n: int = 20, seed: int = 1):
    random.seed(seed)
    env = simpy.Environment()
    s1, s2 = simpy.Resource(env, capacity=1), simpy.Resource(env, capacity=1)
    count = [0, 0, 0.0]          # completions, s1 visits, s1 response-time sum
    exp = random.expovariate

    def job(env):
        while count[0] < completions:
            yield env.timeout(exp(1.0))
            arrive = env.now
            with s1.request() as req:
                yield req
                yield env.timeout(exp(5.0))
            count[1] += 1
            count[2] += env.now - arrive
            with s2.request() as req:
                yield req
                yield env.timeout(exp(10.0))
            count[0] += 3

    for _ in range(n):
        env.process(job(env))
    t0 = time.perf_counter()
    c0 = time.process_time()
    env.run()
    cpu = time.process_time() - c0
    seconds = time.perf_counter() - t0
    return {"completions": count[0], "seconds": seconds, "cpu": cpu, "cpu_process": time.process_time(),
            "throughput": count[0] / 3 / env.now, "response_s1": count[2] / max(count[1], 1)}


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 600_000)))
