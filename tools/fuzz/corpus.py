"""Seed inputs: every model the project ships or its tests load, and every kind
of trace its tests read (the trace-format doc's example and test events, traces
``qpn synth`` writes for the synth test models, traces of the test programs)."""
from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL_GLOBS = ("models/*.qpn", "models/lib/*.qpn", "models/bench/*.qpn", "tests/models_*/*.qpn")
#: test programs traced for seeds by default: the quick ones with distinct shapes
#: (a barrier, a pool with a lock, a queue pipeline); ``all`` traces every one
QUICK_PROGRAMS = ("barrier_iterations.py", "conn_pool.py", "pipeline_chain.py")


def model_seeds() -> dict[str, str]:
    """name -> text of every shipped and test model, plus the model texts of the
    error catalogue (tests/bad_inputs.py), which reach the deeper checks."""
    out: dict[str, str] = {}
    for pattern in MODEL_GLOBS:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            with open(path, encoding="utf-8") as fh:
                out[os.path.relpath(path, ROOT)] = fh.read()
    for case in _bad_input_cases():
        out[f"tests/bad_inputs.py:{case[0]}"] = case[1]
    return out


def qpe_seeds() -> dict[str, bytes]:
    """name -> QPME XML: the bundled QPME files, the QPME files the tests read, and
    every shipped model that QPME can express, exported."""
    from qpn.dsl.qpe_export import qpn_to_qpe
    from qpn import compile_net, load
    from qpn.errors import QPNError
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "models/qpme/*.qpe"))
                       + glob.glob(os.path.join(ROOT, "tests/data/qpe/**/*.qpe"), recursive=True)):
        out[os.path.relpath(path, ROOT)] = _read(path)
    for path in sorted(glob.glob(os.path.join(ROOT, "models/*.qpn"))):
        try:
            xml = qpn_to_qpe(compile_net(load(path)))
        except QPNError:
            continue      # rr queues, inhibitor arcs ...: QPME cannot say it
        out[os.path.relpath(path, ROOT) + " as .qpe"] = xml.encode()
    return out


def pnml_seeds() -> dict[str, bytes]:
    """name -> PNML: the importer's example, the PNML files of the tests and every shipped
    plain-token model, exported."""
    from qpn.dsl.pnml import EXAMPLE, qpn_to_pnml
    from qpn import compile_net, load
    from qpn.errors import QPNError
    out = {"dsl/pnml.py:EXAMPLE": EXAMPLE}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/pnml/**/*.pnml"), recursive=True)):
        out[os.path.relpath(path, ROOT)] = _read(path)
    for path in sorted(glob.glob(os.path.join(ROOT, "models/*.qpn"))):
        try:
            xml = qpn_to_pnml(compile_net(load(path)))
        except QPNError:
            continue      # colors, modes: not a place/transition net
        out[os.path.relpath(path, ROOT) + " as .pnml"] = xml.encode()
    return out


