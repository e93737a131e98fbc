"""LQN text models read as qpn software models.

Known answers: the throughputs of the reference tasks that petrisrvn (the LQN
solver that builds a GSPN and solves it exactly) reports for the models of the LQN
solvers' regression suite (layeredqueuing/V5, models/regression, petri-results):
the same model parameters, retyped here.  petrisrvn prints six significant digits.
Where the regression models have callers of different kinds waiting for one task,
LQN serves them in FIFO order and qpn's semaphores in random order; those models
(13-interlock, 90-A01, 91-cs3-1) are left out here and listed in docs/interchange.md.
"""
import os
import subprocess
import sys

import pytest

import qpn
from qpn.dsl.lqn import read_lqn
from qpn.dsl.lqn_translate import lqn_to_qpn
from qpn.errors import ModelError
from conftest import ROOT_DIR, TESTS_DIR

CLIENT_SERVER = """P 0
  p client f i
  p server {ps}
-1
T 0
  t client r client -1 client {opts}
  t server n server -1 server {sopts}
-1
E 0
  s client {sc} -1
  y client server 1 -1
  s server {ss} -1
{extra}-1
"""


def _cs(opts="", sopts="", sc="1", ss="1", extra="", ps="f"):
    return CLIENT_SERVER.format(opts=opts, sopts=sopts, sc=sc, ss=ss, extra=extra, ps=ps)


INTERLOCK = """P 3
  p p0 f i
  p p1 f
  p p2 f
-1
T 3
  t t0 r e0 -1 p0 {m}
  t t1 n e1 -1 p1
  t t2 n e2 -1 p2
-1
E 3
  s e0 1 -1
  y e0 e2 1 -1
  y e0 e1 1 -1
  s e1 {s1} -1
  y e1 e2 {y1} -1
  s e2 1 -1
-1
"""

ACTIVITIES = """P 2
  p client {pc}
  p server f
-1
T 2
  t client r client -1 client
  t server n server -1 server
-1
E 2
{c_entry}  A server server
-1
{c_acts}A server
  s server 0.25
  s fork1 0.4
  s fork2 0.6
  s join 0.25
:
{conns}-1
"""

