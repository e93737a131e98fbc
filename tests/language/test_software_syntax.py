"""The software layer's syntax: parsing, printing, comments, soft keywords, names."""
import doctest
import importlib
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qpn
from qpn.distributions import Det, Empirical, Erlang, Exp
from qpn.expr import BinOp, Num, Ref
from qpn.model import QueueingPlace, RangeColors, RecordColors
from qpn.software import ast as sw

from conftest import MODELS

DOCS = os.path.join(os.path.dirname(MODELS), "docs", "software")

EVERYTHING = """\
# every construct of the software layer

net everything

param threads = 3
param rate = 20
param hit = 0.8

software {
    cpu host cores 2 rr quantum 10 ms switch 50 us
    cpu gpu fcfs
    disk ssd servers 2 fcfs service exp(2 ms)
    disk hdd servers 2 service by load 1: exp(5 ms), 2: exp(8 ms), 3: exp(12 ms)

    mutex cache handover exp(20 us)
    rwlock table prefer writers
    semaphore conns permits 2
    barrier phase parties 2
    comm world ranks 2 latency 5 us per_byte 0.2 ns on host
    condition ready on cache

    blocking queue requests capacity 10
    blocking queue results lifo
    limit fds 4
    timer response
    sink done

    # the open workload
    source clients every exp(1 / rate) {
        timer start response
        put requests else { timer stop response }
    }

    pool workers size threads {
        take requests
        # measured: 1532 samples, mean 4 ms
        cpu exp(4 ms) on host as parse
        branch {
            hit: { read lock table }
            1 - hit: {
                write lock table
                io on hdd
                write unlock table
                read lock table
            }
        }
        read unlock table
        allocate fds else {
            timer stop response
            return
        }
        acquire 2 conns
        io exp(1 ms) on ssd as read
        release 2 conns
        free fds
        loop 3 times { cpu det(1 ms) on gpu }
        lock cache
        notify ready
        notify all ready
        unlock cache
        call render
        put results
    }

    pool finisher size 1 {
        take results timeout exp(1 s) else { return }
        timer stop response
        put done
    }

    pool waiter size 1 {
        lock cache
        wait ready as idle
        unlock cache
        sleep exp(10 ms)
        parallel for threads threads 2 schedule dynamic as team { sleep exp(1 ms) }
        parallel for 4 threads 4 reduction det(1 us) on host as region {
            single nowait { sleep exp(1 ms) }
            critical { atomic det(50 ns) on gpu }
            critical stats as add { sleep exp(1 ms) }
        }
    }

    pool solver size 2 {
        cpu exp(1 ms) on host
        allreduce world 8 as residual
        sendrecv world threads * 1024
        await world
    }

    population pair size 2 think exp(50 ms) {
        await phase
        fork 2 as split { cpu exp(1 ms) on host } and { sleep exp(1 ms) }
        loop about 2 times as retry {
            sleep exp(1 ms)
            loop threads + 1 times { sleep det(1 ms) }
        }
    }

    pool renderers size 1 runs render

    behavior render {
        cpu exp(2 ms) on host
        branch {
            0.5: { return }
            0.5: {}
        }
    }
}
"""


def test_every_construct_round_trips_and_is_canonical():
    net = qpn.parse(EVERYTHING, "everything.qpn")
    text = net.text()
    assert text == EVERYTHING                       # the text above is canonical
    again = qpn.parse(text)
    assert again == net and again.text() == text
    block = next(i for i in net.items if isinstance(i, sw.Software))
    kinds = {type(d) for d in block.decls}
    assert set(sw.RESOURCES) <= kinds and {sw.Pool, sw.Population, sw.Source, sw.Behavior} <= kinds
    steps = set()

    def visit(node):
        for kid in sw.children(node):
            steps.add(type(kid))
            visit(kid)
    visit(block)
    assert set(sw.STEPS) <= steps


