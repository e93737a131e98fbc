"""A measurement suite's manifest: ``suites/NAME/suite.toml`` (docs/verify.md).

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> _ = open(os.path.join(d, "prog.py"), "w").write("print(1)")
>>> _ = open(os.path.join(d, "suite.toml"), "w").write('''
... [program]
... path = "prog.py"
... args = ["{n}", "{threads}"]
... [params]
... n = 10
... [grid]
... threads = [1, 2]
... [build]
... configs = [{threads = 2}]
... [measure]
... kind = "wall"
... [predict]
... expr = "n / throughput('*.begin')"
... ''')
>>> s = load_suite(d)
>>> [p for p in s.points()], s.argv({"n": 10, "threads": 2})[-2:]
([{'threads': 1}, {'threads': 2}], ['10', '2'])
"""
from __future__ import annotations

import itertools
import os
import sys
import tomllib
from dataclasses import dataclass, field

from qpn.errors import QPNError
from qpn.frontends.tracers import TRACERS as KERNEL_TRACERS

KINDS = ("wall", "rate", "stdout")
#: what a suite's ``group`` may say: programs run to completion, or servers under a load
GROUPS = ("cpu", "server")
#: where a suite's program came from (``origin``): written beside the analyzer, or by someone
#: who had not read it (the analyzer is judged on those apart)
ORIGINS = ("beside", "unseen")


