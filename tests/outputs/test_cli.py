"""The command line: fmt keeps comments and writes atomically; import stays light."""
import os
import subprocess
import sys

import pytest

import qpn
from qpn.cli import main
from qpn.fileio import write_atomic

from conftest import MODELS

COMMENTED = """# Header of the whole model.

net demo

# number of threads
param threads = 4   # trailing note

place idle init threads
place busy queue ps service exp(10 ms)   # the CPU

transition start {   # about start
    # first mode
    mode a : idle -> busy weight 1
    mode b : idle -> busy weight 2  # second mode
}
transition stop : busy -> idle
# the end
"""


def test_fmt_write_keeps_every_comment(tmp_path, capsys):
    f = tmp_path / "m.qpn"
    f.write_text(COMMENTED)
    assert main(["fmt", "--write", str(f)]) == 0
    out = f.read_text()
    for c in [l.split("#", 1)[1].strip() for l in COMMENTED.splitlines() if "#" in l]:
        assert c in out, c
    assert qpn.parse(out) == qpn.parse(COMMENTED)
    assert main(["fmt", "--check", str(f)]) == 0
    # formatting is idempotent
    assert main(["fmt", "--write", str(f)]) == 0
    assert f.read_text() == out


def test_fmt_keeps_a_double_hash_comment_as_written(tmp_path, capsys):
    """'## Section' stays '## Section' (it was printed '# # Section'), in the core
    language and in a software block; a fixed point of fmt."""
    text = ("## Model of a pool\n\nnet x\n\n## Parameters\nparam n = 2\n\nsoftware {\n"
            "    ## Resources\n    cpu host cores 2 ps\n\n"
            "    pool w size n {\n        ## the work\n        cpu exp(1 ms) on host\n    }\n}\n")
    f = tmp_path / "m.qpn"
    f.write_text(text)
    assert main(["fmt", "--write", str(f)]) == 0
    out = f.read_text()
    for line in ("## Model of a pool", "## Parameters", "    ## Resources", "        ## the work"):
        assert line + "\n" in out, (line, out)
    assert "# #" not in out and qpn.parse(out) == qpn.parse(text)
    assert main(["fmt", "--check", str(f)]) == 0


def test_fmt_write_on_error_leaves_file_untouched(tmp_path, capsys):
    f = tmp_path / "m.qpn"
    bad = "place a\ntransition t : a -> b\n"
    f.write_text(bad)
    assert main(["fmt", "--write", str(f)]) == 2
    assert f.read_text() == bad
    assert os.listdir(tmp_path) == ["m.qpn"]      # no temp files left behind


def test_write_atomic_keeps_old_file_when_writing_fails(tmp_path):
    f = tmp_path / "out.txt"
    f.write_text("old")
    os.chmod(f, 0o640)

    class Boom(str):
        def encode(self, *a):
            raise RuntimeError("disk full")
    with pytest.raises(RuntimeError):
        write_atomic(f, Boom("new"))
    assert f.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]
    write_atomic(f, "new")
    assert f.read_text() == "new" and (os.stat(f).st_mode & 0o777) == 0o640


def test_flatten_command_prints_a_parsable_flat_net(capsys):
    assert main(["flatten", f"{MODELS}/subnets.qpn", "--set", "front.threads=6"]) == 0
    flat = qpn.parse(capsys.readouterr().out)
    assert flat.is_flat and flat.param_values()["front.threads"] == 6


def test_dot_without_graphviz_writes_dot_and_explains(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    out = tmp_path / "m.svg"
    assert main(["dot", f"{MODELS}/subnets.qpn", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dot -Tsvg" in err and (tmp_path / "m.dot").exists()
    text = (tmp_path / "m.dot").read_text()
    assert 'subgraph "cluster_front"' in text and 'subgraph "cluster_back"' in text
    assert "arrowhead=odot" not in text
    main(["dot", f"{MODELS}/priorities.qpn", "-o", str(tmp_path / "p.dot")])
    assert "arrowhead=odot" in (tmp_path / "p.dot").read_text()     # inhibitor arc


def test_check_exit_status_on_structural_error(tmp_path, capsys):
    f = tmp_path / "trap.qpn"
    f.write_text("place a init 1\nplace b\ntransition t1 : a -> b\ntransition t2 : b -> a\n")
    assert main(["check", str(f)]) == 1
    assert "timeless trap" in capsys.readouterr().out


def test_import_qpn_is_light():
    code = ("import sys, qpn; heavy = [m for m in ('scipy', 'sympy', 'lark', 'networkx') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_console_script_runs_without_traceback(tmp_path):
    f = tmp_path / "bad.qpn"
    f.write_text("place a init 1.5\n")
    proc = subprocess.run([sys.executable, "-m", "qpn.cli", "check", str(f)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "bad.qpn:1:14: error:" in proc.stderr


def test_readme_tour_is_the_bundled_model_and_commands_are_there():
    root = os.path.dirname(MODELS)
    readme = open(os.path.join(root, "README.md")).read()
    model = open(os.path.join(MODELS, "webserver.qpn")).read()
    assert model.strip() in readme
    block = readme.split("<!-- commands:begin -->")[1].split("<!-- commands:end -->")[0]
    cmds = [l for l in block.splitlines() if l and not l.startswith(("#", "```"))]
    assert len(cmds) == 2 and "pip install -e" in cmds[0] and "pytest" in cmds[1]
