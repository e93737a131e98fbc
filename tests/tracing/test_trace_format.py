"""The neutral trace format: reading, writing, validation with located errors."""
import io
import os
import json

import pytest

from qpn.frontends import trace as tr
from qpn.frontends.trace import TraceError, TraceEvent, TraceHeader, read_trace, write_trace
from qpn.frontends.trace_query import fragments, lock_holds, match_items, thread_cpu
from qpn.frontends.trace_schema import KINDS, check_event
from qpn.cli import main
from conftest import ROOT_DIR

HEADER = {"kind": "header", "format": "qpn-trace", "version": 1, "source": "test",
          "capabilities": {"thread_cpu": True, "lock_hold": True}}


def text(*events, header=HEADER):
    return "\n".join(json.dumps(e) for e in ([header] if header else []) + list(events)) + "\n"


def ev(kind, tid=1, ts=0, **kw):
    return {"kind": kind, "tid": tid, "ts": ts, **kw}


GOOD = [ev("thread_start", ts=0, cpu=0, name="main"),
        ev("object", ts=5, cpu=5, obj=7, type="queue", capacity=4, site="p.py:3"),
        ev("put", ts=10, cpu=9, obj=7, item=100, dur=0, size=1),
        # not in ts order (readers sort a thread's events), yet possible: started, then got
        ev("get", tid=2, ts=11, cpu=1, obj=7, item=100, dur=9, size=0),
        ev("thread_start", tid=2, ts=10, cpu=0, name="w", parent=1),
        ev("acquire", tid=2, ts=30, cpu=15, obj=8, dur=0, contended=False),
        ev("release", tid=2, ts=70, cpu=55, obj=8, hold=40),
        ev("io", tid=2, ts=80, cpu=60, op="read", path="/d", bytes=512, dur=20, cpu_dur=5),
        ev("thread_end", tid=2, ts=130, cpu=100),
        ev("thread_end", ts=200, cpu=90)]


def test_round_trip_and_helpers(tmp_path):
    path = tmp_path / "t.jsonl"
    header = TraceHeader.from_dict(HEADER)
    assert write_trace(path, header, GOOD + [TraceEvent("mark", 1, 150, fields={"name": "x"})]) == 11
    t = read_trace(path)
    assert t.header.has("thread_cpu") and not t.header.has("gil") and t.complete
    assert t.events[:10] == GOOD and t.events[10]["kind"] == "mark"
    by = t.by_thread()
    assert [e["ts"] for e in by[2]] == [10, 11, 30, 70, 80, 130]       # sorted by ts
    assert t.thread_names() == {1: "main", 2: "w"} and t.objects()[7]["capacity"] == 4
    assert [(p["tid"], g["tid"]) for p, g in match_items(t.events)] == [(1, 2)]
    assert lock_holds(t.events) == {8: [40]}
    frs = fragments(by[2])
    assert [(f.wall, f.cpu) for f in frs] == [(1, 1), (10, 14), (40, 40), (10, 5), (30, 35)]
    assert thread_cpu(by[2]) == 100
    assert TraceEvent.from_dict(GOOD[2]).to_dict() == GOOD[2]


def test_every_kind_is_documented():
    doc = open(os.path.join(ROOT_DIR,
                            "docs", "trace-format.md"), encoding="utf-8").read()
    for kind in KINDS:
        assert f"`{kind}`" in doc, kind


def test_doc_example_is_a_valid_trace_with_the_stated_fragment():
    doc = open(os.path.join(ROOT_DIR,
                            "docs", "trace-format.md"), encoding="utf-8").read()
    block = doc.split("## Example")[1].split("```")[1]
    t = read_trace(io.StringIO(block.strip() + "\n"))
    worker = t.by_thread()[8254]
    first = fragments(worker)[1]
    assert (first.before["kind"], first.after["kind"], first.wall, first.cpu) == ("get", "acquire", 5300, 5300)
    assert match_items(t.events)[0][1]["tid"] == 8254


