"""Parse model text into a :class:`qpn.net.Net`: a file's declarations (:mod:`dsl.grammar`),
its includes, comments and normal forms, then validation.

>>> from qpn.dsl.parser import parse
>>> net = parse("place idle init 2\\nplace busy\\ntransition t : idle -> busy")
>>> net.places[0].init[0].count.value
2
"""
from __future__ import annotations

import gc
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

from qpn.errors import ModelError
from qpn.model import Include
from qpn.net import Net
from qpn.validate import validate

from .builder import NetName
from .comments import attach_comments
from .grammar import KEYWORDS, parse_expr, parse_items
from .normalize import normalize
from .source import BinaryFile, read_source
from .xmlsource import FOREIGN_FORMATS, translate_file


def parse(text: str, path: str | os.PathLike | None = None, *,
          _include_stack: tuple[str, ...] = ()) -> Net:
    """Parse model text; ``path`` names the file for errors and includes.

    >>> net = parse("param n = 2\\nplace idle init n")
    >>> net.name, [p.name for p in net.places]
    ('model', ['idle'])
    """
    # A parse allocates ~10 objects per token, none of them in reference cycles;
    # pausing the cyclic collector meanwhile halves the time on large models.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse(text, path, _include_stack, {})
    finally:
        if was_enabled:
            gc.enable()


#: Longest chain of includes (a.qpn includes b.qpn, which includes c.qpn ...).  Loading,
#: merging and overriding parameters recurse once per file of the chain.
MAX_INCLUDE_DEPTH = 100


def _parse(text: str, path, _include_stack: tuple[str, ...], loaded: dict,
           included_by: Include | None = None) -> Net:
    """``text`` as a validated net.  ``_include_stack``: the real paths of the files
    including this one (for cycles); ``loaded``: every file of this parse already read, by
    real path (a file included twice is read once and is the same net both times);
    ``included_by``: the include that names this file."""
    file = str(path) if path is not None else "<string>"
    base_dir = os.path.dirname(os.path.abspath(file)) if path is not None else os.getcwd()
    try:
        items, comments = parse_items(text, file, base_dir)
    except ModelError as exc:
        if included_by is not None and _before_first_declaration(exc, text):
            # a file that is no model at all (e.g. /etc/passwd): its text is not shown
            raise _not_a_model(included_by, "its first declaration does not parse: line "
                               f"{exc.loc.line}, column {exc.loc.col}") from None
        raise
    name = default_name(file if path is not None else None)
    body = []
    net_line = None
    for it in items:
        if isinstance(it, NetName):
            if net_line is not None:
                raise ModelError("'net <name>' given twice", it.loc,
                                 hint="a file names one net; subnets are declared with 'subnet'")
            if body:
                raise ModelError("'net <name>' must be the first declaration", it.loc)
            name = it.name
            net_line = it.loc.line if it.loc else 0
            continue
        body.append(it)
    # includes
    resolved = []
    here = _include_stack + (_real(file) if path is not None else os.path.abspath(file),)
    for it in body:
        if isinstance(it, Include):
            resolved.append(_load_include(it, base_dir, here, loaded))
        else:
            resolved.append(it)
    body = normalize(resolved)
    body, doc, trailer = attach_comments(body, comments, net_line)
    net = Net(name, tuple(body), doc=doc, trailer=trailer, path=file if path is not None else None,
              source=text)
    validate(net)
    return net


def default_name(file: str | None) -> str:
    """Net name from a file name when the model has no 'net' line.

    >>> default_name("models/web-server.qpn"), default_name("3tier.qpn"), default_name(None)
    ('web_server', 'm_3tier', 'model')
    """
    if file is None:
        return "model"
    stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(file).stem) or "model"
    if stem[0].isdigit() or stem in KEYWORDS:
        stem = "m_" + stem
    return stem


def _real(path: str) -> str:
    """The file's identity: its real path (symbolic links and '.'/'..' resolved)."""
    return os.path.realpath(path)


def _load_include(inc: Include, base_dir: str, stack: tuple[str, ...], loaded: dict) -> Include:
    """The include with its file's net.  Includes form a set: a file included again (by
    the same or another file, under any spelling of its path) is the net read the first
    time, and its declarations count once; only a cycle is an error."""
    target = os.path.normpath(os.path.join(base_dir, inc.path))
    real = _real(target)
    if real in stack:
        chain = " -> ".join(os.path.basename(s) for s in stack[stack.index(real):] + (real,))
        raise ModelError(f"include cycle: {chain}", inc.loc, hint="remove one of the includes")
    if real in loaded:
        return replace(inc, net=loaded[real])
    if not os.path.exists(target):
        raise ModelError(f"cannot include '{inc.path}': no such file", inc.loc,
                         expected=f"a file relative to {base_dir}")
    if not os.path.isfile(target):
        what = "a directory" if os.path.isdir(target) else "not a regular file (a device or a pipe)"
        raise ModelError(f"cannot include '{inc.path}': it is {what}", inc.loc,
                         expected="a qpn model file (.qpn)")
    if len(stack) >= MAX_INCLUDE_DEPTH:
        raise ModelError(f"includes nested too deep: '{inc.path}' would be file "
                         f"{len(stack) + 1} of a chain of includes ("
                         f"{os.path.basename(stack[0])} -> {os.path.basename(stack[1])} -> ... -> "
                         f"{os.path.basename(stack[-1])}); the limit is {MAX_INCLUDE_DEPTH}",
                         inc.loc, expected=f"at most {MAX_INCLUDE_DEPTH} files in a chain of includes",
                         hint="include the files side by side from one file instead of each "
                              "from the one before")
    try:
        text = read_source(target)
    except BinaryFile as exc:
        raise _not_a_model(inc, exc.reason) from None
    sub = _parse(text, target, stack, loaded, inc)
    loaded[real] = sub
    return replace(inc, net=sub)


def _before_first_declaration(exc: ModelError, text: str) -> bool:
    """Whether a syntax error is on the first line with a declaration of ``text`` (the
    file does not start like a model: whatever it holds is not shown)."""
    if exc.loc is None:
        return False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return exc.loc.line <= number
    return True


def _not_a_model(inc: Include, why: str) -> ModelError:
    """The error at an include naming a file that is not model text; nothing of the
    file's content is quoted (it may be anything, e.g. an environment with secrets)."""
    return ModelError(f"cannot include '{inc.path}': it is not a qpn model text ({why})",
                      inc.loc, expected="a qpn model file of declarations (place, param, colors, "
                                        "subnet, ...)",
                      hint="check the path: includes name .qpn files, relative to the including file")


def load(path: str | os.PathLike) -> Net:
    """Read and parse a model file (QPME, PNML and LQN files translated first).

    >>> load("models/mm1.qpn").name
    'mm1'
    """
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"no such model file: {p}", None,
                         hint="model files use the extension .qpn (or .qpe for QPME, .pnml for PNML, "
                         ".lqn for LQN)")
    if p.suffix.lower() in FOREIGN_FORMATS:
        return load_foreign(path)
    return parse(read_source(path), str(path))


def load_foreign(path):
    """A foreign model file as a validated Net; the translation's notes go to stderr."""
    text, notes = translate_file(path)
    for n in notes:
        print(f"{os.fspath(path)}: note: {n}", file=sys.stderr)
    as_qpn = os.fspath(path) + " (as qpn)"
    try:
        return parse(text, as_qpn)
    except ModelError as exc:   # a mistake the reader did not catch
        raise translation_error(path, text, exc, as_qpn) from None


def translation_error(path, text: str, exc: ModelError, as_qpn: str) -> ModelError:
    """``exc``, raised in the translation of a foreign model, at the foreign file's element
    that made the line (the format's ``origin_of``, where it has one), else in the qpn text."""
    from .xmlsource import origin_of_translation
    where = None
    if exc.loc is not None and exc.loc.file == as_qpn and exc.loc.line:
        where = origin_of_translation(path, exc.loc.line)
    if where is None:
        return ModelError(f"the model translates to a qpn model that is not valid: {exc.message}",
                          exc.loc, hint="run 'qpn convert' to see the translation")
    loc, what = where
    line = text.splitlines()[exc.loc.line - 1].strip()
    line = line if len(line) <= 120 else line[:117] + "..."
    return ModelError(f"{what} translates to qpn that is not valid: {exc.message}", loc,
                      hint=f"its translation (line {exc.loc.line} of 'qpn convert'): {line}"
                           + (f"\n{exc.hint}" if exc.hint else ""))


__all__ = ["parse", "load", "load_foreign", "parse_expr", "default_name"]