def test_comments_are_kept_where_they_were():
    net = qpn.parse(EVERYTHING)
    block = next(i for i in net.items if isinstance(i, sw.Software))
    source = next(d for d in block.decls if isinstance(d, sw.Source))
    workers = next(d for d in block.decls if getattr(d, "name", "") == "workers")
    assert source.doc == "the open workload"
    assert workers.body[1].doc == "measured: 1532 samples, mean 4 ms"
    assert net.doc == "every construct of the software layer"


def test_expansion_of_everything_is_a_valid_core_net():
    net = qpn.parse(EVERYTHING)
    flat = net.flatten()
    assert flat.is_flat and not flat.software
    text = flat.text()
    again = qpn.parse(text)                        # the flat net is plain core text
    assert again == flat
    assert "software {" not in text
    names = {p.name for p in flat.places}
    for n in ["cache.free", "cache.waiting", "requests.items", "requests.takers",
              "workers.take_requests", "workers.parse", "workers.read", "workers.io.load1",
              "table.readers", "table.writer", "conns.free", "conns.held", "fds.used",
              "phase.waiting", "phase.go", "ready.signal", "ready.broadcast", "response.running",
              "done", "pair.think", "pair.split", "pair.split.child1.start",
              "pair.split.child2.done", "waiter.idle", "waiter.idle.relock", "workers.render.cpu",
              "renderers.cpu", "renderers.start", "world.waiting", "world.go", "solver.residual",
              "solver.residual.cost", "solver.sendrecv_world", "solver.await_world.cost",
              "waiter.team", "waiter.team.chunks", "waiter.team.thread.start",
              "waiter.team.thread.sleep", "waiter.team.thread.done"]:
        assert n in names, n
    tnames = {t.name for t in flat.transitions}
    for n in ["phase.trip", "done.leave", "clients.arrive", "clients.put_requests.full",
              "workers.allocate_fds.error", "finisher.take_results.timeout", "ready.wake",
              "ready.end", "pair.split.done", "workers.io.start", "world.trip", "waiter.team.done",
              "waiter.team.thread.begin", "waiter.team.thread.end"]:
        assert n in tnames, n
    assert qpn.check(net).errors == []


def test_mutex_expansion_shape():
    net = qpn.parse("""
software {
    mutex m
    pool w size 2 {
        sleep exp(1 s)
        lock m
        sleep exp(10 ms) as hold
        unlock m
    }
}""")
    text = net.flatten().text()
    assert "place m.free init 1" in text
    assert "transition w.sleep.done : w.sleep -> w.lock_m, m.waiting" in text
    assert "transition w.lock_m.done : w.lock_m, m.free, m.waiting -> m.held, w.hold" in text
    assert "transition w.hold.done : w.hold, m.held -> m.free, w.start" in text


def test_mutex_handover_expansion_shape():
    """``handover D``: an unlock puts the lock into m.released; kept at once (first, by
    priority) when nobody waits, else it spends D in m.handover on its way to a waiter."""
    net = qpn.parse("""
software {
    mutex m handover exp(50 us)
    pool w size 2 {
        lock m
        sleep exp(10 ms) as hold
        unlock m
    }
}""")
    text = net.flatten().text()
    assert "transition w.hold.done : w.hold, m.held -> m.released, w.start" in text
    assert "transition m.kept priority 1 : m.released -> m.free unless m.waiting" in text
    assert "place m.handover queue is service exp(50 us)" in text
    assert "transition m.handing : m.released -> m.handover" in text
    assert "transition m.handed : m.handover -> m.free" in text



def test_counted_loops_carry_their_counter_in_the_color():
    net = qpn.parse("""
param n = 4
software {
    cpu host
    pool w size 1 {
        loop n times {
            loop 2 times { cpu det(1 ms) as inner }
            cpu det(1 ms) as outer
        }
    }
}""")
    flat = net.flatten()
    cs = flat.colorset_map
    assert cs["w.loop"] == RangeColors("w.loop", Num(1), Ref("n"))
    assert cs["w.loop2"] == RangeColors("w.loop2", Num(1), Num(2))
    assert isinstance(cs["w.loop2.ctx"], RecordColors)
    assert flat.place_map["w.inner"].colors == "w.loop2.ctx"
    assert flat.place_map["w.outer"].colors == "w.loop"
    modes = {m.name: m for m in flat.transition_map["w.inner.done"].modes}
    assert set(modes) == {"again", "exit"}
    assert str(modes["again"].guard) == str(BinOp("<", Ref("_i2"), Num(2)))
    assert modes["exit"].outputs[0].place == "w.outer"
    # the geometric loop has no counter, only weights
    geo = qpn.parse("software { cpu h\n pool w size 1 { loop about 4 times { cpu exp(1 ms) } } }")
    ms = geo.flatten().transition_map["w.cpu.done"].modes
    assert [m.name for m in ms] == ["again", "exit"] and all(m.weight is not None for m in ms)


