"""MPI communicators and collectives in the software layer: syntax, printing, soft
keywords, the expansion's names and cost expressions, and located errors."""
import math

import pytest

import qpn
from qpn.distributions import Det, Exp
from qpn.errors import ModelError
from qpn.expr import BinOp, Num, Ref, evaluate
from qpn.model import Param, QueueingPlace
from qpn.net import Net
from qpn.software import ast as sw
from qpn.software.mpi import cost, rounds
from located import assert_located, software_block

OPS = ("allreduce", "reduce", "bcast", "gather", "scatter", "allgather", "alltoall", "sendrecv")

EVERY_CONSTRUCT = """\
# every MPI construct

net spmd

param ranks = 4
param m = 1024

software {
    cpu host cores ranks ps

    comm world ranks ranks latency 5 us per_byte 0.2 ns on host
    comm grid ranks 2 * ranks latency 2 us
    comm bare ranks 3

    pool solver size ranks {
        cpu exp(1 ms) on host as work
        allreduce world 8
        # the residual
        reduce world m as residual
        bcast world
        gather world 16
        scatter world (m + 1) * 2
        allgather world m
        alltoall world 64 as exchange
        sendrecv world 128
        await world
        await world as sync
        loop 2 times {
            cpu det(1 ms) on host
            allreduce world
            sendrecv world m
        }
    }

    pool other size 2 * ranks {
        sleep exp(1 ms)
        alltoall grid m
    }

    pool third size 3 {
        sleep exp(1 ms)
        bcast bare 8
    }
}
"""


def test_every_mpi_construct_round_trips_and_is_canonical():
    net = qpn.parse(EVERY_CONSTRUCT, "spmd.qpn")
    text = net.text()
    assert text == EVERY_CONSTRUCT                      # the text above is canonical
    again = qpn.parse(text)
    assert again == net and again.text() == text
    block = next(i for i in net.items if isinstance(i, sw.Software))
    comms = [d for d in block.decls if isinstance(d, sw.Comm)]
    assert comms[0] == sw.Comm("world", Ref("ranks"), Num(5, "us"), Num(0.2, "ns"), "host")
    assert comms[2] == sw.Comm("bare", Num(3))          # defaults: no latency, no per_byte, no cpu
    solver = next(d for d in block.decls if getattr(d, "name", "") == "solver")
    steps = [st for st in solver.body if isinstance(st, sw.Collective)]
    assert [st.op for st in steps] == list(OPS)
    assert steps[0] == sw.Collective("allreduce", "world", Num(8))
    assert steps[1].label == "residual" and steps[1].doc == "the residual"
    assert steps[2].bytes == sw.ZERO                     # bcast world: 0 bytes
    awaits = [st for st in solver.body if isinstance(st, sw.Await)]
    assert [a.label for a in awaits] == [None, "sync"]
    # the flat net is plain core text and checks clean
    flat = net.flatten()
    assert qpn.parse(flat.text()) == flat
    rep = qpn.check(net)
    assert not rep.errors, [str(d) for d in rep.errors]


def test_options_in_any_order_print_in_one_order():
    a = qpn.parse("software { cpu host\n comm w ranks 4 on host per_byte 1 ns latency 3 us }")
    b = qpn.parse("software { cpu host\n comm w ranks 4 latency 3 us per_byte 1 ns on host }")
    assert a == b
    assert "comm w ranks 4 latency 3 us per_byte 1 ns on host" in a.text()
    # explicit zeros are the defaults
    c = qpn.parse("software { comm w ranks 4 latency 0 per_byte 0\n"
                  " pool p size 4 { sleep exp(1 s)\n allreduce w 0 } }")
    assert "comm w ranks 4\n" in c.text() and "allreduce w\n" in c.text()
    assert qpn.parse(c.text()) == c


def test_mpi_words_stay_names_outside_software_blocks():
    src = """
param ranks = 2
param latency = 3
param per_byte = 4

colors op = {allreduce, reduce, bcast, gather, scatter, allgather, alltoall, sendrecv, comm}

place reduce init ranks
place comm : op
place gather

transition sendrecv : reduce -> gather
transition allreduce : gather -> reduce
transition bcast : -> comm(scatter) when latency < per_byte
"""
    net = qpn.parse(src)
    assert {p.name for p in net.places} == {"reduce", "comm", "gather"}
    assert {t.name for t in net.transitions} == {"sendrecv", "allreduce", "bcast"}
    assert qpn.parse(net.text()) == net


@pytest.mark.parametrize("size", [Ref("reduce"), BinOp("*", Ref("cpu"), Num(2)), Ref("as"),
                                  BinOp("+", Ref("io"), Ref("m")), Ref("m"), Num(8, None)])
