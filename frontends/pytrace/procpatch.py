"""Processes the program starts and the channels between them.

* **Starts.**  A child's main thread names the thread that started it (``parent``): a
  forked child learns it at the fork (:mod:`.agent`); an exec'd one (``subprocess``,
  ``multiprocessing``'s spawn) cannot, so the parent records a ``spawn`` record (child
  pid, its own OS tid) that the runner puts into the child's ``thread_start``.
* **Ends.**  ``multiprocessing.Process.join``, ``subprocess.Popen.wait`` and
  ``Popen.communicate`` are ``wait on=join`` with ``target`` = the child's pid (its main
  thread's tid).  Once a join saw the child end, later joins of it are not recorded.
* **Channels.**  ``multiprocessing.Queue``, ``JoinableQueue``, ``SimpleQueue`` and the
  ends of a ``Pipe``, when the program's own code calls them: ``put``/``get`` on the
  channel's run-wide id, ``SHARED_IDS`` + the inode of its pipe (:mod:`.layout`), the
  same in every process.  The receiver cannot know the sender's item; the runner pairs
  them in FIFO order (``frontends.processes.pair_channels``).  Calls made by the standard
  library (a process pool's own queues, a ``Queue``'s feeder thread) are not the
  program's and are left out: :mod:`.poolpatch` records a pool's work instead.

Only the standard library may be imported here (see :mod:`.agent`).
"""
from __future__ import annotations

import importlib
import os
import stat
import sys
from collections.abc import Callable
from types import ModuleType

from .agent import blocking, classify, cpu, emit, gettid, mono, native_tid, site, spent
from .layout import SHARED_IDS

agent = importlib.import_module(".agent", __package__)   # (see boot: not `from . import`)
_kind = agent._kind
_CONTEXT = os.sep + os.path.join("multiprocessing", "context.py")
_QUEUES = os.sep + os.path.join("multiprocessing", "queues.py")
#: frames a call of the program passes through on its way to the wrapper
_VIA_CONTEXT = (_CONTEXT,)
_VIA_QUEUES = (_CONTEXT, _QUEUES)
_PAIRS_FILE = "pipes.pairs"


def ns(seconds: float | None) -> int | None:
    """A timeout in seconds as ns; None for 'wait forever' (as :func:`.sync.ns`, which
    this module does not import: it imports ``threading``)."""
    return None if seconds is None or seconds < 0 else int(seconds * 1e9)


def channel_id(fd: int) -> int | None:
    """The run-wide id of the pipe or socket behind ``fd``: ``SHARED_IDS`` + its inode."""
    try:
        return SHARED_IDS + os.fstat(fd).st_ino
    except (OSError, TypeError, ValueError):
        return None


def by_program(via: tuple = (), depth: int = 2) -> bool:
    """Whether the wrapper calling this was called by the program's own code: the first
    frame outside the tracer and outside the library files ``via`` (the way from the
    program's call to the wrapped one, e.g. ``multiprocessing/context.py``) is user code."""
    try:
        f = sys._getframe(depth)
    except ValueError:                  # called from C with no Python caller
        return False
    while f is not None:
        fn = f.f_code.co_filename
        k = _kind.get(fn)
        if k is None:
            k = classify(fn)
        if k == 0:
            return True
        if k == 1 and not fn.endswith(via):
            return False
        f = f.f_back
    return False


def _spawned(pid, s) -> None:
    """The runner's note that this thread (its OS tid), at site ``s``, started ``pid``."""
    if type(pid) is int and pid > 0:
        emit(("spawn", gettid(), mono(), None, s, pid, native_tid()))


# -- process ends -------------------------------------------------------------------

