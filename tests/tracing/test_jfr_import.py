"""The Java Flight Recorder importer: known values of a committed fixture, located errors,
and a live recording of a Java pool (needs a JDK)."""
import json
import os
import shutil

import pytest

from qpn.cli import main
from qpn.frontends.jfr_import import jfr_to_events, read_jfr_json
from qpn.frontends.trace import TraceError, read_trace

from conftest import TESTS_DIR

FIXTURE = os.path.join(TESTS_DIR, "data", "jfr", "app.json")
TASKPOOL = os.path.join(TESTS_DIR, "programs", "TaskPool.java")
T0 = 1767225600_000_000_000          # 2026-01-01T00:00:00Z


def test_the_fixture_gives_each_kind_with_its_values():
    tr = read_jfr_json(FIXTURE)
    ev = {(e["kind"], e.get("op") or e.get("on"), e["tid"]): e for e in tr.events}
    start = ev[("thread_start", None, 110)]
    assert (start["name"], start["parent"], start["site"]) == ("pool-1-thread-1", 101, "App.main:30")
    read = ev[("io", "read", 110)]
    assert (read["ts"] - T0, read["dur"], read["bytes"], read["path"], read["site"]) == \
        (2_000_000, 50_000, 65536, "/d/data.bin", "App.task:12")
    # the CPU estimate: the time outside the thread's recorded waits and I/O since it started
    assert read["cpu"] == 1_000_000
    acq = ev[("acquire", None, 110)]
    assert (acq["obj"], acq["contended"], acq["dur"], acq["cpu"]) == (4096, True, 100_000, 1_750_000)
    sleep = ev[("wait", "sleep", 110)]
    assert (sleep["requested"], sleep["cpu"]) == (1_000_000, 2_850_000)
    assert ev[("thread_end", None, 110)]["cpu"] == 6_000_000 - 1_150_000
    park = ev[("wait", "cond", 101)]
    assert (park["obj"], park["site"], park["dur"]) == (8192, "App.main:41", 500_000)
    objs = {e["obj"]: (e["type"], e["name"]) for e in tr.events if e["kind"] == "object"}
    assert objs == {4096: ("lock", "Object_1000"), 8192: ("cond", "FutureTask_2000")}
    # the JVM's own threads (Common-Cleaner) are left out, with their parks
    assert {e["tid"] for e in tr.events} == {101, 110}
    assert tr.header.runtime["jit"] and tr.header.capabilities["cpu_from_gaps"]
    assert tr.header.program == {"pid": 101}


def test_the_cli_writes_a_trace_the_reader_accepts(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert main(["import-jfr", FIXTURE, "-o", str(out)]) == 0
    assert "2 thread(s)" in capsys.readouterr().err
    assert len(read_trace(str(out)).events) == len(read_jfr_json(FIXTURE).events)


def test_mistakes_are_located(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"recording": {"events": [\n  {"type": "jdk.FileRead",, }]}}\n')
    with pytest.raises(TraceError, match=r"bad.json:2:.*not JSON"):
        read_jfr_json(str(bad))
    with pytest.raises(TraceError, match="not a 'jfr print --json' document"):
        jfr_to_events({"events": []}, "x.json")
    with open(FIXTURE) as fh:
        doc = json.load(fh)
    del doc["recording"]["events"][2]["values"]["startTime"]
    with pytest.raises(TraceError, match="event 2: KeyError"):
        jfr_to_events(doc, "x.json")
    lenient = jfr_to_events(doc, "x.json", strict=False)
    assert lenient.warnings and "event 2" in lenient.warnings[0]
    assert not any(e.get("op") == "read" for e in lenient.events)
    # fields of another type (found by mutating recordings: 5,500, no traceback left) are
    # read as absent: a thread start without its thread, a stack without frames, a monitor
    # without its class
    with open(FIXTURE) as fh:
        doc = json.load(fh)
    doc["recording"]["events"][3]["values"]["monitorClass"] = 7
    doc["recording"]["events"][1]["values"]["thread"] = "pool-1"
    doc["recording"]["events"][2]["values"]["stackTrace"] = {"frames": 2.5}
    tr = jfr_to_events(doc, "x.json")
    first = tr.events[0]
    assert (first["kind"], first["tid"], first["ts"] - T0) == ("thread_start", 110, 2_000_000)
    assert "parent" not in first and "site" not in tr.events[1]
    assert any(e.get("name") == "object_1000" for e in tr.events)


@pytest.mark.skipif(shutil.which("java") is None or shutil.which("jfr") is None,
                    reason="needs a JDK with jfr (Debian package openjdk-17-jdk)")
def test_a_thread_that_blocks_before_its_start_event_runs_from_its_first_event(tmp_path):
    # JFR stamps ThreadStart when it commits it: a thread started while the recording
    # starts can enter a monitor earlier (seen live: JFR's PlatformRecorder lock)
    with open(FIXTURE) as fh:
        doc = json.load(fh)
    late = next(r for r in doc["recording"]["events"] if r["type"] == "jdk.ThreadStart"
                and r["values"]["thread"]["osThreadId"] == 110)
    late["values"]["startTime"] = "2026-01-01T00:00:00.002900000Z"   # after its read and lock
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "run.jsonl"
    assert main(["import-jfr", str(path), "-o", str(out)]) == 0
    tr = read_trace(str(out))                       # the reader's lifecycle rule holds
    mine = [e for e in tr.events if e["tid"] == 110]
    assert mine[0]["kind"] == "thread_start" and mine[0]["ts"] - T0 == 2_000_000
    assert mine[0]["name"] == "pool-1-thread-1"
    lock = next(e for e in tr.events if e["kind"] == "object" and e["obj"] == 4096)
    assert lock["ts"] - T0 == 2_800_000


def test_qpn_trace_jfr_on_a_java_pool(tmp_path):
    out = tmp_path / "run.jsonl"
    rc = main(["trace", "--jfr", "-o", str(out), "--", "java", TASKPOOL, "2", "3", "10", "2",
               str(tmp_path / "data.bin")])
    assert rc == 0
    tr = read_trace(str(out))
    names = sorted(e.get("name", "") for e in tr.events if e["kind"] == "thread_start")
    assert "pool-1-thread-1" in names and "pool-1-thread-2" in names
    assert not any(n.startswith(("Common-Cleaner", "Reference Handler")) for n in names)
    # 2 warm-up rounds and 3 timed rounds of 10 tasks, a 64 KiB read each
    reads = [e for e in tr.events if e.get("op") == "read" and e.get("bytes") == 65536
             and e.get("path", "").endswith("data.bin")]
    assert len(reads) == 50 and all(e["site"].startswith("TaskPool.task:") for e in reads)


def test_a_recording_cut_short_keeps_its_complete_events(tmp_path):
    with open(FIXTURE) as fh:
        text = fh.read()
    cut = tmp_path / "cut.json"
    cut.write_text(text[:text.index('"jdk.ThreadSleep"') + 40])       # inside the sleep event
    with pytest.raises(TraceError, match=r"cut.json:\d+:\d+: .*not JSON"):
        read_jfr_json(str(cut))
    tr = read_jfr_json(str(cut), strict=False)
    assert "the 6 events before it are kept" in tr.warnings[0]
    assert [e.get("op") for e in tr.events if e["kind"] == "io"] == ["read"]
    assert not any(e.get("on") == "sleep" for e in tr.events)