def test_a_byte_count_named_like_a_step_word_is_printed_in_parentheses(size):
    # 'allreduce world reduce' would read as 'allreduce world' and a step 'reduce ...'
    net = Net("n", tuple(Param(n, Num(2)) for n in ("reduce", "cpu", "as", "io", "m")) + (
        sw.Software((sw.Comm("world", Num(2)), sw.Pool("p", Num(2), (
            sw.Sleep(Exp(Num(1))), sw.Collective("allreduce", "world", size),
            sw.Collective("bcast", "world", size, "x"))))),))
    text = net.text()
    assert qpn.parse(text) == net, text
    plain = isinstance(size, Num) or size == Ref("m")
    assert ("allreduce world (" in text) != plain


def test_mpi_words_as_names_inside_software_blocks():
    # the keywords are names wherever the grammar expects a name or an expression
    net = qpn.parse("""
param ranks = 2
param latency = 1 ms
software {
    cpu reduce cores ranks
    comm gather ranks ranks latency latency on reduce
    pool allreduce size ranks {
        cpu exp(1 ms) on reduce
        allreduce gather 8 as sendrecv
        bcast gather ranks
    }
}""")
    flat = net.flatten()
    assert isinstance(flat.place_map["allreduce.sendrecv.cost"], QueueingPlace)
    assert flat.place_map["allreduce.sendrecv.cost"].queue == "reduce"
    assert "allreduce.bcast_gather" in flat.place_map
    assert qpn.parse(net.text()) == net


def test_expansion_names_and_arcs():
    net = qpn.parse("""
software {
    comm world ranks 4 latency 10 us
    pool r size 4 {
        sleep exp(1 ms) as work
        allreduce world 8
        sendrecv world
        alltoall world as swap
        await world
    }
}""")
    from qpn.dsl.printer import fmt_mode_body
    tm = net.transition_map
    assert fmt_mode_body(tm["world.trip"].modes[0]) == "4 world.waiting -> 4 world.go"
    assert fmt_mode_body(tm["r.work.done"].modes[0]) == \
        "r.work -> r.allreduce_world, world.waiting unless world.go"
    assert fmt_mode_body(tm["r.allreduce_world.done"].modes[0]) == \
        "r.allreduce_world, world.go -> r.allreduce_world.cost"
    # sendrecv does not synchronize: its cost station follows directly
    assert fmt_mode_body(tm["r.allreduce_world.cost.done"].modes[0]) == \
        "r.allreduce_world.cost -> r.sendrecv_world"
    assert fmt_mode_body(tm["r.sendrecv_world.done"].modes[0]) == \
        "r.sendrecv_world -> r.swap, world.waiting unless world.go"
    assert fmt_mode_body(tm["r.await_world.cost.done"].modes[0]) == "r.await_world.cost -> r.start"
    pm = net.place_map
    # without 'on' the costs are delays (an infinite-server queue), deterministic
    for name, seconds in [("r.allreduce_world.cost", 2 * 10e-6), ("r.sendrecv_world", 10e-6),
                          ("r.swap.cost", 3 * 10e-6), ("r.await_world.cost", 2 * 10e-6)]:
        p = pm[name]
        assert p.queue.discipline == "is" and isinstance(p.service[0].dist, Det)
        assert evaluate(p.service[0].dist.value, {}) == pytest.approx(seconds, rel=1e-12)


def test_zero_costs_add_no_station_and_sendrecv_needs_none():
    net = qpn.parse("""
software {
    comm world ranks 4
    pool r size 4 {
        sleep exp(1 ms) as work
        sendrecv world 8
        allreduce world 8
    }
}""")
    names = {p.name for p in net.places}
    assert "r.allreduce_world" in names and "r.allreduce_world.cost" not in names
    assert "r.sendrecv_world" not in names
    # a comm used only by sendrecv has no barrier places
    only = qpn.parse("software { comm w ranks 2 latency 1 us\n pool p size 2 { sleep exp(1 ms)\n"
                     " sendrecv w } }")
    assert not any(p.name.startswith("w.") for p in only.places)
    assert "p.sendrecv_w" in only.place_map


H = {"P": 4, "L": 200e-6, "G": 10e-6}


def _expected(op, p, lat, gap, m):
    r = math.ceil(math.log(p) / math.log(2) - 1e-9)
    msg = lat + m * gap
    return {"barrier": r * lat, "allreduce": r * msg, "reduce": r * msg, "bcast": r * msg,
            "gather": r * lat + (p - 1) * m * gap, "scatter": r * lat + (p - 1) * m * gap,
            "allgather": r * lat + (p - 1) * m * gap, "alltoall": (p - 1) * msg,
            "sendrecv": min(1, p - 1) * msg}[op]


@pytest.mark.parametrize("op", OPS + ("barrier",))
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8, 1000, 1024])
def test_cost_expressions_are_the_closed_forms(op, p):
    world = sw.Comm("world", Ref("P"), Ref("L"), Ref("G"))
    env = {"P": p, "L": 200e-6, "G": 10e-6, "m": 8}
    want = _expected(op, p, 200e-6, 10e-6, 8)
    assert evaluate(cost(op, world, Ref("m")), env) == pytest.approx(want, rel=1e-12, abs=1e-18)
    # folded when the number of ranks is written as a number: the same value
    lit = sw.Comm("world", Num(p), Ref("L"), Ref("G"))
    assert evaluate(cost(op, lit, Num(8)), env) == pytest.approx(want, rel=1e-12, abs=1e-18)


