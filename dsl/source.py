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


#: The largest model file read (a .qpn file, an included one, a .qpe, .pnml or .lqn
#: file), in bytes.  The largest shipped model is 11 KB; a net that compiles within
#: the unfolding limit (20,000 slots and bindings) is about 2 MB of declarations, and
#: parsing costs about 95 bytes of memory and 5.5 us per byte of declarations (a
#: 1.8 MB model of 40,000 places and transitions: 170 MB, 11 s), so 16 MiB of them
#: need about 1.6 GB and a minute and a half.  A larger file is refused from its size,
#: before it is read.  ``QPN_MODEL_SIZE_LIMIT=SIZE`` raises it.
MAX_MODEL_BYTES = 16 << 20
MODEL_SIZE_ENV = "QPN_MODEL_SIZE_LIMIT"


class FileTooLarge(BinaryFile):
    """The file is larger than a model file may be (:func:`model_size_limit`): refused
    from its size before it is read.  Like :class:`BinaryFile` it is not model text, so
    an include names it at the include."""

    def __init__(self, file: str, size: int, limit: int, *, at_least: bool = False):
        from qpn.resources import round_size
        self.size, self.limit = size, limit
        if at_least:     # it gave no size (a /proc file) or grew while read
            self.reason = f"it holds more than the {_size(limit)} a model file may have"
            what = f"it holds more than {_size(limit)}, the limit"
        else:
            self.reason = f"it is {_size(size)}, more than the {_size(limit)} a model file may have"
            what = f"{_size(size)} ({size:,} bytes), above the limit of {_size(limit)}"
        ModelError.__init__(
            self, f"the file is too large for a model: {what}", Loc(file, 1, 1),
            expected=f"a model file of at most {_size(limit)} (the largest shipped model has 11 KB)",
            hint=f"check the file name; if this file is a model, raise the limit with "
                 f"{MODEL_SIZE_ENV}=SIZE (e.g. {MODEL_SIZE_ENV}={round_size(max(size, limit) * 2)}); "
                 "parsing takes about a minute and 1.6 GB for each 16 MiB of declarations")


def _size(n: int) -> str:
    from qpn.resources import format_size
    return format_size(n)


def model_size_limit() -> int:
    """The largest model file read: ``QPN_MODEL_SIZE_LIMIT`` (a size, e.g. 64MiB), else
    :data:`MAX_MODEL_BYTES`."""
    from qpn.resources import size_from_env
    return size_from_env(MODEL_SIZE_ENV, MAX_MODEL_BYTES, "64MiB")


def read_model_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a model file, refused (:class:`FileTooLarge`) when its size is above
    :func:`model_size_limit`: from the size the file system gives, before reading, and
    while reading (a file that grows, or that gives no size, as /proc files do)."""
    limit = model_size_limit()
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise FileTooLarge(os.fspath(path), size, limit)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(os.fspath(path), limit, limit, at_least=True)
    return data


def read_source(path: str | os.PathLike) -> str:
    """The text of a model (or included) file; errors name the path as given."""
    return decode_source(read_model_bytes(path), os.fspath(path))