@dataclass
class Suite:
    """What to run, which configurations to measure and trace, and what to predict."""

    dir: str
    name: str
    program: str                       # absolute path of the program (a Python file)
    args: list                         # argument templates: "{param}"
    params: dict                       # fixed parameters
    grid: dict                         # parameter -> values (every combination)
    configs: list                      # traced configurations; the first builds the model
    kind: str                          # wall | rate | stdout
    expr: str                          # the prediction: an expression of model measures
    repeats: int = 5
    over: str | None = None            # rate: the parameter whose two values differ
    values: tuple = ()                 # rate: its two values
    pattern: str | None = None         # stdout: a regex with one number group
    set: dict = field(default_factory=dict)     # model param -> expression of the point
    bound: float | None = None         # mean epsilon above which verify fails
    solve: dict = field(default_factory=dict)   # solver options
    server: list | None = None         # [server] command: started around each run, traced
    port: str | None = None            # [server] port: ready when 127.0.0.1:port accepts
    setup: list | None = None          # run once before measuring (installs the server)
    calibrate: bool = False            # scale CPU demands by the machine's speed (calibrate.py)
    group: str = "cpu"                 # cpu | server: which mean eps bound the suite counts in
    outside: str | None = None         # server: unit of the response time; `outside` in expr
    cpu: str = "ps"                    # [build] cpu: how the model shares the cores (qpn build --cpu)
    tracer: str = "python"             # [build] tracer: python (qpn trace) | strace | perf | jfr
    cflags: tuple = ()                 # [program] cflags: a C program's compiler options
    trace_load: bool = False           # [build] trace_load: trace the server's load too
    launcher: tuple = ()               # [program] launcher: runs the command (mpiexec -n N)
    origin: str = "beside"             # beside | unseen: written knowing the analyzer or not
    unit: str | None = None            # [measure] unit: the measured value's unit, if given

    @property
    def measured_unit(self) -> str | None:
        r"""The unit of the measured value (and of the prediction), where the suite tells
        it: ``[measure] unit``; else seconds for ``wall``, ``over`` per second for
        ``rate``; for ``stdout`` the unit of ``[predict] outside``, else the unit the
        pattern reads after its number (``"elapsed ([\d.]+) s"``); else None.

        >>> s = Suite(".", "s", "p.py", [], {}, {}, [{}], "stdout", "x", pattern=r"took ([\d.]+)\s+ms")
        >>> s.measured_unit, Suite(".", "s", "p.py", [], {}, {}, [{}], "rate", "x", over="rounds").measured_unit
        ('ms', 'rounds/s')
        """
        if self.unit:
            return self.unit
        if self.kind == "wall":
            return "s"
        if self.kind == "rate":
            return f"{self.over}/s"
        return self.outside or unit_after_number(self.pattern or "")

    def command(self, values: dict) -> list[str]:
        """The program's command line for ``values``: a Python file run by this
        interpreter, a C file compiled (:meth:`executable`), any other file run as it is;
        after the ``launcher``'s words (``{bin}/mpiexec -n {ranks}``) if there is one."""
        return self._fill(list(self.launcher), values, "program.launcher") + self._command(values)

    def _command(self, values: dict) -> list[str]:
        if self.program.endswith(".py"):
            return [sys.executable, self.program] + self.argv(values)
        if self.program.endswith(".java"):          # the JDK runs a source file (Java 11+)
            return ["java", self.program] + self.argv(values)
        return [self.executable()] + self.argv(values)

    def executable(self) -> str:
        """The program to run: a C source compiled once per content and flags by the
        system's compiler (``cc -O2 -pthread``) into ``SUITE/verify/bin/``."""
        if not self.program.endswith(".c"):
            return self.program
        import hashlib
        import shutil
        import subprocess
        with open(self.program, "rb") as fh:
            digest = hashlib.sha256(fh.read() + repr(self.cflags).encode()).hexdigest()[:12]
        stem = os.path.splitext(os.path.basename(self.program))[0]
        out = os.path.join(os.path.abspath(self.dir), "verify", "bin", f"{stem}-{digest}")
        if os.path.exists(out):
            return out
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            raise QPNError(f"{self.name}: [program] {self.program} is C and no compiler (cc) is "
                           "installed (install the Debian package gcc)")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        p = subprocess.run([cc, "-O2", "-pthread", *self.cflags, "-o", out + ".tmp", self.program],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise QPNError(f"{self.name}: compiling {self.program} failed:\n{p.stderr.strip()[-800:]}")
        os.replace(out + ".tmp", out)
        return out

    def points(self) -> list[dict]:
        """Every combination of the grid's values."""
        names = list(self.grid)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.grid[n] for n in names))]

    def argv(self, values: dict) -> list[str]:
        """The program's arguments for parameter ``values`` (fixed params filled in)."""
        return self._fill(self.args, values, "program.args")

    def server_argv(self, values: dict) -> list[str]:
        """The server's command for ``values``; ``{python}`` is this interpreter and
        ``{bin}`` its directory (where a package's console scripts are)."""
        return self._fill(self.server or [], values, "server.command")

    def server_port(self, values: dict) -> int:
        """The port the suite's server listens on at a grid point."""
        return int(self._fill([self.port], values, "server.port")[0])

    def _fill(self, templates: list, values: dict, where: str) -> list[str]:
        work = os.path.join(os.path.abspath(self.dir), "verify", "work")   # the program's files
        if any("{work}" in str(a) for a in templates):
            os.makedirs(work, exist_ok=True)
        v = {"python": sys.executable, "bin": os.path.dirname(sys.executable), "work": work,
             **self.params, **values}
        try:
            return [str(a).format(**v) for a in templates]
        except KeyError as exc:
            raise QPNError(f"{self.dir}/suite.toml: {where} uses {{{exc.args[0]}}}, which no "
                           "param, grid entry or build config gives") from None


#: units a ``stdout`` pattern may name after its number
_TIME_UNITS = ("ns", "us", "µs", "ms", "s", "min", "h")


def unit_after_number(pattern: str) -> str | None:
    r"""The unit a ``[measure] pattern`` reads right after its number group: a time unit or
    a rate (``WORD/s``); None when it reads none.

    >>> [unit_after_number(p) for p in (r"mean response ([\d.]+) ms", r"elapsed ([\d.]+)\s*s",
    ...                                 r"^([\d.]+)", r"rate ([\d.]+) req/s", r"([\d.]+) items")]
    ['ms', 's', None, 'req/s', None]
    """
    import re
    group = re.search(r"\((?!\?)(?:[^()\\]|\\.)*\)", pattern)
    if group is None:
        return None
    rest = re.sub(r"^(?:\s|\\s[*+?]?)*", "", pattern[group.end():])
    m = re.match(r"([A-Za-zµ]+(?:/s)?)(?![A-Za-z/])", rest)
    if m is None:
        return None
    unit = m.group(1)
    return unit if unit in _TIME_UNITS or unit.endswith("/s") else None


