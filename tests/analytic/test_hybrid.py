"""Hybrid evaluation: a subnet replaced by its flow-equivalent server (its throughput alone
by population, a load-dependent queue), the rest solved.  In a product-form net the
replacement is exact (Norton's theorem of queueing networks): the hybrid solve equals
the whole net's to rounding; the simulator on the replaced net agrees within its CI.
"""
import os
import subprocess
import sys

import pytest

import qpn
from qpn.errors import ModelError
from qpn.solvers import solve
from qpn.solvers.hybrid import OPEN_POPULATION, flow_equivalent, replace_with, solve_hybrid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "hybrid.qpn")
# the web tier's demands per request: cpu 3 x 40 ms, disk 2 x 60 ms
D_CPU, D_DISK = 0.12, 0.12

OPEN = """net open_web
param rate = 4
subnet Web(cpu = 40 ms, disk = 60 ms) {
    input requests
    output replies
    place cpu queue ps service exp(cpu)
    place disk queue fcfs service exp(disk)
    transition start : requests -> cpu
    transition io : cpu -> disk weight 2
    transition done : cpu -> replies weight 1
    transition back : disk -> cpu
}
instance web = Web()
place done
transition arrive timed : -> web.requests delay exp(1 / rate)
transition leave : web.replies -> done
transition sink : done ->
"""


def test_the_subnet_alone_has_its_closed_form_throughputs():
    """Two stations of equal demand D: X(n) = n / ((n + 1) D) (each holds half the tokens
    on average, MVA by hand); X(1) = 1 / (D_cpu + D_disk), X(n) -> 1 / D."""
    fes = flow_equivalent(qpn.load(MODEL), "web", population=6, method="mva")
    assert fes.throughput == pytest.approx([n / ((n + 1) * D_CPU) for n in range(1, 7)], rel=1e-12)
    assert fes.ci is None and fes.method == "mva"
    ctmc = flow_equivalent(qpn.load(MODEL), "web", population=6, method="ctmc")
    assert ctmc.throughput == pytest.approx(fes.throughput, rel=1e-9)


def test_a_subnet_solved_by_an_approximate_mva_is_not_called_exact():
    fes = flow_equivalent(qpn.load(MODEL), "web", population=6, method="mva",
                          options={"mva": "linearizer"})
    # the Linearizer is within a few per cent of the closed form, not equal to it
    exact = [n / ((n + 1) * D_CPU) for n in range(1, 7)]
    assert fes.throughput == pytest.approx(exact, rel=0.05) and fes.throughput != exact
    assert fes.approximate and fes.method == "mva (Linearizer, approximate)"
    assert "(mva (Linearizer, approximate) on the subnet alone, approximate;" in fes.describe()
    assert "exact" not in fes.describe()


def test_the_hybrid_solve_of_a_product_form_net_is_exact():
    net = qpn.load(MODEL)
    whole = solve(net, "ctmc")
    res = solve_hybrid(net, ["web"], method="ctmc")
    assert res.get("throughput", "reply") == pytest.approx(whole.get("throughput", "reply"), rel=1e-9)
    assert res.get("tokens", "think") == pytest.approx(whole.get("tokens", "think"), rel=1e-9)
    inside = whole.get("tokens", "web.cpu") + whole.get("tokens", "web.disk")
    assert res.get("tokens", "web") == pytest.approx(inside, rel=1e-9)
    assert res.get("residence", "web") == pytest.approx(inside / whole.get("throughput", "send"), rel=1e-9)
    # the chain it solved is smaller: 6 users over think and one queue, 7 states (28 whole)
    assert res.info["states"] == 7 and whole.info["states"] == 28
    assert res.explanation[0].startswith("hybrid: web replaced by a flow-equivalent server")
    assert "n = 1..6 tokens inside (mva on the subnet alone, exact" in res.explanation[0]
    assert res.explanation[1].startswith("hybrid: the rest of the net solved by ctmc")


def test_the_simulated_rest_agrees_with_the_exact_whole():
    net = qpn.load(MODEL)
    whole = solve(net, "ctmc")
    res = solve_hybrid(net, ["web"], method="des", options={"seed": 3})
    assert res.explanation[1].startswith("hybrid: the rest of the net simulated")
    for m, el in (("throughput", "reply"), ("tokens", "think")):
        c = res.cell(m, el)
        assert c.n > 10_000 and abs(c.value - whole.get(m, el)) <= 3 * c.ci, (m, c, whole.get(m, el))


def test_an_open_net_is_solved_up_to_the_default_population():
    """M/M/1-like stations in series: the web tier's response time is
    D_cpu / (1 - rate D_cpu) + D_disk / (1 - rate D_disk) = 0.4615 s at 4 requests/s."""
    res = solve_hybrid(qpn.parse(OPEN), ["web"])
    exact = D_CPU / (1 - 4 * D_CPU) + D_DISK / (1 - 4 * D_DISK)
    assert res.get("residence", "web") == pytest.approx(exact, rel=1e-6)
    assert f"populations up to {OPEN_POPULATION}, the last throughput beyond" in res.explanation[0]
    assert "open net (source arrive)" in res.explanation[0]


def test_the_replaced_net_is_a_load_dependent_queue_in_place_of_the_subnet():
    net = qpn.load(MODEL)
    fes = flow_equivalent(net, "web", population=2)
    flat = replace_with(net, [fes])
    names = sorted(p.name for p in flat.places)
    assert names == ["think", "web.replies", "web.requests"]
    q = next(p for p in flat.places if p.name == "web.requests").queue
    assert q.discipline == "ps" and len(q.speed) == 2
    assert [t.name for t in flat.transitions] == ["send", "reply", "web.__fes"]


def test_what_cannot_be_replaced_is_refused_clearly():
    with pytest.raises(ModelError, match="no instance named 'webb'") as e:
        flow_equivalent(qpn.load(MODEL), "webb")
    assert "web" in e.value.expected
    # models/subnets.qpn: ports carry two colors (get, post)
    with pytest.raises(ModelError, match="carry 2 colors of 'req'.*needs one"):
        flow_equivalent(qpn.load(os.path.join(ROOT, "models", "subnets.qpn")), "front")
    two_in = ("subnet S() { input a\n input b\n output c\n transition t : a, b -> c }\n"
              "instance s = S()\nplace x init 1\nplace y init 1\n"
              "transition f : x, y -> s.a, s.b\ntransition g : s.c -> x, y\n")
    with pytest.raises(ModelError, match="has 2 input and 1 output ports"):
        flow_equivalent(qpn.parse(two_in), "s")


def test_the_command_line_says_what_was_replaced():
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "solve", MODEL, "--hybrid", "web",
                          "--method", "ctmc", "--compare", "ctmc"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "hybrid: web replaced by a flow-equivalent server" in out.stderr
    assert "hybrid: the rest of the net solved by ctmc" in out.stderr
    row = next(ln for ln in out.stdout.splitlines() if ln.startswith("residence") and " web " in ln)
    assert float(row.split()[-1]) < 1e-9          # hybrid and whole agree on the subnet
    bad = subprocess.run([sys.executable, "-m", "qpn.cli", "solve", MODEL, "--hybrid", "nope"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "no instance named 'nope'" in bad.stderr
