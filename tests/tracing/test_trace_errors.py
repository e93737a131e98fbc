"""Malformed traces (issue 15): every one is a located error from trace-check AND
build (file:line, the field, what was expected), never a traceback."""
import json

import pytest

from qpn.frontends.trace import TraceError, read_trace
from qpn.cli import main

HEADER = {"kind": "header", "format": "qpn-trace", "version": 1, "source": "test",
          "capabilities": {"thread_cpu": True},
          "program": {"argv": ["prog.py"], "pid": 1}, "runtime": {"cpus": 2, "gil": False}}


def ev(kind, tid=1, ts=0, **kw):
    return {"kind": kind, "tid": tid, "ts": ts, **kw}


EVENTS = [ev("thread_start", ts=0, cpu=0, name="main"),
          ev("object", ts=1, cpu=1, obj=7, type="lock"),
          ev("acquire", ts=2, cpu=2, obj=7, dur=5),
          ev("release", ts=9, cpu=3, obj=7, hold=3),
          ev("thread_end", ts=10, cpu=4)]


def write(path, header=HEADER, events=EVENTS, raw: bytes | None = None):
    lines = [json.dumps(header).encode()] + [json.dumps(e).encode() for e in events]
    data = b"\n".join(lines) + b"\n" if raw is None else raw
    path.write_bytes(data)
    return str(path)


def both(path, capsys):
    """trace-check's and build's exit codes and first stderr lines."""
    out = []
    for argv in (["trace-check", path], ["build", path, "-o", path + ".qpn"]):
        rc = main(argv)
        err = capsys.readouterr().err
        assert "Traceback" not in err
        out.append((rc, err.splitlines()[0] if err else ""))
    return out


@pytest.mark.parametrize("field, value, message", [
    ("program", "prog.py", 'header field program must be an object, got "prog.py"'),
    ("program", {"argv": "prog.py"}, 'header field program.argv must be a list of strings, got "prog.py"'),
    ("runtime", [2], "header field runtime must be an object, got [2]"),
    ("runtime", {"cpus": "two"}, 'header field runtime.cpus must be an integer >= 0, got "two"'),
    ("machine", {"loadavg_before": "abc"},
     'header field machine.loadavg_before must be a list of finite numbers >= 0, got "abc"'),
    ("machine", {"others_runnable": float("nan"), "samples": 9},
     "header field machine.others_runnable must be a finite number >= 0, got NaN"),
    ("machine", {"python_loop_ns": 9223372036854775808},     # found by fuzzing: a traceback
     "header field machine.python_loop_ns must be a list of finite numbers >= 0, got 9223372036854775808"),
    ("capabilities", [["gil"]], "capabilities must be an object of name: true/false "
     "(or a list of the names that are true)"),
    ("start_ns", "0", 'header field start_ns must be an integer of 64 bits, got "0"'),
    ("source", ["x"], 'header field source must be a string, got ["x"]'),
])
def test_bad_header_fields_fail_check_and_build_alike(tmp_path, capsys, field, value, message):
    path = write(tmp_path / "t.jsonl", {**HEADER, field: value})
    for rc, line in both(path, capsys):
        assert rc == 2 and line == f"{path}:1: error: {message}"


@pytest.mark.parametrize("index, field, value, message", [
    (2, "dur", None, "acquire event: dur must be an integer >= 0 (ns), got null"),
    (0, "tid", None, "thread_start event: tid must be an integer, got null"),
    (3, "ts", 10 ** 30, "release event: ts must be an integer of 64 bits (ns), got 1000000000000000000000000000000"),
    (3, "hold", float("inf"), "release event: hold must be an integer >= 0 (ns), got Infinity"),
    (2, "dur", float("nan"), "acquire event: dur must be an integer >= 0 (ns), got NaN"),
    (2, "cpu", -1, "acquire event: cpu must be an integer >= 0 (ns), got -1"),
    (0, "name", None, "thread_start event: name must be a string, got null"),
    (1, "type", "mutex", "object event: type must be one of"),
])
def test_bad_event_fields_fail_check_and_build_alike(tmp_path, capsys, index, field, value, message):
    events = [dict(e) for e in EVENTS]
    events[index][field] = value
    path = write(tmp_path / "t.jsonl", events=events)
    for rc, line in both(path, capsys):
        assert rc == 2 and line.startswith(f"{path}:{index + 2}: error: {message}")


