"""The trace header's ``machine`` object: how busy the machine was while tracing, and
the analyzer's warning when it was busy (issue: a verdict flipped under load and
nothing in the model said the trace was taken on a loaded machine)."""
import os
import subprocess
import sys

import pytest

from qpn.frontends.analyze import build
from qpn.frontends.pytrace import trace_command
from qpn.frontends.trace import TraceHeader, read_trace
from conftest import ROOT_DIR

ROOT = ROOT_DIR
POLL = [sys.executable, os.path.join("tests", "programs", "sleep_poll.py"), "300", "2"]


def test_header_round_trip_and_busy_threshold():
    m = {"cpus": 2, "loadavg_before": [1.5, 1, 1], "loadavg_after": [1.6, 1, 1], "samples": 30,
         "others_runnable": 0.9, "others_runnable_max": 2, "steal_share": 0.0}
    h = TraceHeader(source="pytrace", machine=m)
    back = TraceHeader.from_dict(h.to_dict())
    assert back.machine == m and back.extra == {}
    assert "busy" in back.busy() and "0.9 on average" in back.busy()
    assert TraceHeader(machine=dict(m, others_runnable=0.2)).busy() is None
    assert TraceHeader(machine=dict(m, others_runnable=0.2, steal_share=0.08)).busy()
    assert TraceHeader().busy() is None and TraceHeader().machine_text() is None
    with pytest.raises(ValueError, match="machine must be an object"):
        TraceHeader.from_dict(dict(h.to_dict(), machine="busy"))


def test_a_trace_taken_beside_a_cpu_hog_says_so(tmp_path):
    # a process that spins all the time is runnable at every sample: the mean of the
    # other runnable threads is about 1 (>= 0.5 warns), and the model's header says BUSY
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        run = trace_command(POLL, str(tmp_path / "busy.jsonl"), cwd=ROOT)
    finally:
        hog.kill()
        hog.wait()
    tr = read_trace(tmp_path / "busy.jsonl")
    m = tr.header.machine
    assert m["samples"] >= 5 and m["others_runnable"] >= 0.5, m
    res = build(tr)
    assert any(w.startswith("the machine was busy") for w in res.warnings)
    assert "# Machine while tracing: " in res.text and "(BUSY: see the warnings)" in res.text
    assert run.returncode == 0