def _need(table: dict, key: str, where: str, typ, path: str):
    if key not in table:
        raise QPNError(f"{path}: [{where}] needs '{key}'")
    v = table[key]
    if not isinstance(v, typ):
        raise QPNError(f"{path}: [{where}] {key} must be {getattr(typ, '__name__', typ)}, "
                       f"got {v!r}")
    return v


def load_suite(directory: str) -> Suite:
    """Read and check ``directory/suite.toml``; errors name the file and the entry."""
    path = os.path.join(directory, "suite.toml")
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except FileNotFoundError:
        raise QPNError(f"{directory}: no suite.toml (see docs/verify.md)") from None
    except tomllib.TOMLDecodeError as exc:
        raise QPNError(f"{path}: {exc}") from None
    prog = doc.get("program", {})
    src = _need(prog, "path", "program", str, path)
    program = os.path.abspath(os.path.join(directory, src))
    if not os.path.isfile(program):
        raise QPNError(f"{path}: [program] path {src!r}: no such file ({program})")
    grid = _need(doc, "grid", "top level", dict, path)
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise QPNError(f"{path}: [grid] {k} must be a non-empty list of values")
    build = doc.get("build", {})
    configs = _need(build, "configs", "build", list, path)
    if not configs or not all(isinstance(c, dict) for c in configs):
        raise QPNError(f"{path}: [build] configs must be a non-empty list of tables, "
                       "e.g. [{threads = 2}]")
    meas = doc.get("measure", {})
    kind = meas.get("kind", "wall")
    if kind not in KINDS:
        raise QPNError(f"{path}: [measure] kind must be one of {', '.join(KINDS)}, got {kind!r}")
    over, values, pattern = meas.get("over"), tuple(meas.get("values", ())), meas.get("pattern")
    if kind == "rate" and (not over or len(values) != 2 or values[0] == values[1]):
        raise QPNError(f"{path}: [measure] kind 'rate' needs over = \"PARAM\" and two different "
                       "values = [small, large]")
    if kind == "stdout" and not pattern:
        raise QPNError(f"{path}: [measure] kind 'stdout' needs pattern = \"regex with one group\"")
    pred = doc.get("predict", {})
    expr = _need(pred, "expr", "predict", str, path)
    unit = meas.get("unit")
    if unit is not None and not (isinstance(unit, str) and unit.strip()):
        raise QPNError(f"{path}: [measure] unit must be a unit's name, e.g. \"ms\" or "
                       f"\"requests/s\", got {unit!r}")
    repeats = int(meas.get("repeats", 5))
    if repeats < 1:
        raise QPNError(f"{path}: [measure] repeats must be at least 1")
    server, port = None, None
    if "server" in doc:
        srv = _need(doc, "server", "top level", dict, path)
        server = _need(srv, "command", "server", list, path)
        port = str(_need(srv, "port", "server", (int, str), path))
        if not server:
            raise QPNError(f"{path}: [server] command must not be empty")
    setup = doc.get("setup")
    if setup is not None and not (isinstance(setup, list) and setup):
        raise QPNError(f"{path}: setup must be a command as a list of strings, e.g. "
                       '["{python}", "-m", "pip", "install", "waitress"]')
    return Suite(directory, doc.get("name", os.path.basename(os.path.abspath(directory))), program,
                 list(_need(prog, "args", "program", list, path)), dict(doc.get("params", {})),
                 grid, configs, kind, expr, repeats, over, values, pattern,
                 dict(pred.get("set", {})), pred.get("bound"), dict(pred.get("solve", {})),
                 server, port, setup, _calibrate(pred, path), _group(doc, path),
                 _outside(pred, kind, server, path), _cpu(build, path),
                 _tracer(build, program, server, path), _cflags(prog, path),
                 _trace_load(build, server, program, path), _launcher(prog, path),
                 _choice(doc, "origin", "beside", ORIGINS, "", "written beside the analyzer, or "
                         "by someone who had not read it", path), unit=unit)