KNOWN = {
    # name: (model, {reference task: throughput by petrisrvn})
    "01-sanity": (_cs(), {"client": 0.5}),
    "06-think": (_cs(opts="z 0.5", sc="0.5"), {"client": 0.5}),
    "07-entry-think": (_cs(ss="0.5", extra="  Z server 0.5 -1\n"), {"client": 0.5}),
    "20-multiserver": (_cs(ps="f i", opts="m 4", sopts="m 2"), {"client": 1.699997}),
    "21-multiserver": (_cs(ps="f i", opts="m 3", sopts="m 3", ss="0.5 0.5"), {"client": 1.920094}),
    "22-multiserver": (_cs(ps="f i", opts="m 3", sopts="m 3"), {"client": 1.5}),
    "23-infinite-task": (_cs(ps="f i", opts="m 3", sopts="i"), {"client": 1.5}),
    "03-forwarding": ("P 4\n p p0 f i\n p p1 f\n p p2 f\n p p3 f\n-1\nT 4\n t t0 r e0 -1 p0 m 4\n"
                      " t t1 n e1 -1 p1 m 2\n t t2 n e2 -1 p2 m 2\n t t3 n e3 -1 p3\n-1\nE 4\n"
                      " s e0 0.5 0.5 -1\n y e0 e1 0.25 0.75 -1\n s e1 1 -1\n F e1 e2 0.5 -1\n"
                      " s e2 1 -1\n F e2 e3 0.5 -1\n s e3 1 -1\n-1\n", {"t0": 0.8841}),
    "08-open-and-closed": ("P 1\n p p1 f\n-1\nT 2\n t t1 r e1 -1 p1\n t t2 n e2 e3 -1 p1\n-1\nE 3\n"
                           " s e1 1 -1\n y e1 e2 1 -1\n s e2 1 -1\n a e3 0.4\n s e3 1 -1\n-1\n",
                           {"t1": 0.299992}),
    "10-interlock": (INTERLOCK.format(m="", s1="1", y1="1"), {"t0": 0.25}),
    "11-interlock-phase2": (INTERLOCK.format(m="", s1="0.5 0.5", y1="0 1"), {"t0": 0.285045}),
    "12-interlock-2-clients": (INTERLOCK.format(m="m 2", s1="1", y1="1"), {"t0": 0.345407}),
    "15-split-interlock": ("P 2\n p p0 f i\n p p1 f\n-1\nT 3\n t t0 r e0 -1 p0\n t t1 n e1 -1 p1\n"
                           " t t2 n e2 -1 p1\n-1\nE 3\n s e0 1 -1\n y e0 e1 1 -1\n y e0 e2 1 -1\n"
                           " s e1 1 -1\n s e2 1 -1\n-1\n", {"t0": 0.333333}),
    "16-zero-demand-phase": ("P 2\n p client i\n p server f\n-1\nT 3\n t c0 r c0 -1 client\n"
                             " t s0 n s0 -1 server\n t s1 n s1 -1 server\n-1\nE 3\n s c0 0 1 -1\n"
                             " y c0 s0 1 1 -1\n y c0 s1 2 0 -1\n s s0 1 1.5 -1\n s s1 3 -1\n-1\n",
                             {"c0": 0.087283}),
    # activity graphs: AND-fork and join on one processor, OR-fork, a loop of mean 0.5
    "40-and-fork": (ACTIVITIES.format(pc="f", c_entry=" A client client\n", c_acts="A client\n s client 1\n y client server 1\n-1\n",
                                      conns=" server -> fork1 & fork2;\n fork1 & fork2 -> join;\n join[server]\n"),
                    {"client": 0.4}),
    "41-or-fork": (ACTIVITIES.format(pc="f i", c_entry=" s client 1 -1\n y client server 1 -1\n", c_acts="",
                                     conns=" server -> (0.25) fork1 + (0.75) fork2;\n fork1 + fork2 -> join;\n"
                                           " join[server]\n"), {"client": 0.487805}),
    "44-loop": ("P 2\n p client f i\n p server f\n-1\nT 2\n t client r client -1 client\n"
                " t server n server -1 server\n-1\nE 2\n s client 1 -1\n y client server 1 -1\n"
                " A server server\n-1\nA server\n s server 0.25\n s loop 1\n s done 0.25\n:\n"
                " server -> 0.5 * loop, done;\n loop;\n done[server]\n-1\n", {"client": 0.5}),
    "48-fork-in-a-reference-task": ("P 1\n p client f\n-1\nT 1\n t client r client -1 client\n-1\nE 1\n"
                                    " A client client\n-1\nA client\n s client 0.25\n s fork1 0.4\n"
                                    " s fork2 0.6\n s join 0.25\n:\n client -> fork1 & fork2;\n"
                                    " fork1 & fork2 -> join\n-1\n", {"client": 0.666667}),
    "31-overtaking": ("P 2\n p p1 i\n p p2 f\n-1\nT 2\n t t1 r e1 -1 p1\n t t2 f e2 -1 p2\n-1\nE 2\n"
                      " s e1 1 -1\n y e1 e2 1 -1\n s e2 1 1 -1\n-1\n", {"t1": 0.4}),
}


def _solve(text: str, name: str = "m.lqn"):
    qtext, _ = lqn_to_qpn(text, name)
    return qtext, qpn.solve(qpn.parse(qtext, name + " (as qpn)"), method="ctmc")


def _runner(qtext: str, task: str) -> str:
    """The qpn runner (pool or population) a reference task became."""
    for line in qtext.splitlines():
        words = line.split()
        if words[:1] in (["pool"], ["population"]) and words[1] in (task, task + "_task"):
            return words[1]
    raise AssertionError(f"no runner for {task}")


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_reference_task_throughputs_match_petrisrvn(name):
    text, expected = KNOWN[name]
    qtext, res = _solve(text, name + ".lqn")
    for task, x in expected.items():
        got = res.get("throughput", f"{_runner(qtext, task)}.begin")
        assert got == pytest.approx(x, rel=3e-5), (name, task, got, x)


