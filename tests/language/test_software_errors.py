"""Mistakes in a software block are located like every other error: file:line:col,
the line, a caret, what was expected, a did-you-mean."""
import pytest

import qpn
from qpn.cli import main
from qpn.errors import ModelError
from located import assert_located, software_block


block = software_block


POOL = ("mutex m", "cpu host", "pool p size 2 {")

# (id, text, message fragment, line, col)
CASES = [
    ("unknown-mutex", block(*POOL, "    lock mm", "    unlock m", "}"),
     "undefined mutex 'mm'", 5, 14),
    ("unlock-without-lock", block(*POOL, "    cpu exp(1 ms)", "    unlock m", "}"),
     "unlock 'm' without holding it", 6, 9),
    ("lock-twice", block(*POOL, "    lock m", "    lock m", "    unlock m", "}"),
     "already held here; locks are not reentrant", 6, 9),
    ("held-at-end", block(*POOL, "    lock m", "    cpu exp(1 ms)", "}"),
     "ends while holding 'm', taken here", 5, 9),
    ("held-at-return", block(*POOL, "    lock m", "    cpu exp(1 ms)", "    return", "}"),
     "ends while holding 'm'", 5, 9),
    ("held-on-one-branch", block(*POOL, "    branch {", "        0.5: { lock m }",
                                 "        0.5: { cpu exp(1 ms) }", "    }", "    cpu exp(1 ms)", "}"),
     "'m' is held on one path but not on another", 5, 9),
    ("held-across-loop", block(*POOL, "    loop 2 times {", "        lock m", "        cpu exp(1 ms)",
                               "    }", "    unlock m", "}"),
     "around this loop: 'm' is held", 5, 9),
    ("probabilities", block(*POOL, "    branch {", "        0.3: { cpu exp(1 ms) }",
                            "        0.6: { cpu exp(2 ms) }", "    }", "}"),
     "add up to 0.9, not 1", 5, 9),
    ("probability-zero", block(*POOL, "    branch {", "        0: { cpu exp(1 ms) }",
                               "        1: { cpu exp(2 ms) }", "    }", "}"),
     "a probability must be > 0 and <= 1, got 0", 6, 13),
    ("probability-param", "param p = 0.7\n" + block(*POOL, "    branch {", "        p: { cpu exp(1 ms) }",
                                                     "        p: { cpu exp(2 ms) }", "    }", "}"),
     "add up to 1.4, not 1", 6, 9),
    ("negative-loop", block(*POOL, "    loop -2 times { cpu exp(1 ms) }", "}"),
     "a loop count must be a whole number >= 1, got -2", 5, 14),
    ("zero-loop-param", "param n = 0\n" + block(*POOL, "    loop n times { cpu exp(1 ms) }", "}"),
     "a loop count must be a whole number >= 1, got n = 0", 6, 14),
    ("fractional-loop", block(*POOL, "    loop 2.5 times { cpu exp(1 ms) }", "}"),
     "a loop count must be a whole number", 5, 14),
    ("geometric-one", block(*POOL, "    loop about 1 times { cpu exp(1 ms) }", "}"),
     "mean N > 1", 5, 20),
    ("negative-size", block("cpu host", "pool p size -1 { cpu exp(1 ms) }"),
     "the size of pool 'p' must be a whole number >= 1, got -1", 3, 17),
    ("negative-permits", block("semaphore s permits -3"),
     "the permits of semaphore 's' must be a whole number >= 0, got -3", 2, 25),
    ("zero-acquire", block("semaphore s permits 2", "pool p size 1 {", "    acquire (0) s",
                           "    release (0) s", "}"),
     "the number of permits must be a whole number >= 1, got 0", 4, 18),
    ("wrong-kind", block("semaphore s permits 2", "pool p size 1 {", "    lock s", "}"),
     "'s' is a semaphore, not a mutex", 4, 14),
    ("read-lock-on-mutex", block(*POOL, "    read lock m", "    read unlock m", "}"),
     "'m' is a mutex, not a rwlock", 5, 19),
    ("unknown-cpu", block(*POOL, "    cpu exp(1 ms) on gpu", "}"),
     "undefined cpu 'gpu'", 5, 26),
    ("no-cpu", block("pool p size 1 { cpu exp(1 ms) }"),
     "a cpu step needs a cpu, but none is declared", 2, 21),
    ("two-cpus", block("cpu a", "cpu b", "pool p size 1 { cpu exp(1 ms) }"),
     "does not say which cpu", 4, 21),
    ("io-without-time", block("disk d", "pool p size 1 { io on d }"),
     "this io step has no time", 3, 21),
    ("load-disk-with-time", block("disk d service by load 1: exp(1 ms)",
                                  "pool p size 1 { io exp(2 ms) on d }"),
     "takes its service time from its load table", 3, 21),
    ("load-levels", block("disk d service by load 1: exp(1 ms), 1: exp(2 ms)"),
     "load levels must increase", 2, 42),
    ("load-start", block("disk d service by load 2: exp(1 ms)"),
     "the load table starts at 1", 2, 28),
    ("rr-without-quantum", block("cpu host rr"), "an rr cpu needs a time slice", 2, 14),
    ("quantum-on-ps", block("cpu host ps quantum 1 ms"), "'quantum' applies to rr cpus only", 2, 17),
    ("cpu-discipline", block("cpu host random"), "a cpu schedules threads by ps, jsq-ps, fcfs or rr", 2, 14),
    ("cores-twice", block("cpu host cores 2 cores 3"), "'cores' given twice", 2, 22),
    ("duplicate-name", block("mutex m", "semaphore m permits 1"), "'m' is declared twice", 3, 15),
    ("clash-with-core", "place m\n" + block("mutex m"), "'m' is already the name of a place", 3, 11),
    ("dotted-name", block("mutex a.b"), "has a dot", 2, 11),
    ("duplicate-label", block("cpu host", "pool p size 1 {", "    cpu exp(1 ms) as x",
                              "    cpu exp(1 ms) as x", "}"),
     "two steps are named 'x'", 5, 9),
    ("reserved-label", block("cpu host", "pool p size 1 {", "    cpu exp(1 ms) as start", "}"),
     "'start' cannot name a step here", 4, 9),
    ("after-return", block("cpu host", "pool p size 1 {", "    cpu exp(1 ms)", "    return",
                           "    cpu exp(2 ms)", "}"),
     "this step can never run: it comes after 'return'", 6, 9),
    ("timeless-loop", block("cpu host", "pool p size 1 {",
                            "    loop 3 times { branch { 0.5: { cpu exp(1 ms) } 0.5: {} } }", "}"),
     "this loop can go round without any time passing", 4, 9),
    ("timeless-pool", block("timer t", "pool p size 1 {", "    timer start t", "    timer stop t", "}"),
     "can run without any time passing", 3, 10),
    ("unknown-behavior", block("pool p size 1 { call nothing }"), "undefined behavior 'nothing'", 2, 26),
    ("runs-unknown", block("pool p size 1 runs nothing"), "undefined behavior 'nothing'", 2, 24),
    ("call-cycle", block("cpu host", "pool p size 1 { call a }", "behavior a {",
                         "    cpu exp(1 ms)", "    call b", "}", "behavior b { call a }"),
     "behaviors call each other in a cycle: a -> b -> a", 8, 18),
    ("take-from-sink", block("sink s", "pool p size 1 {", "    take s", "}"),
     "nothing can be taken from sink 's'", 4, 9),
    ("timeout-without-else", block("blocking queue q", "pool p size 1 {",
                                   "    take q timeout exp(1 s)", "}"),
     "needs an 'else", 4, 9),
    ("put-else-unbounded", block("blocking queue q", "pool p size 1 {", "    sleep exp(1 s)",
                                 "    put q else { return }", "}"),
     "queue 'q' has no capacity", 5, 9),
    ("wait-without-mutex", block("mutex m", "condition c on m", "pool p size 1 {", "    wait c", "}"),
     "'wait c' needs mutex 'm' held", 5, 9),
    ("condition-on-unknown", block("condition c on mm"), "undefined mutex 'mm'", 2, 20),
    ("undefined-param-in-step", block("cpu host", "pool p size 1 { cpu exp(tihnk) }"),
     "undefined name 'tihnk'", 3, 29),
    ("step-typo", block("cpu host", "pool p size 1 {", "    lokc m", "}"), "unexpected 'lokc'", 4, 9),
    ("missing-times", block("cpu host", "pool p size 1 {", "    loop 3 { cpu exp(1 ms) }", "}"),
     "unexpected '{'", 4, 16),
    ("bare-time", block("cpu host", "pool p size 1 {", "    cpu 5 ms", "}"), "unexpected '5'", 4, 13),
    ("decl-as-step", block("cpu host", "pool p size 1 {", "    mutex m", "}"),
     "unexpected 'mutex'", 4, 9),
]