def install_process(mod: ModuleType) -> None:
    """``multiprocessing.process``: ``BaseProcess.join`` as a join wait on the child."""
    BP = mod.BaseProcess
    if getattr(BP, "_qpn_patched", False):
        return
    BP._qpn_patched = True
    BP._qpn_joined = False
    join = BP.join

    def traced_join(self, timeout=None):
        if self._qpn_joined:
            return join(self, timeout)
        s = site()
        c0 = cpu()
        t0 = mono()
        join(self, timeout)
        d, cd = spent(t0, c0)
        try:
            ended = self.exitcode is not None
            if ended:
                self._qpn_joined = True
            emit(("wait", gettid(), t0, c0, s, "join", id(self), d, None if ended else False,
                  ns(timeout), self.pid, None, cd))
        except Exception:
            pass

    traced_join.__doc__ = join.__doc__
    BP.join = traced_join
    blocking(traced_join, _cut_join)


def install_subprocess(mod: ModuleType) -> None:
    """``subprocess``: the child's start (its parent thread) and ``Popen.wait`` /
    ``Popen.communicate`` as join waits on it."""
    P = mod.Popen
    if getattr(P, "_qpn_patched", False):
        return
    P._qpn_patched = True
    P._qpn_joined = False
    P._qpn_busy = False
    execute, wait, communicate = P._execute_child, P.wait, P.communicate
    Expired = mod.TimeoutExpired

    def traced_execute_child(self, *args, **kwargs):
        execute(self, *args, **kwargs)
        try:
            _spawned(self.pid, site())
        except Exception:
            pass

    def _joined(self, fn, timeout, *args):
        if self._qpn_joined or self._qpn_busy:
            return fn(self, *args)
        s = site()
        c0 = cpu()
        t0 = mono()
        self._qpn_busy = True
        ok = None
        try:
            return fn(self, *args)
        except Expired:
            ok = False
            raise
        finally:
            self._qpn_busy = False
            d, cd = spent(t0, c0)
            try:
                if self.returncode is not None:
                    self._qpn_joined = True
                elif ok is None:
                    ok = False
                emit(("wait", gettid(), t0, c0, s, "join", id(self), d, ok, ns(timeout),
                      self.pid, None, cd))
            except Exception:
                pass

    def traced_wait(self, timeout=None):
        return _joined(self, wait, timeout, timeout)

    def traced_communicate(self, input=None, timeout=None):
        return _joined(self, communicate, timeout, input, timeout)

    traced_wait.__doc__, traced_communicate.__doc__ = wait.__doc__, communicate.__doc__
    blocking(_joined, _cut_join)
    P._execute_child = traced_execute_child
    P.wait = traced_wait
    P.communicate = traced_communicate


def _cut_join(f, tid: int, d: int) -> tuple:
    """The record of a join of a child process cut short by a signal."""
    L = f.f_locals
    return ("wait", tid, L["t0"], L["c0"], L["s"], "join", id(L["self"]), d, False,
            ns(L["timeout"]), L["self"].pid)


def _cut_get(f, tid: int, d: int) -> tuple | None:
    """The record of a get or receive on a channel cut short by a signal."""
    L = f.f_locals
    ch = L.get("ch")
    return None if ch is None else ("get", tid, L["t0"], L["c0"], L["s"], ch, None, d, None, False)


def install_mp_util(mod: ModuleType) -> None:
    """``multiprocessing.util.spawnv_passfds`` (the spawn start method's exec): the
    child's parent thread."""
    real = mod.spawnv_passfds
    if getattr(real, "_qpn", False):
        return

    def spawnv_passfds(path, args, passfds):
        pid = real(path, args, passfds)
        try:
            _spawned(pid, site())
        except Exception:
            pass
        return pid

    spawnv_passfds._qpn = True
    spawnv_passfds.__doc__ = real.__doc__
    mod.spawnv_passfds = spawnv_passfds


# -- pipes --------------------------------------------------------------------------

_peers: dict = {}          # inode -> inode of the other end of a socket pair (duplex Pipe)


