"""The importers of other tools' output (strace, perf script, jfr print --json) refuse a
file whose events would not fit the memory limit before reading it: the estimate, the
limit and how to raise it, exit 2 (a limit) and no traceback (a sparse file of 1 TB: nothing read)."""
import subprocess
import sys
import time

import pytest

from qpn.frontends.trace_text import IMPORT_BYTES_PER_BYTE


@pytest.mark.parametrize("command, name, kind", [
    ("import-strace", "run.strace", "strace"),
    ("import-perf", "run.perf.txt", "perf script"),
    ("import-jfr", "run.json", "jfr print --json"),
])
def test_a_terabyte_of_tool_output_is_refused_before_it_is_read(tmp_path, command, name, kind):
    big = tmp_path / name
    with open(big, "wb") as fh:
        fh.truncate(10 ** 12)                   # sparse: no disk used
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "qpn.cli", command, str(big), "-o",
                          str(tmp_path / "out.jsonl"), "--memory-limit", "2GiB"],
                         capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - t0
    need = 10 ** 12 * IMPORT_BYTES_PER_BYTE[kind] / 2 ** 40
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr   # (a limit)
    assert f"error: importing the {kind} output in {big} (931.3 GiB) would need about " \
           f"{need:.1f} TiB, above the memory limit of 2.0 GiB" in out.stderr, out.stderr
    assert "import a shorter recording" in out.stderr
    assert not (tmp_path / "out.jsonl").exists()
    assert took < 60                            # (reading it would take hours)