@pytest.mark.parametrize("bad, msg", [
    (ev("acquire", dur=3), "acquire event lacks field 'obj'"),
    (ev("acquire", obj=1, dur=-3), "dur must be an integer >= 0"),
    (ev("release", obj="L1"), "obj must be an integer"),
    (ev("acquir", obj=1), "unknown event kind 'acquir' (did you mean 'acquire'?)"),
    (ev("wait", on="nap"), "on must be one of"),
    (ev("io", op="read", bytes=1.5), "bytes must be an integer"),
    (ev("put", obj=1, item=2, ok="yes"), "ok must be true or false"),
    ({"tid": 1, "ts": 0}, "lacks field 'kind'"),
    (HEADER, "a second header"),
    ([1, 2], "must be a JSON object"),
    (ev("sample", stack=["a", 3]), "stack must be a list of strings"),
    (ev("request", req=[1], phase="begin"), "req must be an integer or a string"),
])
def test_invalid_events_are_located(bad, msg):
    src = text(GOOD[0], GOOD[1], bad, GOOD[2])
    with pytest.raises(TraceError) as exc:
        read_trace(io.StringIO(src))
    assert exc.value.line == 4 and msg in str(exc.value)
    assert str(exc.value).startswith("<trace>:4: error: ")
    lenient = read_trace(io.StringIO(src), strict=False)
    assert lenient.events == GOOD[:2] and not lenient.complete
    assert lenient.warnings[0].startswith("<trace>:4: ") and "kept the 2 valid event" in lenient.warnings[0]


def test_json_errors_blank_lines_and_truncation(tmp_path):
    src = text(*GOOD[:3]).replace('"ts": 5', '"ts" 5')
    with pytest.raises(TraceError, match=r"<trace>:3:\d+: error: invalid JSON: Expecting ':'"):
        read_trace(io.StringIO(src))
    two = text(GOOD[0]) + json.dumps(GOOD[1]) + " " + json.dumps(GOOD[2]) + "\n"
    with pytest.raises(TraceError, match="<trace>:3:.*Extra data"):
        read_trace(io.StringIO(two))
    blank = text(GOOD[0]) + "\n   \n" + json.dumps(GOOD[1]) + "\n"
    assert len(read_trace(io.StringIO(blank)).events) == 2
    cut = text(*GOOD)[:-25]                      # the writer was killed mid-line
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    with pytest.raises(TraceError) as exc:
        read_trace(path)
    assert f"{path}:11: error: truncated last line" in str(exc.value)
    t = read_trace(path, strict=False)
    assert t.events == GOOD[:9] and "truncated" in t.warnings[0]
    no_newline = text(*GOOD).rstrip("\n")        # a complete last line without "\n" is fine
    assert len(read_trace(io.StringIO(no_newline)).events) == len(GOOD)


def test_values_read_as_json_reads_them():
    """Chunks are parsed by orjson when installed; where it reads a value unlike
    json (an integer beyond 64 bits becomes a float) the chunk is re-read by json."""
    big = 2 ** 70
    evs = [GOOD[0], ev("put", ts=10, cpu=9, obj=big, item=-big, dur=0),
           ev("mark", ts=11, name="m", value=float("nan"), x=1e400, y=-0.0, z="\u00e9\U0001f600")]
    t = read_trace(io.StringIO(text(*evs)))
    put, mark = t.events[1], t.events[2]
    assert put["obj"] == big and type(put["obj"]) is int and put["item"] == -big
    assert mark["value"] != mark["value"] and mark["x"] == float("inf")
    assert mark["z"] == "\u00e9\U0001f600" and mark["y"] == 0.0     # (a lone surrogate: refused)
    assert t.events == json.loads("[" + ",".join(text(*evs).splitlines()[1:]) + "]")


