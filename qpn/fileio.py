"""Safe file output: check before the work, never leave a user's file half-written.

Every command that writes a file calls :func:`check_output` on each output path
before it starts working (a missing directory is found in a millisecond, not
after a long simulation), then writes with :func:`write_atomic`.  Both name the
path as the user gave it, never the hidden temp file, and a symlink is written
through: its target gets the new text and the link stays a link.

What is already at the path stays what it was: a device node or a FIFO is
written to as it is (never renamed over), a socket is refused, and a regular
file keeps its owner, group, mode and hard links (a file that another user owns
or that has several names is rewritten in place, its old text restored if the
write fails half-way).
"""
from __future__ import annotations

import os
import stat
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


def _special_kind(path: str) -> str | None:
    """What ``path`` (through links) is when it exists and is not a regular file
    or a directory (``"device"``, ``"fifo"``, ``"socket"``); else ``None``."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISSOCK(mode):
        return "socket"
    return "fifo" if stat.S_ISFIFO(mode) else "device"


def _write_plain(path: str, data: bytes) -> None:
    """Write ``data`` to a device node or FIFO as it is (a FIFO waits for a reader)."""
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from None


def _write_in_place(path: str, target: str, data: bytes) -> None:
    """Rewrite a regular file through its own inode (keeps owner and hard links).

    The new text is written over the old one before truncating; if that fails
    (disk full) the old text, whose blocks are still allocated, is put back."""
    try:
        with open(target, "r+b") as fh:
            old = fh.read()
            try:
                fh.seek(0)
                fh.write(data)
                fh.truncate(len(data))
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:
                fh.seek(0)
                fh.write(old)
                fh.truncate(len(old))
                fh.flush()
                raise exc
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from None


def check_output(path: str | os.PathLike | None) -> None:
    """Raise :class:`OutputError` now if ``path`` could not be written later.

    ``None`` and ``"-"`` (standard output) pass.  Checked: the directory exists
    and is writable, the target is not a directory, an existing file is writable.
    """
    if path is None or os.fspath(path) == "-":
        return
    path = os.fspath(path)
    kind = _special_kind(path)
    if kind == "socket":
        raise OutputError(path, "it is a socket", "write to a file, or to standard output with -")
    if kind is not None:    # a device or a FIFO (/dev/fd/N too) is written as it is
        if not os.access(path, os.W_OK):
            raise OutputError(path, f"the {kind} is not writable", "write elsewhere")
        return
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
    never a mix; the original permissions, owner and group are kept.  A
    symlink is written through (its target is replaced, the link kept).  A
    device node or FIFO is written as it is, a socket refused; a file with
    several hard links, or owned by someone the process cannot give it back
    to, is rewritten in place.  ``"-"`` is standard output (as :func:`check_output`
    lets it pass).  Errors name ``path``.
    """
    path = os.fspath(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if path == "-":
        import sys
        sys.stdout.flush()
        out = getattr(sys.stdout, "buffer", None)
        if out is None:             # a text-only stream (a test's capture)
            sys.stdout.write(raw.decode("utf-8", "replace"))
        else:
            out.write(raw)
            out.flush()
        return
    kind = _special_kind(path)
    if kind == "socket":
        raise OutputError(path, "it is a socket", "write to a file, or to standard output with -")
    if kind is not None:
        return _write_plain(path, raw)
    target = _target(path)
    directory = os.path.dirname(target)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask  # what open() would have created
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from None
    if st is not None:
        mode = st.st_mode & 0o7777
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(path, "it is a directory", "give a file name inside it")
        if st.st_nlink > 1:
            return _write_in_place(path, target, raw)
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
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None and (st.st_uid, st.st_gid) != _owner(tmp):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:      # cannot give it back: keep the file's own inode
                os.unlink(tmp)
                return _write_in_place(path, target, raw)
        os.chmod(tmp, mode)             # after chown, which clears set-id bits
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):     # disk full, quota ...: the user's file, not the temp
            raise OutputError(path, exc.strerror or str(exc)) from None
        raise


def _owner(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid
