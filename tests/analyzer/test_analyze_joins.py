"""frontends.analyze.joins.batch_joiners: which joins end a batch.

Known answers on hand-made walks: a main thread puts items that a worker
takes, then joins the worker.
"""
from qpn.frontends.analyze.joins import batch_joiners
from qpn.frontends.analyze.steps import Step


def step(tid, action, ts, cpu, dur=0):
    ev = {"kind": "put" if action == "put" else "get", "tid": tid, "ts": ts, "cpu": cpu,
          "dur": dur, "obj": 7, "item": ts}
    return Step(tid, action, "q", "p.py:1", ev, ts, 0, 0, 0, dur)


def walks():
    return {1: [step(1, "put", t, t) for t in range(0, 10, 2)],
            2: [step(2, "take", t, 100 * t) for t in range(1, 11, 2)]}


def join(ts, dur, cpu):
    return {"kind": "wait", "on": "join", "tid": 1, "ts": ts, "dur": dur, "target": 2, "cpu": cpu}


def test_a_join_that_waits_for_the_work_ends_a_batch():
    j = join(20, 980, 20)
    assert batch_joiners(walks(), {1: [j]}, (0, 1000)) == {1: [j]}


def test_a_join_of_a_thread_shutting_down_does_not():
    j = join(995, 5, 990)      # it computed until then: its CPU clock went from 8 to 990
    assert batch_joiners(walks(), {1: [j]}, (0, 1000)) == {}


def test_waiting_for_the_gil_before_the_join_counts():
    """The joiner wanted the GIL to call join() while the workers ran Python: no CPU
    from its last put (ts 8) to the join (ts 995), then a short join.  Seen in a
    CI run of gil_work.py, whose main thread was then taken for a steady loop."""
    j = join(995, 5, 12)
    assert batch_joiners(walks(), {1: [j]}, (0, 1000)) == {1: [j]}