def test_async_calls_and_forwarding_in_phase_2_agree_with_lqsim():
    """09-sanity: forwarding, a call in phase 1, an asynchronous call in phase 2, two
    processors.  petrisrvn reports 1.5219 (it does not keep the asynchronous request
    queued), the simulator lqsim 1.40961 +/- 0.00897 (95%); qpn's CTMC is exact."""
    text = ("P 2\n p client i\n p server f m 2\n-1\nT 3\n t client r client -1 client m 3\n"
            " t server1 f entry1 -1 server m 2\n t server2 f entry2 entry3 -1 server\n-1\nE 4\n"
            " s client 1 -1\n y client entry1 1 -1\n s entry1 0.5 0.5 -1\n F entry1 entry2 0.5 -1\n"
            " y entry1 entry2 0.2 0 -1\n z entry1 entry3 0 0.3 -1\n s entry2 0.2 -1\n s entry3 0.3 -1\n-1\n")
    qtext, res = _solve(text)
    got = res.get("throughput", f"{_runner(qtext, 'client')}.begin")
    assert abs(got - 1.40961) <= 0.00897


def test_an_and_join_waits_for_the_slower_branch():
    """Two branches on an infinite processor run in parallel: the join waits for the
    maximum of exp(0.4) and exp(0.6), whose mean is 0.4 + 0.6 - 1 / (1/0.4 + 1/0.6)."""
    text = (ACTIVITIES.replace("p server f", "p server i")
            .format(pc="f i", c_entry=" s client 1 -1\n y client server 1 -1\n", c_acts="",
                    conns=" server -> fork1 & fork2;\n fork1 & fork2 -> join;\n join[server]\n"))
    qtext, res = _solve(text)
    cycle = 1 + 0.25 + (0.4 + 0.6 - 1 / (1 / 0.4 + 1 / 0.6)) + 0.25
    assert res.get("throughput", "client.begin") == pytest.approx(1 / cycle, rel=1e-9)


def test_steps_after_the_reply_run_while_the_caller_goes_on():
    """The reply after activity 'a' of a single-thread server: 'b' (1 time unit) runs
    after it, so one client's cycle is its own 1 + a's 1; b overlaps the client."""
    text = ("P 2\n p c i\n p s i\n-1\nT 2\n t c r c -1 c\n t s n s -1 s\n-1\nE 2\n s c 1 -1\n"
            " y c s 1 -1\n A s a\n-1\nA s\n s a 1\n s b 1\n:\n a[s] -> b\n-1\n")
    qtext, res = _solve(text)
    assert "s_phase2" in qtext
    # the client waits for b only when it calls again before b ends: P(b > client's 1)
    # makes the mean wait E[max(0, B - C)] = 1/2 for two exp(1): cycle 1 + 1 + 1/2
    assert res.get("throughput", "c.begin") == pytest.approx(1 / 2.5, rel=1e-9)


def test_open_arrivals_make_an_mm1_queue():
    """05-sanity: Poisson arrivals at 0.5/s to a single-thread task with exp(1) demand."""
    text = "P 1\n p server f\n-1\nT 1\n t server n server -1 server\n-1\nE 1\n s server 1 -1\n a server 0.5\n-1\n"
    qtext, res = _solve(text)
    rho = 0.5
    assert res.get("tokens", "server_task.waiting") == pytest.approx(rho ** 2 / (1 - rho), rel=1e-6)
    assert res.get("utilization", "server") == pytest.approx(rho, rel=1e-6)


def test_a_deterministic_phase_makes_exactly_its_calls():
    """f 1: one call exactly, demand split over two slices; a closed cycle of
    client 1 + server 1 time units (no queueing with one client)."""
    text = _cs(extra="  f client 1 -1\n")
    qtext, _ = lqn_to_qpn(text, "m.lqn")
    assert "loop about" not in qtext and qtext.count("call server_entry") == 1
    _, res = _solve(text)
    assert res.get("throughput", "client.begin") == pytest.approx(0.5, rel=1e-9)