def test_errors_deep_in_a_big_trace_have_exact_line_numbers():
    events = [ev("mark", ts=i, name="m") for i in range(30000)]
    events[23456] = ev("mark", ts=1, name=5)
    with pytest.raises(TraceError) as exc:
        read_trace(io.StringIO(text(*events)))
    assert exc.value.line == 23458 and "name must be a string" in str(exc.value)
    t = read_trace(io.StringIO(text(*events)), strict=False)
    assert len(t.events) == 23456


@pytest.mark.parametrize("header, msg", [
    (None, "first line must be the header"),
    ({"kind": "header", "format": "other", "version": 1}, "format must be 'qpn-trace'"),
    ({"kind": "header", "format": "qpn-trace", "version": 9}, "unsupported trace version 9"),
    ({"kind": "header", "format": "qpn-trace", "version": 1, "capabilities": {"gil": 1}},
     "capabilities must be"),
    ({"kind": "header", "format": "qpn-trace", "version": 1, "probe_ns": -5},
     "header field probe_ns must be an integer >= 0"),
    ({"kind": "header", "format": "qpn-trace", "version": 1, "probe_ns": 1.5},
     "header field probe_ns must be an integer >= 0"),
])
def test_bad_headers(header, msg):
    src = text(GOOD[0], header=header) if header else text(GOOD[0], header=None)
    with pytest.raises(TraceError, match=msg) as exc:
        read_trace(io.StringIO(src), strict=False)       # a bad header is always fatal
    assert exc.value.line == 1
    with pytest.raises(TraceError, match="empty trace"):
        read_trace(io.StringIO(""))


def test_writer_refuses_invalid_events(tmp_path):
    with pytest.raises(TraceError, match="refusing to write an invalid event"):
        write_trace(tmp_path / "x.jsonl", TraceHeader(), [ev("release")])
    assert not (tmp_path / "x.jsonl").exists()


def test_extension_kinds_and_list_capabilities():
    h = dict(HEADER, capabilities=["thread_cpu"])
    t = read_trace(io.StringIO(text(ev("x_gpu_kernel", ts=3, grid=4), header=h)))
    assert t.header.has("thread_cpu") and t.events[0]["grid"] == 4
    assert check_event(ev("x_anything")) is None


def test_cli_trace_check(tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text(text(*GOOD))
    assert main(["trace-check", str(good)]) == 0
    out = capsys.readouterr().out
    assert "test trace, 10 events" in out and "thread 2 'w': 6 events" in out
    assert "objects: queue 1" in out and "lock_hold, thread_cpu" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text(*GOOD[:4], ev("get", tid=2, ts=11, item=1), *GOOD[5:]))
    assert main(["trace-check", str(bad)]) == 2
    assert f"{bad}:6: error: get event lacks field 'obj'" in capsys.readouterr().err
    assert main(["trace-check", str(bad), "--lenient"]) == 0
    captured = capsys.readouterr()
    assert "4 events (valid prefix only)" in captured.out and f"{bad}:6:" in captured.err


def test_reader_speed_smoke():
    # the benchmark measures 10^6 events; here only a sanity bound on 20,000
    import time
    events = [ev("acquire", tid=i % 4, ts=i, cpu=i, obj=9, dur=0, contended=False, site="p.py:1")
              for i in range(20000)]
    src = text(*events)
    t0 = time.perf_counter()
    t = read_trace(io.StringIO(src))
    assert len(t.events) == 20000 and time.perf_counter() - t0 < 1.0
    assert tr.CHUNK_CHARS > 0


def test_request_ids_may_be_integers_or_strings():
    from qpn.frontends.trace_schema import check_event
    for req in (7, "r-7"):
        assert check_event(ev("request", req=req, phase="begin")) is None
        assert check_event(ev("put", obj=1, item=2, req=req)) is None


