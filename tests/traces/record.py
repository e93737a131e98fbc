"""Record the traces the structure tests read (tests/analyze_support.py RECORDINGS).

Run on a quiet machine after a change to the tracer, the trace format or a test
program; it rewrites tests/traces/*.jsonl.gz::

    python tests/traces/record.py            # all recordings
    python tests/traces/record.py mapreduce  # those of programs whose name starts so
    python tests/traces/record.py verify     # the small suite of tests/verification/test_verify.py
    python tests/traces/record.py unseen     # the programs written blind (tests/programs/unseen)

Each trace is taken like the live tests take theirs (own session, autogroup
nice -19); of ``tries`` traces of one recording slot taken while the rest of the
machine stayed quiet (tests/measured_load.py), the one whose threads used the
least CPU is kept (other load only ever adds CPU time).
"""
from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from measured_load import LoadProbe  # noqa: E402
from analyze_support import (RECORDINGS, ROOT, UNSEEN, UNSEEN_TRACES,  # noqa: E402
                              WAITRESS_TRACE, recorded_path, trace_runs, trace_unseen,
                              trace_waitress)


class _Factory:
    """The bit of pytest's tmp_path_factory that trace_runs uses."""

    def __init__(self, base: str):
        self.base, self.n = base, 0

    def mktemp(self, name: str):
        import pathlib
        self.n += 1
        path = pathlib.Path(self.base) / f"{name}{self.n}"
        path.mkdir()
        return path


def _save(src: str, out: str) -> None:
    with open(src, "rb") as fh, open(out, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as dst:
        shutil.copyfileobj(fh, dst)
    print(f"{os.path.relpath(out, ROOT)}: {os.path.getsize(out)} bytes")


def _quietly(take, what: str, tries: int):
    """Results of ``take()`` over ``tries`` attempts during which the rest of the machine
    stayed quiet (tests/measured_load.py); exits when none did."""
    out, loads = [], []
    for _ in range(tries):
        probe = LoadProbe()
        result = take()
        load = probe.stop()
        loads.append(load["foreign_cores"])
        if not load["busy"]:
            out.append(result)
    if not out:
        sys.exit(f"{what}: the machine was busy in every attempt (other work on {loads} cores): "
                 "record on a quiet machine")
    return out


def record_verify_small(tmp: str) -> None:
    """Measure and trace tests/verification/test_verify.py's small suite for its recorded test."""
    import pathlib
    from test_verify import RECORDED, SMALL
    from qpn.frontends.verify import verify
    suite = pathlib.Path(tmp) / "verify_small"
    suite.mkdir()
    (suite / "suite.toml").write_text(SMALL)
    _quietly(lambda: verify(str(suite)), "the small verify suite", 1)
    os.makedirs(RECORDED, exist_ok=True)
    shutil.copy(suite / ".verify-cache.json", os.path.join(RECORDED, "verify-cache.json"))
    for i in range(2):
        _save(str(suite / "verify" / f"trace{i}.jsonl"), os.path.join(RECORDED, f"trace{i}.jsonl.gz"))
        shutil.copy(suite / "verify" / f"trace{i}.jsonl.key", os.path.join(RECORDED, f"trace{i}.jsonl.key"))


def record_unseen(tmp: str, prefix: str) -> None:
    """Trace the programs written blind to the analyzer (UNSEEN), each with its children,
    into tests/traces/unseen/<stem>/ (gzipped)."""
    import glob
    for name in UNSEEN:
        if not (name.startswith(prefix) or prefix == "unseen"):
            continue
        out = os.path.join(tmp, name[:-3])
        os.makedirs(out)
        path = _quietly(lambda: trace_unseen(out, name), name, 1)[0]
        dest = os.path.join(UNSEEN_TRACES, name[:-3])
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for f in sorted(glob.glob(path[:-6] + "*.jsonl")):
            _save(f, os.path.join(dest, os.path.basename(f) + ".gz"))


def record(prefix: str = "", tries: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        factory = _Factory(tmp)
        if "verify_small".startswith(prefix) or prefix.startswith("verify"):
            record_verify_small(tmp)
        if "waitress".startswith(prefix) or prefix.startswith("waitress"):
            path = os.path.join(tmp, "waitress.jsonl")
            _quietly(lambda: trace_waitress(path), "waitress", 1)
            _save(path, WAITRESS_TRACE)
        if prefix == "unseen" or any(n.startswith(prefix) for n in UNSEEN):
            record_unseen(tmp, prefix)
        for name, args, runs in RECORDINGS:
            if not name.startswith(prefix) or prefix == "unseen":
                continue
            for i in range(runs):
                quiet = _quietly(lambda: trace_runs(factory, name, *args)[0], f"{name} {args}", tries)
                best = min(quiet, key=lambda t: t[1])[0]
                _save(best.path, recorded_path(name, args, i))


if __name__ == "__main__":
    record(sys.argv[1] if len(sys.argv) > 1 else "")