def test_names_shared_by_processor_task_and_entry_stay_apart():
    qtext, _ = lqn_to_qpn(_cs(), "m.lqn")
    assert "cpu server cores 1 fcfs" in qtext
    assert "semaphore server_task permits 1" in qtext
    assert "behavior server_entry {" in qtext


def _at(text: str, marker: str) -> tuple[int, int]:
    """Line and column of the first occurrence of ``marker``."""
    i = text.index(marker)
    return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1


@pytest.mark.parametrize("text, marker, words", [
    (_cs().replace("s server 1 -1", "s server $x -1"), "$x", "SPEX parameter '$x'"),
    (_cs().replace("y client server", "y client sever"), "sever", "entry 'sever' is not listed"),
    (_cs().replace("server n server -1 server", "server n server -1 srv"), "t server",
     "processor 'srv', which is not defined"),
    (_cs().replace("s server 1 -1", "s server 1 2 3 4 -1"), "4 -1", "at most 3 phases"),
    (_cs().replace("p server f", "p server f m 2.5"), "2.5", "whole number"),
    (_cs().replace("  y client server 1 -1\n", "  y client server 1 -1\n  y server client 1 -1\n"),
     "y server client", "entry 'server' calls 'client', an entry of reference task"),
    (_cs().replace("p server f", "p server q"), "q", "unexpected 'q'"),
    (_cs().replace("t server n", "t server S"), "S server", "semaphore tasks"),
    (_cs(extra="  A server s1\n"), "A server", "entry 'server' starts with activity 's1'"),
    ("P 1\n p a f\n", None, "unexpected end of file"),
    (_cs().replace("s server 1 -1", "s server 1e999 -1"), "1e999", "too large for a number"),
    (_cs(extra="  f client 1 -1\n").replace("y client server 1 -1", "y client server 1000000 -1"),
     "client -1 client", "deterministic with 1000000 calls"),
    (_cs().replace("t client r", "t client n").replace("  y client server 1 -1\n", ""), "t client",
     "nothing drives the model"),
    # a section without its terminating -1: the next section's letter is where it fails
    (_cs().replace("  p server f\n-1\n", "  p server f\n"), "T 0", ("unexpected 'T'", "-1 (end of the list)")),
    (_cs().replace("s server 1 -1", "s server fast -1"), "fast", ("unexpected 'fast'", "a number")),
    (_cs(sopts="\n  t server n backup -1 server"), "server n backup", "task 'server' defined twice"),
    (_cs(sopts="\n  t other n server -1 client"), "server -1 client", "entry 'server' belongs to two tasks"),
    (_cs(extra="  F client server 1.5 -1\n"), "1.5", "a forwarding probability must be <= 1, not 1.5"),
    (_cs(extra="  f server 2 -1\n"), "2 -1", "a phase type is 0 (stochastic) or 1 (deterministic), not 2"),
    # activity graphs: a call to an entry no task lists, replies to unknown or foreign entries
    (_cs(extra="  A server s1\n") + "A server\n  s s1 1\n  y s1 nosuch 1\n:\n  s1[server]\n-1\n", "nosuch",
     "entry 'nosuch' is not listed by any task"),
    (_cs(extra="  A server s1\n") + "A server\n  s s1 1\n  s s2 1\n:\n  s1[sever] -> s2\n-1\n", "sever]",
     "entry 'sever' is not listed by any task"),
    (_cs(extra="  A server s1\n") + "A server\n  s s1 1\n:\n  s1[client]\n-1\n", "client]",
     "activity 's1' replies to entry 'client' of task 'client'"),
    (_cs(extra="  A server s1\n") + "A server\n  s s1 1\n  s s2 1\n  s s3 1\n:\n  s1 -> (0.3) s2 + (0.3) s3;\n"
     "  s2 + s3 -> s4;\n  s4[server]\n-1\n", "s2 +", "the probabilities of an OR-fork add up to 0.6, not 1"),
])
def test_mistakes_are_located(text, marker, words):
    with pytest.raises(ModelError) as err:
        lqn_to_qpn(text, "m.lqn")
    e = err.value
    words, expected = words if isinstance(words, tuple) else (words, None)
    assert words in e.message, e.message
    if expected is not None:
        assert expected in (e.expected or ""), e.expected
    if marker is None:      # the end of the file
        lines = text.splitlines()
        where = (len(lines), len(lines[-1]) + 1)
    else:
        where = _at(text, marker)
    assert (e.loc.line, e.loc.col) == where, (e.loc.line, e.loc.col, e.message)


