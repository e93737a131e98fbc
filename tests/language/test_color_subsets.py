"""Subsets of a color set (``colors fast = job {a}``): a place holds only some colors
of an enumeration, needs service times only for those, and tokens keep their color
when they move between the set and its subsets."""
import pytest

import qpn
from qpn import solvers
from qpn.errors import ModelError

# Three classes share the terminals and the CPU; only a and b visit the disk, so the
# disk is typed by a subset and names no service for c.
CENTRAL = """
net subsets
colors job = {a, b, c}
colors io = job {a, b}
place terminals : job
    queue is
    service a: exp(2 s), b: exp(3 s), c: exp(1 s)
    init 3 a, 2 b, 2 c
place cpu : job
    queue ps
    service a: exp(50 ms), b: exp(80 ms), c: exp(120 ms)
place disk : io
    queue fcfs
    service exp(90 ms)
transition submit : terminals(x) -> cpu(x)
transition route {
    mode io_a : cpu(a) -> disk(a) weight 0.6
    mode io_b : cpu(b) -> disk(b) weight 0.6
    mode done : cpu(x) -> terminals(x) weight 0.4
}
transition back : disk(x) -> cpu(x)
"""


def test_subset_model_agrees_between_mva_and_ctmc():
    net = qpn.parse(CENTRAL)
    qpn.check(net)
    mva = solvers.solve(net, "mva")
    ctmc = solvers.solve(net, "ctmc")
    for el, col in (("disk", "a"), ("disk", "b"), ("cpu", "c"), ("terminals", "c")):
        for m in ("tokens", "departures"):
            assert mva.get(m, el, col) == pytest.approx(ctmc.get(m, el, col), rel=1e-8), (m, el, col)
    # the c jobs never reach the disk: its table has rows for a and b only
    assert ctmc.get("tokens", "disk", "a") + ctmc.get("tokens", "disk", "b") == \
        pytest.approx(ctmc.get("tokens", "disk"), rel=1e-12)


def test_subset_prints_and_reparses():
    net = qpn.parse(CENTRAL)
    text = net.text()
    assert "colors io = job {a, b}" in text
    assert qpn.parse(text).text() == text


@pytest.mark.parametrize("line,message", [
    ("colors io = jobs {a, b}", "undefined color set 'jobs'"),
    ("colors io = job {a, d}", "color 'd' of 'io' is not in color set 'job'"),
    ("colors io = n {a}\ncolors n = 1 .. 3", "which is not an enumeration"),
    ("colors io = job {a, a}", "listed twice"),
])
def test_bad_subsets_are_located(line, message):
    text = CENTRAL.replace("colors io = job {a, b}", line)
    with pytest.raises(ModelError) as e:
        qpn.check(qpn.parse(text, "m.qpn"))
    assert message in str(e.value)
    assert e.value.loc is not None and e.value.loc.line >= 3


def test_a_variable_cannot_move_into_a_smaller_set():
    text = CENTRAL.replace("mode done : cpu(x) -> terminals(x) weight 0.4",
                           "mode done : cpu(x) -> disk(x) weight 0.4")
    with pytest.raises(ModelError, match="holds colors of 'job' but place holds 'io'"):
        qpn.check(qpn.parse(text, "m.qpn"))


def test_a_subset_place_needs_service_only_for_its_colors():
    text = CENTRAL.replace("service exp(90 ms)", "service a: exp(90 ms)")
    with pytest.raises(ModelError, match="b"):
        qpn.check(qpn.parse(text, "m.qpn"))