def _pair(a, b) -> None:
    """Remember the two ends of a duplex ``Pipe`` (a socket pair: an inode each): a send on
    one end goes to the channel of the other.  Forked children inherit the table; spawned
    ones read it from the run's directory."""
    ia, ib = os.fstat(a.fileno()).st_ino, os.fstat(b.fileno()).st_ino
    _peers[ia], _peers[ib] = ib, ia
    if agent.FOLLOW_DIR is not None:
        fd = os.open(os.path.join(agent.FOLLOW_DIR, _PAIRS_FILE),
                     os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{ia} {ib}\n".encode())
        finally:
            os.close(fd)


def _peer(inode: int) -> int | None:
    p = _peers.get(inode)
    if p is None and agent.FOLLOW_DIR is not None:
        try:               # os.read: the traced open() would record this as the program's
            fd = os.open(os.path.join(agent.FOLLOW_DIR, _PAIRS_FILE), os.O_RDONLY)
            try:
                chunks = []
                while True:
                    b = os.read(fd, 65536)
                    if not b:
                        break
                    chunks.append(b)
            finally:
                os.close(fd)
            for line in b"".join(chunks).split(b"\n"):
                if line:
                    a, b = map(int, line.split())
                    _peers[a], _peers[b] = b, a
        except (OSError, ValueError):
            pass
        p = _peers.get(inode)
    return p


def _channels(conn) -> tuple:
    """(channel of the connection's receives, channel of its sends), cached on it."""
    ch = conn.__dict__.get("_qpn_ch")
    if ch is None:
        rx = tx = None
        try:
            st = os.fstat(conn.fileno())
            rx = SHARED_IDS + st.st_ino
            if stat.S_ISFIFO(st.st_mode):
                tx = rx                         # both ends of a pipe: one inode
            else:
                peer = _peer(st.st_ino)
                tx = None if peer is None else SHARED_IDS + peer
        except (OSError, ValueError):
            pass
        ch = conn._qpn_ch = (rx, tx)
    return ch


#: the connection methods as they were (name -> function), for the library's own pipes
REAL: dict = {}
_CONN_METHODS = ("send", "send_bytes", "recv", "recv_bytes", "recv_bytes_into")


def raw_method(conn: object, name: str) -> Callable:
    """``conn``'s method ``name``, unwrapped (no check of who calls it)."""
    real = REAL.get(name)
    return getattr(conn, name) if real is None else real.__get__(conn)


def raw(conn: object) -> None:
    """Make the connection's methods the unwrapped ones (a pool's own pipe, used per item:
    the check of who calls each costs 0.4 us)."""
    for name in _CONN_METHODS:
        if name in REAL:
            setattr(conn, name, REAL[name].__get__(conn))


def raw_queue(q: object) -> None:
    """:func:`raw` for both ends of a library-made ``multiprocessing`` queue, and the
    methods the queue bound from them."""
    raw(q._reader)
    raw(q._writer)
    if hasattr(q, "_send_bytes"):
        q._send_bytes, q._recv_bytes = q._writer.send_bytes, q._reader.recv_bytes


def install_connection(mod: ModuleType) -> None:
    """``multiprocessing.connection``: ``Pipe`` ends used by the program's code are
    channels: ``send``/``send_bytes`` a put, ``recv``/``recv_bytes(_into)`` a get."""
    C = mod.Connection
    if getattr(C, "_qpn_patched", False):
        return
    C._qpn_patched = True
    Pipe = mod.Pipe

    def traced_Pipe(duplex=True):
        a, b = Pipe(duplex)
        if duplex:
            try:
                _pair(a, b)
            except Exception:
                pass
        return a, b

    traced_Pipe.__doc__ = Pipe.__doc__
    mod.Pipe = traced_Pipe

    def sender(real):
        def send(self, obj, *args):
            if not by_program():
                return real(self, obj, *args)
            ch = _channels(self)[1]
            s = site()
            c0 = cpu()
            t0 = mono()
            real(self, obj, *args)
            d, cd = spent(t0, c0)
            if ch is not None:
                emit(("put", gettid(), t0, c0, s, ch, id(obj), d, None, None, cd))
        send.__name__ = send.__qualname__ = real.__name__
        send.__doc__ = real.__doc__
        return send

    def receiver(real):
        def recv(self, *args):
            if not by_program():
                return real(self, *args)
            ch = _channels(self)[0]
            s = site()
            c0 = cpu()
            t0 = mono()
            value = real(self, *args)
            d, cd = spent(t0, c0)
            if ch is not None:
                emit(("get", gettid(), t0, c0, s, ch, None, d, None, None, cd))
            return value
        recv.__name__ = recv.__qualname__ = real.__name__
        recv.__doc__ = real.__doc__
        return recv

    base = getattr(mod, "_ConnectionBase", C)             # it holds them
    REAL.update((name, getattr(base, name)) for name in _CONN_METHODS)
    for name in ("send", "send_bytes"):
        setattr(base, name, sender(getattr(base, name)))
    for name in ("recv", "recv_bytes", "recv_bytes_into"):
        setattr(base, name, receiver(getattr(base, name)))
        blocking(getattr(base, name), _cut_get)


# -- queues -------------------------------------------------------------------------

def _queue_channel(q) -> int | None:
    ch = q.__dict__.get("_qpn_ch")
    if ch is None:
        try:
            ch = q._qpn_ch = channel_id(q._reader.fileno())
        except Exception:
            return None
    return ch


def install_queues(mod: ModuleType) -> None:
    """``multiprocessing.queues``: ``Queue``, ``JoinableQueue`` and ``SimpleQueue`` the
    program calls are channels (an ``object`` where the program makes one; ``put``/``get``
    with the waits)."""
    Q, JQ, SQ = mod.Queue, mod.JoinableQueue, mod.SimpleQueue
    if getattr(Q, "_qpn_patched", False):
        return
    Q._qpn_patched = True
    Full, Empty = mod.Full, mod.Empty

    def made(real, type_):
        def __init__(self, *args, **kwargs):
            real(self, *args, **kwargs)
            try:
                if by_program(_VIA_QUEUES):
                    ch = _queue_channel(self)
                    size = args[0] if args else kwargs.get("maxsize", 0)
                    params = {"capacity": size} if type(size) is int and size > 0 else None
                    if ch is not None:
                        emit(("object", gettid(), mono(), cpu(), site(), ch, type_, params))
            except Exception:
                pass
        __init__.__doc__ = real.__doc__
        return __init__

    def putter(real):
        def put(self, obj, *args, **kwargs):
            if not by_program(_VIA_QUEUES):
                return real(self, obj, *args, **kwargs)
            ch = _queue_channel(self)
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                real(self, obj, *args, **kwargs)
            except Full:
                d, cd = spent(t0, c0)
                if ch is not None:
                    emit(("put", gettid(), t0, c0, s, ch, id(obj), d, None, False, cd))
                raise
            d, cd = spent(t0, c0)
            if ch is not None:
                emit(("put", gettid(), t0, c0, s, ch, id(obj), d, None, None, cd))
        put.__doc__ = real.__doc__
        return put

    def getter(real):
        def get(self, *args, **kwargs):
            if not by_program(_VIA_QUEUES):
                return real(self, *args, **kwargs)
            ch = _queue_channel(self)
            s = site()
            c0 = cpu()
            t0 = mono()
            try:
                value = real(self, *args, **kwargs)
            except Empty:
                d, cd = spent(t0, c0)
                if ch is not None:
                    emit(("get", gettid(), t0, c0, s, ch, None, d, None, False, cd))
                raise
            d, cd = spent(t0, c0)
            if ch is not None:
                emit(("get", gettid(), t0, c0, s, ch, None, d, None, None, cd))
            return value
        get.__doc__ = real.__doc__
        return get

    Q.__init__ = made(Q.__init__, "queue")
    SQ.__init__ = made(SQ.__init__, "simple_queue")
    for cls in (Q, JQ, SQ):
        cls._qpn_ch = None
        if "put" in vars(cls):
            cls.put = putter(vars(cls)["put"])
        if "get" in vars(cls):
            cls.get = getter(vars(cls)["get"])
            blocking(cls.get, _cut_get)

