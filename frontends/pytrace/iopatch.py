"""Traced file and socket I/O and ``time.sleep``.

``open`` called (directly or through pathlib etc.) from user code returns a
thin proxy that records open/read/write/close with path, bytes, wall and CPU
duration; opens made by library machinery alone (imports, linecache) are left
alone.  Iterating a file line by line is recorded as one aggregated read per
loop (``calls`` = lines; for text files ``bytes`` counts characters), because
one event per line would cost more than the line itself.

Socket methods are wrapped on ``socket.socket``, so sockets made by any code
(http.client, socketserver) are traced, including ``makefile`` streams.  The calls that
asyncio's event loop makes for itself are not (``agent.AIO_FILES``): its wake-up pipe,
its transports' reads and writes and its ``sock_*`` retries; the program's I/O is recorded
where its tasks await it (:mod:`.aiopatch`).  A server's accepts are kept: they run in
the loop, and the task handling each connection names the loop's thread as its parent.
"""
from __future__ import annotations

import builtins
import io
import os
import stat
import sys
import time
import weakref

from .agent import AIO_FILES, blocking, cpu, emit, gettid, mono, site, spent, user_site

_open = builtins.open
_sleep = time.sleep


def traced_sleep(seconds: float) -> None:
    """``time.sleep`` that records a sleep wait with the duration asked for."""
    s = site()
    c0 = cpu()
    t0 = mono()
    _sleep(seconds)
    d, cd = spent(t0, c0)
    emit(("wait", gettid(), t0, c0, s, "sleep", None, d, None, None, None, int(seconds * 1e9), cd))


blocking(traced_sleep, lambda f, tid, d: (
    "wait", tid, f.f_locals["t0"], f.f_locals["c0"], f.f_locals["s"], "sleep", None, d, False,
    None, None, int(f.f_locals["seconds"] * 1e9)))


def traced_open(file, mode="r", *args, **kwargs):
    """``open`` that returns a traced file for files opened from the program's own code."""
    s = user_site()
    if s is None:
        return _open(file, mode, *args, **kwargs)
    path = f"fd:{file}" if isinstance(file, int) else os.fsdecode(file)
    c0 = cpu()
    t0 = mono()
    try:
        f = _open(file, mode, *args, **kwargs)
    except OSError:
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "open", None, path, None, None, d, cd, None, False))
        raise
    d, cd = spent(t0, c0)
    proxy = TracedFile(f, path)
    if proxy._fd is not None:
        _files[proxy._fd] = proxy
    emit(("io", gettid(), t0, c0, s, "open", id(proxy), path, proxy._fd, None, d, cd))
    return proxy


