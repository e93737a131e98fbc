"""Trace text at the door: UTF-8, no lone UTF-16 surrogate, lines of a bounded length,
and the sizes a reader projects its memory from (see docs/trace-format.md).

>>> _utf8("caf\\u00e9"), _utf8("\\udcff")
(True, False)
"""
from __future__ import annotations

import gzip
import os
import re
from typing import IO

from qpn import resources

from .trace_schema import TraceError

#: The longest line a trace may hold, in characters (so also in bytes: a character is
#: at least one).  An event is one short line: the largest event line of the bundled
#: traces (tests/traces, suites/*/verify, 1.4 million lines) is 312 bytes and the
#: largest header 1,094, so 1 MiB is a thousand times any real line.  A longer line is
#: refused once its first MAX_LINE + 1 characters are read, never held whole (a 1 MB
#: gzip file can hold one line of 1 GB).  ``QPN_TRACE_LINE_LIMIT=SIZE`` raises it.
MAX_LINE = 1 << 20
LINE_ENV = "QPN_TRACE_LINE_LIMIT"


def _utf8(text: str) -> bool:
    """Whether ``text`` (read with surrogateescape) came from valid UTF-8."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _not_utf8(line: str, path: str, no: int) -> "TraceError | None":
    """The located error for a line holding bytes that are not UTF-8, or None."""
    if line.isascii() or _utf8(line):
        return None
    col = next(i for i, ch in enumerate(line) if "\udc80" <= ch <= "\udcff")
    byte = ord(line[col]) - 0xDC00
    shown = line.rstrip("\n").encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return TraceError(f"the line is not UTF-8 text: byte 0x{byte:02x} cannot be decoded",
                      path, no, col + 1, shown, hint="a trace is JSON lines in UTF-8; "
                      "--lenient keeps the events before this line")


# a JSON escape of a UTF-16 surrogate (a run of backslashes of odd length before the u)
_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(obj: object, line: str, path: str, no: int) -> "TraceError | None":
    """The located error for a parsed line whose strings hold a lone UTF-16 surrogate
    (JSON ``"\\ud800"`` not followed by a low half): that is not Unicode text, and
    writing it anywhere (a model, a report) fails.  None if there is none."""
    found = _surrogate_in(obj, "")
    if found is None:
        return None
    where, ch = found
    col = 0
    for m in _SURROGATE.finditer(line):
        esc = m.group()[-6:]
        code = int(esc[2:], 16)
        if code == ord(ch):
            nxt = line[m.end():m.end() + 6]
            if code >= 0xDC00 or not re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", nxt):
                col = m.end() - 6 + 1
                break
    kind = obj.get("kind") if type(obj) is dict else None
    what = (f"{kind} event: " if type(kind) is str and kind.isprintable() and kind != "header"
            else "header: " if kind == "header" else "")
    return TraceError(f"{what}{where} is not Unicode text: it holds a lone UTF-16 surrogate "
                      f"\\u{ord(ch):04x}", path, no, col, line.rstrip("\n").encode(
                          "utf-8", "backslashreplace").decode("utf-8"),
                      hint="a JSON \\ud800-\\udfff escape is half of a pair (high, then "
                           "low): text cut in the middle of a character, or bytes written as "
                           "text; --lenient keeps the events before this line")


def _surrogate_in(obj: object, where: str):
    """(the field, the character) of the first lone surrogate in ``obj``'s strings, or None."""
    if type(obj) is str:
        if obj.isascii():
            return None
        try:
            obj.encode("utf-8")
            return None
        except UnicodeEncodeError as exc:
            return (where or "a string"), obj[exc.start]
    if type(obj) is dict:
        for k, v in obj.items():
            name = f"field {k!r}" if not where else f"{where}[{k!r}]"
            if (found := _surrogate_in(k, f"a field name in {where or 'the line'}")) is not None:
                return found
            if (found := _surrogate_in(v, name)) is not None:
                return found
    elif type(obj) is list:
        for i, v in enumerate(obj):
            if (found := _surrogate_in(v, f"{where}[{i}]")) is not None:
                return found
    return None


def _json_why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return getattr(exc, "msg", None) or str(exc).split(";")[0]


def line_limit() -> int:
    """The longest line a trace may hold: ``QPN_TRACE_LINE_LIMIT`` (a size, e.g. 8MiB), else
    :data:`MAX_LINE`."""
    return resources.size_from_env(LINE_ENV, MAX_LINE, "8MiB")



def _sizes(fh: IO[str], path: str) -> tuple[int, int, IO[bytes] | None]:
    """(bytes on disk, bytes of text expected, the compressed file for a gzip trace) of an
    opened trace file.  A plain file's text is its size; a gzip file's is found while
    reading, from how far into the compressed file the text read so far reaches (its
    trailer's size is not trusted: it is modulo 4 GiB, of the last member only, and any
    four bytes in a file cut short)."""
    try:
        disk = os.stat(path).st_size
    except OSError:
        return 0, 0, None
    buffer = getattr(fh, "buffer", None)
    if isinstance(buffer, gzip.GzipFile):
        return disk, 0, buffer.fileobj
    return disk, disk, None


#: what an importer of another tool's output holds per byte of the file: its text, its
#: lines and the events made of them (peak of tracemalloc over the file's size, 100,000
#: calls of the fixtures' kind: strace 7.5 MB -> 62 MB, 8.3 x; perf script 19 MB -> 94 MB,
#: 4.8 x; jfr print --json 122 MB -> 480 MB, 3.9 x), with room for longer lines' events
IMPORT_BYTES_PER_BYTE = {"strace": 10.0, "perf script": 6.0, "jfr print --json": 5.0}


def require_import_memory(path: str, kind: str) -> None:
    """Refuse (MemoryLimitError, before reading) a file of another tool's output whose
    events would not fit the memory limit: its size times what ``kind`` holds per byte
    (:data:`IMPORT_BYTES_PER_BYTE`).  A file that gives no size (a pipe) is not judged.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     _ = f.truncate(10**12)                  # a sparse terabyte
    ...     try:
    ...         require_import_memory(f.name, "strace")
    ...     except resources.MemoryLimitError as e:
    ...         print(str(e).split(") would need")[1][:25])
     about 9.1 TiB, above the
    """
    try:
        st = os.stat(path)
    except OSError:
        return                      # (the reader says it cannot read it)
    import stat
    if not stat.S_ISREG(st.st_mode):
        return
    resources.require(f"importing the {kind} output in {path} ({resources.format_size(st.st_size)})",
                      st.st_size * IMPORT_BYTES_PER_BYTE[kind],
                      hint="import a shorter recording (trace fewer requests or a shorter run)")
