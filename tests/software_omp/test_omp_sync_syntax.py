"""OpenMP ``critical``, ``atomic``, ``single`` and ``reduction`` in the software layer: syntax,
printing, soft keywords, the expansion's names and arcs, and located errors."""
import os
import re

import pytest

import qpn
from qpn.distributions import Det
from qpn.dsl.printer import fmt_mode_body
from qpn.expr import Num, Ref, fmt
from qpn.model import Param
from qpn.net import Net
from qpn.software import ast as sw
from located import assert_located, software_block

EVERY_FORM = """\
# every OpenMP synchronization step

net omp_sync

param t = 4
param c = 2

software {
    cpu host cores t ps
    cpu gpu fcfs

    pool main size 1 {
        parallel for 8 threads 4 reduction det(1 us) on host as rows {
            # the first thread of each round
            single { cpu det(1 ms) on host as read }
            single nowait as once { sleep det(1 ms) }
            critical { cpu det(1 ms) on host }
            critical stats as add {
                atomic det(50 ns) on gpu
                loop 2 times { sleep det(1 us) }
            }
            atomic exp(20 ns) on host as count
        }
        parallel for t threads t as region {
            single { sleep det(1 ms) }
        }
        parallel for 10 threads 2 schedule dynamic c reduction exp(1 us) on gpu {
            cpu det(1 ms) on host
        }
    }

    pool other size 2 {
        critical { sleep exp(1 ms) }
        atomic det(1 us) on gpu
    }
}
"""


def _software(net):
    return next(i for i in net.items if isinstance(i, sw.Software))


def test_every_form_round_trips_and_is_canonical():
    net = qpn.parse(EVERY_FORM, "omp_sync.qpn")
    text = net.text()
    assert text == EVERY_FORM
    again = qpn.parse(text)
    assert again == net and again.text() == text
    main = next(d for d in _software(net).decls if d.name == "main")
    rows, region, dyn = main.body
    assert rows.reduction == Det(Num(1, "us")) and rows.reduction_on == "host"
    read, once, crit, add, count = rows.body
    assert read == sw.Single((read.body[0],)) and read.doc == "the first thread of each round"
    assert (once.nowait, once.label) == (True, "once")
    assert crit.name is None and crit.label is None
    assert (add.name, add.label) == ("stats", "add")
    assert isinstance(add.body[0], sw.Atomic) and add.body[0].on == "gpu"
    assert (count.on, count.label) == ("host", "count")
    assert region.threads == Ref("t") and region.count == Ref("t")
    assert (dyn.schedule, dyn.chunk, dyn.reduction_on) == ("dynamic", Ref("c"), "gpu")
    flat = net.flatten()
    assert qpn.parse(flat.text()) == flat
    rep = qpn.check(net)
    assert not rep.errors and not rep.warnings, [str(d) for d in rep.diagnostics]


def test_omp_sync_words_stay_names_outside_and_where_names_go():
    net = qpn.parse("""
param reduction = 3
place critical init reduction
place single
transition atomic : critical -> single when reduction < 4
software {
    cpu nowait cores 4
    pool omp size 1 {
        parallel for 8 threads reduction schedule dynamic reduction det(1 us) as critical {
            critical single as nowait { cpu det(1 ms) on nowait as reduction2 }
            atomic det(1 us) on nowait as single
        }
        critical atomic { sleep det(1 ms) }
    }
}""")
    assert {p.name for p in net.places} >= {"critical", "single"}
    pf, crit = next(d for d in net.software[0].decls if isinstance(d, sw.Pool)).body
    # 'reduction' after 'dynamic' starts the option (a chunk named so is in parentheses)
    assert pf.chunk is None and pf.reduction == Det(Num(1, "us")) and pf.label == "critical"
    assert pf.threads == Ref("reduction")
    assert (pf.body[0].name, pf.body[0].label) == ("single", "nowait")
    assert (pf.body[1].on, pf.body[1].label) == ("nowait", "single")
    assert crit.name == "atomic"
    flat = net.flatten()
    assert {"critical_single.free", "critical_atomic.free", "omp.critical.thread.nowait",
            "omp.critical.thread.single.update"} <= set(flat.place_map)
    assert "atomic" in flat.transition_map
    assert qpn.parse(net.text()) == net


def test_a_chunk_named_reduction_is_printed_in_parentheses():
    net = Net("n", (Param("reduction", Num(2)), sw.Software((sw.Cpu("host"), sw.Pool(
        "p", Num(1), (sw.ParallelFor(Num(8), (sw.Compute(Det(Num(1, "ms"))),), Num(2), "dynamic",
                                     Ref("reduction"), reduction=Det(Num(1, "us"))),))))))
    text = net.text()
    assert "schedule dynamic (reduction) reduction det(1 us)" in text
    assert qpn.parse(text) == net