class TracedFile:
    """Proxy of an open file: traced I/O methods, everything else delegated.

    The read/write methods are written out one by one (no shared helper) since
    each extra Python call costs a noticeable part of the tracer's overhead.  Calls shorter than layout.LONG get no ``cpu_dur``
    (their CPU, at most that long, counts to the next fragment).
    """

    __slots__ = ("_f", "_path", "_fd", "_it", "_rd", "_wr", "__weakref__")

    def __init__(self, f, path: str):
        self._f, self._path, self._it = f, path, None
        self._rd, self._wr = "read", "write"
        try:
            self._fd = f.fileno()
            # a pipe (another process's stdout, a subprocess's stdin) is a channel between
            # processes, as a socket is: its reads and writes are receives and sends
            if stat.S_ISFIFO(os.fstat(self._fd).st_mode):
                self._rd, self._wr = "recv", "send"
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            self._fd = None

    def _record(self, op, s, t0, c0, nbytes):
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, op, id(self), self._path, self._fd, nbytes, d, cd))

    def read(self, *args):
        """As the file's ``read``; records an I/O event (bytes, duration)."""
        if self._it is not None:
            self._flush_iter()
        s = site()
        c0 = cpu()
        t0 = mono()
        data = self._f.read(*args)
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, self._rd, id(self), self._path, self._fd, len(data),
              d, cd))
        return data

    def readline(self, *args):
        """As the file's ``readline``; records an I/O event."""
        s = site()
        c0 = cpu()
        t0 = mono()
        data = self._f.readline(*args)
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, self._rd, id(self), self._path, self._fd, len(data),
              d, cd))
        return data

    def readinto(self, buffer):
        """As the file's ``readinto``; records an I/O event."""
        s = site()
        c0 = cpu()
        t0 = mono()
        n = self._f.readinto(buffer)
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, self._rd, id(self), self._path, self._fd, n or 0,
              d, cd))
        return n

    def read1(self, *args):
        """As the file's ``read1``; records an I/O event."""
        s, c0, t0 = site(), cpu(), mono()
        data = self._f.read1(*args)
        self._record(self._rd, s, t0, c0, len(data))
        return data

    def readlines(self, *args):
        """As the file's ``readlines``; records an I/O event."""
        s, c0, t0 = site(), cpu(), mono()
        lines = self._f.readlines(*args)
        self._record(self._rd, s, t0, c0, sum(map(len, lines)))
        return lines

    def write(self, data):
        """As the file's ``write``; records an I/O event."""
        s = site()
        c0 = cpu()
        t0 = mono()
        n = self._f.write(data)
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, self._wr, id(self), self._path, self._fd, len(data),
              d, cd))
        return n

    def writelines(self, lines):
        """As the file's ``writelines``; records an I/O event."""
        lines = list(lines)
        s, c0, t0 = site(), cpu(), mono()
        self._f.writelines(lines)
        self._record(self._wr, s, t0, c0, sum(map(len, lines)))

    def close(self) -> None:
        """As the file's ``close`` (pending iteration reads recorded first)."""
        if self._it is not None:
            self._flush_iter()
        f = self._f
        if not f.closed:
            s, c0, t0 = site(), cpu(), mono()
            f.close()
            self._record("close", s, t0, c0, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self):
        return self

    def __next__(self):
        t0 = mono()
        try:
            line = next(self._f)
        except StopIteration:
            if self._it is not None:
                self._flush_iter()
            raise
        it = self._it
        if it is None:
            self._it = [t0, cpu(), site(), 1, len(line), mono() - t0]
        else:
            it[3] += 1
            it[4] += len(line)
            it[5] += mono() - t0
        return line

    def _flush_iter(self) -> None:
        t0, c0, s, calls, nbytes, dur = self._it
        self._it = None
        emit(("io", gettid(), t0, c0, s, self._rd, id(self), self._path, self._fd, nbytes, dur,
              None, None, None, calls))

    # frequent untraced calls, defined here because __getattr__ is slow
    def seek(self, *args):
        """As the file's ``seek``."""
        return self._f.seek(*args)

    def tell(self):
        """As the file's ``tell``."""
        return self._f.tell()

    def flush(self):
        """As the file's ``flush``."""
        return self._f.flush()

    def fileno(self):
        """As the file's ``fileno``."""
        return self._f.fileno()

    @property
    def closed(self):
        """Whether the file is closed."""
        return self._f.closed

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __del__(self):
        if self._it is not None:
            self._flush_iter()

    def __repr__(self) -> str:
        return f"<traced {self._f!r}>"


def _name(sock, peer: bool = False) -> str | None:
    """The socket's own address (``getsockname``), or its peer's: the two name the
    connection on both ends, so traces of two processes can be linked."""
    try:
        return str(sock.getpeername() if peer else sock.getsockname())
    except OSError:
        return None


def _wrap_socket(socket) -> None:
    S = socket.socket
    send, sendall, recv, recv_into = S.send, S.sendall, S.recv, S.recv_into
    sendto, recvfrom, accept, connect = S.sendto, S.recvfrom, S.accept, S.connect

    def failed(self, op, s, t0, c0):
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, op, id(self), None, self.fileno(), None, d, cd, None,
              False))

    def t_send(self, data, *args):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return send(self, data, *args)
        s, c0, t0 = site(), cpu(), mono()
        try:
            n = send(self, data, *args)
        except OSError:
            failed(self, "send", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "send", id(self), None, self.fileno(), n, d, cd))
        return n

    def t_sendall(self, data, *args):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return sendall(self, data, *args)
        s, c0, t0 = site(), cpu(), mono()
        try:
            sendall(self, data, *args)
        except OSError:
            failed(self, "send", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "send", id(self), None, self.fileno(), len(data),
              d, cd))

    def t_sendto(self, data, *args):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return sendto(self, data, *args)
        s, c0, t0 = site(), cpu(), mono()
        n = sendto(self, data, *args)
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "send", id(self), None, self.fileno(), n, d, cd,
              str(args[-1])))
        return n

    def t_recv(self, size, *args):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return recv(self, size, *args)
        s, c0, t0 = site(), cpu(), mono()
        try:
            data = recv(self, size, *args)
        except OSError:
            failed(self, "recv", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "recv", id(self), None, self.fileno(), len(data),
              d, cd))
        return data

    def t_recv_into(self, buffer, *args):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return recv_into(self, buffer, *args)
        s, c0, t0 = site(), cpu(), mono()
        try:
            n = recv_into(self, buffer, *args)
        except OSError:
            failed(self, "recv", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "recv", id(self), None, self.fileno(), n, d, cd))
        return n

    def t_recvfrom(self, size, *args):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return recvfrom(self, size, *args)
        s, c0, t0 = site(), cpu(), mono()
        data, addr = recvfrom(self, size, *args)
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "recv", id(self), None, self.fileno(), len(data),
              d, cd, str(addr)))
        return data, addr

    def t_accept(self):
        quiet = False
        if AIO_FILES:
            code = sys._getframe(1).f_code
            if code.co_filename in AIO_FILES:
                if code.co_name != "_accept_connection":       # sock_accept's: recorded there
                    return accept(self)
                quiet = True            # a server's accept loop ends on an empty backlog
        s, c0, t0 = site(), cpu(), mono()
        try:
            conn, addr = accept(self)
        except OSError:
            if not quiet:
                failed(self, "accept", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "accept", id(self), None, self.fileno(), None,
              d, cd, str(addr), None, None, conn.fileno(), _name(conn)))
        return conn, addr

    def t_connect(self, address):
        if AIO_FILES and sys._getframe(1).f_code.co_filename in AIO_FILES:
            return connect(self, address)
        s, c0, t0 = site(), cpu(), mono()
        try:
            connect(self, address)
        except OSError:
            failed(self, "connect", s, t0, c0)
            raise
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "connect", id(self), None, self.fileno(), None,
              d, cd, _name(self, True) or str(address), None, None, None, _name(self)))

    for name, fn in (("send", t_send), ("sendall", t_sendall), ("sendto", t_sendto),
                     ("recv", t_recv), ("recv_into", t_recv_into), ("recvfrom", t_recvfrom),
                     ("accept", t_accept), ("connect", t_connect)):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = getattr(S, name).__doc__
        setattr(S, name, fn)