def _launcher(prog: dict, path: str) -> tuple:
    """[program] launcher: the words before the program's command (MPI's mpiexec)."""
    words = prog.get("launcher", [])
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise QPNError(f"{path}: [program] launcher must be a list of strings, e.g. "
                       '["{bin}/mpiexec", "-n", "{ranks}"]')
    return tuple(words)


def _trace_load(build: dict, server, program: str, path: str) -> bool:
    """[build] trace_load = true: the load program is traced beside the server, and the
    model holds both (the clients' own CPU on the machine, a closed loop of clients)."""
    value = build.get("trace_load", False)
    if not isinstance(value, bool):
        raise QPNError(f"{path}: [build] trace_load must be true or false, got {value!r}")
    if value and not server:
        raise QPNError(f"{path}: [build] trace_load needs a [server]: the load program is "
                       "the program traced otherwise")
    if value and not program.endswith(".py"):
        raise QPNError(f"{path}: [build] trace_load: the load program must be a Python "
                       "program (qpn trace)")
    return value


def _choice(table: dict, key: str, default: str, choices, where: str, meaning: str,
            path: str) -> str:
    value = table.get(key, default)
    if value not in choices:
        raise QPNError(f"{path}: {where}{key} must be one of {', '.join(choices)} ({meaning}), "
                       f"got {value!r}")
    return value


def _group(doc: dict, path: str) -> str:
    return _choice(doc, "group", "cpu", GROUPS, "",
                   "a program run to completion, or a server under a load", path)


def _cpu(build: dict, path: str) -> str:
    from qpn.frontends.analyze.pipeline import CPU_POLICIES
    return _choice(build, "cpu", "ps", CPU_POLICIES, "[build] ",
                   "how the model shares the cores: qpn build --cpu", path)


#: how a suite's build configurations are traced ([build] tracer): qpn trace, or a tracer of
#: any program (frontends/tracers.py)
TRACERS = ("python", *KERNEL_TRACERS)


def _tracer(build: dict, program: str, server, path: str) -> str:
    default = ("python" if program.endswith(".py") else "jfr" if program.endswith(".java")
               else "strace")
    tracer = _choice(build, "tracer", default, TRACERS, "[build] ",
                     "qpn trace for a Python program, strace or perf for any program, jfr for "
                     "Java", path)
    if tracer != "python" and server:
        raise QPNError(f"{path}: [build] tracer {tracer!r}: a suite with a [server] is traced "
                       "with qpn trace (tracer = \"python\")")
    if tracer == "python" and not program.endswith(".py"):
        raise QPNError(f"{path}: [build] tracer \"python\" traces Python programs; "
                       f"{os.path.basename(program)} is not one (tracer = \"strace\")")
    if tracer == "jfr" and not program.endswith(".java"):
        raise QPNError(f"{path}: [build] tracer \"jfr\" records Java programs (a .java source "
                       f"the JDK runs); {os.path.basename(program)} is not one")
    return tracer


def _cflags(prog: dict, path: str) -> tuple:
    flags = prog.get("cflags", [])
    if not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
        raise QPNError(f"{path}: [program] cflags must be a list of strings, e.g. [\"-O3\"]")
    return tuple(flags)


def _outside(pred: dict, kind: str, server, path: str) -> str | None:
    from .outside import UNITS
    unit = pred.get("outside")
    if unit is None:
        return None
    if unit not in UNITS:
        raise QPNError(f"{path}: [predict] outside is the unit of the measured response time, "
                       f"one of {', '.join(UNITS)}; got {unit!r}")
    if server is None or kind != "stdout":
        raise QPNError(f"{path}: [predict] outside needs a [server] and a response time the "
                       "load program prints ([measure] kind = \"stdout\")")
    return unit


def _calibrate(pred: dict, path: str) -> bool:
    value = pred.get("calibrate", False)
    if not isinstance(value, bool):
        raise QPNError(f"{path}: [predict] calibrate must be true or false, got {value!r}")
    return value


__all__ = ["Suite", "load_suite", "KINDS", "GROUPS", "ORIGINS"]
