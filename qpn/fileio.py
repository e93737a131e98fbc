"""Safe file output: check before the work, never leave a user's file half-written.

Every command that writes a file calls :func:`check_output` on each output path
before it starts working (a missing directory is found in a millisecond, not
after a long simulation), then writes with :func:`write_atomic`.  Both name the
path as the user gave it, never the hidden temp file, and a symlink is written
through: its target gets the new text and the link stays a link.
"""
from __future__ import annotations

import os
import tempfile

from .errors import QPNError


class OutputError(QPNError):
    """An output file that cannot be written: the user's path, why, and a hint."""

    def __init__(self, path: str, why: str, hint: str | None = None):
        self.path, self.why, self.hint = path, why, hint
        super().__init__(f"error: cannot write {path}: {why}" + (f"\nhint: {hint}" if hint else ""))


def _target(path: str) -> str:
    """Where writing ``path`` lands: through symlinks (also a dangling one)."""
    return os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)


def _probe_dir(path: str, directory: str) -> None:
    """Create and remove a temp file in ``directory``: the only test that holds for
    root, read-only mounts and ACLs alike (os.access answers for the real uid)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".qpn-probe-", dir=directory)
    except OSError as exc:
        raise OutputError(path, f"directory {directory} is not writable ({exc.strerror})",
                          "choose another output path, or fix the directory's permissions") from None
    os.close(fd)
    os.unlink(tmp)


def check_output(path: str | os.PathLike | None) -> None:
    """Raise :class:`OutputError` now if ``path`` could not be written later.

    ``None`` and ``"-"`` (standard output) pass.  Checked: the directory exists
    and is writable, the target is not a directory, an existing file is writable.
    """
    if path is None or os.fspath(path) == "-":
        return
    path = os.fspath(path)
    target = _target(path)
    if os.path.isdir(target):
        raise OutputError(path, "it is a directory", "give a file name inside it")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        shown = os.path.dirname(path) or directory
        raise OutputError(path, f"directory {shown} does not exist",
                          f"create it first: mkdir -p {shown}")
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise OutputError(path, "the file is read-only", f"chmod u+w {path}, or write elsewhere")
    _probe_dir(path, directory)


def check_output_dir(path: str | os.PathLike) -> None:
    """Raise :class:`OutputError` if files cannot be created in directory ``path``
    (which must exist: callers create it first)."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise OutputError(path, "not a directory")
    _probe_dir(path, path)


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory + rename.

    The rename is atomic on POSIX, so readers see the old or the new file,
    never a mix; the original permissions are kept.  A symlink is written
    through (its target is replaced, the link kept).  Errors name ``path``.
    """
    path = os.fspath(path)
    target = _target(path)
    directory = os.path.dirname(target)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask  # what open() would have created
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from None
    if os.path.isdir(target):
        raise OutputError(path, "it is a directory", "give a file name inside it")
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp",
                                   dir=directory)
    except FileNotFoundError:
        raise OutputError(path, f"directory {os.path.dirname(path) or directory} does not exist",
                          f"create it first: mkdir -p {os.path.dirname(path) or directory}") from None
    except OSError as exc:
        raise OutputError(path, f"directory {directory} is not writable ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):     # disk full, quota ...: the user's file, not the temp
            raise OutputError(path, exc.strerror or str(exc)) from None
        raise
