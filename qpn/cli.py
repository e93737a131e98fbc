"""The ``qpn`` command line.

Every user mistake is printed as a located message (file:line:col, the line,
a caret, what was expected, a hint) with exit status 2; never a traceback.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from typing import Callable

from .errors import ModelError, ParameterError, QPNError

COMMANDS: dict[str, tuple[Callable, Callable, str]] = {}


def command(name: str, help: str):
    """Register ``fn(args) -> exit status`` as ``qpn NAME``; ``@fn.setup`` then adds its
    arguments.  The help line is the command's description and its docstring."""
    def deco(fn):
        fn.__doc__ = fn.__doc__ or f"``qpn {name}``: {help}."
        def register(setup):
            COMMANDS[name] = (fn, setup, help)
            return setup
        fn.setup = register
        return fn
    return deco


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``--set name=value`` arguments as a dict (values stay text: the model parses them).

    >>> parse_sets(["threads=8", " rate = 2 ms "])
    {'threads': '8', 'rate': '2 ms'}
    """
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise ParameterError(f"--set expects name=value, got '{item}'",
                                 hint="for example --set threads=8")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def load_model(path: str, sets: list[str] | None = None):
    """Load a model file (any format :func:`qpn.load` reads) with ``--set`` overrides."""
    from . import load
    net = load(path)
    values = parse_sets(sets)
    return net.with_params(**values) if values else net


# --------------------------------------------------------------- commands
@command("check", "check a model: syntax, names, invariants, traps, dead transitions")
def cmd_check(args) -> int:
    from .structure.check import check_net
    net = load_model(args.file, args.set)
    rep = check_net(net)
    shown = [d for d in rep.diagnostics if args.verbose or d.severity != "info"]
    for d in shown:
        print(d)
    flat = net.flatten()
    parts = [f"{len(flat.places)} places", f"{len(flat.transitions)} transitions"]
    if rep.p_invariants or rep.uncovered:
        if rep.uncovered and rep.open_net:
            parts.append(f"open net ({len(rep.uncovered)} place(s) fed by sources)")
        elif rep.uncovered:
            parts.append(f"{len(rep.uncovered)} place(s) not covered by P-invariants")
        else:
            parts.append(f"bounded (covered by {len(rep.p_invariants)} P-invariant(s))")
    if rep.markings is not None:
        parts.append(f"{rep.markings} reachable markings")
    status = "errors" if rep.errors else ("warnings" if rep.warnings else "ok")
    print(f"{args.file}: {status}: " + ", ".join(parts))
    states = _state_count(net)
    if states:
        print(f"{args.file}: the CTMC has {states}")
    return 1 if rep.errors else 0


def _state_count(net) -> str | None:
    """The CTMC's state bound (or exact count), when the solvers are installed and the
    net is small enough to count quickly; a bounded net can still be far too large."""
    try:
        from qpn.solvers.ctmc.spec import build_spec
    except ModuleNotFoundError:
        return None
    from .compile import compile_net
    c = compile_net(net.flatten())
    if not c.modes or len(c.modes) > 500 or c.nslots > 1000:
        return None
    try:
        return build_spec(c, rr="ps").estimate_phrase()
    except QPNError:
        return None


@cmd_check.setup
def _(p):
    p.add_argument("-v", "--verbose", action="store_true", help="also print informational notes")


@command("show", "summarize a model: parameters, colors, places, transitions, invariants")
def cmd_show(args) -> int:
    from .structure.check import check_net
    from .summary import summarize
    net = load_model(args.file, args.set)
    print(summarize(net, check_net(net)), end="")
    return 0


@cmd_show.setup
def _(p):
    pass


@command("fmt", "print a model in canonical form (--write: in place, atomically)")
def cmd_fmt(args) -> int:
    from qpn.dsl.source import read_source
    from .fileio import check_output, write_atomic
    from . import load
    if os.path.splitext(args.file)[1].lower() in _foreign() and (args.write or args.check):
        raise ModelError(f"{args.file} is not a qpn model: fmt --write and --check work on .qpn files",
                         hint=f"write the qpn text with: qpn convert {args.file} -o MODEL.qpn")
    if args.write:
        check_output(args.file)
    net = load(args.file)
    text = net.text()
    old = read_source(args.file)
    if args.check:
        if old != text:
            print(f"{args.file}: not in canonical format", file=sys.stderr)
            return 1
        return 0
    if args.write:
        if old != text:
            write_atomic(args.file, text)
            print(f"formatted {args.file}", file=sys.stderr)
        return 0
    sys.stdout.write(text)
    return 0


@cmd_fmt.setup
def _(p):
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the file in place (atomically)")
    g.add_argument("--check", action="store_true", help="exit 1 if the file is not canonical")


def _foreign() -> tuple[str, ...]:
    """Suffixes of the model formats read (and written) besides .qpn."""
    from qpn.dsl.xmlsource import FOREIGN_FORMATS
    return tuple(FOREIGN_FORMATS)


@command("convert", "convert between qpn (.qpn), QPME (.qpe), PNML (.pnml) and LQN (.lqn) models, "
                    "by the files' extensions")
def cmd_convert(args) -> int:
    from .fileio import check_output, write_atomic
    src = os.path.splitext(args.file)[1].lower()
    foreign = _foreign()
    dst = os.path.splitext(args.output or "")[1].lower() or \
        ("." + args.to if args.to else ".qpn" if src in foreign else ".qpe")
    if args.output and os.path.abspath(args.output) == os.path.abspath(args.file):
        raise ModelError(f"convert would overwrite its input {args.file}", hint="name another output file")
    if {src, dst} - {".qpn", *foreign} or (src in foreign) == (dst in foreign):
        raise ModelError(f"convert turns .qpe, .pnml or .lqn into .qpn and back, not "
                         f"{src or 'no extension'} -> {dst or 'no extension'}",
                         hint="qpn convert model.qpe -o model.qpn, or qpn convert model.qpn -o model.pnml")
    check_output(args.output)
    if src in foreign:
        from qpn.dsl.xmlsource import translate_file
        text, notes = translate_file(args.file)
        for n in notes:
            print(f"{args.file}: note: {n}", file=sys.stderr)
        from . import parse
        from qpn.dsl.parser import translation_error
        as_qpn = args.file + " (as qpn)"
        try:
            parse(text, as_qpn)   # refuse to write a model that does not load
        except ModelError as exc:
            raise translation_error(args.file, text, exc, as_qpn) from None
    elif dst == ".lqn":
        from qpn.dsl.lqn_export import qpn_to_lqn
        text, notes = qpn_to_lqn(load_model(args.file, args.set))
        for n in notes:
            print(f"{args.file}: note: {n}", file=sys.stderr)
    else:
        if dst == ".qpe":
            from qpn.dsl.qpe_export import qpn_to_qpe as writer
        else:
            from qpn.dsl.pnml import qpn_to_pnml as writer
        text = writer(_compiled(args.file, args.set))
    if args.output:
        write_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _compiled(path: str, sets):
    from . import compile_net
    net = load_model(path, sets)
    return compile_net(net)


@cmd_convert.setup
def _(p):
    p.add_argument("-o", "--output", help="output file (.qpn, .qpe, .pnml or .lqn); default: stdout, .qpn "
                   "for a foreign model, .qpe for a qpn model")
    p.add_argument("--to", choices=("qpn", "qpe", "pnml", "lqn"),
                   help="the format written to stdout when there is no -o")


@command("flatten", "print the flat net (hierarchy expanded, names as paths)")
def cmd_flatten(args) -> int:
    net = load_model(args.file, args.set)
    sys.stdout.write(net.flatten().text())
    return 0


@cmd_flatten.setup
def _(p):
    pass


@command("dot", "draw a model with Graphviz (.dot, .svg, .png, .pdf)")
def cmd_dot(args) -> int:
    from .dot import to_dot
    from .fileio import check_output, write_atomic
    check_output(args.output)
    net = load_model(args.file, args.set)
    text = to_dot(net)
    out = args.output
    if out is None or out == "-":
        sys.stdout.write(text)
        return 0
    ext = os.path.splitext(out)[1].lower().lstrip(".")
    if ext in ("dot", "gv", ""):
        write_atomic(out, text)
        print(f"wrote {out}", file=sys.stderr)
        return 0
    exe = shutil.which("dot")
    if exe is None:
        dot_path = os.path.splitext(out)[0] + ".dot"
        write_atomic(dot_path, text)
        print(f"Graphviz 'dot' is not installed: wrote {dot_path} instead.\n"
              f"Render it with: dot -T{ext} {dot_path} -o {out}   "
              f"(install Graphviz: apt install graphviz)", file=sys.stderr)
        return 0
    proc = subprocess.run([exe, f"-T{ext}"], input=text.encode(), capture_output=True)
    if proc.returncode != 0:
        raise QPNError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
    write_atomic(out, proc.stdout)
    print(f"wrote {out}", file=sys.stderr)
    return 0


@cmd_dot.setup
def _(p):
    p.add_argument("-o", "--output", help="output file (.dot, .svg, .png, .pdf); default stdout")


def _load_plugins() -> None:
    """Commands contributed by other packages (solvers, frontends)."""
    for mod in ("qpn.solvers.cli", "qpn.frontends.cli"):
        try:
            __import__(mod)
        except ModuleNotFoundError as exc:
            if exc.name not in (mod, mod.split(".")[0]):
                raise


def _memory_size(text: str) -> int:
    from .resources import parse_size
    try:
        return parse_size(text)
    except QPNError as exc:
        raise argparse.ArgumentTypeError(str(exc).splitlines()[0].removeprefix("error: ")) from None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``qpn`` argument parser: one sub-command per registered command (plugins'
    included).  Given the command line ``argv``, only the command it names gets its
    arguments (a command's arguments may import what it runs: the solvers' options); the
    others are listed by name and help line, which is all ``qpn --help`` shows."""
    _load_plugins()
    parser = argparse.ArgumentParser(
        prog="qpn", description="Model and solve hierarchical colored queueing Petri nets.")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"qpn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (fn, setup, help) in COMMANDS.items():
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=fn)
        if chosen is not None and name != chosen:
            continue
        if getattr(setup, "takes_file", True):
            p.add_argument("file", help="model file (.qpn)")
            p.add_argument("--set", action="append", metavar="NAME=VALUE",
                           help="override a parameter (repeatable)")
        setup(p)
        p.add_argument("--memory-limit", metavar="SIZE", type=_memory_size,
                       help="refuse computations estimated to need more memory than SIZE "
                            "(e.g. 8GiB; default: half of the available memory, or $QPN_MEMORY_LIMIT)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``qpn`` with ``argv``; the exit status (user mistakes: a located message and 2,
    never a traceback)."""
    line = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(line)
    args = parser.parse_args(line)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from . import progress, resources
    resources.set_memory_limit(getattr(args, "memory_limit", None))
    progress.configure(quiet=bool(getattr(args, "quiet", False)))
    try:
        rc = _run(args)
    finally:   # in-process callers (tests) get the process defaults back
        resources.set_memory_limit(None)
        progress.configure(quiet=False)
    if argv is None and getattr(args, "exit_now", False):
        # the command's outputs are written and closed; freeing its millions of
        # objects one by one would take the process another second (qpn build)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


def _where(exc: BaseException) -> str:
    """'path:line (function)' of the innermost frame of qpn's own code in a traceback."""
    import traceback
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    ours = tuple(root + d + os.sep for d in ("qpn", "solvers", "frontends", "dsl"))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(ours)]
    if not frames:
        return "qpn"
    f = frames[-1]
    return f"{f.filename[len(root):]}:{f.lineno} ({f.name})"


def _run(args) -> int:
    """Run the command; user errors become messages and exit statuses."""
    try:
        rc = int(args.func(args) or 0)
    except QPNError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except MemoryError as exc:
        # an allocation no estimate foresaw: still no traceback, but where it happened
        # (a bug to report; the fuzzing harness counts it as a memory failure)
        from .resources import OPTION, format_size, memory_limit
        limit, source = memory_limit()
        print(f"error: out of memory in {_where(exc)}: an allocation failed that no estimate "
              f"foresaw (memory limit {format_size(limit)}, {source})\nhint: use smaller "
              f"parameters, or a lower {OPTION} so that qpn refuses earlier", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    return rc


if __name__ == "__main__":
    # `python -m qpn.cli`: run the module the plugins register their commands with,
    # not this __main__ copy of it
    from qpn.cli import main as _main
    sys.exit(_main())