def test_lock_and_unlock_in_zero_time_cancel():
    net = qpn.parse("""
software {
    mutex m
    condition c on m
    pool notifier size 1 {
        sleep exp(1 s)
        lock m
        notify c
        unlock m
    }
    pool waiter size 1 {
        lock m
        wait c
        unlock m
        sleep exp(1 s) as work
    }
}""")
    t = net.flatten().transition_map["notifier.lock_m.done"]
    wake = next(m for m in t.modes if m.name == "wake")
    ins = [a.place for a in wake.inputs]
    outs = [a.place for a in wake.outputs]
    assert ins == ["notifier.lock_m", "m.free", "m.waiting", "c.waiting"]
    assert outs == ["m.free", "c.signal", "notifier.start"]      # m.held cancelled out


def test_labels():
    net = qpn.parse("""
software {
    cpu host
    mutex m
    pool w size 1 {
        cpu exp(1 ms)
        cpu exp(1 ms) as cpu2
        cpu exp(1 ms)
        lock m
        unlock m
        lock m as again
        unlock m
        lock m
        unlock m
    }
}""")
    names = [p.name for p in net.flatten().places if p.name.startswith("w.")]
    assert names == ["w.start", "w.cpu", "w.cpu2", "w.cpu3", "w.lock_m", "w.again", "w.lock_m2"]


def test_software_words_stay_names_outside_blocks():
    # every software keyword used as a name in core declarations
    src = """
net barrier

param size = 2
param times = 3

colors op = {lock, unlock, take, put}

place cpu queue ps service exp(1 ms) init size
place software
place disk
place mutex : op init lock, take

transition take : cpu -> disk
transition put : disk -> software
transition pool : software -> cpu
transition loop : mutex(x) -> mutex(x) when x == lock
"""
    net = qpn.parse(src)
    assert {p.name for p in net.places} == {"cpu", "software", "disk", "mutex"}
    assert net.name == "barrier"
    assert qpn.parse(net.text()) == net


def test_software_words_as_names_inside_blocks():
    net = qpn.parse("""
param cores = 2
software {
    cpu cpu cores cores
    mutex lock
    blocking queue take
    pool pool size cores {
        take take
        lock lock
        cpu exp(1 ms) on cpu
        unlock lock
    }
}""")
    flat = net.flatten()
    assert "lock.free" in flat.place_map and "pool.take_take" in flat.place_map
    assert flat.queue_map["cpu"].servers == Ref("cores")


def test_distributions_and_expressions_in_steps():
    net = qpn.parse("""
param speed_parse = 1.5
software {
    cpu host
    disk d service empirical([1, 2, 3], unit = ms)
    pool w size 1 {
        cpu exp(4.1 ms / speed_parse) as parse
        cpu erlang(3, 2 ms)
        io on d
        sleep det(1 ms)
    }
}""")
    flat = net.flatten()
    assert flat.place_map["w.parse"].service[0].dist == Exp(BinOp("/", Num(4.1, "ms"), Ref("speed_parse")))
    assert isinstance(flat.place_map["w.cpu"].service[0].dist, Erlang)
    assert isinstance(flat.place_map["w.io"].service[0].dist, Empirical)
    assert flat.place_map["w.sleep"].service[0].dist == Det(Num(1, "ms"))
    assert isinstance(flat.place_map["w.io"], QueueingPlace) and flat.place_map["w.io"].queue == "d"
    # sweeps over software parameters work like any other
    assert net.with_params(speed_parse=3).param_values()["speed_parse"] == 3


