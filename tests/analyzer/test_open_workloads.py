"""Open workloads read by timing, response timers, event loops and the check that a model
reproduces its trace (frontends/analyze/schedules.py, selects.py, eventloop.py,
responses.py, reproduce.py, division.py)."""
import random
import re

import pytest

import qpn
from qpn.frontends.analyze import build
from qpn.frontends.analyze.division import divided
from qpn.frontends.analyze.reproduce import check
from qpn.frontends.analyze.responses import mean_response
from qpn.frontends.analyze.schedules import PLANS_BASE, schedules_as_sources, verdict
from qpn.frontends.analyze.selects import select_waits
from qpn.frontends.analyze.synth import server_trace

MS = 1_000_000


def _client(schedule: bool, n: int = 300, seed: int = 3, busy_ms: float = 2.0) -> list:
    """A thread that sleeps, then sends and waits for an answer of random length: keeping a
    Poisson schedule (sleep until the planned instant, none when late) or a think time."""
    rng = random.Random(seed)
    t, cpu = 0, 0
    evs = [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0, "name": "MainThread"}]
    planned = 0
    for _ in range(n):
        if schedule:
            planned += int(rng.expovariate(1 / 10) * MS)
            asked = planned - t
        else:
            asked = int(rng.expovariate(1 / 10) * MS)
        if asked > 0:
            dur = asked + 60_000
            evs.append({"kind": "wait", "tid": 1, "ts": t, "cpu": cpu, "on": "sleep",
                        "requested": asked, "dur": dur, "site": "c.py:9"})
            t += dur
        evs.append({"kind": "io", "tid": 1, "ts": t, "cpu": cpu, "op": "send", "fd": 4,
                    "dur": 20_000, "site": "c.py:10"})
        t += 20_000
        wait = int(rng.expovariate(1 / busy_ms) * MS)
        evs.append({"kind": "io", "tid": 1, "ts": t, "cpu": cpu, "op": "recv", "fd": 4,
                    "dur": wait, "site": "c.py:11"})
        t += wait
        cpu += 30_000
        t += 30_000
    evs.append({"kind": "thread_end", "tid": 1, "ts": t, "cpu": cpu})
    return evs


def test_the_slope_of_the_time_asked_against_the_work_before_it_decides():
    """Known answers of the regression: asked = gap - work is a schedule (slope -1), an
    asked time that ignores the work is a think time (slope 0)."""
    rng = random.Random(1)
    work = [rng.uniform(1, 5) for _ in range(200)]
    gaps = [rng.uniform(10, 11) for _ in range(200)]
    v = verdict(work, [g - w for g, w in zip(gaps, work)], asked_vary=True)
    assert v.schedule and v.decided and v.slope == pytest.approx(-1, abs=0.1)
    v = verdict(work, gaps, asked_vary=True)
    assert not v.schedule and v.decided and v.slope == pytest.approx(0, abs=0.1)
    # the work hardly varies: the slope cannot be read; the times asked for decide
    flat = [3.0 + 1e-9 * i for i in range(200)]
    assert verdict(flat, gaps, asked_vary=True).decided is False
    assert verdict(flat, gaps, asked_vary=False).schedule is False


def test_a_client_keeping_a_schedule_becomes_a_source_and_a_think_time_does_not():
    by, objs, notes = schedules_as_sources({1: _client(schedule=True)})
    assert [o["obj"] for o in objs] == [PLANS_BASE] and "Schedule:" in notes[0]
    gets = [e for e in by[1] if e["kind"] == "get"]
    # every iteration takes a planned request: those that slept at the instant they asked
    # for (the wake-up after it a sleep of its own), the late ones at once
    assert len(gets) == 300
    assert all(e["dur"] == e.get("dur") for e in gets)
    assert not any(e["kind"] == "wait" and e.get("requested", 0) > 0 for e in by[1])
    by2, objs2, _ = schedules_as_sources({1: _client(schedule=False)})
    assert objs2 == [] and by2[1] is not None and not any(e["kind"] == "get" for e in by2[1])


def test_late_iterations_that_skip_the_sleep_are_the_evidence_of_a_schedule():
    """A shared schedule (several senders) leaves the time asked for unrelated to the work
    (a Poisson plan's next instant is memoryless); what shows it is that iterations after
    long work skip the sleep."""
    v = verdict([1.0, 2.0, 3.0] * 20, [5.0, 9.0, 2.0] * 20, True,
                skip_work=[30.0] * 5, sleep_work=[2.0] * 60)
    assert v.schedule and v.decided and "did not sleep" in v.reason()
    v = verdict([1.0, 2.0, 3.0] * 20, [5.0, 9.0, 2.0] * 20, True,
                skip_work=[1.0] * 5, sleep_work=[2.0] * 60)     # skips after short work
    assert not v.decided


