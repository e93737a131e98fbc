"""tools/qpme_reference.py: SimQPN's reference results beside qpn's measures.

The reading and the mapping are checked on small files written here; QPME's own
regression data (pepsy-bcmp2, RT2) is compared when it is on the machine."""
from __future__ import annotations

import math
import os

import pytest
from scipy.stats import t as student

import qpn
from qpn.dsl.qpe_export import qpn_to_qpe
from tools.qpme_reference import MAPPING, Row, compare, main, map_metric, parse_reference, qpme_names, summarize

from conftest import MODELS

#: a reference file in SimQPN's layout for models/qpme/closed_server.qpe: three jobs
#: cycle through the FCFS 'server' (rate 2) and back to 'users' by immediate transitions
REFERENCE = """<?xml version="1.0" ?><test-data>
<metric name="wallClockTime"><summary mean="10.0" stdDev="1.0" max="11.0" min="9.0"></summary><data>9.0, 11.0</data></metric>
<dataset name="server" type="qplace:queue">
  <metric name="tkOcp"><summary mean="1.0" stdDev="0.0"/><data>1.0, 1.0, 1.0, 1.0</data></metric>
  <dataset name="job" type="color">
    <metric name="arrivThrPut"><summary mean="2.0"/><data>1.99, 2.01, 2.00, 2.00</data></metric>
    <metric name="deptThrPut"><summary mean="2.0"/><data>1.99, 2.01, 2.00, 2.00</data></metric>
    <metric name="meanTkPop"><summary mean="3.0"/><data>3.0, 3.0, 3.0, 3.0</data></metric>
    <metric name="meanST"><summary mean="1.6"/><data>1.6, 1.61, 1.59, 1.6</data></metric>
    <metric name="maxST"><summary mean="9.0"/><data>8.0, 10.0</data></metric>
  </dataset>
</dataset>
<dataset name="server" type="qplace:depository">
  <dataset name="job" type="color">
    <metric name="meanTkPop"><summary mean="0.0"/><data>0.0, 0.0, 0.0, 0.0</data></metric>
    <metric name="deptThrPut"><summary mean="2.0"/><data>1.99, 2.01, 2.00, 2.00</data></metric>
  </dataset>
</dataset>
<dataset name="users" type="place">
  <dataset name="job" type="color">
    <metric name="meanTkPop"><summary mean="0.0"/><data>0.0, 0.0, 0.0, 0.0</data></metric>
  </dataset>
</dataset>
<dataset name="server" type="queue">
  <metric name="queueUtil"><summary mean="1.0"/><data>1.0, 1.0, 1.0, 1.0</data></metric>
  <metric name="totArrivThrPut"><summary mean="2.0"/><data>1.99, 2.01, 2.00, 2.00</data></metric>
</dataset>
<dataset name="ghost" type="place">
  <metric name="tkOcp"><summary mean="0.5" stdDev="0.1"/></metric>
</dataset>
</test-data>
"""
EXAMPLE = os.path.join(MODELS, "qpme", "closed_server.qpe")


def test_parse_reference_reads_kinds_colors_and_replications():
    refs = {(r.kind, r.location, r.color, r.metric): r for r in parse_reference(REFERENCE)}
    assert refs[("", "", "", "wallClockTime")].n == 2
    r = refs[("queue", "server", "job", "meanST")]
    assert (r.n, r.mean) == (4, pytest.approx(1.6))
    assert r.stdev == pytest.approx(math.sqrt(0.0002 / 3))
    assert r.half_width() == pytest.approx(student.ppf(0.975, 3) * r.stdev / 2)
    assert ("depository", "server", "job", "meanTkPop") in refs
    assert ("place", "users", "job", "meanTkPop") in refs
    assert ("station", "server", "", "queueUtil") in refs
    ghost = refs[("place", "ghost", "", "tkOcp")]          # a summary without data
    assert (ghost.n, ghost.mean, ghost.stdev) == (0, 0.5, 0.1) and math.isnan(ghost.half_width())


def test_metrics_map_to_qpn_measures_of_the_imported_model(tmp_path):
    names = qpme_names(EXAMPLE)
    assert names.places == {"server": "server", "users": "users"} and names.colors == {"job": "job"}
    refs = parse_reference(REFERENCE)
    res = qpn.solve(qpn.load(EXAMPLE), "mva")       # exact: 3 jobs at rate 2, response 1.5
    rows, unmapped = compare(refs, res, names)
    got = {(r.kind, r.location, r.metric): r for r in rows}
    assert got[("queue", "server", "meanTkPop")].qpn_measure == "queue_tokens"
    assert got[("queue", "server", "meanTkPop")].qpn == pytest.approx(3.0)
    assert got[("depository", "server", "meanTkPop")].qpn_measure == "tokens - queue_tokens"
    assert got[("depository", "server", "meanTkPop")].qpn == 0.0
    assert got[("queue", "server", "deptThrPut")].qpn == pytest.approx(2.0)
    assert got[("station", "server", "queueUtil")].qpn == pytest.approx(1.0)
    # the reference's response time (1.6 +/- 0.01) misses qpn's exact 1.5: 6.7% apart
    st = got[("queue", "server", "meanST")]
    assert st.qpn == pytest.approx(1.5) and not st.overlap and st.rel_diff == pytest.approx(0.1 / 1.6)
    assert sum(r.overlap for r in rows) == len(rows) - 1
    s = summarize(rows)
    assert s["groups"]["residence"]["worst"] == "queue server/job meanST"
    assert s["groups"]["throughput"]["overlap"] == 4
    assert unmapped["tkOcp: P(place not empty): qpn does not report it"] == 2    # the ghost's too
    assert unmapped["maxST: extreme of one run"] == 1
    assert "wallClockTime: SimQPN's run time" in unmapped


