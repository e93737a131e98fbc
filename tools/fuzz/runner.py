"""Run one input through the CLI in-process and sort what happened.

Each command runs as ``qpn.cli.main(argv)`` with stdout and stderr captured, a
SIGALRM wall budget, and (in a worker process) an address-space limit, so a
runaway allocation becomes a MemoryError instead of a killed machine.

Outcome classes:

- ``OK``: exit 0.
- ``USER_ERROR``: exit != 0 with a message and no traceback.
- ``CRASH``: an exception other than the CLI's user errors escaped ``main``, a
  traceback was printed, the command exited non-zero saying nothing, or the
  worker died.
- ``HANG``: the command outlived its wall budget.
- ``MEMORY``: MemoryError (the address-space limit was hit).
- ``WRONG``: a quiet wrong answer: ``fmt`` printed a model that does not load again,
  or that ``fmt`` changes again; a solve that exited 0 with a result that fails the
  flow check (:mod:`.oracle`); an output written over a FIFO or device node.

``SUSPECT`` notes are reported but are not failures: a numpy RuntimeWarning, a
table with n/a, nan or inf that exited 0, a model error without file:line:col.
"""
from __future__ import annotations

import contextlib
import gc
import io
import os
import re
import shutil
import _thread
import signal
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field

from .corpus import ROOT

OK, USER_ERROR, CRASH, HANG, MEMORY, WRONG, SUSPECT = (
    "OK", "USER_ERROR", "CRASH", "HANG", "MEMORY", "WRONG", "SUSPECT")
FAILURES = (CRASH, HANG, MEMORY, WRONG)
PROJECT_DIRS = ("qpn", "solvers", "frontends", "dsl")

MODEL_FILE, TRACE_FILE, QPE_FILE, PNML_FILE, LQN_FILE = "m.qpn", "t.jsonl", "m.qpe", "m.pnml", "m.lqn"
#: the file each kind of input is written to (a "bundle" is a JSON object of file
#: name -> model text, m.qpn the main one: includes, diamonds and chains of them)
INPUT_FILE = {"model": MODEL_FILE, "trace": TRACE_FILE, "qpe": QPE_FILE, "pnml": PNML_FILE,
              "lqn": LQN_FILE, "bundle": MODEL_FILE, "outputs": MODEL_FILE}
#: where every solve writes its JSON, for the flow-check oracle
RESULT_FILE = "solve.json"
#: kinds whose commands run through their own function: kind -> (commands, run(name,
#: argv, budget) -> Outcome); tools/fuzz/outputs.py registers "outputs"
SPECIAL_KINDS: dict = {}
#: solver budgets that keep one solve well under a second: a small CTMC, short
#: simulations on one thread, imprecise results accepted
SOLVE_BUDGET = ["--limit", "20000", "--events", "4000", "-R", "2", "--wall", "1", "--threads", "1",
                "--workers", "1", "--seed", "1", "--allow-imprecise", "-q"]
#: the fast slice's budgets (tests/robustness/test_fuzz.py): a smaller CTMC and shorter runs
QUICK_SOLVE_BUDGET = ["--limit", "3000", "--events", "1000", "-R", "2", "--wall", "0.5",
                      "--threads", "1", "--workers", "1", "--seed", "1", "--allow-imprecise", "-q"]
MODEL_COMMANDS = {
    "check": ["check", MODEL_FILE],
    "show": ["show", MODEL_FILE],
    "fmt": ["fmt", MODEL_FILE],
    "flatten": ["flatten", MODEL_FILE],
    "solve": ["solve", MODEL_FILE, "--method", "auto", "--json", RESULT_FILE] + SOLVE_BUDGET,
}
#: the fast slice leaves out ``show``: it runs check's analysis again (the
#: reachability exploration, most of a model's time) before its summary
QUICK_MODEL_COMMANDS = {n: a for n, a in MODEL_COMMANDS.items() if n != "show"}
QUICK_MODEL_COMMANDS["solve"] = ["solve", MODEL_FILE, "--method", "auto", "--json",
                                 RESULT_FILE] + QUICK_SOLVE_BUDGET
TRACE_COMMANDS = {
    "trace-check": ["trace-check", TRACE_FILE],
    "trace-check --lenient": ["trace-check", TRACE_FILE, "--lenient"],
    # build's check is a simulation capped at 5 s by default, the whole budget (campaign 49:
    # 6.9 s in all); capped at 1 s like solve's --wall
    "build": ["build", TRACE_FILE, "-o", "built.qpn", "--check-wall", "1"],
}
#: the fast slice caps build's check (a simulation, 5 s by default) as it caps solve
QUICK_TRACE_COMMANDS = dict(TRACE_COMMANDS, build=TRACE_COMMANDS["build"][:-1] + ["0.5"])