# ------------------------------------------------------------------ expansion
def _modes(net, name):
    return [fmt_mode_body(m) for m in net.transition_map[name].modes]


def test_unnamed_critical_sections_share_one_lock_named_ones_their_own():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool a size 2 {
        critical { cpu exp(1 ms) as x }
        critical io { cpu exp(1 ms) as y }
    }
    pool b size 1 { parallel for 4 { critical { cpu exp(1 ms) as z } } }
}""")
    assert _modes(net, "a.critical.done") == [
        "a.critical, critical.free, critical.waiting -> critical.held, a.x"]
    assert _modes(net, "a.x.done") == ["a.x, critical.held -> critical.free, a.critical_io, "
                                       "critical_io.waiting"]
    assert _modes(net, "a.critical_io.done") == [
        "a.critical_io, critical_io.free, critical_io.waiting -> critical_io.held, a.y"]
    # the team's unnamed critical section takes the same lock as pool a's
    assert _modes(net, "b.parallel_for.thread.critical.done") == [
        "b.parallel_for.thread.critical, critical.free, critical.waiting -> critical.held, "
        "b.parallel_for.thread.z"]
    assert net.place_map["critical.free"].init[0].count == Num(1)
    assert [p for p in net.place_map if p.endswith(".free")] == ["critical.free", "critical_io.free"]


def test_each_atomic_site_has_its_own_lock_and_update():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool p size 3 {
        atomic det(1 us)
        atomic det(2 us) as b
    }
}""")
    assert _modes(net, "p.begin") == ["p.start -> p.atomic, p.atomic.waiting"]
    assert _modes(net, "p.atomic.done") == [
        "p.atomic, p.atomic.free, p.atomic.waiting -> p.atomic.held, p.atomic.update"]
    assert _modes(net, "p.atomic.update.done") == [
        "p.atomic.update, p.atomic.held -> p.atomic.free, p.b, p.b.waiting"]
    assert _modes(net, "p.b.update.done") == ["p.b.update, p.b.held -> p.b.free, p.start"]
    assert net.place_map["p.b.update"].queue == "host"
    assert net.place_map["p.b.update"].service[0].dist == Det(Num(2, "us"))


def test_single_runs_or_skips_and_meets_at_its_barrier():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool w size 1 {
        parallel for 8 threads 4 {
            single { cpu det(1 ms) as read }
            cpu det(1 ms)
        }
    }
}""")
    t = "w.parallel_for.thread"
    assert net.place_map[f"{t}.single.ready"].init[0].count == Num(3)
    assert _modes(net, f"{t}.begin") == [
        f"{t}.start, 3 {t}.single.ready -> 3 {t}.single.left, {t}.read(1)",
        f"{t}.start, {t}.single.left -> {t}.single.ready, {t}.single(1)"]
    assert [m.name for m in net.transition_map[f"{t}.begin"].modes] == ["run", "skip"]
    assert _modes(net, f"{t}.read.done") == [f"{t}.read(_i1) -> {t}.single(_i1)"]
    # the four threads at the same iteration leave together
    assert _modes(net, f"{t}.single.trip") == [f"{t}.single(4 _i1) -> {t}.single.go(4 _i1)"]
    assert _modes(net, f"{t}.single.done") == [f"{t}.single.go(_i1) -> {t}.cpu(_i1)"]
    assert _modes(net, f"{t}.cpu.done") == [
        f"{t}.cpu(_i1), 3 {t}.single.ready -> 3 {t}.single.left, {t}.read((_i1 + 1)) when _i1 < 2",
        f"{t}.cpu(_i1), {t}.single.left -> {t}.single.ready, {t}.single((_i1 + 1)) when _i1 < 2",
        f"{t}.cpu(_i1) -> {t}.done when _i1 == 2"]


def test_single_nowait_has_no_barrier_and_a_team_of_one_no_choice():
    net = qpn.parse("""
