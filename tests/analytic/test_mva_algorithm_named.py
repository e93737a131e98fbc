"""MVA says which algorithm ran: auto's line, the explanation, the table's title and the
HTML report name exact MVA, Schweitzer or the Linearizer, and say when the answer is an
approximation (a 100,000-client network printed "mean value analysis is exact" while its
JSON said linearizer)."""
import json

import qpn
from qpn.cli import main
from qpn.solvers.mva.solver import AUTO_LEVELS, AUTO_LIMIT

from conftest import MODELS

INTERACTIVE = f"{MODELS}/interactive.qpn"      # users think, then use one cpu


def test_a_huge_population_says_the_linearizer_approximated(tmp_path, capsys):
    assert 100_000 + 1 > AUTO_LEVELS          # too many levels for exact MVA: auto approximates
    out = tmp_path / "r.json"
    assert main(["solve", INTERACTIVE, "--set", "users=100000", "--measure", "throughput",
                 "--json", str(out)]) == 0
    cap = capsys.readouterr()
    said = cap.err.splitlines()[0]
    assert said.startswith("auto: chose mva: the net is product form (closed, 1 chain(s)): "
                           "mean value analysis by the Linearizer, which is approximate: "
                           "exact MVA would take 100,001 population levels")
    assert "is exact" not in cap.err
    assert cap.out.splitlines()[0] == "interactive: mva (Linearizer, approximate)"
    rec = json.loads(out.read_text())
    assert rec["info"]["algorithm"] == "linearizer"
    assert rec["explanation"][0] == said
    assert "solved by the Linearizer (approximate MVA)" in rec["explanation"][1]
    assert not any("is exact" in line for line in rec["explanation"])


def test_the_report_names_the_approximation(tmp_path, capsys):
    page = tmp_path / "r.html"
    assert main(["report", INTERACTIVE, "--set", "users=100000", "-o", str(page)]) == 0
    html = page.read_text()
    assert "<h1>interactive: mva (Linearizer, approximate)</h1>" in html
    assert "mean value analysis by the Linearizer, which is approximate" in html
    assert "is exact" not in html


def test_more_population_vectors_than_auto_limit_say_so():
    # two chains of 500: 501 * 501 = 251,001 vectors > AUTO_LIMIT, 1,001 levels (few enough)
    net = qpn.load(f"{MODELS}/central_server.qpn")
    res = qpn.solve(net, n_a=500, n_b=500)
    assert 501 * 501 > AUTO_LIMIT and res.info["algorithm"] == "linearizer"
    assert res.explanation[0].endswith("mean value analysis by the Linearizer, which is "
                                       f"approximate: 251001 population vectors > {AUTO_LIMIT}, "
                                       "too many for exact MVA")
    assert res.table().splitlines()[0] == "central_server: mva (Linearizer, approximate)"


def test_exact_and_requested_algorithms_are_named():
    net = qpn.load(INTERACTIVE)
    exact = qpn.solve(net)
    assert exact.info["algorithm"] == "exact"
    assert exact.explanation[0].endswith("mean value analysis is exact")
    assert exact.explanation[1].endswith("solved by exact MVA")
    assert exact.table().splitlines()[0] == "interactive: mva"
    sch = qpn.solve(net, method="mva", options={"mva": "schweitzer"})
    # the first line is the one the command line prints
    assert sch.explanation[0].endswith("solved by Schweitzer's approximate MVA")
    assert sch.table().splitlines()[0] == "interactive: mva (Schweitzer, approximate)"
    auto = qpn.solve(net, options={"mva": "linearizer"})
    assert auto.explanation[0].endswith("the Linearizer's approximate mean value analysis, "
                                        "as requested")
    opened = qpn.solve(qpn.load(f"{MODELS}/mm1.qpn"))
    assert opened.explanation[0].endswith("mean value analysis is exact")
    assert opened.table().splitlines()[0] == "mm1: mva"
