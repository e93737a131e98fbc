"""Reading model text from files: UTF-8 only, and a located error otherwise.

A byte that is not UTF-8 is reported like any other mistake in a model: at its
line and column, with the line shown (undecodable bytes as U+FFFD) and a caret.
"""
from __future__ import annotations

import os

from qpn.errors import Loc, ModelError


class BinaryFile(ModelError):
    """The file holds NUL bytes: binary data (a program, an image, /proc/self/environ),
    not model text.  Located at the first NUL; nothing of the file is shown."""

    def __init__(self, file: str, line: int, col: int):
        self.reason = f"it holds NUL bytes, as binary data does: the first at line {line}, column {col}"
        super().__init__(f"the file is not a model text: {self.reason}", Loc(file, line, col),
                         expected="a UTF-8 text file",
                         hint="check the file name: model files are text (.qpn, .qpe, .pnml, .lqn)")


def decode_source(data: bytes, file: str) -> str:
    """``data`` as text; a :class:`ModelError` at the first byte that is not UTF-8.

    A leading byte-order mark is dropped (editors on Windows write one).  A file with a
    NUL byte is binary data, refused without showing any of it (:class:`BinaryFile`).
    """
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        line_start = data.rfind(b"\n", 0, nul) + 1
        col = len(data[line_start:nul].decode("utf-8", errors="replace")) + 1
        raise BinaryFile(file, line, col)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc, file) from None


def not_utf8(data: bytes, exc: UnicodeDecodeError, file: str) -> ModelError:
    """The located error for an undecodable byte at ``exc.start`` of ``data``."""
    start = exc.start
    line = data.count(b"\n", 0, start) + 1
    line_start = data.rfind(b"\n", 0, start) + 1
    # the column counts characters, as everywhere else: decode what comes before
    col = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
    shown = data.decode("utf-8", errors="replace")
    byte = data[start:start + 1].hex()
    return ModelError(f"the file is not UTF-8 text: byte 0x{byte} cannot be decoded ({exc.reason})",
                      Loc(file, line, col, line, col + 1, shown),
                      expected="a UTF-8 text file",
                      hint="re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE)")


def read_source(path: str | os.PathLike) -> str:
    """The text of a model (or included) file; errors name the path as given."""
    with open(path, "rb") as fh:
        data = fh.read()
    return decode_source(data, os.fspath(path))
