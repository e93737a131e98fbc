"""The software layer solved by the existing solvers, against hand-written nets
and closed forms: the expansion must mean exactly what the program means."""
import math
import os

import numpy as np
import pytest

import qpn
from qpn.solvers import solve

from conftest import MODELS

REL = 1e-9


def load(name):
    return qpn.load(os.path.join(MODELS, name))


def close(a, b, rel=REL):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


MUTEX = """
param threads = 5
param think = 1 s
param hold = 200 ms

software {
    mutex lock

    pool workers size threads {
        sleep exp(think) as working
        lock lock as waiting
        sleep exp(hold) as critical
        unlock lock
    }
}
"""


def test_mutex_pool_equals_the_hand_written_net():
    sw = solve(qpn.parse(MUTEX), "ctmc")
    core = solve(load("mutex.qpn"), "ctmc")
    pairs = [("working", "workers.working"), ("waiting", "workers.waiting"),
             ("critical", "workers.critical"), ("lock", "lock.free")]
    for measure in ("tokens", "residence", "arrivals"):
        for a, b in pairs:
            assert close(core.get(measure, a), sw.get(measure, b)), (measure, a)
    assert close(core.get("throughput", "acquire"), sw.get("throughput", "workers.waiting.done"))
    # the lock's own contention measures: all waiting sites together, and the holder
    assert close(sw.get("residence", "lock.waiting"), core.get("residence", "waiting"))
    assert close(sw.get("tokens", "lock.waiting"), core.get("tokens", "waiting"))
    assert close(sw.get("tokens", "lock.held"), core.get("tokens", "critical"))
    assert close(sw.get("residence", "lock.held"), 0.2)


def test_closed_population_on_a_ps_cpu_is_the_mva_closed_form():
    net = qpn.parse("""
param users = 10
software {
    cpu host ps
    population clients size users think exp(1 s) { cpu exp(80 ms) as request }
}""")
    n, z, d = 10, 1.0, 0.08
    q = 0.0
    for k in range(1, n + 1):  # exact MVA by hand
        r = d * (1 + q)
        x = k / (z + r)
        q = x * r
    for method in ("mva", "ctmc"):
        res = solve(net, method)
        assert close(res.get("throughput", "clients.begin"), x), method
        assert close(res.get("residence", "clients.request"), r), method
        assert close(res.get("utilization", "host"), x * d), method


def test_open_source_on_a_disk_is_mm1():
    net = qpn.parse("""
param lambda = 0.8
software {
    disk d fcfs service exp(1 s)
    sink done
    source jobs every exp(1 / lambda) {
        io on d as serve
        put done
    }
}""")
    res = solve(net, "mva")
    assert close(res.get("residence", "jobs.serve"), 5.0)
    assert close(res.get("utilization", "d"), 0.8)
    assert close(res.get("throughput", "done.leave"), 0.8)


def test_semaphore_with_k_permits_is_a_k_server_station():
    sw = qpn.parse("""
param n = 6
param k = 2
software {
    semaphore s permits k
    pool p size n {
        sleep exp(1 s) as think
        acquire s
        sleep exp(300 ms) as hold
        release s
    }
}""")
    core = qpn.parse("""
param n = 6
param k = 2
place think queue is service exp(1 s) init n
place station queue fcfs servers k service exp(300 ms)
transition go : think -> station
transition back : station -> think
""")
    a, b, c = solve(sw, "ctmc"), solve(core, "ctmc"), solve(core, "mva")
    assert close(a.get("throughput", "p.begin"), b.get("throughput", "go"))
    assert close(a.get("throughput", "p.begin"), c.get("throughput", "go"))
    # waiting for a permit + holding it = the station's response time
    assert close(a.get("residence", "s.waiting") + 0.3, b.get("residence", "station"))
    assert close(a.get("tokens", "s.held"), b.get("utilization", "station") * 2)
    for k in (1, 3):
        assert close(solve(sw, "ctmc", k=k).get("throughput", "p.begin"),
                     solve(core, "mva", k=k).get("throughput", "go"))