def test_includes_share_the_software_namespace(tmp_path):
    (tmp_path / "lib.qpn").write_text("software {\n    cpu host cores 2\n    mutex m\n}\n")
    (tmp_path / "main.qpn").write_text('include "lib.qpn"\n\nsoftware {\n    pool w size 2 {\n'
                                       '        lock m\n        cpu exp(1 ms)\n        unlock m\n    }\n}\n')
    net = qpn.load(str(tmp_path / "main.qpn"))
    assert "w.lock_m" in net.flatten().place_map and "m.free" in net.place_map


def test_cli_on_software_models(capsys, tmp_path):
    from qpn.cli import main
    path = os.path.join(MODELS, "sw_server.qpn")
    assert main(["check", path]) == 0
    assert main(["flatten", path]) == 0
    assert "transition workers.take_requests.done" in capsys.readouterr().out
    dot = tmp_path / "s.dot"
    assert main(["dot", path, "-o", str(dot)]) == 0
    text = dot.read_text()
    assert 'subgraph "cluster_workers"' in text and 'subgraph "cluster_cache"' in text
    assert 'subgraph "cluster_workers_parse"' not in text   # a step's transitions stay with it


DOC_MODELS = sorted(f for f in os.listdir(DOCS) if f.endswith(".qpn"))


@pytest.mark.parametrize("name", DOC_MODELS)
def test_documentation_models(name):
    path = os.path.join(DOCS, name)
    net = qpn.load(path)
    with open(path) as fh:
        assert fh.read() == net.text()
    rep = qpn.check(net)
    assert not rep.errors and not rep.warnings, [str(d) for d in rep.diagnostics]
    assert os.path.exists(path[:-4] + ".svg")


MODULES = ["qpn.software", "qpn.software.ast", "qpn.software.kit", "qpn.software.cfg",
           "qpn.software.env", "qpn.software.check", "qpn.software.processors",
           "qpn.software.locks", "qpn.software.sync", "qpn.software.mpi", "qpn.software.omp",
           "qpn.software.omp_sync", "qpn.software.omp_check", "qpn.software.omp_counts",
           "qpn.software.queues",
           "qpn.software.control", "qpn.software.runners", "qpn.software.expansion"]


