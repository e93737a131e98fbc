"""OpenMP ``parallel for`` in the software layer: syntax, printing, soft keywords, the
expansion's names and arcs, and located errors."""
import pytest

import qpn
from qpn.dsl.printer import fmt_mode_body
from qpn.errors import ModelError
from qpn.expr import BinOp, Num, Ref, evaluate
from qpn.model import Param
from qpn.net import Net
from qpn.distributions import Det
from qpn.software import ast as sw
from qpn.software.omp import dynamic_split, static_split
from located import assert_located, software_block

EVERY_FORM = """\
# every form of parallel for

net omp

param n = 100
param t = 4
param c = 8

software {
    cpu host cores t ps

    pool main size 1 {
        parallel for n { cpu det(1 ms) }
        parallel for n threads t { cpu exp(1 ms) as work }
        parallel for 10 threads 4 schedule dynamic { cpu det(1 ms) }
        # chunks of c iterations
        parallel for n threads 2 * t schedule dynamic c as blocks {
            cpu det(1 ms)
            loop 2 times { sleep det(1 us) }
        }
        parallel for 7 threads 3 schedule dynamic 2 as nested {
            cpu det(1 ms)
            # an inner team
            parallel for 2 threads 2 { sleep det(1 ms) }
        }
        parallel for 10 threads 4 schedule guided { cpu det(1 ms) }
        parallel for 100 threads 4 schedule guided 5 as shrinking { cpu det(1 ms) }
    }
}
"""


def test_every_form_round_trips_and_is_canonical():
    net = qpn.parse(EVERY_FORM, "omp.qpn")
    text = net.text()
    assert text == EVERY_FORM                       # the text above is canonical
    again = qpn.parse(text)
    assert again == net and again.text() == text
    block = next(i for i in net.items if isinstance(i, sw.Software))
    main = next(d for d in block.decls if isinstance(d, sw.Pool))
    loops = [st for st in main.body if isinstance(st, sw.ParallelFor)]
    assert len(loops) == 7
    assert (loops[5].schedule, loops[5].chunk) == ("guided", None)
    assert (loops[6].schedule, loops[6].chunk, loops[6].threads) == ("guided", Num(5), Num(4))
    assert loops[0] == sw.ParallelFor(Ref("n"), loops[0].body)      # defaults
    assert loops[0].threads is None and loops[0].schedule == "static" and loops[0].chunk is None
    assert loops[1].threads == Ref("t") and loops[1].body[0].label == "work"
    assert (loops[2].schedule, loops[2].chunk, loops[2].threads) == ("dynamic", None, Num(4))
    assert loops[3].chunk == Ref("c") and loops[3].label == "blocks"
    assert loops[3].threads == BinOp("*", Num(2), Ref("t"))
    assert loops[3].doc == "chunks of c iterations"
    assert isinstance(loops[4].body[1], sw.ParallelFor) and loops[4].body[1].doc == "an inner team"
    flat = net.flatten()
    assert qpn.parse(flat.text()) == flat
    assert not qpn.check(net).errors


def test_options_in_any_order_print_in_one_order():
    a = qpn.parse("software { cpu h cores 2\n pool p size 1 {\n"
                  " parallel for 10 schedule dynamic 3 threads 2 as x { cpu det(1 ms) } } }")
    b = qpn.parse("software { cpu h cores 2\n pool p size 1 {\n"
                  " parallel for 10 threads 2 schedule dynamic 3 as x { cpu det(1 ms) } } }")
    assert a == b
    assert "parallel for 10 threads 2 schedule dynamic 3 as x { cpu det(1 ms) }" in a.text()
    # 'schedule static' is the default and is not written
    c = qpn.parse("software { cpu h\n pool p size 1 { parallel for 4 schedule static "
                  "{ cpu det(1 ms) } } }")
    assert "parallel for 4 { cpu det(1 ms) }" in c.text()
    assert qpn.parse(c.text()) == c


def test_omp_words_stay_names_outside_software_blocks():
    src = """
param threads = 2
param schedule = 3

colors kind = {parallel, static, dynamic, guided}

place parallel init threads
place for : kind
place dynamic

transition static : parallel -> dynamic
transition guided : dynamic -> parallel, for(static) when schedule < threads
transition schedule : for(x) ->
"""
    net = qpn.parse(src)
    assert {p.name for p in net.places} == {"parallel", "for", "dynamic"}
    assert {t.name for t in net.transitions} == {"static", "guided", "schedule"}
    assert qpn.parse(net.text()) == net


