"""`qpn build` on malformed traces: located errors, or (--lenient) a model of the valid part."""
import json

import pytest

import qpn
from qpn.frontends.analyze.synth import batch_trace, write
from qpn.cli import main


@pytest.fixture()
def good(tmp_path):
    path = tmp_path / "run.jsonl"
    write(batch_trace(tasks=40, workers=2), path)
    return path


def lines_of(path):
    return path.read_text().splitlines(keepends=True)


def run(capsys, *argv):
    rc = main(["build", *map(str, argv)])
    cap = capsys.readouterr()
    return rc, cap.err


def test_truncated_last_line(tmp_path, good, capsys):
    lines = lines_of(good)
    bad = tmp_path / "cut.jsonl"
    bad.write_text("".join(lines[:-1]) + lines[-1][:25])          # cut mid-line, no newline
    out = tmp_path / "m.qpn"
    rc, err = run(capsys, bad, "-o", out)
    assert rc == 2 and not out.exists()
    assert f"cut.jsonl:{len(lines)}: error: truncated last line" in err
    assert f" {len(lines)} | " + lines[-1][:25] in err              # the offending line
    rc, err = run(capsys, bad, "-o", out, "--lenient")
    assert rc == 0 and f"warning: {bad}:{len(lines)}: truncated last line" in err
    text = out.read_text()
    assert "The trace was malformed; this model describes its valid part only." in text
    qpn.parse(text)


def test_bad_json_in_the_middle(tmp_path, good, capsys):
    lines = lines_of(good)
    k = len(lines) // 2
    lines[k] = '{"kind":"put","tid":100,"ts":5,,}\n'
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines))
    out = tmp_path / "m.qpn"
    out.write_text("old model\n")
    rc, err = run(capsys, bad, "-o", out)
    assert rc == 2 and f"bad.jsonl:{k + 1}:" in err and "invalid JSON" in err
    assert out.read_text() == "old model\n"                       # left untouched
    rc, err = run(capsys, bad, "-o", out, "--lenient")
    assert rc == 0 and f"kept the {k - 1} valid event(s)" in err
    qpn.parse(out.read_text())


def test_unknown_event_kind(tmp_path, good, capsys):
    lines = lines_of(good)
    k = 7
    ev = json.loads(lines[k])
    ev["kind"] = "aquire"
    lines[k] = json.dumps(ev) + "\n"
    bad = tmp_path / "kind.jsonl"
    bad.write_text("".join(lines))
    rc, err = run(capsys, bad, "-o", tmp_path / "m.qpn")
    assert rc == 2
    assert f"kind.jsonl:{k + 1}: error: unknown event kind 'aquire' (did you mean 'acquire'?)" in err


def test_missing_header_and_missing_file(tmp_path, good, capsys):
    bad = tmp_path / "nohead.jsonl"
    bad.write_text("".join(lines_of(good)[1:]))
    rc, err = run(capsys, bad, "-o", tmp_path / "m.qpn")
    assert rc == 2 and "nohead.jsonl:1: error:" in err and "header" in err
    rc, err = run(capsys, tmp_path / "absent.jsonl", "-o", tmp_path / "m.qpn")
    assert rc == 2 and "absent.jsonl" in err


def test_prefix_without_work_is_reported(tmp_path, good, capsys):
    lines = lines_of(good)
    bad = tmp_path / "short.jsonl"
    bad.write_text("".join(lines[:4]) + '{"kind":"put"')               # header + 3 events
    rc, err = run(capsys, bad, "-o", tmp_path / "m.qpn", "--lenient")
    assert rc == 2 and "nothing to model" in err and "truncated last line" in err
