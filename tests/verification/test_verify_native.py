"""`qpn verify` of programs in any language: a C source compiled by the system's compiler,
traced with strace or perf ([build] tracer), measured and predicted."""
import os
import shutil
import subprocess

import pytest

from qpn.errors import QPNError
from qpn.frontends.verify import verify
from qpn.frontends.verify.manifest import load_suite
from conftest import ROOT_DIR

TASKPOOL = os.path.join(ROOT_DIR, "tests", "programs", "taskpool.c")
SUITES = os.path.join(ROOT_DIR, "suites")

C_SUITE = """
name = "taskpool_small"
[program]
path = "@PATH@"
args = ["{threads}", "{rounds}", "8", "2", "{work}/data.bin", "{work}/log.txt"]
@CFLAGS@
[params]
rounds = 3
[grid]
threads = [1, 2]
[build]
configs = [{rounds = 3, threads = 2}]
@TRACER@
[measure]
kind = "wall"
[predict]
expr = "1"
"""


def _suite(tmp_path, tracer="", cflags="", path=TASKPOOL):
    (tmp_path / "suite.toml").write_text(C_SUITE.replace("@PATH@", path).replace(
        "@TRACER@", tracer).replace("@CFLAGS@", cflags))
    return load_suite(str(tmp_path))


@pytest.mark.parametrize("tracer, cflags, msg", [
    ('tracer = "ltrace"', "", r"\[build\] tracer must be one of python, strace, perf"),
    ('tracer = "python"', "", "traces Python programs; taskpool.c is not one"),
    ("", "cflags = '-O3'", r"\[program\] cflags must be a list of strings"),
    ('tracer = "jfr"', "", r"tracer \"jfr\" records Java programs"),
])
def test_manifest_errors_for_native_programs(tmp_path, tracer, cflags, msg):
    with pytest.raises(QPNError, match=msg):
        _suite(tmp_path, tracer, cflags)


def test_a_c_program_is_traced_with_strace_by_default(tmp_path):
    assert _suite(tmp_path).tracer == "strace"
    assert _suite(tmp_path, 'tracer = "perf"').tracer == "perf"


def test_a_java_source_runs_in_the_jdk_and_is_recorded_with_jfr(tmp_path):
    java = os.path.join(ROOT_DIR, "tests", "programs", "TaskPool.java")
    suite = _suite(tmp_path, path=java)
    assert suite.tracer == "jfr"
    assert suite.command({"threads": 2, "rounds": 3})[:2] == ["java", java]


@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                    reason="needs a C compiler (Debian package gcc)")
def test_a_c_source_is_compiled_once_per_content_and_flags(tmp_path):
    suite = _suite(tmp_path)
    cmd = suite.command({"threads": 2, "rounds": 3})
    assert cmd[0].startswith(str(tmp_path / "verify" / "bin" / "taskpool-"))
    assert cmd[-2:] == [str(tmp_path / "verify" / "work" / "data.bin"),
                        str(tmp_path / "verify" / "work" / "log.txt")]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert float(out) > 0                                   # the rounds' wall time, printed
    with open(tmp_path / "verify" / "work" / "log.txt") as fh:
        assert [ln.split()[:2] for ln in fh] == [["round", "0"], ["round", "1"], ["round", "2"]]
    mtime = os.path.getmtime(cmd[0])
    assert suite.command({"threads": 1, "rounds": 3})[0] == cmd[0]
    assert os.path.getmtime(cmd[0]) == mtime                 # not compiled again
    other = _suite(tmp_path, cflags='cflags = ["-O1"]').command({"threads": 1, "rounds": 1})
    assert other[0] != cmd[0] and os.path.exists(other[0])


def test_a_c_source_that_does_not_compile_says_why(tmp_path):
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("needs a C compiler (Debian package gcc)")
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return nope; }\n")
    suite = _suite(tmp_path, path=str(bad))
    with pytest.raises(QPNError, match="compiling .*bad.c failed:[^$]*nope"):
        suite.command({"threads": 1, "rounds": 1})


@pytest.mark.measured
@pytest.mark.parametrize("name", ["c_taskpool", "c_taskpool_perf"])
def test_the_c_pool_is_predicted_within_15_percent_at_1_2_4_8_threads(name, tmp_path):
    """Issue 17: a pthreads program traced with strace and with perf, the same structure,
    every thread count within 15% of the measured rounds per second."""
    tracer = "strace" if name == "c_taskpool" else "perf"
    if shutil.which(tracer) is None or shutil.which("gcc") is None:
        pytest.skip(f"needs {tracer} and gcc")
    rep = verify(os.path.join(SUITES, name), out_dir=str(tmp_path), retrace=True)
    print("\n" + rep.table())
    assert [r["point"]["threads"] for r in rep.rows] == [1, 2, 4, 8]
    assert max(r["eps"] for r in rep.rows) <= 0.15, rep.table()
    with open(rep.model) as fh:
        model = fh.read()
    assert "barrier barrier_b parties threads + 1" in model
    assert "loop n_iterations times" in model and "fsync" in model


@pytest.mark.measured
def test_the_java_pool_is_predicted_within_15_percent_at_1_2_4_threads(tmp_path):
    """Issue 17: a Java pool (synchronized section, file reads) recorded with JFR; every
    thread count within 15% of the measured rounds per second."""
    if shutil.which("java") is None or shutil.which("jfr") is None:
        pytest.skip("needs a JDK with jfr")
    rep = verify(os.path.join(SUITES, "java_taskpool"), out_dir=str(tmp_path), retrace=True)
    print("\n" + rep.table())
    assert [r["point"]["threads"] for r in rep.rows] == [1, 2, 4]
    assert max(r["eps"] for r in rep.rows) <= 0.15, rep.table()
    with open(rep.model) as fh:
        assert "(the JIT's warm-up, warmup.py) left out" in fh.read()