def test_omp_words_as_names_inside_software_blocks():
    net = qpn.parse("""
param threads = 2
param schedule = 3
param dynamic = 5
software {
    cpu parallel cores threads
    pool for size 1 {
        parallel for threads * 4 threads threads schedule dynamic dynamic as static {
            cpu exp(1 ms) on parallel as schedule
        }
    }
}""")
    pf = next(d for d in net.software[0].decls if isinstance(d, sw.Pool)).body[0]
    assert pf == sw.ParallelFor(BinOp("*", Ref("threads"), Num(4)), pf.body, Ref("threads"),
                                "dynamic", Ref("dynamic"), "static")
    flat = net.flatten()
    assert "for.static.thread.schedule" in flat.place_map
    assert qpn.parse(net.text()) == net


@pytest.mark.parametrize("chunk", [Ref("threads"), Ref("schedule"), Ref("as"),
                                   BinOp("+", Ref("threads"), Num(1)), Ref("m"), Num(3)])
def test_a_chunk_named_like_an_option_word_is_printed_in_parentheses(chunk):
    # 'schedule dynamic threads as x' would read 'threads' as the option, not the chunk
    net = Net("n", tuple(Param(n, Num(2)) for n in ("threads", "schedule", "as", "m")) + (
        sw.Software((sw.Cpu("host"), sw.Pool("p", Num(1), (
            sw.ParallelFor(Num(8), (sw.Compute(Det(Num(1, "ms"))),), Num(2), "dynamic", chunk,
                           "x"),)))),))
    text = net.text()
    assert qpn.parse(text) == net, text
    plain = isinstance(chunk, Num) or chunk == Ref("m")
    assert ("schedule dynamic (" in text) != plain


def test_a_byte_count_named_parallel_is_printed_in_parentheses():
    net = Net("n", (Param("parallel", Num(8)), sw.Software((sw.Comm("w", Num(2)), sw.Pool(
        "p", Num(2), (sw.Sleep(Det(Num(1))), sw.Collective("allreduce", "w", Ref("parallel"))))))))
    text = net.text()
    assert "allreduce w (parallel)" in text
    assert qpn.parse(text) == net


# ------------------------------------------------------------------ expansion
def _modes(net, name):
    return [fmt_mode_body(m) for m in net.transition_map[name].modes]


def test_static_expansion_names_and_arcs():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool w size 1 {
        sleep det(1 ms)
        parallel for 10 threads 4 { cpu det(1 ms) as work }
    }
}""")
    assert _modes(net, "w.sleep.done") == [
        "w.sleep -> w.parallel_for, 2 w.parallel_for.thread.start, "
        "2 w.parallel_for.thread.short.start"]
    assert _modes(net, "w.parallel_for.thread.begin") == [
        "w.parallel_for.thread.start -> w.parallel_for.thread.work(1)"]
    assert _modes(net, "w.parallel_for.thread.short.begin") == [
        "w.parallel_for.thread.short.start -> w.parallel_for.thread.work(2)"]
    assert _modes(net, "w.parallel_for.thread.work.done") == [
        "w.parallel_for.thread.work(_i1) -> w.parallel_for.thread.work((_i1 + 1)) when _i1 < 3",
        "w.parallel_for.thread.work(_i1) -> w.parallel_for.thread.done when _i1 == 3"]
    assert _modes(net, "w.parallel_for.done") == [
        "w.parallel_for, 4 w.parallel_for.thread.done -> w.start"]
    assert net.colorset_map["w.parallel_for.thread.iteration"].hi == Num(3)


def test_static_without_a_counter_or_without_short_threads():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool a size 1 { parallel for 3 threads 4 { cpu det(1 ms) } }
    pool b size 1 { parallel for 8 threads 4 { cpu det(1 ms) } }
}""")
    # N <= T: one iteration per thread, min(N, T) threads, no counter
    assert _modes(net, "a.begin") == ["a.start -> a.parallel_for, 3 a.parallel_for.thread.start"]
    assert net.place_map["a.parallel_for.thread.cpu"].colors is None
    assert _modes(net, "a.parallel_for.done") == [
        "a.parallel_for, 3 a.parallel_for.thread.done -> a.start"]
    # T divides N: every thread runs N / T iterations
    assert _modes(net, "b.begin") == ["b.start -> b.parallel_for, 4 b.parallel_for.thread.start"]
    assert "b.parallel_for.thread.short.start" not in net.place_map


