"""`qpn verify` of a service of several processes (issue 17): suites/two_tier (a front and a
back-end process, traced as processes under an open-loop load; response times) and
suites/two_tier_capacity (the same at saturation, the load traced too; throughput)."""
import os

import pytest

from conftest import ROOT_DIR
from qpn.errors import QPNError
from qpn.frontends.verify import verify
from qpn.frontends.verify.manifest import load_suite

SUITES = os.path.join(ROOT_DIR, "suites")

SUITE = """
name = "t"
[server]
command = ["{python}", "server.py", "{port}"]
port = "{port}"
[program]
path = "load.py"
args = ["{port}"]
[params]
port = 18999
[grid]
workers = [1]
[build]
configs = [{workers = 1}]
@BUILD@
[measure]
kind = "stdout"
pattern = "([\\\\d.]+)"
[predict]
expr = "1"
"""


@pytest.mark.parametrize("build, msg", [
    ("trace_load = 1", "trace_load must be true or false"),
])
def test_trace_load_manifest_errors(tmp_path, build, msg):
    (tmp_path / "load.py").write_text("print(1)\n")
    (tmp_path / "suite.toml").write_text(SUITE.replace("@BUILD@", build))
    with pytest.raises(QPNError, match=msg):
        load_suite(str(tmp_path))


def test_trace_load_needs_a_server(tmp_path):
    (tmp_path / "load.py").write_text("print(1)\n")
    text = SUITE.replace("@BUILD@", "trace_load = true")
    text = text[:text.index("[server]")] + text[text.index("[program]"):]
    (tmp_path / "suite.toml").write_text(text)
    with pytest.raises(QPNError, match="trace_load needs a \\[server\\]"):
        load_suite(str(tmp_path))
    (tmp_path / "suite.toml").write_text(SUITE.replace("@BUILD@", "trace_load = true"))
    assert load_suite(str(tmp_path)).trace_load


@pytest.mark.measured
def test_the_two_tier_service_s_response_time_is_predicted_within_20_percent(tmp_path):
    """A front and a back-end process, traced as processes at 2 workers and 200/s, predict
    the mean response time at 1, 2, 4 workers x 100, 200, 300 requests/s.  Two runs on
    2026-11-27: mean 9.4% and 7.5%, max 19.1% and 20.0% (at 300/s, where the model is low:
    docs/verify.md); the bound on the largest leaves room for the repeats' spread."""
    rep = verify(os.path.join(SUITES, "two_tier"), out_dir=str(tmp_path), retrace=True)
    print("\n" + rep.table())
    eps = [r["eps"] for r in rep.rows]
    assert len(eps) == 9 and sum(eps) / 9 <= 0.12 and max(eps) <= 0.25, rep.table()
    with open(rep.model) as fh:
        model = fh.read()
    assert "mutex gil_front" in model and "mutex gil_back" in model


@pytest.fixture(scope="module")
def capacity(tmp_path_factory):
    """suites/two_tier_capacity verified afresh (traced with its load, measured)."""
    rep = verify(os.path.join(SUITES, "two_tier_capacity"),
                 out_dir=str(tmp_path_factory.mktemp("capacity")), retrace=True)
    print("\n" + rep.table())
    return rep


@pytest.mark.measured
def test_the_two_tier_service_s_throughput_with_one_worker_per_tier(capacity):
    """The same service under a closed-loop load (traced too), from one trace at 2 workers:
    with one worker per tier the tiers take turns (a synchronous call), within 10%."""
    eps = [r["eps"] for r in capacity.rows]
    assert len(eps) == 4 and eps[0] <= 0.10, capacity.table()
    with open(capacity.model) as fh:
        assert "pool closed_load_client size closed_load_clients" in fh.read()


@pytest.mark.measured
def test_the_two_tier_service_s_throughput_at_2_4_8_workers_within_15_percent(capacity):
    """From two workers the GILs' hand-overs bound it: each waits for the woken thread,
    as long as the trace's receives took to wake (frontends/analyze/wakeups.py).  Without
    them the model was 13.6-23.3% over (two runs, 2026-11-27); with them 0.8-2.5% (the
    cached trace) and 11.7-13.9% (a fresh one).  Judged against max(15%, twice the
    configuration's measured spread), as the measuring guide says."""
    for r in capacity.rows[1:]:
        assert r["eps"] <= max(0.15, 2 * r["spread"]), capacity.table()
    with open(capacity.model) as fh:
        model = fh.read()
    assert "mutex gil_front handover" in model and "mutex gil_back handover" in model