def test_barrier_equals_the_hand_written_net():
    net = qpn.parse("""
param parties = 3
param work = 1 s
software {
    barrier b parties parties
    pool workers size parties {
        sleep erlang(2, work) as computing
        await b
    }
}""")
    sw, core = solve(net, "ctmc"), solve(load("barrier.qpn"), "ctmc")
    assert close(sw.get("throughput", "b.trip"), core.get("throughput", "release"))
    assert close(sw.get("tokens", "b.waiting"), core.get("tokens", "arrived"))
    assert close(sw.get("tokens", "workers.computing"), core.get("tokens", "computing"))
    for p in (2, 4):
        assert close(solve(net, "ctmc", parties=p).get("throughput", "b.trip"),
                     solve(load("barrier.qpn"), "ctmc", parties=p).get("throughput", "release"))


def test_barrier_releases_of_one_trip_are_not_taken_by_a_thread_back_in_zero_time():
    # main waits again as soon as it passes; two workers compute exp(1 ms) on 2 cores.
    # A round ends when both workers arrive: 1 / E[max of two exp(1 ms)] = 1 / 1.5 ms, and
    # every party passes once per trip.  Before the fix main took a second release of the
    # same trip (1023.8/s against 761.9 trips/s) and left a worker waiting.
    net = qpn.parse("""
software {
    cpu host cores 2 ps
    barrier b parties 3
    pool main size 1 { await b }
    pool w size 2 { cpu exp(1 ms)
                    await b }
}""")
    r = solve(net, "ctmc")
    assert close(r.get("throughput", "b.trip"), 1000 / 1.5)
    assert close(r.get("throughput", "main.begin"), r.get("throughput", "b.trip"))
    assert close(r.get("throughput", "w.begin"), 2 * r.get("throughput", "b.trip"))


def test_two_awaits_in_a_row_pass_two_trips():
    # `await b` twice with nothing between: the second entry's test of b.go counts the
    # release the first exit takes in the same zero-time step (else the path is dead)
    net = qpn.parse("""
software {
    barrier b parties 2
    pool main size 1 { await b
                       await b }
    pool w size 1 { sleep exp(1 s) as work
                    await b }
}""")
    r = solve(net, "ctmc")
    assert close(r.get("throughput", "b.trip"), 1.0)
    assert close(r.get("throughput", "main.begin"), 0.5)



@pytest.mark.parametrize("body", ["await b\n await b", "loop 2 times { await b }"])
def test_every_party_awaiting_twice_in_a_row_passes_two_trips(body):
    # both threads compute exp(1 ms) on 2 cores, then pass the barrier twice: two trips per
    # 1 / E[max of two exp(1 ms)] = 1.5 ms.  Before the fix each released thread's exit
    # waited for b.go to hold only its own release, so both waited for each other: a dead
    # marking (b.go = 2) found by qpn check; each now waits in w.await_b.left between.
    net = qpn.parse(f"""
software {{
    cpu host cores 2 ps
    barrier b parties 2
    pool w size 2 {{ cpu exp(1 ms)
                    {body} }}
}}""")
    r = solve(net, "ctmc")
    assert close(r.get("throughput", "b.trip"), 2 * 1000 / 1.5)
    assert close(r.get("throughput", "w.begin"), 2 * 1000 / 1.5)   # both threads, once a cycle
    d = solve(net, "des", options={"seed": 1})
    c = d.cell("throughput", "b.trip")
    assert abs(c.value - 2000 / 1.5) <= 3 * c.ci


NOTIFY_TWICE = """
software {
    mutex m
    condition c on m
    pool notifier size 1 { sleep exp(200 ms) as work
                           lock m
                           NOTIFY
                           unlock m }
    pool waiter size 1 { lock m
                         wait c
                         unlock m
                         sleep exp(100 ms) as handle }
}"""