def test_shared_and_infinite_server_queues(tmp_path):
    text = """net pools
colors c = {x}
shared queue cpu : ps servers 2
place think : c
    queue is
    service exp(1)
    init 4 x
place a : c
    on cpu
    service exp(0.1)
place b : c
    on cpu
    service exp(0.2)
transition t1 : think(x) -> a(x)
transition t2 : a(x) -> b(x)
transition t3 : b(x) -> think(x)
"""
    path = tmp_path / "pools.qpe"
    path.write_text(qpn_to_qpe(qpn.compile_net(qpn.parse(text, "pools.qpn"))))
    names = qpme_names(str(path))
    (cpu,) = [q for q, users in names.queues.items() if len(users) == 2]
    (think,) = [q for q, s in names.strategy.items() if s == "IS"]
    from tools.qpme_reference import RefMetric
    util = RefMetric(cpu, "station", "", "queueUtil", 0.5, 0.01, 5)
    assert map_metric(util, names) == ("utilization", names.shared[cpu], None)
    assert "not summed" in map_metric(RefMetric(cpu, "station", "", "meanTotTkPop", 1, 0, 5), names)
    assert "IS queue" in map_metric(RefMetric(think, "station", "", "queueUtil", 0.9, 0, 5), names)
    assert MAPPING[("queue", "meanST")] == ("response", None)


def test_overlap_and_relative_difference():
    r = Row("p", "queue", "a", "meanST", "response", 1.0, 0.01, 10, 1.015, 0.01)
    assert r.overlap and r.rel_diff == pytest.approx(0.015)
    assert not Row("p", "queue", "a", "meanST", "response", 1.0, 0.01, 10, 1.03, 0.01).overlap
    zero = Row("p", "depository", "a", "meanTkPop", "tokens - queue_tokens", 0.0, 0.0, 10, 0.0, 0.0)
    assert zero.overlap and zero.rel_diff == 0.0
    assert math.isinf(Row("p", "place", "a", "meanTkPop", "tokens", 0.0, 0.0, 10, 1e-5, 0.0).rel_diff)


# ---------------------------------------------------- QPME's own data, when present
DEFAULT = "/tmp/qpme/rt/sources/qpe.regressiontests/testfiles/RT2/reference/r162"


def _pepsy_dir() -> str | None:
    env = os.environ.get("QPN_QPME_REFERENCE")
    for d in ([env, os.path.join(env, "RT2", "reference", "r162")] if env else []) + [DEFAULT]:
        if d and os.path.isfile(os.path.join(d, "reference-testdata.xml")) and \
                os.path.isfile(os.path.join(d, "pepsy-bcmp2.qpe")):
            return d
    return None


@pytest.mark.skipif(_pepsy_dir() is None,
                    reason=f"QPME's regression data for pepsy-bcmp2 (RT2) is not here: set QPN_QPME_REFERENCE "
                           f"to its reference/r162 directory (or to QPME's testfiles), or put it at {DEFAULT}")
def test_pepsy_bcmp2_against_simqpn(tmp_path, capsys):
    """SimQPN r162, 100 replications: every interval holds qpn's exact MVA value, and a
    short simulation (fixed length, so the same numbers on any machine) agrees too."""
    import json
    refdir = _pepsy_dir()
    out = tmp_path / "mva.json"
    assert main([refdir, "--method", "mva", "--json", str(out)]) == 0
    s = json.loads(out.read_text())["summary"]
    assert s["compared"] >= 90 and s["overlap"] == s["compared"]
    assert all(g["max_rel_diff"] < 1e-3 for g in s["groups"].values())
    out = tmp_path / "des.json"
    assert main([refdir, "--time", "1e8", "--replications", "10", "--seconds", "300", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["qpn"]["status"] == "ok"
    s = d["summary"]
    assert s["overlap"] >= 0.9 * s["compared"]
    assert s["groups"]["throughput"]["max_rel_diff"] < 0.01
    assert s["groups"]["population"]["max_rel_diff"] < 0.02
