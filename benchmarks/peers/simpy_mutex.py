"""SimPy version of models/mutex.qpn: `threads` threads think exp(1 s) (outside the
lock, all at once), then hold one mutex for exp(200 ms), FIFO among the waiters.

Usage: simpy_mutex.py [horizon_s] [seed]
Prints one JSON line: {"cycles": lock holds completed, "sim_time": horizon,
"throughput": cycles / s of simulated time, "waiting": mean threads waiting for
the lock, "cpu": CPU seconds of env.run(), "cpu_process": CPU seconds of the
whole process so far (interpreter start and imports included)}.
"""
import json
import random
import sys
import time

import simpy


def run(horizon: float, seed: int = 1, threads: int = 5, think: float = 1.0, hold: float = 0.2) -> dict:
    rng = random.Random(seed)
    exp = rng.expovariate
    env = simpy.Environment()
    lock = simpy.Resource(env, capacity=1)
    count = [0, 0.0]                    # cycles, waiting time summed over threads

    def thread():
        while True:
            yield env.timeout(exp(1.0 / think))
            asked = env.now
            with lock.request() as req:
                yield req
                count[1] += env.now - asked
                yield env.timeout(exp(1.0 / hold))
            count[0] += 1

    for _ in range(threads):
        env.process(thread())
    c0 = time.process_time()
    env.run(until=horizon)
    cpu = time.process_time() - c0
    return {"cycles": count[0], "sim_time": horizon, "throughput": count[0] / horizon,
            "waiting": count[1] / horizon, "cpu": cpu, "cpu_process": time.process_time()}


if __name__ == "__main__":
    a = sys.argv[1:]
    print(json.dumps(run(float(a[0]) if a else 100_000.0, int(a[1]) if len(a) > 1 else 1)))