def test_notify_twice_with_one_waiter_wakes_it_and_loses_the_second():
    # the second notify's "nobody waits" test counts the waiter the first one woke in the
    # same zero-time step; without that the notifier could not move with one waiter
    once = solve(qpn.parse(NOTIFY_TWICE.replace("NOTIFY", "notify c")), "ctmc")
    twice = solve(qpn.parse(NOTIFY_TWICE.replace("NOTIFY", "notify c\n notify c")), "ctmc")
    for what in ("notifier.begin", "waiter.begin"):
        assert close(twice.get("throughput", what), once.get("throughput", what))
    assert once.get("throughput", "waiter.begin") > 0


def test_blocking_queue_equals_the_hand_written_net():
    net = qpn.parse("""
param producers = 2
param consumers = 1
param slots = 4
param produce = 100 ms
param consume = 80 ms
software {
    blocking queue buffer capacity slots
    pool producer size producers {
        sleep exp(produce) as producing
        put buffer
    }
    pool consumer size consumers {
        take buffer
        sleep exp(consume) as consuming
    }
}""")
    sw, core = solve(net, "ctmc"), solve(load("bounded_queue.qpn"), "ctmc")
    assert close(sw.get("throughput", "consumer.take_buffer.done"), core.get("throughput", "take"))
    assert close(sw.get("tokens", "buffer.items"), core.get("tokens", "buffer"))
    assert close(sw.get("tokens", "consumer.consuming"), core.get("tokens", "consuming"))
    # producers blocked on a full queue wait in the depository of `producing` in the core net
    blocked = sw.get("tokens", "producer.put_buffer")
    assert blocked > 0.1 and close(blocked, sw.get("tokens", "buffer.putters"))
    assert close(sw.get("tokens", "producer.producing") + blocked, core.get("tokens", "producing"))


def test_timer_across_threads_is_the_response_time_of_mm1k():
    net = qpn.parse("""
param rate = 2
software {
    blocking queue q capacity 3
    timer rt
    sink rejected
    source clients every exp(1 / rate) {
        timer start rt
        put q else {
            timer stop rt
            put rejected
        }
    }
    pool server size 1 {
        take q
        sleep exp(400 ms) as serve
        timer stop rt
    }
}""")
    res = solve(net, "ctmc", options={"limit": 10**8})
    rho, cap = 0.8, 4                       # M/M/1/4: the queue holds 3, the server 1
    p = np.array([rho ** k for k in range(cap + 1)])
    p /= p.sum()
    assert close(res.get("throughput", "rejected.leave"), 2 * p[cap])
    assert close(res.get("throughput", "server.take_q.done"), 2 * (1 - p[cap]))
    # Little: requests in flight / all arrivals (rejected ones count 0 s)
    assert close(res.get("residence", "rt.running"), sum(k * p[k] for k in range(cap + 1)) / 2)


def test_write_lock_alone_is_a_mutex():
    rw = MUTEX.replace("mutex lock", "rwlock lock").replace("lock lock as", "write lock lock as") \
        .replace("unlock lock", "write unlock lock")
    a, b = solve(qpn.parse(rw), "ctmc"), solve(qpn.parse(MUTEX), "ctmc")
    assert close(a.get("throughput", "workers.begin"), b.get("throughput", "workers.begin"))
    assert close(a.get("residence", "lock.write_waiting"), b.get("residence", "lock.waiting"))


HANDOVER = """
software {
    mutex m handover det(1 ms)
    pool w size N {
        lock m
        sleep det(4 ms) as hold
        unlock m
    }
}"""


@pytest.mark.parametrize("n, rate", [(1, 250.0), (2, 200.0), (3, 200.0)])
def test_mutex_handover_is_paid_only_when_a_thread_waits(n, rate):
    """Threads that only take the lock: one alone re-takes it at once (1 / 4 ms); with
    more, every unlock has a waiter and the lock is idle for the hand-over (1 / 5 ms)."""
    res = solve(qpn.parse(HANDOVER.replace("N", str(n))), "des",
                options={"quiet": True, "seed": 1})
    assert close(res.get("throughput", "w.begin"), rate, 1e-6)
    assert close(res.get("throughput", "m.handed"), 0.0 if n == 1 else rate, 1e-6)


