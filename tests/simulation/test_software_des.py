"""Every construct of the software layer, simulated by the event engine, against the
exact CTMC of the same expanded net.

Each model is small (a bounded state space) and exercises one construct: the
simulation's 95% intervals must cover every exact throughput, token count and
utilization within ``K_CI`` half-widths (see ``des_support`` for the reasoning),
and the main measures must be estimated to a few percent.  Round robin has no
exact Markov model (see tests/simulation/test_des_rr.py for its checks).
"""
import pytest

import qpn
from des_support import assert_all_cover, des

MODELS = {
    "cpu_ps_population": """
software {
    cpu host cores 2 ps
    population u size 5 think exp(100 ms) { cpu exp(40 ms) as work }
}""",
    "disk_fcfs_servers": """
software {
    disk d servers 2 fcfs service exp(30 ms)
    pool w size 4 { sleep exp(50 ms) as think
                    io on d }
}""",
    "disk_load_dependent": """
software {
    disk d servers 2 service by load 1: exp(10 ms), 2: exp(30 ms)
    pool w size 3 { sleep exp(40 ms) as think
                    io on d }
}""",
    "mutex": """
software {
    mutex m
    pool w size 4 { sleep exp(1 s) as think
                    lock m
                    sleep exp(300 ms) as hold
                    unlock m }
}""",
    "rwlock_prefer_writers": """
software {
    rwlock t prefer writers
    pool readers size 3 { sleep exp(300 ms) as think
                          read lock t
                          sleep exp(200 ms) as read
                          read unlock t }
    pool writers size 1 { sleep exp(500 ms) as think
                          write lock t
                          sleep exp(100 ms) as write
                          write unlock t }
}""",
    "semaphore": """
software {
    semaphore s permits 2
    pool p size 5 { sleep exp(1 s) as think
                    acquire s
                    sleep exp(400 ms) as hold
                    release s }
}""",
    "barrier": """
software {
    barrier b parties 3
    pool w size 3 { sleep erlang(2, 200 ms) as compute
                    await b }
}""",
    "barrier_zero_time_return": """
software {
    barrier b parties 3
    pool main size 1 { await b }
    pool w size 2 { sleep exp(100 ms) as compute
                    await b }
}""",
    "condition_notify": """
software {
    mutex m
    condition c on m
    pool notifier size 1 { sleep exp(200 ms) as work
                           lock m
                           notify c
                           unlock m }
    pool waiter size 2 { lock m
                         wait c
                         unlock m
                         sleep exp(100 ms) as handle }
}""",
    "condition_notify_all": """
software {
    mutex m
    condition c on m
    pool notifier size 1 { sleep exp(300 ms) as work
                           lock m
                           notify all c
                           unlock m }
    pool waiter size 2 { lock m
                         wait c
                         unlock m
                         sleep exp(100 ms) as handle }
}""",
    "blocking_queue_bounded": """
software {
    blocking queue q capacity 3
    pool producer size 2 { sleep exp(100 ms) as produce
                           put q }
    pool consumer size 1 { take q
                           sleep exp(70 ms) as consume }
}""",
    "queue_take_timeout": """
software {
    blocking queue q
    pool producer size 1 { sleep exp(200 ms) as produce
                           put q }
    pool consumer size 2 { take q timeout exp(150 ms) else { sleep exp(20 ms) as idle }
                           sleep exp(50 ms) as consume }
}""",
    "queue_put_else_and_source_timer_sink": """
param rate = 4
software {
    blocking queue q capacity 2
    timer rt
    sink done
    sink rejected
    source clients every exp(1 / rate) {
        timer start rt
        put q else { timer stop rt
                     put rejected }
    }
    pool server size 1 { take q
                         sleep exp(200 ms) as serve
                         timer stop rt
                         put done }
}""",
    "limit_error_route": """
software {
    limit fds 2
    pool w size 4 { sleep exp(1 s) as think
                    allocate fds else { return }
                    sleep exp(500 ms) as use
                    free fds }
}""",
    "fork_join": """
software {
    pool parent size 1 { sleep exp(100 ms) as prepare
                         fork 2 { sleep exp(300 ms) as work } and { sleep exp(200 ms) as other } }
}""",
    "branch_call_behavior": """
param p = 0.3
software {
    pool w size 2 { sleep exp(100 ms) as a
                    call sub
                    sleep exp(100 ms) as c }
    behavior sub { branch { p: { return }
                            1 - p: { sleep exp(200 ms) as b } } }
}""",
    "counted_loop": """
software {
    cpu host cores 1 ps
    pool w size 2 { loop 3 times { cpu exp(10 ms) as step }
                    sleep exp(50 ms) as pause }
}""",
    "geometric_loop": """
software {
    cpu host cores 1 fcfs
    pool w size 2 { loop about 3 times { cpu exp(10 ms) as step }
                    sleep exp(50 ms) as pause }
}""",
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_event_engine_covers_the_ctmc(name):
    net = qpn.parse(MODELS[name])
    exact = qpn.solve(net, method="ctmc", options={"limit": 10 ** 9})   # the estimate is loose
    assert exact.info.get("truncated_mass", 0.0) < 1e-12        # exact (an unbounded queue: cut far out)
    res = des(net, {"events": 60_000, "replications": 10})
    assert res.info["kernel"] == "EventEngine"
    n = assert_all_cover(res, exact, ("throughput", "tokens", "utilization"), what=name)
    assert n >= 5
