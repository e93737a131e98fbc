"""PNML symmetric nets (sorts, variables, multiset terms, conditions) as colored qpn
models: hand-written nets against hand-written qpn twins and closed forms, the imported
text read back to the same model, and located errors for what the reader refuses."""
import os

import pytest

import qpn
from qpn import solvers
from qpn.dsl.pnml import pnml_to_qpn
from qpn.errors import ModelError

from conftest import TESTS_DIR

DATA = os.path.join(TESTS_DIR, "data", "pnml", "sn")


def load_pair(name):
    path = os.path.join(DATA, f"{name}.pnml")
    with open(path, "rb") as fh:
        data = fh.read()
    text, notes = pnml_to_qpn(data, path)
    return qpn.load(path), qpn.load(os.path.join(DATA, f"{name}.qpn")), text, data


def test_three_philosophers_eat_one_at_a_time():
    """Any two of three philosophers share a fork: one eats (rate 1 to stop) or none
    (rate 3 to start), so 3/4 of the time one eats and the meals run at 3/4 per second."""
    net, twin, text, _ = load_pair("philosophers")
    assert "colors Philo = 1 .. 3" in text and "floor" in text    # cyclic: successor by arithmetic
    res, ref = solvers.solve(net, "ctmc"), solvers.solve(twin, "ctmc")
    assert res.get("throughput", "take") == pytest.approx(0.75, rel=1e-12)
    assert res.get("tokens", "eat") == pytest.approx(0.75, rel=1e-12)
    for place in ("think", "fork", "eat"):
        assert res.get("tokens", place) == pytest.approx(ref.get("tokens", place), rel=1e-12)


def test_products_guards_dots_and_counts_agree_with_the_twin():
    net, twin, text, _ = load_pair("slots")
    assert "colors Pair = (f1: Client, f2: Slot)" in text and "init 2 a, (b)" in text
    assert "when not ((c == a and s_ == 2))" in text
    res, ref = solvers.solve(net, "ctmc"), solvers.solve(twin, "ctmc")
    for place in ("waiting", "free", "budget", "busy"):
        assert res.get("tokens", place) == pytest.approx(ref.get("tokens", place), rel=1e-9)
    assert res.get("throughput", "assign") == pytest.approx(ref.get("throughput", "assign"), rel=1e-9)
    assert res.get("throughput", "release", "[c=a,s_=2]") == 0.0     # the guard holds


@pytest.mark.parametrize("name", ["philosophers", "slots"])
def test_the_imported_text_reads_back_to_the_same_model(name):
    net, _, text, _ = load_pair(name)
    again = qpn.parse(text, f"{name}.qpn")
    assert again.places == net.places and again.transitions == net.transitions


with open(os.path.join(DATA, "slots.pnml"), "rb") as _fh:
    SLOTS = _fh.read().decode()
with open(os.path.join(DATA, "philosophers.pnml"), "rb") as _fh:
    PHILO = _fh.read().decode()


def _m(src, old, new):
    assert old in src, old
    return src.replace(old, new, 1)


BROKEN = [
    ("undeclared variable", _m(SLOTS, '<arc id="a1" source="waiting" target="assign"><hlinscription><structure>'
                                      '<variable refvariable="vc"/>', '<arc id="a1" source="waiting" target="assign">'
                                      '<hlinscription><structure><variable refvariable="vz"/>'),
     "variable 'vz' is not declared"),
    ("partition", _m(SLOTS, '<namedsort id="dot" name="Dot"><dot/></namedsort>',
                     '<namedsort id="dot" name="Dot"><dot/></namedsort><partition id="pt" name="P"/>'),
     "declaration <partition> is not supported"),
    ("subtract", _m(PHILO, '<hlinscription><structure><variable refvariable="vx"/></structure></hlinscription></arc>\n'
                           '      <arc id="a4"', '<hlinscription><structure><subtract/></structure></hlinscription></arc>\n'
                           '      <arc id="a4"'), "multiset subtraction is not supported"),
    ("undeclared place type", _m(SLOTS, '<type><structure><usersort declaration="pair"/>',
                                 '<type><structure><usersort declaration="triple"/>'),
     "place type 'triple' is not a declared sort"),
    ("numberof without a count", _m(PHILO, '<numberof><subterm><numberconstant value="1"><positive/></numberconstant></subterm>\n'
                                           '          <subterm><variable refvariable="vx"/></subterm></numberof>',
                                    '<numberof><subterm><variable refvariable="vx"/></subterm></numberof>'),
     "<numberof> needs a number constant and a term"),
    ("successor of a constant", _m(PHILO, '<successor><subterm><variable refvariable="vx"/></subterm></successor></subterm></numberof>',
                                   '<successor><subterm><useroperator declaration="ph1"/></subterm></successor></subterm></numberof>'),
     "<successor> of a term other than a variable"),
    ("unknown sort", _m(SLOTS, '<finiteintrange start="1" end="2"/>', '<stringsort/>'), "sort <stringsort> is not supported"),
    ("range bound", _m(SLOTS, '<finiteintrange start="1" end="2"/>', '<finiteintrange start="1" end="two"/>'),
     "attribute 'end' must be a whole number"),
    ("condition", _m(SLOTS, '<not><subterm><and>', '<not><subterm><imply>').replace(
        '</and></subterm></not>', '</imply></subterm></not>', 1), "condition <imply> is not supported"),
]


@pytest.mark.parametrize("label,text,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_refused_symmetric_nets_give_located_errors(label, text, message):
    with pytest.raises(ModelError, match=message) as e:
        pnml_to_qpn(text.encode(), f"{label}.pnml")
    assert e.value.loc is not None and e.value.loc.line > 1, label
