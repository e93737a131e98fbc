"""Output files (issue 15): checked before the work, written atomically through
symlinks, errors naming the user's path (never the hidden temp file)."""
import os
import stat
import sys

import pytest

import qpn.fileio as fileio
from qpn.cli import main
from qpn.fileio import OutputError, check_output, write_atomic

MODEL = "place a init 1\nplace b\ntransition t : a -> b delay exp(1)\ntransition u : b -> a delay exp(1)\n"


def test_fmt_write_keeps_a_symlink_and_updates_its_target(tmp_path, capsys):
    real = tmp_path / "real.qpn"
    real.write_text("place   a   init 1\n")
    os.chmod(real, 0o640)
    link = tmp_path / "link.qpn"
    link.symlink_to(real)
    assert main(["fmt", "--write", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().endswith("\nplace a init 1\n")      # formatted
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no temp left


def test_write_atomic_through_a_chain_of_links_and_a_dangling_one(tmp_path):
    (tmp_path / "t.txt").write_text("old")
    (tmp_path / "l1").symlink_to("t.txt")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    write_atomic(tmp_path / "l2", "new")
    assert (tmp_path / "t.txt").read_text() == "new" and (tmp_path / "l2").is_symlink()
    (tmp_path / "dangling").symlink_to("made.txt")
    write_atomic(tmp_path / "dangling", "x")
    assert (tmp_path / "made.txt").read_text() == "x" and (tmp_path / "dangling").is_symlink()


def test_solve_json_into_a_missing_directory_is_refused_before_solving(tmp_path, capsys, monkeypatch):
    import qpn.solvers.cli
    model = tmp_path / "m.qpn"
    model.write_text(MODEL)

    def no_work(*a, **k):
        raise AssertionError("the model was loaded before the output was checked")
    monkeypatch.setattr(qpn.solvers.cli, "load_model", no_work)
    out = str(tmp_path / "nope" / "r.json")
    assert main(["solve", str(model), "--json", out]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: cannot write {out}: directory {tmp_path / 'nope'} does not exist",
                                f"hint: create it first: mkdir -p {tmp_path / 'nope'}"]
    assert main(["solve", str(model), "--csv", str(tmp_path)]) == 2
    assert f"error: cannot write {tmp_path}: it is a directory" in capsys.readouterr().err


def test_trace_output_is_checked_before_the_program_runs(tmp_path, capsys):
    marker = tmp_path / "ran"
    out = str(tmp_path / "missing" / "run.jsonl")
    rc = main(["trace", "-o", out, "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    assert rc == 2 and not marker.exists()
    assert capsys.readouterr().err.startswith(
        f"error: cannot write {out}: directory {tmp_path / 'missing'} does not exist")


@pytest.mark.parametrize("argv", [
    ["build", "{tmp}/no-such-trace.jsonl", "-o", "{out}"],
    ["synth", "{tmp}/no-such-model.qpn", "-o", "{out}"],
    ["import-persik", "{tmp}/no-such.log", "-o", "{out}"],
    ["dot", "{tmp}/no-such-model.qpn", "-o", "{out}"],
])
def test_every_writer_checks_its_output_first(tmp_path, capsys, argv):
    out = str(tmp_path / "missing" / "x.out")
    argv = [a.format(tmp=tmp_path, out=out) for a in argv]
    assert main(argv) == 2     # the missing output is found before the missing input
    assert capsys.readouterr().err.startswith(f"error: cannot write {out}: directory ")


def test_unwritable_directory_is_named(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(fileio.tempfile, "mkstemp", refuse)   # as root, chmod would not stop us
    with pytest.raises(OutputError) as info:
        check_output(tmp_path / "r.json")
    assert str(info.value) == (f"error: cannot write {tmp_path / 'r.json'}: directory {tmp_path} is not "
                               "writable (Permission denied)\nhint: choose another output path, or "
                               "fix the directory's permissions")
    with pytest.raises(OutputError, match=r"cannot write .*r\.json: directory .* is not writable"):
        write_atomic(tmp_path / "r.json", "x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_for_real(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="is not writable"):
            check_output(ro / "r.json")
    finally:
        ro.chmod(0o755)


def test_write_atomic_error_names_the_users_file_not_the_temp(tmp_path):
    with pytest.raises(OutputError) as info:
        write_atomic(tmp_path / "gone" / "m.qpn", "x")
    assert str(info.value).startswith(f"error: cannot write {tmp_path / 'gone' / 'm.qpn'}: directory")
    assert ".tmp" not in str(info.value)


def test_standard_output_and_no_output_pass():
    check_output(None)
    check_output("-")


def test_verify_output_directory_is_probed(tmp_path):
    fileio.check_output_dir(tmp_path)
    with pytest.raises(OutputError, match="not a directory"):
        fileio.check_output_dir(tmp_path / "none")


# What is already at an output path stays what it was (issue 43): a FIFO or a
# device node is written to, never renamed over; owners and hard links kept.

def _read_fifo(path, into):
    with open(path, "rb") as fh:
        into.append(fh.read())


def test_an_output_onto_a_fifo_is_written_into_it_and_the_fifo_stays(tmp_path):
    import threading
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=_read_fifo, args=(fifo, got))
    reader.start()
    check_output(fifo)
    write_atomic(fifo, "text\n")
    reader.join(10)
    assert got == [b"text\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_qpn_report_onto_a_private_device_node_leaves_the_node_a_node(tmp_path, capsys):
    null = tmp_path / "null"
    full = tmp_path / "full"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD (run as root); the FIFO test covers the rest")
    model = tmp_path / "m.qpn"
    model.write_text(MODEL)
    assert main(["report", str(model), "-o", str(null), "--method", "ctmc"]) == 0
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    with pytest.raises(OutputError, match="No space left on device"):
        write_atomic(full, "x")       # /dev/full's error, the node kept
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "m.qpn", "null"]   # no temp left


def test_an_output_onto_a_socket_is_refused(tmp_path):
    import socket
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(OutputError, match="it is a socket"):
            check_output(path)
        with pytest.raises(OutputError, match="it is a socket"):
            write_atomic(path, "x")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_fmt_write_keeps_a_hard_link_one_file(tmp_path):
    a = tmp_path / "a.qpn"
    a.write_text("place   a   init 1\n")
    b = tmp_path / "b.qpn"
    os.link(a, b)
    assert main(["fmt", "--write", str(b)]) == 0
    assert os.stat(a).st_ino == os.stat(b).st_ino and os.stat(a).st_nlink == 2
    assert a.read_text().endswith("\nplace a init 1\n")


def test_a_file_rewritten_in_place_gets_its_old_text_back_when_the_write_fails(tmp_path, monkeypatch):
    a = tmp_path / "a.txt"
    a.write_text("old text")
    os.link(a, tmp_path / "b.txt")
    real_fsync = os.fsync

    def full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OutputError, match=r"a\.txt: No space left on device"):
        write_atomic(a, "a much longer new text")
    monkeypatch.setattr(fileio.os, "fsync", real_fsync)
    assert a.read_text() == "old text"


def test_fmt_write_keeps_the_owner_and_group_of_another_users_file(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can write another user's file and choose its owner")
    f = tmp_path / "theirs.qpn"
    f.write_text("place   a   init 1\n")
    os.chown(f, 4321, 4322)
    os.chmod(f, 0o664)
    assert main(["fmt", "--write", str(f)]) == 0
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o664)
    assert f.read_text().endswith("\nplace a init 1\n")


def test_dash_is_standard_output_for_every_writer_not_a_file_named_dash(tmp_path, monkeypatch):
    # check_output let "-" pass as standard output while write_atomic created ./-
    import subprocess
    monkeypatch.chdir(tmp_path)
    qpe = os.path.join(os.path.dirname(__file__), "..", "data", "qpe", "bcmp_twin.qpe")
    out = subprocess.run([sys.executable, "-m", "qpn.cli", "convert", os.path.abspath(qpe), "-o", "-"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("# Imported from the QPME model bcmp_twin.qpe")
    assert "net " in out.stdout and not (tmp_path / "-").exists()
    assert os.listdir(tmp_path) == []