def test_a_select_wait_is_the_wait_of_the_recv_after_it():
    evs = [{"kind": "wait", "tid": 1, "ts": 0, "cpu": 0, "on": "select", "dur": 900},
           {"kind": "io", "tid": 1, "ts": 910, "cpu": 5, "op": "accept", "dur": 10},
           {"kind": "wait", "tid": 1, "ts": 950, "cpu": 20, "on": "select", "dur": 100},
           {"kind": "put", "tid": 1, "ts": 1060, "cpu": 25, "obj": 3, "item": 4}]
    by, tids = select_waits({1: evs})
    assert tids == frozenset({1})
    kinds = [(e["kind"], e.get("op") or e.get("on"), e["ts"], e.get("dur")) for e in by[1]]
    # the accept began when its select did; the select followed by a put stays a wait
    assert kinds == [("io", "accept", 0, 920), ("wait", "select", 950, 100),
                     ("put", None, 1060, None)]


def test_threads_given_the_parts_of_one_whole_divide_their_work():
    assert divided([{"args": [["r", 0, 50, 1]]}, {"args": [["r", 50, 100, 1]]}])[0]
    assert divided([{"args": [["a", 250, 77, 0]]}, {"args": [["a", 250, 77, 8000]]}])[0]
    assert divided([{"args": [["i", 1], ["i", 3]]}, {"args": [["i", 0], ["i", 3]]},
                    {"args": [["i", 2], ["i", 3]]}])[0]              # (index, count)
    # the same object to every thread, or bounds with a gap: the arguments do not tell
    assert divided([{"args": [["n", 10, 5]]}, {"args": [["n", 10, 5]]}])[0] is None
    assert divided([{"args": [["i", 0], ["i", 10]]}, {"args": [["i", 20], ["i", 30]]}])[0] is None


def test_mean_response_does_not_depend_on_how_ends_pair_with_arrivals():
    assert mean_response([0, 5, 10], [30, 12, 7]) == pytest.approx((49 - 15) / 3)
    assert mean_response([], [1]) is None


@pytest.fixture(scope="module")
def server_model():
    return build(server_trace(requests=1500, workers=3, rate=200, seed=4))


def test_the_response_timer_runs_from_the_arrival_to_the_end_of_the_work(server_model):
    """server_trace: connections from outside are accepted, handed to a pool that parses,
    reads a file and answers.  The request ends when the worker's iteration ends: the
    worker's body begins with its take and the timer stops after the work."""
    text = server_model.text
    assert re.search(r"source \w+ every .*? \{\s*timer start response\s*put backlog\s*\}", text)
    body = re.search(r"pool worker size \w+ \{\n(.*?)\n    \}", text, re.S)[1]
    ops = [ln.split()[0] for ln in body.splitlines() if re.match(r"\s+[a-z]", ln)]
    assert ops[0] == "take" and ops[-1] == "timer" and body.rstrip().endswith("timer stop response")
    t = server_model.info["timers"]["response"]
    # parse (2 ms, exponential) + lock + a read (a quarter of them 5 ms from the device) +
    # 210 us, and the wait for a worker at 200/s on 3 workers: 3.5 to 5 ms
    assert t["runner"] == "worker" and t["hops"] == 2 and 3.5 * MS < t["trace_ns"] < 5 * MS


def test_a_model_reproduces_its_synthetic_trace(server_model):
    """No GIL, enough cores, the demands the generator drew: solved at the traced
    configuration the model's cycles and response time are the trace's within 5%, and
    the check says so in the header's words."""
    c = check(server_model.text, server_model.info["reproduce"], wall=30)
    assert c.status in ("ok", "imprecise")
    rows = {what: rel for what, _, _, rel in c.rows()}
    assert "response response" in rows and "worker" in rows
    assert all(abs(rel) <= 0.05 for rel in rows.values()), rows
    assert c.ok and "reproduces its trace within 5%" in c.lines()[0]


def test_a_model_that_misses_its_trace_names_the_part_it_misses(server_model):
    """Twice the parse demand in the model: the worker's busy time is off, and the check
    names the parse fragment as the largest unexplained part."""
    text = re.sub(r"(cpu \w+\()([\d.]+) ms", lambda m: f"{m[1]}{2 * float(m[2])} ms",
                  server_model.text, count=1)
    c = check(text, server_model.info["reproduce"], wall=30)
    assert not c.ok
    lines = "\n".join(c.lines())
    assert "differs from its trace" in lines and "largest unexplained part, in 'worker': the code before lock" in lines