def test_a_cycle_of_calls_is_refused():
    text = ("P 1\n p p f\n-1\nT 3\n t c r c -1 p\n t a n a -1 p\n t b n b -1 p\n-1\nE 3\n"
            " s c 1 -1\n y c a 1 -1\n s a 1 -1\n y a b 1 -1\n s b 1 -1\n y b a 1 -1\n-1\n")
    with pytest.raises(ModelError, match=r"the calls form a cycle: a -> b -> a"):
        read_lqn(text, "m.lqn")


def test_cli_solves_and_converts_an_lqn_file(tmp_path):
    f = tmp_path / "cs.lqn"
    f.write_text(_cs(opts="m 2"))
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "solve", str(f), "--method", "ctmc"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "client.begin" in out.stdout
    q = tmp_path / "cs.qpn"
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "convert", str(f), "-o", str(q)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert qpn.load(str(q)).name == "cs"


# ------------------------------------------------------------------ writing LQN
def _data_models() -> dict[str, str]:
    import glob
    import os
    root = ROOT_DIR
    files = sorted(glob.glob(os.path.join(root, "tests/data/lqn/*.lqn"))
                   + glob.glob(os.path.join(root, "models/lqn/*.lqn")))
    out = {os.path.basename(f): open(f, encoding="utf-8").read() for f in files}
    out.update({k: v[0] for k, v in KNOWN.items()})
    return out


DATA = _data_models()


@pytest.mark.parametrize("name", sorted(DATA))
def test_lqn_to_qpn_to_lqn_is_a_fixed_point(name):
    """LQN -> qpn -> LQN -> qpn -> LQN: the second LQN text equals the first, and the
    qpn texts are equal when the export needed no note (reference tasks with several
    phases and later phases with several are merged, with a note)."""
    from qpn.dsl.lqn_export import qpn_to_lqn
    q1, _ = lqn_to_qpn(DATA[name], name)
    l1, notes = qpn_to_lqn(qpn.parse(q1))
    q2, _ = lqn_to_qpn(l1, name)
    l2, _ = qpn_to_lqn(qpn.parse(q2))
    assert l1 == l2
    body = lambda t: t.split("software {", 1)[1]      # noqa: E731 (past the names and comments)
    if not notes:
        assert body(q1) == body(q2)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_an_exported_model_solves_to_the_same_throughputs(name):
    from qpn.dsl.lqn_export import qpn_to_lqn
    text, expected = KNOWN[name]
    q1, r1 = _solve(text)
    l1, notes = qpn_to_lqn(qpn.parse(q1))
    q2, r2 = _solve(l1)
    for task in expected:
        a = r1.get("throughput", f"{_runner(q1, task)}.begin")
        b = r2.get("throughput", f"{_runner(q2, task)}.begin")
        # merged phases keep means, not distributions: close, not equal
        assert b == pytest.approx(a, rel=0.02 if notes else 1e-9), (notes, a, b)