def _foreign(f: str, budget: list[str]) -> dict[str, list[str]]:
    """Foreign model files (QPME, PNML, LQN): read (check), translated (convert) and solved."""
    return {"check": ["check", f], "convert": ["convert", f, "-o", "converted.qpn"],
            "solve": ["solve", f, "--method", "auto", "--json", RESULT_FILE] + budget}


class FuzzTimeout(BaseException):
    """Raised by the SIGALRM handler; a BaseException so no ``except Exception``
    in the code under test swallows it."""


@dataclass
class Outcome:
    """What one command did with one input."""

    command: str
    outcome: str
    rc: int | None = None
    signature: str | None = None        # for failures: exception type @ innermost project frame
    detail: str = ""                    # the message or the traceback's last lines
    seconds: float = 0.0
    notes: list = field(default_factory=list)       # (signature, detail) of SUSPECT notes


def project_frame(tb_or_frames) -> str:
    """``path:line (function)`` of the innermost frame in the project's code."""
    frames = (traceback.extract_tb(tb_or_frames) if not isinstance(tb_or_frames, list)
              else tb_or_frames)
    best = None
    for fr in frames:
        rel = os.path.relpath(fr.filename, ROOT) if os.path.isabs(fr.filename) else fr.filename
        if rel.split(os.sep)[0] in PROJECT_DIRS:
            best = f"{rel}:{fr.lineno} ({fr.name})"
    return best or "(outside the project)"


_TB_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def printed_frame(text: str) -> str:
    """The innermost project frame of a traceback printed as text."""
    frames = [traceback.FrameSummary(f, int(n), fn) for f, n, fn in _TB_LINE.findall(text)]
    return project_frame(frames)


#: qpn's message for a MemoryError no estimate foresaw (qpn/cli.py): a MEMORY failure
_UNFORESEEN = re.compile(r"error: out of memory in (\S+ \(\S+\)): an allocation failed")


def _on_alarm(signum, frame):
    raise FuzzTimeout()


def _normalized(msg: str) -> str:
    """A message with names and numbers blanked, to group notes of one kind."""
    msg = re.sub(r"'[^']*'", "'…'", msg)
    return re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "N", msg)[:120]


def run_command(name: str, argv: list[str], budget: float) -> tuple[Outcome, str]:
    """Run ``qpn argv`` in this process: (outcome, stdout)."""
    from qpn.cli import main
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), \
        io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    res = Outcome(name, OK)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                # the budget's alarm comes from a timer thread that runs the SIGALRM
                # handler in the main thread (interrupt_main), not from the kernel: a
                # library loaded earlier in the process (MPICH's UCX, a test's threads)
                # may block or take over the real signal, and then a command spun on
                # (seen in a pytest worker on both cores: the alarm never came)
                timer = threading.Timer(budget, _thread.interrupt_main, args=(signal.SIGALRM,))
                timer.daemon = True
                timer.start()
                try:
                    res.rc = main(argv)
                finally:
                    timer.cancel()
        except FuzzTimeout as exc:
            # where the alarm struck within a loop is chance: no line number
            where = re.sub(r":\d+ \(", " (", project_frame(exc.__traceback__))
            res.outcome, res.signature = HANG, f"HANG in {name} @ {where}"
        except MemoryError as exc:
            res.outcome = MEMORY
            res.signature = f"MemoryError @ {project_frame(exc.__traceback__)}"
        except SystemExit as exc:
            res.rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - this is what we look for
            res.outcome = CRASH
            res.signature = f"{type(exc).__name__} @ {project_frame(exc.__traceback__)}"
            res.detail = "".join(traceback.format_exception(exc)[-6:])[-1500:].replace(
                ROOT + os.sep, "")
        finally:
            signal.signal(signal.SIGALRM, old)
            gc.enable()                 # `qpn build` turns it off for its short process
    res.seconds = time.perf_counter() - t0
    # the scratch directory is no part of a message: drop it, so that signatures
    # and notes of two workers or two campaigns compare equal
    here = os.getcwd() + os.sep
    stdout, stderr = (_text(out).replace(here, ""), _text(err).replace(here, ""))
    if res.outcome == OK:
        if "Traceback (most recent call last)" in stderr + stdout:
            res.outcome = CRASH
            res.signature = f"printed traceback @ {printed_frame(stderr + stdout)}"
            res.detail = stderr[-1500:]
        elif (m := _UNFORESEEN.search(stderr)):
            res.outcome, res.signature = MEMORY, f"MemoryError @ {m[1]}"
            res.detail = stderr[-600:]
        elif res.rc != 0:
            res.outcome = USER_ERROR if (stderr.strip() or stdout.strip()) else CRASH
            res.detail = stderr.strip()[:600] or stdout.strip()[:600]
            if res.outcome == CRASH:
                res.signature = f"exit {res.rc} with no message in {name}"
    for w in caught:
        if issubclass(w.category, RuntimeWarning):
            where = os.path.relpath(w.filename, ROOT)
            if where.startswith(".."):         # a library's file: its package path
                where = w.filename.split("site-packages" + os.sep)[-1]
            res.notes.append((f"{w.category.__name__} in {name}: {_normalized(str(w.message))} "
                              f"@ {where}:{w.lineno}", str(w.message)))
    if name == "solve" and res.outcome == OK and re.search(r"\b(nan|inf)\b|n/a", stdout):
        res.notes.append(("solve exited 0 with n/a, nan or inf in its table", stdout[:400]))
    if res.outcome == USER_ERROR and name in MODEL_COMMANDS and "error" in res.detail \
            and not re.search(r"\S+:\d+:\d+: ", res.detail) \
            and "Traceback" not in res.detail:
        first = res.detail.splitlines()[0] if res.detail else ""
        res.notes.append((f"model error without file:line:col: {_normalized(first)}", res.detail))
    return res, stdout


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8", "replace")