@pytest.mark.parametrize("cid,src,fragment,line,col", CASES, ids=[c[0] for c in CASES])
def test_software_mistake_is_located(cid, src, fragment, line, col):
    assert_located(src, fragment, line, col)


def test_catalogue_is_distinct():
    assert len({c[0] for c in CASES}) == len(CASES)
    assert len({c[1] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("src,suggestion", [
    (block(*POOL, "    lock mx", "    unlock m", "}"), "m"),
    (block(*POOL, "    lokc m", "}"), "lock"),
    (block("mutex m", "condition c on m", "pool p size 1 {", "    lock m", "    wiat c", "    unlock m", "}"),
     "wait"),
])
def test_did_you_mean(src, suggestion):
    with pytest.raises(ModelError) as info:
        qpn.parse(src)
    assert info.value.did_you_mean == suggestion


def test_semaphores_may_signal_between_threads():
    # a release without an acquire in the same thread is signalling, not a mistake
    net = qpn.parse(block("semaphore ready permits 0", "pool producer size 1 {",
                          "    sleep exp(1 s)", "    release ready", "}",
                          "pool consumer size 1 {", "    acquire ready", "    sleep exp(1 s)", "}"))
    assert "ready.held" not in net.place_map
    t = net.transition_map["producer.sleep.done"]
    assert [a.place for a in t.modes[0].outputs] == ["ready.free", "producer.start"]


def test_cli_prints_located_software_errors(tmp_path, capsys):
    f = tmp_path / "bad.qpn"
    f.write_text(CASES[1][1])
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "bad.qpn:6:9: error: unlock 'm' without holding it" in err


def test_a_bad_parameter_stops_the_expansion_before_its_counts_are_used():
    # campaign 50: with a parameter out of range, the software layer expanded without any
    # values, its checks of counts saw nothing, and 'parallel for 0' divided by zero
    import os
    from conftest import TESTS_DIR
    text = open(os.path.join(TESTS_DIR, "..", "models", "sw_omp_sync.qpn")).read()
    text = text.replace("param work = 1 ms", "param work = 99999999999999999999999999999999999999")
    text = text.replace("parallel for 4 as histogram", "parallel for 0 as histogram")
    with pytest.raises(ModelError) as info:
        qpn.parse(text)
    assert "parameter 'work' is out of range" in str(info.value) and info.value.loc.line == 17
    # with the parameter fixed, the count is the error, located at it
    with pytest.raises(ModelError, match="iterations of a parallel for must be a whole number >= 1"):
        qpn.parse(text.replace("99999999999999999999999999999999999999", "1 ms"))