def test_dynamic_expansion_names_and_arcs():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool w size 1 {
        parallel for 10 threads 4 schedule dynamic 3 as pf { cpu det(1 ms) }
    }
}""")
    assert _modes(net, "w.begin") == [
        "w.start -> w.pf, 4 w.pf.thread.start, 3 w.pf.chunks, w.pf.last"]
    assert _modes(net, "w.pf.thread.begin") == [
        "w.pf.thread.start, w.pf.chunks -> w.pf.thread.cpu(1)"]
    # the last chunk has 1 iteration: its counter starts at 3 of 3, after the full chunks
    assert _modes(net, "w.pf.thread.last") == [
        "w.pf.thread.start, w.pf.last -> w.pf.thread.cpu(3) unless w.pf.chunks"]
    assert _modes(net, "w.pf.thread.end") == [
        "w.pf.thread.start -> w.pf.thread.done unless w.pf.chunks, w.pf.last"]
    assert _modes(net, "w.pf.thread.cpu.done") == [
        "w.pf.thread.cpu(_i1) -> w.pf.thread.cpu((_i1 + 1)) when _i1 < 3",
        "w.pf.thread.cpu(_i1) -> w.pf.chunks.done, w.pf.thread.start when _i1 == 3"]
    assert _modes(net, "w.pf.done") == ["w.pf, 4 w.pf.thread.done, 4 w.pf.chunks.done -> w.start"]
    # chunk 1 (the default): no counter and no last chunk
    one = qpn.parse("software { cpu host\n pool w size 1 {\n"
                    " parallel for 10 threads 4 schedule dynamic { cpu det(1 ms) } } }")
    assert _modes(one, "w.begin") == [
        "w.start -> w.parallel_for, 4 w.parallel_for.thread.start, 10 w.parallel_for.chunks"]
    assert "w.parallel_for.last" not in one.place_map
    assert _modes(one, "w.parallel_for.thread.cpu.done") == [
        "w.parallel_for.thread.cpu -> w.parallel_for.chunks.done, w.parallel_for.thread.start"]


def test_threads_default_to_the_cores_of_the_only_cpu():
    net = qpn.parse("param k = 3\nsoftware { cpu host cores k\n pool w size 1 {\n"
                    " parallel for 9 schedule dynamic { cpu det(1 ms) } } }")
    assert _modes(net, "w.begin") == [
        "w.start -> w.parallel_for, k w.parallel_for.thread.start, 9 w.parallel_for.chunks"]


@pytest.mark.parametrize("n", range(1, 14))
@pytest.mark.parametrize("t", [1, 2, 3, 4, 5])
def test_symbolic_counts_are_the_literal_ones(n, t):
    env = {"n": n, "t": t, "c": t}
    team, most, full, fewer = (evaluate(e, env) for e in static_split(Ref("n"), Ref("t")))
    lit = [x.value for x in static_split(Num(n), Num(t))]
    assert [team, most, full, fewer] == lit
    # the first threads run one iteration more; every iteration runs once
    assert team == min(n, t) and full * most + fewer * (most - 1) == n
    assert full >= 1 and fewer >= 0 and most - 1 == n // team - (0 if n % team else 1)
    chunks, last = (evaluate(e, env) for e in dynamic_split(Ref("n"), Ref("c")))
    assert [chunks, last] == [x.value for x in dynamic_split(Num(n), Num(t))]
    assert (chunks - 1) * t + last == n and 1 <= last <= t


# ------------------------------------------------------------------ errors
block = software_block


BASE = ("cpu host cores 4", "mutex m")


def pf(head: str, *body: str) -> str:
    return block(*BASE, "pool p size 1 {", f"    {head} {{",
                 *(f"        {b}" for b in body or ("cpu det(1 ms)",)), "    }", "}")


# (id, text, message fragment, line, col)
CASES = [
    ("unknown-schedule", pf("parallel for 10 threads 4 schedule dinamic"),
     "a parallel for is scheduled static, dynamic or guided, not dinamic", 5, 44),
    ("guided-parameter", "param n = 10\n" + pf("parallel for n threads 4 schedule guided 2"),
     "'schedule guided' needs the iterations as a number, got n", 6, 22),
    ("guided-default-threads", "param k = 4\n" + block("cpu host cores k", "pool p size 1 {",
                                                       "    parallel for 10 schedule guided {",
                                                       "        cpu det(1 ms)", "    }", "}"),
     "'schedule guided' needs the threads as a number, got k (the cores of cpu 'host')", 5, 9),
    ("unknown-schedule-with-chunk", pf("parallel for 10 threads 4 schedule auto 2"),
     "a parallel for is scheduled static, dynamic or guided, not auto", 5, 44),
    ("static-chunk", pf("parallel for 10 threads 4 schedule static 2"),
     "'schedule static' takes no chunk size", 5, 51),
    ("fractional-iterations", pf("parallel for 2.5 threads 4"),
     "the iterations of a parallel for must be a whole number >= 1, got 2.5", 5, 22),
    ("zero-threads", pf("parallel for 10 threads 0"),
     "the threads of a parallel for must be a whole number >= 1, got 0", 5, 33),
    ("zero-chunk", pf("parallel for 10 threads 2 schedule dynamic 0"),
     "the chunk size of a parallel for must be a whole number >= 1, got 0", 5, 52),
    ("parameter-iterations", "param n = 0\n" + pf("parallel for n threads 2"),
     "the iterations of a parallel for must be a whole number >= 1, got n = 0", 6, 22),
    ("threads-twice", pf("parallel for 10 threads 2 threads 4"),
     "'threads' given twice", 5, 35),
    ("schedule-twice", pf("parallel for 10 schedule dynamic schedule static"),
     "'schedule' given twice", 5, 42),
    ("no-iterations", pf("parallel for threads 4"),
     "unexpected '4'", 5, 30),
    ("return-in-body", pf("parallel for 10 threads 2", "cpu det(1 ms)", "return"),
     "'return' cannot leave a parallel for", 7, 13),
    ("lock-held", pf("parallel for 10 threads 2", "lock m", "cpu det(1 ms)"),
     "a thread of a parallel for ends while holding 'm'", 6, 13),
    ("reserved-label", pf("parallel for 10 threads 2", "cpu det(1 ms) as done"),
     "'done' cannot name a step here", 6, 13),
    ("no-time-dynamic", block(*BASE, "pool p size 1 {",
                              "    parallel for 10 threads 2 schedule dynamic {}", "}"),
     "a thread of p.parallel_for can run without any time passing", 5, 9),
    ("no-time-static", block(*BASE, "pool p size 1 {", "    parallel for 10 threads 2 {}", "}"),
     "this loop can go round without any time passing", 5, 9),
    ("two-cpus", block("cpu a", "cpu b", "pool p size 1 {", "    parallel for 4 { cpu det(1 ms) on a }",
                       "}"),
     "a parallel for without 'threads' runs one thread per core of the cpu, but there are "
     "several: a, b", 5, 9),
    ("no-cpu", block("pool p size 1 {", "    parallel for 4 { sleep det(1 ms) }", "}"),
     "a parallel for without 'threads' runs one thread per core of the cpu, but no cpu is "
     "declared", 3, 9),
]


@pytest.mark.parametrize("cid,src,fragment,line,col", CASES, ids=[c[0] for c in CASES])
def test_omp_mistake_is_located(cid, src, fragment, line, col):
    assert_located(src, fragment, line, col)


def test_guided_expansion_hands_out_shrinking_chunks_in_order():
    net = qpn.parse("software { cpu host cores 4\n pool w size 1 {\n"
                    " parallel for 10 threads 4 schedule guided as g { cpu det(1 ms) } } }")
    # chunks 3, 2, 2, 1, 1, 1: a cursor w.g.next holds the index of the next chunk
    assert _modes(net, "w.begin") == ["w.start -> w.g, 4 w.g.thread.start, w.g.next(1)"]
    assert _modes(net, "w.g.thread.size3") == [
        "w.g.thread.start, w.g.next(1) -> w.g.next(2), w.g.thread.cpu(1)"]
    assert _modes(net, "w.g.thread.size2") == [
        "w.g.thread.start, w.g.next(2) -> w.g.next(3), w.g.thread.cpu(2)",
        "w.g.thread.start, w.g.next(3) -> w.g.next(4), w.g.thread.cpu(2)"]
    assert [m.name for m in net.transition_map["w.g.thread.size1"].modes] == [
        "chunk4", "chunk5", "chunk6"]
    assert _modes(net, "w.g.thread.end") == [
        "w.g.thread.start, w.g.next(7) -> w.g.next(7), w.g.thread.done"]
    assert _modes(net, "w.g.done") == ["w.g, 4 w.g.thread.done, w.g.next(7) -> w.start"]
    assert not qpn.check(net).warnings


def test_guided_chunk_sizes():
    from qpn.software.omp import guided_chunks
    assert guided_chunks(10, 4) == [3, 2, 2, 1, 1, 1]
    assert guided_chunks(10, 4, 3) == [3, 3, 3, 1]
    assert guided_chunks(1, 8) == [1]
    for n in range(1, 60):
        for t in range(1, 6):
            for c in range(1, 5):
                sizes = guided_chunks(n, t, c)
                assert sum(sizes) == n and sizes == sorted(sizes, reverse=True)
                assert all(s >= c for s in sizes[:-1])


def test_unknown_schedule_suggests_one():
    with pytest.raises(ModelError) as info:
        qpn.parse(CASES[0][1])
    assert info.value.did_you_mean == "dynamic"