def commands_for(kind: str, quick: bool = False) -> dict[str, list[str]]:
    """command name -> argv for a "model", "trace", "qpe", "pnml" or "lqn" input."""
    if kind == "trace":
        return QUICK_TRACE_COMMANDS if quick else TRACE_COMMANDS
    if kind in ("qpe", "pnml", "lqn"):
        return _foreign(INPUT_FILE[kind], QUICK_SOLVE_BUDGET if quick else SOLVE_BUDGET)
    if kind in SPECIAL_KINDS:
        return SPECIAL_KINDS[kind][0]
    return QUICK_MODEL_COMMANDS if quick else MODEL_COMMANDS


def run_input(kind: str, data: bytes, budget: float, workdir: str,
              only: tuple[str, ...] | None = None, on_begin=None,
              quick: bool = False) -> list[Outcome]:
    """Every command of ``kind`` ("model" or "trace") on ``data``, in ``workdir``."""
    commands = commands_for(kind, quick)
    fname = INPUT_FILE[kind]
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        _clean(workdir)
        _write_input(kind, data, fname)
        results = []
        for name, argv in commands.items():
            if only and name not in only:
                continue
            if on_begin:
                on_begin(name)
            if kind in SPECIAL_KINDS:
                results.append(SPECIAL_KINDS[kind][1](name, list(argv), budget))
                continue
            res, stdout = run_command(name, list(argv), budget)
            if name == "fmt" and res.outcome == OK:
                _check_fmt(res, stdout, budget)
            if name == "solve" and res.outcome == OK:
                _check_flow(res)
            results.append(res)
        return results
    finally:
        os.chdir(cwd)


def _write_input(kind: str, data: bytes, fname: str) -> None:
    if kind != "bundle":
        with open(fname, "wb") as fh:
            fh.write(data)
        return
    import json
    for name, text in json.loads(data).items():
        os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
        with open(name, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)


def _check_flow(res: Outcome) -> None:
    """A solve that exited 0: its result must pass the flow-check oracle."""
    import json
    from .oracle import flow_wrong
    try:
        with open(RESULT_FILE, encoding="utf-8") as fh:
            result = json.load(fh)
    except (OSError, ValueError) as exc:
        res.outcome, res.signature = WRONG, f"solve exited 0 without its --json ({type(exc).__name__})"
        return
    why = flow_wrong(result)
    if why:
        res.outcome = WRONG
        res.signature = f"flow check ({result.get('method')}): " + _normalized(why)
        res.detail = why


def _check_fmt(res: Outcome, text: str, budget: float) -> None:
    """fmt's output must load and be its own canonical form."""
    with open("fmt1.qpn", "w", encoding="utf-8") as fh:
        fh.write(text)
    again, text2 = run_command("fmt", ["fmt", "fmt1.qpn"], budget)
    if again.outcome != OK:
        first = (again.detail or again.signature or "").splitlines()[:1]
        res.outcome, res.signature = WRONG, "fmt output does not load: " + _normalized(
            re.sub(r"^\S*fmt1\.qpn:\d+:\d+: ", "", first[0] if first else again.outcome))
        res.detail = again.detail or again.signature or ""
    elif text2 != text:
        res.outcome, res.signature = WRONG, "fmt is not idempotent"
        res.detail = _first_difference(text, text2)


def _first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}: {x!r} then {y!r}"
    return "the outputs differ in length"


def _clean(workdir: str) -> None:
    for entry in os.listdir(workdir):
        path = os.path.join(workdir, entry)
        if os.path.islink(path):
            continue
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def make_workdir(base: str) -> str:
    """A scratch directory where the relative includes and data files of the
    shipped models resolve (models/lib, models/data)."""
    os.makedirs(base, exist_ok=True)
    for sub in ("lib", "data"):
        link = os.path.join(base, sub)
        if not os.path.lexists(link):
            os.symlink(os.path.join(ROOT, "models", sub), link)
    return base
