"""A suite's server (``[server]`` in suite.toml): started around each measured run of
the load program, and traced while the load program runs for the model.

The server runs isolated like every measured program (own session, autogroup nice
-19).  It is ready when 127.0.0.1:PORT accepts a connection, and it is stopped with
SIGTERM to its session (a server started from a non-interactive shell ignores
SIGINT), then SIGKILL if it has not exited after ``STOP_S`` seconds.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time

from qpn.errors import QPNError

from .isolation import ISOLATE, PIDFILE

#: seconds a server may take to accept connections, and to exit after SIGTERM
READY_S, STOP_S = 60.0, 20.0


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def _wait_ready(port: int, alive, what: str) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if _accepts(port):
            return
        if not alive():
            raise QPNError(f"{what} exited before accepting connections on 127.0.0.1:{port}")
        time.sleep(0.05)
    raise QPNError(f"{what} did not accept connections on 127.0.0.1:{port} within {READY_S:g} s")


def _stop(pid: int, done) -> None:
    """SIGTERM to the server's session, then SIGKILL; ``done()`` says it has exited."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + STOP_S
        while time.monotonic() < deadline:
            if done():
                return
            time.sleep(0.05)


@contextlib.contextmanager
def running_server(suite, values: dict):
    """The suite's server at ``values``, accepting connections for the ``with`` body."""
    argv = suite.server_argv(values)
    port = suite.server_port(values)
    what = _check_free(suite, argv, port)
    proc = subprocess.Popen(ISOLATE + argv, cwd=suite.dir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait_ready(port, lambda: proc.poll() is None, what)
        yield
    finally:
        _stop(proc.pid, lambda: proc.poll() is not None)
        err = proc.stderr.read() if proc.stderr else ""
        proc.wait()
    if proc.returncode not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
        raise QPNError(f"{what} exited with {proc.returncode}: {err.strip()[-500:]}")


def _check_free(suite, argv: list, port: int) -> str:
    what = f"{suite.name}: the server `{' '.join(argv)}`"
    if _accepts(port):
        raise QPNError(f"{what}: 127.0.0.1:{port} already accepts connections (another server "
                       "is running there); stop it or change the suite's port")
    return what


def traced_server(suite, values: dict, trace_to: str, load):
    """Trace the suite's server at ``values`` into ``trace_to`` while ``load()`` runs
    against it; returns what ``load()`` returned.

    The tracer runs in this (the main) thread, which handles its signals; the load
    runs in another, and stops the server when it is done."""
    from qpn.frontends.pytrace import trace_command
    from qpn.frontends.pytrace.runner import program_packages
    argv = suite.server_argv(values)
    port = suite.server_port(values)
    what = _check_free(suite, argv, port) + " (traced)"
    fd, pidfile = tempfile.mkstemp(prefix="qpn-server-", suffix=".pid")
    os.close(fd)
    out: dict = {}
    exited = threading.Event()

    def pid() -> int | None:
        with contextlib.suppress(OSError, ValueError), open(pidfile) as fh:
            return int(fh.read().strip())
        return None

    def drive() -> None:
        try:
            _wait_ready(port, lambda: not exited.is_set(), what)
            out["load"] = load()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc
        finally:
            p = pid()
            if p is not None:
                _stop(p, exited.is_set)
    th = threading.Thread(target=drive, name="load", daemon=True)
    th.start()
    try:
        trace_command(PIDFILE + [pidfile] + argv, trace_to, cwd=suite.dir,
                      stdout=subprocess.DEVNULL, packages=program_packages(argv, suite.dir))
    finally:
        exited.set()
        th.join(STOP_S + READY_S)
        os.unlink(pidfile)
    if "error" in out:
        raise out["error"]
    return out.get("load")


__all__ = ["running_server", "traced_server", "READY_S", "STOP_S"]