def lqn_seeds() -> dict[str, bytes]:
    """name -> LQN text: the reader's example and the LQN files shipped and tested."""
    from qpn.dsl.lqn import EXAMPLE
    out = {"dsl/lqn.py:EXAMPLE": EXAMPLE}
    for pattern in ("models/lqn/*.lqn", "tests/data/lqn/*.lqn"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            out[os.path.relpath(path, ROOT)] = _read(path)
    return out


def _bad_input_cases() -> list[tuple]:
    path = os.path.join(ROOT, "tests", "bad_inputs.py")
    if not os.path.exists(path):
        return []
    scope: dict = {}
    with open(path, encoding="utf-8") as fh:
        exec(compile(fh.read(), path, "exec"), scope)       # a plain data module
    return [c for c in scope.get("CASES", []) if isinstance(c[1], str)]


# the events tests/tracing/test_trace_format.py round-trips (GOOD), as one valid trace
_HEADER = {"kind": "header", "format": "qpn-trace", "version": 1, "source": "test",
           "capabilities": {"thread_cpu": True, "lock_hold": True}}
_GOOD = [
    {"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0, "name": "main"},
    {"kind": "object", "tid": 1, "ts": 5, "cpu": 5, "obj": 7, "type": "queue", "capacity": 4,
     "site": "p.py:3"},
    {"kind": "put", "tid": 1, "ts": 10, "cpu": 9, "obj": 7, "item": 100, "dur": 0, "size": 1},
    {"kind": "get", "tid": 2, "ts": 11, "cpu": 1, "obj": 7, "item": 100, "dur": 9, "size": 0},
    {"kind": "thread_start", "tid": 2, "ts": 10, "cpu": 0, "name": "w", "parent": 1},
    {"kind": "acquire", "tid": 2, "ts": 30, "cpu": 15, "obj": 8, "dur": 0, "contended": False},
    {"kind": "release", "tid": 2, "ts": 70, "cpu": 55, "obj": 8, "hold": 40},
    {"kind": "io", "tid": 2, "ts": 80, "cpu": 60, "op": "read", "path": "/d", "bytes": 512,
     "dur": 20, "cpu_dur": 5},
    {"kind": "thread_end", "tid": 2, "ts": 130, "cpu": 100},
    {"kind": "thread_end", "tid": 1, "ts": 200, "cpu": 90}]


def trace_seeds(cache_dir: str, programs: str = "quick") -> dict[str, bytes]:
    """name -> bytes of each seed trace.  Traces that take a run to make (synth,
    the traced test programs) are kept in ``cache_dir`` for the next campaign;
    ``programs`` is ``quick``, ``all`` or ``none``."""
    os.makedirs(cache_dir, exist_ok=True)
    out: dict[str, bytes] = {}
    out["tests/tracing/test_trace_format.py:GOOD"] = "".join(
        json.dumps(e) + "\n" for e in [_HEADER] + _GOOD).encode()
    doc = os.path.join(ROOT, "docs", "trace-format.md")
    if os.path.exists(doc):
        with open(doc, encoding="utf-8") as fh:
            text = fh.read()
        if "## Example" in text:
            out["docs/trace-format.md:Example"] = (
                text.split("## Example")[1].split("```")[1].strip().removeprefix("json").strip()
                + "\n").encode()
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "models_synth", "*.qpn"))):
        name = os.path.splitext(os.path.basename(path))[0]
        dest = os.path.abspath(os.path.join(cache_dir, f"synth-{name}.jsonl"))
        if not os.path.exists(dest):
            _synth(path, dest)
        if os.path.exists(dest):
            out[f"synth:{os.path.relpath(path, ROOT)}"] = _read(dest)
    if programs != "none":
        progs = sorted(glob.glob(os.path.join(ROOT, "tests", "programs", "*.py")))
        if programs == "quick":
            progs = [p for p in progs if os.path.basename(p) in QUICK_PROGRAMS]
        for prog in progs:
            dest = os.path.join(cache_dir, "trace-" + os.path.basename(prog) + ".jsonl")
            if not os.path.exists(dest):
                _trace_program(prog, dest)
            if os.path.exists(dest):
                out[f"qpn trace:{os.path.relpath(prog, ROOT)}"] = _read(dest)
    return out


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _synth(model: str, dest: str) -> None:
    """``qpn synth`` is deterministic (simulated clock, seed 1); the model's path
    is relative so that the trace's header, and so its mutants, are the same in
    every checkout."""
    from qpn.cli import main
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["synth", os.path.relpath(model, ROOT), "-o", os.path.abspath(dest), "--time", "1s",
                  "--max-events", "400"])
    finally:
        os.chdir(cwd)


def _trace_program(prog: str, dest: str) -> None:
    # a subprocess: the tracer runs the program as a child and must not trace us
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-m", "qpn.cli", "trace", "-o", dest, "--timeout", "20", "--",
                    sys.executable, prog], cwd=ROOT, env=env, capture_output=True, timeout=60)