def test_mutex_handover_ctmc_agrees_with_des_and_a_zero_handover_is_none():
    text = MUTEX.replace("mutex lock", "mutex lock handover exp(100 ms)")
    exact = solve(qpn.parse(text), "ctmc")
    sim = solve(qpn.parse(text), "des", options={"quiet": True, "seed": 3, "rtol": 0.01})
    x, hw = sim.get("throughput", "workers.begin"), sim.ci("throughput", "workers.begin")
    assert abs(x - exact.get("throughput", "workers.begin")) <= 3 * hw
    plain = solve(qpn.parse(MUTEX), "ctmc").get("throughput", "workers.begin")
    assert exact.get("throughput", "workers.begin") < 0.95 * plain       # the lock idles
    tiny = solve(qpn.parse(MUTEX.replace("mutex lock", "mutex lock handover exp(1 ns)")), "ctmc")
    assert close(tiny.get("throughput", "workers.begin"), plain, 1e-6)


def test_readers_share_an_rwlock():
    net = qpn.parse("""
software {
    rwlock t
    pool readers size 4 {
        sleep exp(1 s) as think
        read lock t
        sleep exp(500 ms) as read
        read unlock t
    }
}""")
    res = solve(net, "ctmc")
    assert close(res.get("throughput", "readers.begin"), 4 / 1.5)      # no waiting at all
    assert res.get("tokens", "t.read_waiting") < 1e-12
    assert close(res.get("tokens", "t.readers"), 4 * 0.5 / 1.5)


def test_condition_notifications_are_lost_when_nobody_waits():
    net = qpn.parse("""
software {
    mutex m
    condition c on m
    pool notifier size 1 {
        sleep exp(1 s) as work
        lock m
        notify c
        unlock m
    }
    pool waiter size 1 {
        lock m
        wait c
        unlock m
        sleep exp(100 ms) as handle
    }
}""")
    res = solve(net, "ctmc")
    # notifications form a Poisson stream of rate 1; the waiter misses those during `handle`
    assert close(res.get("throughput", "waiter.begin"), 1 / 1.1)
    assert close(res.get("throughput", "notifier.begin"), 1.0)


def test_limit_error_route_is_the_engset_loss_system():
    n, k, z, h = 4, 2, 1.0, 0.5
    net = qpn.parse(f"""
software {{
    limit fds {k}
    pool workers size {n} {{
        sleep exp({z} s) as think
        allocate fds else {{ return }}
        sleep exp({h} s) as use
        free fds
    }}
}}""")
    res = solve(net, "ctmc")
    pi = np.array([math.comb(n, j) * (h / z) ** j for j in range(k + 1)])
    pi /= pi.sum()
    assert close(res.get("throughput", "workers.allocate_fds.error"), pi[k] * (n - k) / z)
    assert close(res.get("tokens", "fds.used"), sum(j * pi[j] for j in range(k + 1)))


def test_fork_join_waits_for_the_slowest_child():
    net = qpn.parse("""
software {
    pool parent size 1 {
        fork 2 { sleep exp(1 s) as work }
    }
}""")
    res = solve(net, "ctmc")
    assert close(res.get("throughput", "parent.begin"), 1 / 1.5)      # E[max of two exp(1)]
    assert close(res.get("residence", "parent.fork"), 1.5)
    two = qpn.parse("software { pool parent size 1 { fork { sleep exp(1 s) } and { sleep exp(500 ms) } } }")
    # E[max(X, Y)] = 1 + 0.5 - 1/(1 + 2)
    assert close(solve(two, "ctmc").get("residence", "parent.fork"), 1.5 - 1 / 3)


