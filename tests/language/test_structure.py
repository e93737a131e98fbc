"""Known structural answers: invariants, coverage, traps, dead transitions, deadlocks."""
import numpy as np
import pytest

import qpn
from qpn.structure.semiflows import p_semiflows, t_semiflows


def cyclic(k: int, n: int, queueing: bool = False) -> str:
    lines = []
    for i in range(k):
        init = f" init {n}" if i == 0 else ""
        q = " queue fcfs service exp(1)" if queueing else ""
        lines.append(f"place p{i}{q}{init}")
    for i in range(k):
        delay = "" if queueing else " delay exp(1)"
        lines.append(f"transition t{i} : p{i} -> p{(i + 1) % k}{delay}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("k", [2, 3, 5, 8])
@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("queueing", [False, True])
def test_closed_cycle_has_one_invariant_covering_all(k, n, queueing):
    rep = qpn.check(qpn.parse(cyclic(k, n, queueing)))
    assert len(rep.p_invariants) == 1
    inv = rep.p_invariants[0]
    assert inv.weights == {f"p{i}": 1 for i in range(k)}
    assert inv.tokens == n
    assert rep.uncovered == [] and rep.bounded
    assert len(rep.t_invariants) == 1
    assert rep.t_invariants[0].weights == {f"t{i}": 1 for i in range(k)}
    assert not rep.errors and not rep.warnings


def test_two_immediate_transitions_in_a_cycle_are_a_timeless_trap():
    rep = qpn.check(qpn.parse("place a init 1\nplace b\ntransition t1 : a -> b\ntransition t2 : b -> a\n"))
    traps = [d for d in rep.errors if d.code == "timeless-trap"]
    assert len(traps) == 1
    assert "'t1', 't2'" in traps[0].message and traps[0].loc.line == 3


def test_immediate_source_is_a_trap_but_a_timed_one_is_not():
    rep = qpn.check(qpn.parse("place q queue fcfs service exp(1)\ntransition gen : -> q\n"
                              "transition out : q ->\n"))
    assert [d.code for d in rep.errors] == ["timeless-trap"]
    rep = qpn.check(qpn.parse("place q queue fcfs service exp(1)\n"
                              "transition gen : -> q delay exp(1)\ntransition out : q ->\n"))
    assert not rep.errors


def test_cycle_through_a_queue_is_not_a_trap():
    rep = qpn.check(qpn.parse("place a init 1\nplace b queue is service exp(1)\n"
                              "transition t1 : a -> b\ntransition t2 : b -> a\n"))
    assert not rep.errors


def test_a_loop_that_fills_a_place_with_a_capacity_is_not_a_trap():
    # a producer putting into a bounded queue in zero time stops when the queue is full
    # (it was reported as a trap, and the CTMC then failed on its one tangible successor)
    text = ("param n = 2\nplace idle init 1\nplace busy\nplace items capacity n\n"
            "place cpu queue ps service exp(10 ms)\nplace workers init n\n"
            "transition begin : idle -> busy\ntransition put : busy -> idle, items\n"
            "transition take : items, workers -> cpu\ntransition done : cpu -> workers\n")
    rep = qpn.check(qpn.parse(text))
    assert not [d for d in rep.diagnostics if d.code == "timeless-trap"]
    res = qpn.solve(qpn.parse(text), method="ctmc")
    assert res.get("throughput", "done") == pytest.approx(1 / 0.010, rel=1e-9)  # one PS server, busy
    # the same loop with room that never runs out is a trap
    rep = qpn.check(qpn.parse(text.replace(" capacity n", "")))
    assert [d.code for d in rep.errors] == ["timeless-trap"]


RETRY_LOOP = ("place q queue fcfs service exp(1)\nplace check\nplace again\n"
              "transition arrive : -> q delay exp(4)\ntransition done : q -> check\n"
              "transition decide {\n  mode retry : check -> again weight 1\n  mode leave : check -> weight 1\n}\n"
              "transition redo : again -> check weight 1\ntransition back : again -> q weight 1\n")


def test_a_retry_loop_with_an_exit_each_round_is_not_a_trap():
    # retry/redo may repeat in zero time, but 'leave' (enabled whenever 'retry' is, same
    # priority) ends it with probability 1/2 each round: the solvers give exact answers
    # (test_ctmc.py), so check must not call it an error
    rep = qpn.check(qpn.parse(RETRY_LOOP))
    assert not [d for d in rep.diagnostics if d.code == "timeless-trap"]
    loops = [d for d in rep.diagnostics if d.code == "timeless-loop"]
    assert len(loops) == 1 and loops[0].severity == "info" and "'decide.leave'" in loops[0].message
    # an 'exit' of lower priority never fires while the loop can: a trap again
    low = RETRY_LOOP.replace("transition decide {\n  mode retry : check -> again weight 1\n"
                             "  mode leave : check -> weight 1\n}\n",
                             "transition decide : check -> again\ntransition leave priority -1 : check ->\n")
    low = low.replace("transition back : again -> q weight 1", "transition back priority -1 : again -> q")
    assert low.count("priority -1") == 2
    rep = qpn.check(qpn.parse(low))
    assert [d.code for d in rep.errors] == ["timeless-trap"]


def test_two_loops_through_one_place_are_a_trap_though_each_leaves_the_other():
    # a/b and c/d each 'leave' by the other loop's mode, which leads straight back
    rep = qpn.check(qpn.parse("place p init 1\nplace q\nplace r\ntransition a : p -> q\n"
                              "transition b : q -> p\ntransition c : p -> r\ntransition d : r -> p\n"))
    assert [d.code for d in rep.errors] == ["timeless-trap", "timeless-trap"]


def test_trap_that_consumes_more_than_it_returns_is_not_a_trap():
    # t1 needs two tokens and gives one back: it cannot fire forever
    rep = qpn.check(qpn.parse("place a init 5\nplace b\ntransition t1 : 2 a -> b\ntransition t2 : b -> a\n"))
    assert not [d for d in rep.diagnostics if d.code == "timeless-trap"]


def test_inhibitor_on_a_trap_downgrades_to_warning():
    rep = qpn.check(qpn.parse("place a init 1\nplace b\nplace stop\n"
                              "transition t1 : a -> b unless stop\ntransition t2 : b -> a\n"))
    assert not rep.errors
    assert [d.code for d in rep.warnings] == ["timeless-trap"]


def test_mutex_lock_is_covered_by_an_invariant_with_one_token(tmp_path):
    from conftest import MODELS
    rep = qpn.check(qpn.load(f"{MODELS}/mutex.qpn"))
    lock = [inv for inv in rep.p_invariants if "lock" in inv.weights]
    assert len(lock) == 1
    assert lock[0].weights == {"lock": 1, "critical": 1} and lock[0].tokens == 1
    threads = [inv for inv in rep.p_invariants if "working" in inv.weights][0]
    assert threads.tokens == 5 and set(threads.weights) == {"working", "waiting", "critical"}


def test_weighted_invariant_is_exact():
    rep = qpn.check(qpn.parse("place a init 4\nplace b\ntransition t : 2 a -> b delay exp(1)\n"
                              "transition u : b -> 2 a delay exp(1)\n"))
    assert [(i.weights, i.tokens) for i in rep.p_invariants] == [({"a": 1, "b": 2}, 4)]


def test_colored_invariants_per_class():
    from conftest import MODELS
    rep = qpn.check(qpn.load(f"{MODELS}/central_server.qpn"))
    tokens = sorted(i.tokens for i in rep.p_invariants)
    assert tokens == [6, 8]


def test_unbounded_place_is_reported():
    rep = qpn.check(qpn.parse("place a init 1\nplace b\ntransition t : a -> a, b delay exp(1)\n"))
    assert rep.uncovered == ["b"]
    assert [d.code for d in rep.warnings] == ["uncovered"]


def test_open_net_is_only_informed():
    from conftest import MODELS
    rep = qpn.check(qpn.load(f"{MODELS}/mm1.qpn"))
    assert rep.open_net and rep.uncovered == ["server"]
    assert not rep.warnings and not rep.errors


def test_dead_transition():
    rep = qpn.check(qpn.parse("place a init 1\nplace b\ntransition t : a -> b delay exp(1)\n"
                              "transition u : b -> a delay exp(1)\n"
                              "transition never : 2 a -> b delay exp(1)\n"))
    dead = [d for d in rep.warnings if d.code == "dead"]
    assert len(dead) == 1 and "'never'" in dead[0].message and dead[0].loc.line == 5


def test_deadlock_of_two_locks_taken_in_opposite_order():
    src = """
place l1 init 1
place l2 init 1
place ready1 init 1
place ready2 init 1
place has1
place has2
place done1
place done2
transition a1 : ready1, l1 -> has1 delay exp(1)
transition b1 : has1, l2 -> done1 delay exp(1)
transition c1 : done1 -> ready1, l1, l2 delay exp(1)
transition a2 : ready2, l2 -> has2 delay exp(1)
transition b2 : has2, l1 -> done2 delay exp(1)
transition c2 : done2 -> ready2, l1, l2 delay exp(1)
"""
    rep = qpn.check(qpn.parse(src))
    dl = [d for d in rep.warnings if d.code == "deadlock"]
    assert len(dl) == 1 and "has1" in dl[0].message and "has2" in dl[0].message


def test_isolated_and_disconnected():
    rep = qpn.check(qpn.parse("place a init 1\nplace lonely\nplace b init 1\n"
                              "transition t : a -> a delay exp(1)\ntransition u : b -> b delay exp(1)\n"))
    codes = sorted(d.code for d in rep.warnings)
    assert codes == ["disconnected", "isolated"]
    iso = [d for d in rep.warnings if d.code == "isolated"][0]
    assert "'lonely'" in iso.message and iso.loc.line == 2


def test_color_never_produced():
    src = ("colors c = {x, y}\nplace p : c init x\nplace q : c\n"
           "transition t : p(x) -> q(x) delay exp(1)\ntransition u : q(x) -> p(x) delay exp(1)\n"
           "transition w : q(y) -> p(y) delay exp(1)\n")
    rep = qpn.check(qpn.parse(src))
    never = [d for d in rep.warnings if d.code == "never-produced"]
    assert len(never) == 1 and "color y never reaches place 'q'" in never[0].message
    assert "'w'" in never[0].message


def test_semiflows_exact_on_large_entries():
    big = 10 ** 12
    C = np.array([[-big, 1], [1, -big]], dtype=object)
    # y^T C = 0 has only the zero solution here
    assert p_semiflows(C) == []
    C = np.array([[-big], [big]], dtype=object)
    assert p_semiflows(C) == [[1, 1]]
    assert t_semiflows(np.array([[1, -1, 0], [0, 1, -1], [-1, 0, 1]])) == [[1, 1, 1]]