@pytest.mark.parametrize("mod", MODULES)
def test_doctests(mod):
    failed, _ = doctest.testmod(importlib.import_module(mod), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failed == 0


# ------------------------------------------------------------ property test
@st.composite
def software_nets(draw):
    """Random software blocks that are valid by construction."""
    cpus = ["c0"] + (["c1"] if draw(st.booleans()) else [])
    decls = [sw.Cpu(c, cores=Num(draw(st.integers(1, 3))),
                    discipline=draw(st.sampled_from(["ps", "fcfs"]))) for c in cpus]
    decls += [sw.Mutex("m0"), sw.Mutex("m1"), sw.Semaphore("s0", Num(2)),
              sw.BlockingQueue("q0", capacity=draw(st.sampled_from([None, Num(3)]))),
              sw.Timer("t0"), sw.Limit("l0", Num(2))]
    labels = iter(f"x{i}" for i in range(10_000))

    def dist():
        return draw(st.sampled_from([Exp(Num(1, "ms")), Det(Num(2, "ms")), Erlang(Num(2), Ref("d"))]))

    def cpu_step():
        on = draw(st.sampled_from(cpus)) if len(cpus) > 1 else draw(st.sampled_from([None, "c0"]))
        if len(cpus) > 1 and on is None:
            on = "c0"
        label = next(labels) if draw(st.booleans()) else None
        return sw.Compute(dist(), on, label)

    def block(depth, held):
        steps = []
        for _ in range(draw(st.integers(1, 3))):
            k = draw(st.integers(0, 9 if depth < 2 else 3))
            if k <= 1:
                steps.append(cpu_step())
            elif k == 2:
                steps.append(sw.Sleep(dist()))
            elif k == 3:
                free = [m for m in ("m0", "m1") if m not in held]
                if free:
                    m = draw(st.sampled_from(free))
                    steps += [sw.Lock(m), cpu_step()] + block(depth + 1, held | {m}) + [sw.Unlock(m)]
                else:
                    steps.append(cpu_step())
            elif k == 4:
                p = draw(st.sampled_from([0.25, 0.5]))
                steps.append(sw.Branch((sw.Alternative(Num(p), tuple(block(depth + 1, held))),
                                        sw.Alternative(Num(1 - p), (cpu_step(),)))))
            elif k == 5:
                geometric = draw(st.booleans())
                steps.append(sw.Loop(Num(draw(st.integers(2 if geometric else 1, 3))),
                                     (cpu_step(),) + tuple(block(depth + 1, held)), geometric=geometric))
            elif k == 6:
                steps += [sw.Acquire("s0"), cpu_step(), sw.Release("s0")]
            elif k == 7:
                steps += [sw.TimerStep("t0", "start"), cpu_step(), sw.TimerStep("t0", "stop")]
            elif k == 8 and draw(st.booleans()):
                steps.append(sw.Fork((sw.Block((cpu_step(),)),), count=Num(draw(st.integers(1, 2)))))
            elif k == 8:
                sched = draw(st.sampled_from(["static", "dynamic", "guided"]))
                literal = sched == "guided"        # guided takes numbers only
                chunk = None if sched == "static" else \
                    draw(st.sampled_from([None, Num(2)] + ([] if literal else [Ref("n")])))
                steps.append(sw.ParallelFor(
                    draw(st.sampled_from([Num(1), Num(5)] + ([] if literal else [
                        Ref("n"), BinOp("*", Num(3), Ref("n"))]))),
                    (cpu_step(),) + tuple(block(depth + 1, frozenset())),
                    threads=draw(st.sampled_from([Num(1), Num(3)] + ([] if literal else [Ref("n")]))),
                    schedule=sched, chunk=chunk,
                    label=next(labels) if draw(st.booleans()) else None))
            else:
                steps += [sw.Allocate("l0", otherwise=(sw.Sleep(dist()),)), cpu_step(), sw.Free("l0")]
        return steps

    decls.append(sw.Pool("producer", Num(1), (sw.Sleep(dist()), sw.Put("q0"))))
    for i in range(draw(st.integers(1, 2))):
        body = [sw.Take("q0")] + block(0, frozenset())
        decls.append(sw.Pool(f"p{i}", Ref("n"), tuple(body)))
    from qpn.model import Param
    from qpn.net import Net
    return Net("prop", (Param("n", Num(2)), Param("d", Num(3, "ms")), sw.Software(tuple(decls))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(software_nets())
def test_software_blocks_round_trip(net):
    text = net.text()
    parsed = qpn.parse(text)
    assert parsed == net, text
    assert parsed.text() == text
    flat = parsed.flatten()
    assert qpn.parse(flat.text()) == flat


def test_the_guide_shows_real_expansions():
    import re
    guide = open(os.path.join(os.path.dirname(MODELS), "docs", "software-layer.md")).read()
    blocks = re.findall(r"```\n(.*?)```", guide, re.S)
    net = qpn.parse(blocks[0])                       # the opening example is a whole model
    assert "workers.parse" in net.flatten().place_map
    # the side-by-side expansion of the pool with a mutex is what qpn flatten prints
    side = next(b for b in blocks if "pool workers size 3 {" in b)
    flat = qpn.load(os.path.join(DOCS, "mutex.qpn")).flatten().text().splitlines()
    for line in side.splitlines():
        right = line[35:].strip()
        if right:
            assert right in flat, right


def test_the_generator_example_of_the_guide(capsys):
    import re
    guide = open(os.path.join(os.path.dirname(MODELS), "docs", "software-layer.md")).read()
    code, printed = re.search(r"```python\n(.*?)```\n\n```\n(.*?)```", guide, re.S).groups()
    exec(compile(code, "software-layer.md", "exec"), {})
    out = capsys.readouterr().out
    assert out == printed + "\n"          # print() adds a newline to the text
    assert qpn.parse(printed).text() == printed