def test_first_invalid_agrees_with_check_event():
    # first_invalid runs code generated per event shape; it must accept exactly
    # what check_event accepts and stop at the first event check_event rejects
    import random
    from collections import OrderedDict

    from qpn.frontends.trace_schema import first_invalid
    rnd = random.Random(7)
    base = GOOD + [ev("wait", on="sleep", target=2, ok=True), ev("notify", obj=3, on="cond", all=False),
                   ev("request", req="r1", phase="end", name="q"), ev("request", req=4, phase="begin"),
                   ev("sample", stack=["a", "b"]), ev("probe", probe=3, args=[1]), ev("probe", probe=3),
                   ev("x_ext", foo=1, bar=[2]), ev("counter", name="c", value=3.5),
                   ev("disk", op="weird", bytes=4096, dev="sda"), ev("task", dur=5, func="f", pool=1),
                   ev("io", op="send", fd=3, bytes=9, peer="h:1", ok=True, calls=2, site="s.py:1")]
    odd = [None, -1, 0, 1.5, True, False, "s", "read", "sleep", [1], ["a"], {"a": 1}, 2 ** 70, -2 ** 70]
    events: list = []
    for _ in range(4000):
        e = dict(rnd.choice(base))
        r, f = rnd.random(), rnd.choice(sorted(e))
        if r < 0.25:
            e[f] = rnd.choice(odd)
        elif r < 0.3:
            del e[f]
        elif r < 0.35:
            e[rnd.choice(["extra", "req", "cpu_dur", "stack", "args", "obj"])] = rnd.choice(odd)
        elif r < 0.37:
            e = rnd.choice([[e], "x", 3, None, OrderedDict(e),
                            {**e, "kind": rnd.choice(["header", "acquir", 5, [1]])}])
        events.append(e)
    ok = [check_event(e) is None for e in events]
    assert 0.3 < sum(ok) / len(ok) < 0.9
    for _ in range(2):                              # while learning shapes, and after
        assert [first_invalid([e]) is None for e in events] == ok
    for start in range(0, len(events), 50):
        part = events[start:start + 50]
        assert first_invalid(part) == next((i for i, v in enumerate(ok[start:start + 50]) if not v), None)


def test_many_shapes_and_none_values_are_still_checked():
    from qpn.frontends.trace_schema import EventChecker
    first_invalid = EventChecker().first_invalid
    events = [ev(f"x_{i}", ts=i, **{f"f{i}": i}) for i in range(300)]      # past the shape limit
    assert first_invalid(events) is None
    # null is not an absent field: analyzers add durations (issue 15: TypeError in qpn build)
    assert first_invalid(events + [ev("acquire", obj=1, dur=None, cpu=None)] * 3) == len(events)
    assert first_invalid(events + [ev("acquire", obj=1, dur=-1)]) == len(events)
    assert first_invalid(events + [ev("x_7", ts="0", f7=1)]) == len(events)


def test_read_grouped_matches_read_trace_across_chunks(tmp_path, monkeypatch):
    from qpn.frontends.analyze import read_grouped
    monkeypatch.setattr(tr, "CHUNK_CHARS", 300)      # a chunk every few lines
    events = [ev("mark", tid=1 + i % 3, ts=i, name="m") for i in range(200)]
    events[150]["ts"] = 3                            # thread 1 out of order
    path = tmp_path / "t.jsonl"
    path.write_text(text(*events))
    g, t = read_grouped(path), read_trace(path)
    assert g.events == t.events == events and g.by_thread() == t.by_thread()
    assert [e["ts"] for e in g.by_thread()[1]][:3] == [0, 3, 3]
    path.write_text(text(*events[:120], ev("mark", name=1), *events[120:]))
    with pytest.raises(TraceError, match=r":122: error: mark event: name must be a string"):
        read_grouped(path)
    lenient = read_grouped(path, strict=False)
    assert lenient.events == events[:120] and not lenient.complete
    assert sum(map(len, lenient.by_thread().values())) == 120 and "kept the 120" in lenient.warnings[0]