def test_branch_probabilities_and_call_return():
    net = qpn.parse("""
param p = 0.3
software {
    pool w size 1 {
        sleep exp(1 s) as a
        call sub
        sleep exp(1 s) as c
    }
    behavior sub {
        branch {
            p: { return }
            1 - p: { sleep exp(2 s) as b }
        }
    }
}""")
    res = solve(net, "ctmc")
    cycle = 1 + 0.7 * 2 + 1
    assert close(res.get("throughput", "w.begin"), 1 / cycle)
    assert close(res.get("throughput", "w.sub.b.done"), 0.7 / cycle)


def test_load_dependent_disk():
    one = qpn.parse("""
software {
    disk d servers 2 service by load 1: exp(10 ms), 2: exp(30 ms)
    pool w size 1 {
        sleep exp(50 ms) as think
        io on d
    }
}""")
    res = solve(one, "ctmc")
    assert close(res.get("throughput", "w.begin"), 1 / 0.06)          # alone: always level 1
    assert res.get("throughput", "w.io.load2.done") < 1e-12
    two = qpn.parse(one.text().replace("size 1", "size 2"))
    res = solve(two, "ctmc")
    x1, x2 = res.get("throughput", "w.io.load1.done"), res.get("throughput", "w.io.load2.done")
    assert x2 > 0 and x1 > 0
    # mean service time is a mix of the two levels, and Little holds for the disk
    busy = res.get("tokens", "d.busy")
    assert close(busy, x1 * 0.01 + x2 * 0.03)


def test_rr_cpu_with_exponential_bursts_like_ps():
    net = qpn.parse("""
software {
    cpu host cores 2 rr quantum 5 ms
    population u size 4 think exp(100 ms) { cpu exp(20 ms) }
}""")
    ps = qpn.parse(net.text().replace("rr quantum 5 ms", "ps"))
    a = solve(net, "ctmc", options={"rr": "ps"}).get("throughput", "u.begin")
    b = solve(ps, "mva").get("throughput", "u.begin")
    assert close(a, b)


DES = {"time": 5, "replications": 4, "quiet": True, "seed": 7}


def _loop(kind):
    return qpn.parse(f"""
software {{
    cpu host
    timer t
    pool w size 1 {{
        timer start t
        loop {kind}5 times {{ cpu det(1 ms) }}
        timer stop t
        sleep det(1 ms) as pause
    }}
}}""")


def test_counted_loop_takes_exactly_five_iterations_with_des():
    res = solve(_loop(""), "des", options=DES)
    assert res.get("residence", "t.running") == pytest.approx(0.005, rel=2e-3)
    assert res.get("residence_var", "t.running") == pytest.approx(0, abs=1e-12)
    assert res.get("throughput", "w.begin") == pytest.approx(1 / 0.006, rel=2e-3)


def test_geometric_loop_keeps_the_mean_but_not_the_variance():
    res = solve(_loop("about "), "des", options=DES)
    assert res.get("residence", "t.running") == pytest.approx(0.005, rel=0.1)
    # geometric count with mean 5: Var = 20 iterations^2 of 1 ms
    assert res.get("residence_var", "t.running") == pytest.approx(20e-6, rel=0.35)


def test_counted_loop_with_ctmc_is_exact():
    net = qpn.parse("""
param n = 5
software {
    pool w size 1 { loop n times { sleep exp(1 ms) } }
}""")
    for n in (1, 5, 12):
        assert close(solve(net, "ctmc", n=n).get("throughput", "w.begin"), 1000 / n)


def test_example_models_solve():
    res = solve(load("sw_producer_consumer.qpn"), "ctmc")
    assert res.get("throughput", "consumer.take_buffer.timeout") > 0
    assert res.get("throughput", "consumer.take_buffer.done") == pytest.approx(
        res.get("throughput", "producer.put_buffer.done"), rel=1e-9)
    res = solve(load("sw_barrier.qpn"), "ctmc")
    assert close(res.get("throughput", "round.trip"), 4 * res.get("throughput", "workers.begin") / 3)
    res = solve(load("sw_services.qpn"), "ctmc", options={"limit": 10**20})
    assert res.get("residence", "request.running") > 0