def test_rounds_of_powers_of_two_are_exact():
    for k in range(0, 21):
        assert evaluate(rounds(Ref("P")), {"P": 2 ** k}) == k
        assert rounds(Num(2 ** k)) == Num(k)
        if k >= 1:
            assert evaluate(rounds(Ref("P")), {"P": 2 ** k + 1}) == k + 1


def test_cost_of_a_parametric_comm_follows_the_parameters():
    net = qpn.parse("""
param P = 4
param m = 100
software {
    cpu host cores P
    comm world ranks P latency 5 us per_byte 0.2 ns on host
    pool r size P { cpu exp(1 ms) on host
                    gather world m }
}""")
    for p, m in [(1, 100), (4, 100), (6, 3000)]:
        flat = net.with_params(P=p, m=m).flatten()
        place = flat.place_map["r.gather_world.cost"]
        value = evaluate(place.service[0].dist.value, flat.param_values())
        assert value == pytest.approx(_expected("gather", p, 5e-6, 0.2e-9, m), rel=1e-12, abs=1e-18)
        assert place.queue == "host"


# ------------------------------------------------------------------ errors
block = software_block


BASE = ("cpu host cores 4", "mutex m", "disk d service exp(1 ms)")

# (id, text, message fragment, line, col)
CASES = [
    ("unknown-comm", block(*BASE, "comm world ranks 4", "pool p size 4 {", "    cpu exp(1 ms)",
                           "    allreduce wrld 8", "}"),
     "undefined comm 'wrld'", 8, 19),
    ("comm-on-a-disk", block(*BASE, "comm world ranks 4 latency 1 us on d"),
     "'d' is a disk, not a cpu", 5, 40),
    ("comm-on-unknown", block(*BASE, "comm world ranks 4 on hots"),
     "undefined cpu 'hots'", 5, 27),
    ("collective-on-mutex", block(*BASE, "pool p size 4 {", "    cpu exp(1 ms)", "    bcast m 8",
                                  "}"),
     "'m' is a mutex, not a comm", 7, 15),
    ("await-on-mutex", block(*BASE, "pool p size 4 {", "    cpu exp(1 ms)", "    await m", "}"),
     "'m' is a mutex, not a barrier", 7, 15),
    ("zero-ranks", block(*BASE, "comm world ranks 0"),
     "the ranks of comm 'world' must be a whole number >= 1, got 0", 5, 22),
    ("negative-latency", block(*BASE, "comm world ranks 2 latency -1 us"),
     "the latency of comm 'world' must be a number >= 0", 5, 32),
    ("negative-bytes", "param m = -8\n" + block(*BASE, "comm world ranks 2", "pool p size 2 {",
                                                "    cpu exp(1 ms)", "    gather world m", "}"),
     "the message size (bytes) must be a number >= 0, got m = -8", 9, 22),
    ("latency-twice", block(*BASE, "comm world ranks 2 latency 1 us latency 2 us"),
     "'latency' given twice", 5, 37),
    ("comm-as-step", block(*BASE, "pool p size 4 {", "    comm world ranks 4", "}"),
     "unexpected 'comm'", 6, 9),
    ("collective-without-comm", block(*BASE, "pool p size 4 {", "    cpu exp(1 ms)",
                                      "    allreduce 8", "}"),
     "unexpected '8'", 7, 19),
]


@pytest.mark.parametrize("cid,src,fragment,line,col", CASES, ids=[c[0] for c in CASES])
def test_mpi_mistake_is_located(cid, src, fragment, line, col):
    assert_located(src, fragment, line, col)


def test_unknown_comm_suggests_the_declared_one():
    with pytest.raises(ModelError) as info:
        qpn.parse(CASES[0][1])
    assert info.value.did_you_mean == "world"
    with pytest.raises(ModelError) as info:
        qpn.parse(CASES[3][1])
    assert info.value.hint == "lock it with 'lock m'"


def test_comm_is_awaitable_and_a_barrier_is_not_a_comm():
    net = qpn.parse(block("barrier b parties 2", "comm c ranks 2", "pool p size 2 {",
                          "    sleep exp(1 ms)", "    await b", "    await c", "}"))
    assert {"p.await_b", "p.await_c", "b.trip", "c.trip"} <= {*net.place_map, *net.transition_map}
    with pytest.raises(ModelError) as info:
        qpn.parse(block("barrier b parties 2", "pool p size 2 {", "    sleep exp(1 ms)",
                        "    allreduce b", "}"))
    assert "'b' is a barrier, not a comm" in info.value.message
    assert info.value.hint == "wait for the others with 'await b'"