def test_export_refuses_what_lqn_cannot_say():
    from qpn.dsl.lqn_export import qpn_to_lqn
    net = qpn.parse("software {\n    cpu host cores 1 fcfs\n    mutex m\n"
                    "    pool w size 2 {\n        lock m\n        cpu exp(1) on host\n        unlock m\n    }\n}\n",
                    "locks.qpn")
    with pytest.raises(ModelError, match="'mutex' 'm' has no LQN form") as err:
        qpn_to_lqn(net)
    assert (err.value.loc.line, err.value.loc.col) == (3, 11)
    with pytest.raises(ModelError, match="no software block"):
        qpn_to_lqn(qpn.parse("place p init 1\ntransition t : p -> p delay exp(1)\n"))


def test_cli_writes_lqn(tmp_path):
    src = tmp_path / "cs.qpn"
    src.write_text(lqn_to_qpn(_cs(opts="m 2"), "cs.lqn")[0])
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "convert", str(src), "-o",
                          str(tmp_path / "back.lqn")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    m = read_lqn((tmp_path / "back.lqn").read_bytes(), "back.lqn")
    assert m.tasks["client"].multiplicity == 2 and m.entries["server_entry"].demand[0] == 1


def test_a_processor_without_tasks_and_a_huge_demand_are_read_and_solved(tmp_path):
    """The fuzz slice's mutant of tests/data/lqn/phases_async.lqn: the auditor moved to
    the users' infinite processor (its own processor left unused) and a demand of 2^200:
    check and solve answer (the CTMC's estimate counted the unused processor's queue)."""
    import os
    here = TESTS_DIR
    text = open(os.path.join(here, "data/lqn/phases_async.lqn"), encoding="utf-8").read()
    text = text.replace("s record 0.03 -1", f"s record {2 ** 200} -1").replace(
        "t auditor n record -1 audit", "t auditor n record -1 users")
    f = tmp_path / "m.lqn"
    f.write_text(text)
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "check", str(f)], capture_output=True, text=True)
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
    # a record takes 2^200 s: its requests pile up (the CTMC's cut-off once hid it: its
    # immediate arrivals were cut without a trace, 'probability at the cut-off 0')
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "solve", str(f), "--method", "auto", "--wall", "2"],
                         capture_output=True, text=True)
    assert out.returncode == 5 and "Traceback" not in out.stderr, out.stderr
    assert "error: unstable: tokens in" in out.stderr and "record_requests.items" in out.stderr


@pytest.mark.parametrize("old, new, line, col, what, words", [
    # a demand below the shortest time qpn takes: the entry, on its task's line
    ("s route 0.1 -1", "s route 1e-320 -1", 11, 13, "entry 'route'", "exp: mean must be between"),
    # a thread count past the integers: the task's line
    ("t back n serve -1 back m 2", "t back n serve -1 back m 1e308", 12, 3, "task 'back'",
     "whole numbers must be within"),
])
def test_an_error_in_the_translation_is_shown_at_the_lqn_element_that_made_it(
        tmp_path, old, new, line, col, what, words):
    text = open(os.path.join(TESTS_DIR, "data/lqn/forwarding.lqn"), encoding="utf-8").read()
    assert old in text
    f = tmp_path / "m.lqn"
    f.write_text(text.replace(old, new))
    with pytest.raises(ModelError) as err:
        qpn.load(str(f))
    e = err.value
    assert (e.loc.file, e.loc.line, e.loc.col) == (str(f), line, col)
    assert e.message.startswith(f"{what} translates to qpn that is not valid: ") and words in e.message
    assert "(as qpn)" not in str(e) and "of 'qpn convert'" in e.hint
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "check", str(f)], capture_output=True, text=True)
    assert out.returncode != 0 and out.stderr.startswith(f"{f}:{line}:{col}: error: {what}"), out.stderr


def test_a_tiny_squared_coefficient_of_variation_is_deterministic():
    """c = 1e-300 (a fuzzing mutant) asked for erlang(1e300); below 1e-3 it is det, noted."""
    qtext, notes = lqn_to_qpn(_cs(extra="  c server 1e-300 -1\n"), "m.lqn")
    assert "cpu det(1) on server" in qtext and any("deterministic" in n for n in notes)
    qtext, _ = lqn_to_qpn(_cs(extra="  c server 0.25 -1\n"), "m.lqn")
    assert "cpu erlang(4, 1) on server" in qtext


