"""Every user mistake gives a located error: file:line:col, the line, a caret,
what was expected, and a did-you-mean hint where one exists."""
import pytest

import qpn
from qpn.cli import main
from qpn.errors import ModelError

from bad_inputs import CASES
from located import assert_located


@pytest.mark.parametrize("cid,src,fragment,line,col", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_located(cid, src, fragment, line, col):
    assert_located(src, fragment, line, col)


def test_at_least_forty_distinct_bad_inputs():
    assert len({c[0] for c in CASES}) >= 40
    assert len({c[1] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("src,suggestion", [
    ("place idle init 1\nplace cpu queue ps service exp(1)\ntransition t : idle -> cpus\n", "cpu"),
    ("place a\ntranistion t : a -> a\n", "transition"),
    ("param t = 5 mss\n", "ms"),
    ("place a queue is service expo(1)\n", "exp"),
    ("param abc = 1\nparam x = 2 * abd\n", "abc"),
    ("colors job = {alpha, beta}\nplace p : job init alpah\n", "alpha"),
    ("subnet S(threads = 1) { place p init threads }\ninstance s = S(thread = 2)\n", "threads"),
    ("param a = sqr(4)\n", "sqrt"),
])
def test_did_you_mean(src, suggestion):
    with pytest.raises(ModelError) as info:
        qpn.parse(src)
    assert info.value.did_you_mean == suggestion
    assert f"did you mean '{suggestion}'?" in str(info.value)


def test_expected_is_stated():
    with pytest.raises(ModelError) as info:
        qpn.parse("place a\ntransition t : a\nplace b\n")
    assert "'->'" in info.value.expected


@pytest.mark.parametrize("src,hint", [
    ("net d\nsubnet S {\n  input a\n}\n", "'subnet Name() { ... }'"),
    ("place p {\n}\n", "a place's options follow its name"),
    ("place a\ntransition t : a -> a {\n mode m : a -> a\n}\n", "'transition t { mode a : p -> q ... }'"),
])
def test_an_unexpected_brace_gets_the_hint_of_its_statement(src, hint):
    # a subnet without its parameter list was told how to write a transition's modes
    with pytest.raises(ModelError) as info:
        qpn.parse(src)
    assert info.value.hint and hint in info.value.hint


@pytest.mark.parametrize("cid,src,fragment,line,col", CASES[::7], ids=[c[0] for c in CASES[::7]])
def test_cli_prints_no_traceback(tmp_path, capsys, cid, src, fragment, line, col):
    f = tmp_path / "bad.qpn"
    f.write_text(src)
    status = main(["check", str(f)])
    err = capsys.readouterr().err
    assert status == 2
    assert "Traceback" not in err
    assert f"bad.qpn:{line}:{col}: error:" in err and fragment in err


def test_cli_bad_parameter_override(tmp_path, capsys):
    f = tmp_path / "m.qpn"
    f.write_text("param threads = 4\nplace p init threads\n")
    assert main(["check", str(f), "--set", "threads=four"]) == 2
    err = capsys.readouterr().err
    assert "parameter 'threads' must be a number" in err and "Traceback" not in err
    assert main(["check", str(f), "--set", "thread=4"]) == 2
    assert "unknown parameter 'thread'" in capsys.readouterr().err
    assert main(["check", str(f), "--set", "threads"]) == 2
    assert "--set expects name=value" in capsys.readouterr().err


def test_cli_missing_file(capsys):
    assert main(["check", "no/such/file.qpn"]) == 2
    assert "no such model file" in capsys.readouterr().err


def test_include_cycle(tmp_path):
    (tmp_path / "a.qpn").write_text('include "b.qpn"\n')
    (tmp_path / "b.qpn").write_text('include "a.qpn"\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(tmp_path / "a.qpn"))
    assert "include cycle: a.qpn -> b.qpn -> a.qpn" in info.value.message


def test_error_in_included_file_points_there(tmp_path):
    (tmp_path / "lib.qpn").write_text("place ok\nplace ok\n")
    (tmp_path / "main.qpn").write_text('include "lib.qpn"\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(tmp_path / "main.qpn"))
    assert info.value.loc.file.endswith("lib.qpn") and info.value.loc.line == 2


def test_non_utf8_model_is_located_by_line_and_column(tmp_path, capsys):
    f = tmp_path / "latin.qpn"
    f.write_bytes(b"place a\nplace b init 1  # caf\xe9\n")
    with pytest.raises(ModelError) as info:
        qpn.load(str(f))
    err = info.value
    assert (err.loc.file, err.loc.line, err.loc.col) == (str(f), 2, 22)
    assert err.message == "the file is not UTF-8 text: byte 0xe9 cannot be decoded (invalid continuation byte)"
    lines = str(err).splitlines()
    assert lines[1] == " 2 | place b init 1  # caf\ufffd"
    assert lines[2] == "   |                      ^"
    assert main(["check", str(f)]) == 2
    out = capsys.readouterr().err
    assert out.startswith(f"{f}:2:22: error: the file is not UTF-8 text") and "Traceback" not in out


def test_non_utf8_column_counts_characters(tmp_path):
    f = tmp_path / "m.qpn"
    f.write_bytes("place é".encode() + b"\xff\n")
    with pytest.raises(ModelError) as info:
        qpn.load(str(f))
    assert (info.value.loc.line, info.value.loc.col) == (1, 8)


def test_non_utf8_include_points_into_the_included_file(tmp_path):
    (tmp_path / "lib.qpn").write_bytes(b"place ok\n\xff\n")
    (tmp_path / "main.qpn").write_text('include "lib.qpn"\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(tmp_path / "main.qpn"))
    loc = info.value.loc
    assert loc.file.endswith("lib.qpn") and (loc.line, loc.col) == (2, 1)


def test_non_utf8_sample_file_names_its_line(tmp_path):
    (tmp_path / "s.txt").write_bytes(b"1.0\n2.0\n\xff\n")
    (tmp_path / "m.qpn").write_text('place a queue is service empirical("s.txt")\n')
    with pytest.raises(ModelError) as info:
        qpn.load(str(tmp_path / "m.qpn"))
    assert info.value.message == f"{tmp_path / 's.txt'}:3: the sample file is not UTF-8 text (byte 0xff)"
    assert (info.value.loc.line, info.value.loc.col) == (1, 36)  # at the file name


def test_byte_order_mark_is_accepted(tmp_path):
    f = tmp_path / "bom.qpn"
    f.write_bytes(b"\xef\xbb\xbfplace a init 1\n")
    assert [p.name for p in qpn.load(str(f)).places] == ["a"]


def test_long_machine_written_sum_is_an_error_not_a_recursion_crash():
    with pytest.raises(ModelError) as info:
        qpn.parse("param a = " + " + ".join(["1"] * 20000) + "\n", "big.qpn")
    assert info.value.message == "expression nested more than 100 levels deep"
    # 100 levels are fine
    net = qpn.parse("param a = " + " + ".join(["1"] * 100) + "\n")
    assert net.param_values()["a"] == 100