param t = 3
software {
    cpu host cores 4
    pool w size 1 {
        parallel for t threads t as r { single nowait { cpu det(1 ms) as read } }
        parallel for 1 threads 1 as one { single { cpu det(1 ms) as alone } }
    }
}""")
    assert _modes(net, "w.r.thread.begin") == [
        "w.r.thread.start, (t - 1) w.r.thread.single.ready -> (t - 1) w.r.thread.single.left, "
        "w.r.thread.read",
        "w.r.thread.start, w.r.thread.single.left -> w.r.thread.single.ready, w.r.thread.done"]
    assert "w.r.thread.single" not in net.place_map and "w.r.thread.single.trip" not in \
        net.transition_map
    assert fmt(net.place_map["w.r.thread.single.ready"].init[0].count) == "t - 1"
    assert _modes(net, "w.one.thread.begin") == ["w.one.thread.start -> w.one.thread.alone"]


def test_reduction_combines_after_the_last_iteration():
    net = qpn.parse("""
software {
    cpu host cores 4
    pool w size 1 {
        parallel for 8 threads 4 reduction det(1 us) as a { cpu det(1 ms) }
        parallel for 2 threads 4 reduction det(1 us) as b { cpu det(1 ms) }
        parallel for 6 threads 4 schedule dynamic reduction det(1 us) as c { cpu det(1 ms) }
    }
}""")
    assert _modes(net, "w.a.thread.cpu.done") == [
        "w.a.thread.cpu(_i1) -> w.a.thread.cpu((_i1 + 1)) when _i1 < 2",
        "w.a.thread.cpu(_i1) -> w.a.thread.reduction, w.a.thread.reduction.waiting when _i1 == 2"]
    assert _modes(net, "w.a.thread.reduction.done") == [
        "w.a.thread.reduction, w.a.thread.reduction.free, w.a.thread.reduction.waiting -> "
        "w.a.thread.reduction.held, w.a.thread.reduction.update"]
    assert _modes(net, "w.a.thread.reduction.update.done") == [
        "w.a.thread.reduction.update, w.a.thread.reduction.held -> w.a.thread.reduction.free, "
        "w.a.thread.done"]
    # 2 iterations on 4 threads: the 2 threads without one start at the combine
    assert _modes(net, "w.a.done") == [
        "w.a, 4 w.a.thread.done -> w.b, 2 w.b.thread.start, 2 w.b.thread.reduction, "
        "2 w.b.thread.reduction.waiting"]
    assert _modes(net, "w.b.done")[0].startswith("w.b, 4 w.b.thread.done -> ")
    # dynamic: a thread that finds no chunk left combines
    assert _modes(net, "w.c.thread.end") == [
        "w.c.thread.start -> w.c.thread.reduction, w.c.thread.reduction.waiting "
        "unless w.c.chunks"]


def test_the_guide_shows_the_real_expansion():
    from conftest import MODELS
    guide = open(os.path.join(os.path.dirname(MODELS), "docs", "software-layer.md")).read()
    section = guide[guide.index("### OpenMP synchronization"):guide.index("## Solving")]
    blocks = re.findall(r"```\n(.*?)```", section, re.S)
    model, listing = blocks[0], blocks[1]
    flat = qpn.parse(model).flatten().text()
    lines = [ln.strip() for ln in flat.splitlines()]
    for line in listing.splitlines():
        if line.strip() and line.strip() != "}":
            assert line.strip() in lines, line
    # the example model of the section is the file
    example = next(b for b in blocks if "as histogram" in b)
    text = open(os.path.join(MODELS, "sw_omp_sync.qpn")).read()
    assert example in text


# ------------------------------------------------------------------ errors
BASE = ("cpu host cores 4", "mutex m")


def pool(*body: str) -> str:
    return software_block(*BASE, "pool p size 1 {", *(f"    {b}" for b in body), "}")


def team(head: str, *body: str) -> str:
    return pool(f"{head} {{", *(f"    {b}" for b in body), "}")


# (id, text, message fragment, line, col)
CASES = [
    ("single-in-pool", pool("single { cpu det(1 ms) }"),
     "'single' belongs in the block of a parallel for", 5, 9),
    ("single-in-behavior",
     software_block(*BASE, "behavior b { single { cpu det(1 ms) } }",
                    "pool p size 1 { parallel for 4 { call b } }"),
     "'single' cannot be in a behavior", 4, 18),
    ("single-in-branch", team("parallel for 4", "branch {", "    0.5: { single { cpu det(1 ms) } }",
                              "    0.5: { cpu det(1 ms) }", "}"),
     "'single' cannot be in a branch: all threads of the team must reach it", 7, 24),
    ("single-in-else", software_block(*BASE, "limit fds 1", "pool p size 1 {",
                                      "    parallel for 4 {",
                                      "        allocate fds else { single { cpu det(1 ms) } }",
                                      "        cpu det(1 ms)", "        free fds", "    }", "}"),
     "'single' cannot be in an else block", 7, 33),
    ("single-in-loop-about", team("parallel for 4", "loop about 2 times { single { cpu det(1 ms) } }"),
     "'single' cannot be in a 'loop about N times'", 6, 34),
    ("single-in-critical", team("parallel for 4", "critical { single { cpu det(1 ms) } }"),
     "'single' cannot be inside a critical section: one thread at a time is there", 6, 24),
    ("single-in-single", team("parallel for 4", "single { single { cpu det(1 ms) } }"),
     "'single' cannot be inside another single", 6, 22),
    ("single-in-fork", team("parallel for 4", "fork { single { cpu det(1 ms) } }"),
     "'single' cannot be in a forked thread", 6, 20),
    ("single-dynamic", team("parallel for 4 schedule dynamic", "single { cpu det(1 ms) }"),
     "'single' needs its parallel for scheduled static", 6, 13),
    ("single-uneven", team("parallel for 10 threads 4", "single { cpu det(1 ms) }"),
     "10 iterations on 4 threads are not shared evenly", 6, 13),
    ("single-symbolic", "param n = 8\n" + team("parallel for n threads 4", "single { cpu det(1 ms) }"),
     "write the iterations (n) and the threads (4) as numbers, or as the same expression", 7, 13),
    ("single-holds-a-lock", team("parallel for 4", "single { lock m }", "cpu det(1 ms)", "unlock m"),
     "after this single: 'm' is held on one path but not on another", 6, 13),
    ("critical-in-itself", pool("critical {", "    cpu det(1 ms)", "    critical { cpu det(1 ms) }",
                                "}"),
     "this critical section is reached while its lock is already held (taken at bad.qpn:5:9)",
     7, 13),
    ("critical-through-call",
     software_block(*BASE, "behavior b { critical x { cpu det(1 ms) } }",
                    "pool p size 1 { critical x { call b } }"),
     "critical 'x' is reached while its lock is already held", 4, 18),
    ("critical-in-its-team", pool("critical {", "    parallel for 4 { critical { cpu det(1 ms) } }",
                                  "}"),
     "this critical section is reached while its lock is already held", 6, 30),
    ("critical-return", software_block(*BASE, "behavior b {", "    critical {",
                                       "        cpu det(1 ms)", "        return", "    }", "}",
                                       "pool p size 1 { call b }"),
     "'return' cannot leave a critical section", 7, 13),
    ("critical-lock-name", software_block(*BASE, "mutex critical", "pool p size 1 {",
                                          "    critical { cpu det(1 ms) }", "}"),
     "every unnamed critical section needs the name 'critical' for its lock, but the software "
     "block declares a mutex 'critical'", 6, 9),
    ("critical-named-lock-name", software_block(*BASE, "semaphore critical_io permits 1",
                                                "pool p size 1 {", "    critical io { cpu det(1 ms) }",
                                                "}"),
     "critical 'io' needs the name 'critical_io' for its lock", 6, 9),
    ("atomic-cpu", pool("atomic det(1 us) on hots"), "undefined cpu 'hots'", 5, 29),
    ("atomic-no-time", pool("atomic on host"), "unexpected keyword 'on'", 5, 16),
    ("reduction-on-mutex", team("parallel for 4 reduction det(1 us) on m", "cpu det(1 ms)"),
     "'m' is a mutex, not a cpu", 5, 47),
    ("reduction-twice", team("parallel for 4 reduction det(1 us) reduction det(2 us)",
                             "cpu det(1 ms)"),
     "'reduction' given twice", 5, 44),
    ("reduction-label", team("parallel for 4", "cpu det(1 ms) as reduction"),
     "'reduction' cannot name a step here", 6, 13),
    ("reduction-two-cpus", software_block("cpu a", "cpu b", "pool p size 1 {",
                                          "    parallel for 4 threads 2 reduction det(1 us) {",
                                          "        cpu det(1 ms) on a", "    }", "}"),
     "a reduction does not say which cpu: there are a, b", 5, 9),
]


@pytest.mark.parametrize("cid,src,fragment,line,col", CASES, ids=[c[0] for c in CASES])
def test_omp_sync_mistake_is_located(cid, src, fragment, line, col):
    assert_located(src, fragment, line, col)


def test_the_example_model_checks_clean():
    from conftest import MODELS
    net = qpn.load(os.path.join(MODELS, "sw_omp_sync.qpn"))
    rep = qpn.check(net)
    assert not rep.errors and not rep.warnings, [str(d) for d in rep.diagnostics]
