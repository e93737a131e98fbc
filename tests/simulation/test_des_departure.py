"""Departure disciplines that offer one token at a time (QPME's FIFO and RANDOM) against
known answers.

A place with ``departure fifo`` offers only its oldest token to the transitions, across
colors; the others wait behind it.  Clients that think (IS), then each take one of k
threads for a service (IS: one server per thread) whose mean depends on the color, are then exactly a FCFS
queue with k servers and those service times: the CTMC of that twin (which keeps the
order of the waiting tokens in its state) is the known answer.  ``departure random``
offers a random waiting token: with one thread, a queue served in random order.  The
ordinary ``normal`` departure chooses between the colors' modes by weight, not by
the tokens' order, and gives other numbers (the check that the tests can fail).
"""
import pytest

import qpn
from des_support import assert_covers, des

POOL = """net pool
param threads = 1
colors job = {{x1, x2}}
place clients : job
    queue is
    service x1: exp(1), x2: exp(1)
    {client_departure}
    init 3 x1, 3 x2
place pool init threads
place server : job
    queue is
    service x1: exp(0.2), x2: exp(0.5)
{waiting}
transition start : {source}(c), pool -> server(c)
transition done : server(c) -> clients(c), pool
"""
WAITING = """place waiting : job
    {departure}
transition wake : clients(c) -> waiting(c)"""

TWIN = """net twin
param threads = 1
colors job = {{x1, x2}}
place clients : job
    queue is
    service x1: exp(1), x2: exp(1)
    init 3 x1, 3 x2
place server : job
    queue {discipline} servers threads
    service x1: exp(0.2), x2: exp(0.5)
transition start : clients(c) -> server(c)
transition done : server(c) -> clients(c)
"""


def pool(departure: str, where: str) -> qpn.Net:
    """The pool model with ``departure`` on the clients' depository or on an ordinary
    place ``waiting`` between them and the threads."""
    d = f"departure {departure}" if departure != "normal" else ""
    if where == "clients":
        return qpn.parse(POOL.format(client_departure=d, waiting="", source="clients"))
    return qpn.parse(POOL.format(client_departure="", waiting=WAITING.format(departure=d),
                                 source="waiting"))


def exact(discipline: str, threads: int):
    return qpn.solve(qpn.parse(TWIN.format(discipline=discipline)), method="ctmc", threads=threads)


@pytest.mark.parametrize("where,threads", [("clients", 1), ("waiting", 1), ("clients", 2)])
def test_fifo_departure_before_a_thread_pool_is_a_fcfs_queue(where, threads):
    ref = exact("fcfs", threads)
    res = des(pool("fifo", where), {"time": 4000, "replications": 10}, threads=threads)
    for color in ("x1", "x2"):
        assert_covers(res, "departures", "server", color, ref.get("departures", "server", color),
                      max_rel=0.02, what=f"fifo at {where}, {threads} threads")


def test_random_departure_before_one_thread_is_a_random_order_queue():
    ref = exact("random", 1)
    res = des(pool("random", "waiting"), {"time": 4000, "replications": 10})
    for color in ("x1", "x2"):
        assert_covers(res, "departures", "server", color, ref.get("departures", "server", color),
                      max_rel=0.02, what="random departure")


def test_normal_departure_differs_and_the_analytic_solvers_refuse_ordered_ones():
    fcfs = exact("fcfs", 1).get("departures", "server", "x1")
    normal = qpn.solve(pool("normal", "waiting"), method="ctmc").get("departures", "server", "x1")
    assert normal < 0.975 * fcfs                 # 1.378 vs 1.427: order matters here
    with pytest.raises(qpn.QPNError, match="departure fifo"):
        qpn.solve(pool("fifo", "waiting"), method="ctmc")
    res = qpn.solve(pool("fifo", "waiting"), method="auto", options={"time": 5, "quiet": True})
    assert res.method == "des"


@pytest.mark.parametrize("departure,x1,x2", [("fifo", 1, 1), ("normal", None, None)])
def test_initial_tokens_are_offered_in_turns_of_their_colors(departure, x1, x2):
    """QPME queues a place's initial tokens color by color in turns: one thread freed
    every second (det) starts x1 at 0 and x2 at 1, not x1 twice.  With normal departure
    the two colors' modes are chosen by weight: some replications start x1 twice."""
    net = qpn.parse(f"""net turns
colors job = {{x1, x2}}
place waiting : job
    departure {departure}
    init 2 x1, 2 x2
place pool init 1
place log : job
transition start : waiting(c), pool -> log(c)
transition free timed : log(c) -> pool
    delay det(1)
""".replace("departure normal", ""))
    res = des(net, {"time": 1.5, "replications": 8, "warmup": "none"})
    started = [res.get("departures", "waiting", c) * 1.5 for c in ("x1", "x2")]
    if x1 is not None:
        assert started == pytest.approx([x1, x2], abs=1e-9)
    else:
        assert started[0] + started[1] == pytest.approx(2, abs=1e-9) and started != [1, 1]


def test_open_arrivals_waiting_in_fifo_order_match_pollaczek_khinchine():
    """Two Poisson streams (0.4/s each) wait in a fifo place for one thread; service
    exp(0.5 s) for x1, exp(1.5 s) for x2: an M/G/1 FCFS queue, so the mean number
    waiting is lambda^2 E[S^2] / (2 (1 - rho)) = 4 (rho = 0.8, E[S^2] = 2.5 s^2).  The
    waiting line grows far beyond its first store (tokens are queued in order)."""
    net = qpn.parse("""net mg1
colors job = {x1, x2}
place waiting : job
    departure fifo
place pool init 1
place server : job
    queue is
    service x1: exp(0.5), x2: exp(1.5)
transition arrive timed {
    mode a : -> waiting(x1)  delay exp(2.5)
    mode b : -> waiting(x2)  delay exp(2.5)
}
transition start : waiting(c), pool -> server(c)
transition done : server(c) -> pool
""")
    res = des(net, {"time": 40000, "replications": 10})
    assert_covers(res, "tokens", "waiting", "", 4.0, max_rel=0.08)
    assert_covers(res, "tokens", "server", "", 0.8, max_rel=0.03)