def test_random_bytes_are_a_located_error_not_unicode_decode_error(tmp_path, capsys):
    good = write(tmp_path / "good.jsonl")
    lines = open(good, "rb").read().splitlines(keepends=True)
    path = write(tmp_path / "t.jsonl", raw=b"".join(lines[:3]) + b'{"kind": "mark\xff\xfe"}\n'
                 + b"".join(lines[3:]))
    for rc, line in both(path, capsys):
        assert rc == 2 and line == f"{path}:4:15: error: the line is not UTF-8 text: byte 0xff cannot be decoded"
    path = write(tmp_path / "h.jsonl", raw=b"\xff" + b"".join(lines))
    for rc, line in both(path, capsys):
        assert rc == 2 and line == f"{path}:1:1: error: the line is not UTF-8 text: byte 0xff cannot be decoded"


def test_duplicated_thread_start_is_an_error(tmp_path, capsys):
    path = write(tmp_path / "t.jsonl", events=EVENTS[:3] + [EVENTS[0]] + EVENTS[3:])
    for rc, line in both(path, capsys):
        assert rc == 2 and line == (f"{path}:5: error: thread 1 started twice: thread_start at line 2 "
                                    "(ts 0) and at line 5 (ts 0), with no thread_end between")
    lenient = read_trace(path, strict=False)           # the copy dropped, its line named
    assert lenient.events == EVENTS and lenient.warnings == [
        f"{path}:5: thread 1 started twice: thread_start at line 2 (ts 0) and at line 5 (ts 0), "
        "with no thread_end between; dropped (line 5)"]


def test_thread_id_reused_after_its_end_is_fine_in_any_file_order():
    from io import StringIO
    events = EVENTS + [ev("thread_start", ts=20, name="again"), ev("thread_end", ts=30)]
    src = "\n".join(json.dumps(e) for e in [HEADER] + events[::-1]) + "\n"
    assert len(read_trace(StringIO(src)).events) == 7


def test_thread_ended_twice_is_an_error(tmp_path):
    path = write(tmp_path / "t.jsonl", events=EVENTS + [ev("thread_end", ts=11)])
    with pytest.raises(TraceError, match="thread 1 ended twice: thread_end at line 6 "):
        read_trace(path)


@pytest.mark.parametrize("bad, message", [
    ('{"kind":"mark","tid":1,"ts":5,"name":' + "[" * 100000 + "]" * 100000 + "}", "invalid JSON: nested too deeply"),
    ('{"kind":"mark","tid":1,"ts":' + "9" * 5000 + ',"name":"x"}', "invalid JSON: Exceeds the limit (4300 digits)"),
    ("[1, 2]", "an event must be a JSON object"),
])
def test_unparseable_lines_are_located(tmp_path, capsys, bad, message):
    good = open(write(tmp_path / "g.jsonl")).read().splitlines()
    path = str(tmp_path / "t.jsonl")
    open(path, "w").write("\n".join(good[:3] + [bad] + good[3:]) + "\n")
    for rc, line in both(path, capsys):
        assert rc == 2 and line.startswith(f"{path}:4") and message in line


def test_truncated_last_line_is_an_error_with_a_hint_and_lenient_keeps_the_rest(tmp_path, capsys):
    good = open(write(tmp_path / "g.jsonl")).read()
    path = str(tmp_path / "t.jsonl")
    open(path, "w").write(good[:-12])
    assert main(["trace-check", path]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"{path}:6: error: truncated last line (the trace was cut off)"
    assert err.splitlines()[-1] == "hint: --lenient keeps the events before it"
    assert main(["trace-check", "--lenient", path]) == 0
    assert "warning: " + f"{path}:6: truncated last line" in capsys.readouterr().err


def test_byte_order_mark_is_accepted(tmp_path):
    good = open(write(tmp_path / "g.jsonl"), "rb").read()
    (tmp_path / "b.jsonl").write_bytes(b"\xef\xbb\xbf" + good)
    assert len(read_trace(tmp_path / "b.jsonl").events) == 5
