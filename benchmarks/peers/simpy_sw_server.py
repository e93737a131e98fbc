"""SimPy version of models/sw_server.qpn, written as a SimPy user would write it.

Requests arrive at `rate`/s (Poisson) into a request queue of capacity 50 (a full
queue rejects); `threads` worker threads take a request, parse it on the CPU
(exp 4 ms), look it up in a cache under a mutex (exp 0.5 ms on the CPU), read
the file from a FCFS disk (exp 12 ms) on a miss (probability 1 - hit), render
the reply on the CPU (exp 6 ms).  The CPU has `cores` cores shared round robin:
a burst runs in slices of at most `quantum`, each slice start pays a context
switch `switch` (after a slice, only when another burst waits).

Usage: simpy_sw_server.py [horizon_s] [seed]
Prints one JSON line: {"replies", "rejected", "sim_time", "throughput" (replies/s
of simulated time), "response" (mean, s), "cpu" (CPU s of env.run()),
"cpu_process" (CPU s of the whole process so far)}.
"""
import json
import random
import sys
import time

import simpy


def run(horizon: float, seed: int = 1, rate: float = 40.0, threads: int = 8, cores: int = 2,
        hit: float = 0.8, quantum: float = 0.010, switch: float = 50e-6, capacity: int = 50) -> dict:
    rng = random.Random(seed)
    exp = rng.expovariate
    env = simpy.Environment()
    cpu = simpy.Resource(env, capacity=cores)
    cache = simpy.Resource(env, capacity=1)
    disk = simpy.Resource(env, capacity=1)
    requests = simpy.Store(env)
    out = {"replies": 0, "rejected": 0, "response": 0.0}

    def burst(work):
        setup = switch
        while True:
            req = cpu.request()
            yield req
            run = min(quantum, work)
            yield env.timeout(setup + run)
            work -= run
            if work <= 1e-12:
                cpu.release(req)
                return
            setup = switch if cpu.queue else 0.0
            cpu.release(req)

    def clients():
        while True:
            yield env.timeout(exp(rate))
            if len(requests.items) < capacity:
                requests.put(env.now)
            else:
                out["rejected"] += 1

    def worker():
        while True:
            t0 = yield requests.get()
            yield from burst(exp(1 / 0.004))
            with cache.request() as lk:
                yield lk
                yield from burst(exp(1 / 0.0005))
            if rng.random() >= hit:
                with disk.request() as d:
                    yield d
                    yield env.timeout(exp(1 / 0.012))
            yield from burst(exp(1 / 0.006))
            out["replies"] += 1
            out["response"] += env.now - t0

    env.process(clients())
    for _ in range(threads):
        env.process(worker())
    c0 = time.process_time()
    env.run(until=horizon)
    cpu_s = time.process_time() - c0
    return {"replies": out["replies"], "rejected": out["rejected"], "sim_time": horizon,
            "throughput": out["replies"] / horizon, "response": out["response"] / max(out["replies"], 1),
            "cpu": cpu_s, "cpu_process": time.process_time()}


if __name__ == "__main__":
    a = sys.argv[1:]
    print(json.dumps(run(float(a[0]) if a else 2_000.0, int(a[1]) if len(a) > 1 else 1)))