def test_nested_forks_are_written_as_activities_and_read_back():
    """A software body with a fork inside a fork becomes LQN activities (an AND-fork per
    fork, a join at its end) and comes back as the same body."""
    from qpn.dsl.lqn_export import qpn_to_lqn
    text = ("software {\n    semaphore s permits 1\n    population c size 2 think exp(1) {\n"
            "        call work\n    }\n    behavior work {\n        acquire s\n        sleep exp(0.1)\n"
            "        fork {\n            sleep exp(0.2)\n            fork {\n                sleep exp(0.3)\n"
            "            } and {\n                sleep exp(0.4)\n            }\n        } and {\n"
            "            sleep exp(0.5)\n        }\n        release s\n    }\n}\n")
    l1, notes = qpn_to_lqn(qpn.parse(text))
    assert not notes and l1.count(" & ") == 4        # two forks, two joins
    q2, _ = lqn_to_qpn(l1, "m.lqn")
    r1 = qpn.solve(qpn.parse(text), method="ctmc")
    r2 = qpn.solve(qpn.parse(q2), method="ctmc")
    assert r2.get("throughput", "c.begin") == pytest.approx(r1.get("throughput", "c.begin"), rel=1e-9)


def test_pools_that_hand_requests_over_queues_are_written_as_layers():
    """The trace analyzer's shape (dsl/lqn_layers.py): a put into a pool's queue and the
    take of its replies is a synchronous call; the steps after a reply are phase 2; the
    GIL is left out.  Both models solved exactly: the same throughput within 2% (the
    export keeps each phase's mean demand, not where the calls sit in it)."""
    from qpn.dsl.lqn_export import qpn_to_lqn
    path = os.path.join(TESTS_DIR, "data", "lqn", "pool_tiers.qpn")
    net = qpn.load(path)
    lqn, notes = qpn_to_lqn(net)
    assert "y front back 1 0 -1" in lqn and "y client_ref front 1 -1" in lqn
    assert "s front 0.001 0.0005 -1" in lqn          # 0.5 ms after the reply: phase 2
    assert "t front_task n front -1 host" in lqn
    assert any("GIL" in n for n in notes)
    a = qpn.solve(net, method="ctmc").get("throughput", "client.begin")
    q2, _ = lqn_to_qpn(lqn, "tiers.lqn")
    b = qpn.solve(qpn.parse(q2), method="ctmc").get("throughput", "client.begin")
    assert b == pytest.approx(a, rel=0.02)


def test_a_request_nobody_answers_is_written_as_an_asynchronous_call():
    """tests/data/lqn/async_tiers.qpn: the front also puts each request into an auditor's
    queue and takes no answer: LQN's send-no-reply (z).  Read back, the LQN model's exact
    client throughput is the simulated one of the original (whose auditor queue is
    unbounded: no CTMC) within 2% (0.9% on 2026-11-27: the export keeps the phase's mean
    demand and calls, not their order, and the auditor shares the cores)."""
    from qpn.dsl.lqn_export import qpn_to_lqn
    net = qpn.load(os.path.join(TESTS_DIR, "data", "lqn", "async_tiers.qpn"))
    lqn, notes = qpn_to_lqn(net)
    assert "z front auditor 1 -1" in lqn and "y front back 1 -1" in lqn
    assert "t auditor_task n auditor -1 host" in lqn
    assert any("asynchronous requests to 'auditor'" in n for n in notes)
    q2, _ = lqn_to_qpn(lqn, "async_tiers.lqn")
    exact = qpn.solve(qpn.parse(q2), method="ctmc").get("throughput", "client.begin")
    sim = qpn.solve(net, method="des", options={"quiet": True, "seed": 1, "rtol": 0.005})
    x, hw = sim.get("throughput", "client.begin"), sim.ci("throughput", "client.begin")
    assert hw < 0.005 * x and exact == pytest.approx(x, rel=0.02)