_fsync = os.fsync
_fdatasync = getattr(os, "fdatasync", None)
_files: "weakref.WeakValueDictionary[int, TracedFile]" = weakref.WeakValueDictionary()


def _synced(real, fd) -> None:
    s, c0, t0 = site(), cpu(), mono()
    n = fd if isinstance(fd, int) else fd.fileno()
    try:
        real(fd)
    except OSError:
        d, cd = spent(t0, c0)
        emit(("io", gettid(), t0, c0, s, "fsync", None, None, n, None, d, cd, None, False))
        raise
    d, cd = spent(t0, c0)
    f = _files.get(n)
    emit(("io", gettid(), t0, c0, s, "fsync", id(f) if f is not None else None,
          f._path if f is not None else None, n, None, d, cd))


def traced_fsync(fd) -> None:
    """``os.fsync``: a device wait (op ``fsync``), with the file's path when it was
    opened by the traced ``open``."""
    _synced(_fsync, fd)


def traced_fdatasync(fd) -> None:
    """``os.fdatasync``, recorded as an ``fsync``."""
    _synced(_fdatasync, fd)


def install() -> None:
    """Replace ``time.sleep`` and ``open`` by the traced ones."""
    time.sleep = traced_sleep
    builtins.open = traced_open
    io.open = traced_open
    os.fsync = traced_fsync
    if _fdatasync is not None:
        os.fdatasync = traced_fdatasync


def install_socket() -> None:
    """Trace socket I/O (connections, sends and receives) of the program."""
    import socket
    _wrap_socket(socket)


def _traced_select(real):
    """A selector's ``select`` (or ``select.select``) that records the wait as ``wait
    on=select``: the time a thread waits for one of its sockets, which a ``recv`` or
    ``accept`` after it does not show (it returns at once)."""
    def select(*args, **kwargs):
        s, c0, t0 = site(), cpu(), mono()
        out = real(*args, **kwargs)
        d, cd = spent(t0, c0)
        timeout = kwargs.get("timeout", args[-1] if len(args) in (2, 4) else None)
        emit(("wait", gettid(), t0, c0, s, "select", None, d, bool(out and (
            out[0] if isinstance(out, tuple) else out)) or None,
            int(timeout * 1e9) if isinstance(timeout, (int, float)) and timeout >= 0 else None,
            None, None, cd))
        return out
    select.__name__ = getattr(real, "__name__", "select")
    select.__doc__ = getattr(real, "__doc__", None)
    select._qpn_traced = True
    return select


def install_select(selectors) -> None:
    """Trace the waits of ``selectors``' selectors and of ``select.select`` (a server's
    accept loop, a client's receiver over many sockets, an event loop's idle time)."""
    import select as select_mod
    if not getattr(select_mod.select, "_qpn_traced", False):
        select_mod.select = _traced_select(select_mod.select)
    for cls in list(vars(selectors).values()):
        if isinstance(cls, type) and issubclass(cls, selectors.BaseSelector) and \
                callable(cls.__dict__.get("select")) and not getattr(
                    cls.__dict__["select"], "_qpn_traced", False) and \
                not getattr(cls.__dict__["select"], "__isabstractmethod__", False):
            cls.select = _traced_select(cls.__dict__["select"])
