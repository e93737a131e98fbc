"""The recorder that runs inside the traced Python process.

It is started by a generated ``sitecustomize`` before the program's first line
(:mod:`.boot`, which also installs the wrappers of :mod:`.sync`, :mod:`.queues`
and :mod:`.iopatch`; see :mod:`frontends.pytrace.runner`), and collects every
event as a tuple in one list (``list.append`` is atomic under the GIL, so threads need no
lock of their own).  The list is spilled to a raw file as marshal records when
it grows large, at exit, on SIGTERM and before ``os._exit``; the runner turns
the records into the neutral format afterwards, so JSON encoding never slows
the program down.

Only the standard library may be imported here: the traced interpreter need not
have qpn's dependencies.
"""
from __future__ import annotations

import _thread
import itertools
import marshal
import _signal  # not `signal`: it imports enum, which costs start-up time
import os
import sys
import time

mono = time.monotonic_ns          # CLOCK_MONOTONIC, the clock perf uses too
cpu = time.thread_time_ns         # CPU time of the calling thread
# Records carry the cheap pthread ident (get_native_id is a system call); each
# thread_start record also gives the OS thread id, and the runner maps one to
# the other, so the trace has OS tids that match perf/strace traces.
gettid = _thread.get_ident
native_tid = _thread.get_native_id

from .layout import LONG  # noqa: E402  (stdlib-only module)

BUF: list = []
emit = BUF.append                 # record one event tuple (see layout.FIELDS)
SPILL_AT = 200_000                # records kept in memory before a spill
_real_sleep = time.sleep
_ids = itertools.count(1)
_sites: dict = {}                 # (filename, lineno) -> site id
_site_rows: list = []             # site ids not yet written: (id, filename, lineno)
_kind: dict = {}                  # filename -> 0 user code, 1 library, 2 this tracer
_state = {"fd": None, "done": False, "child": False, "forker": None, "forked": False,
          "descendant": False}
#: set in the environment of the processes a traced process starts
_DESCENDANT = "QPN_TRACE_DESCENDANT"
_flush_lock = _thread.allocate_lock()
#: with children followed (boot.install_from_env): the directory of every process's record
FOLLOW_DIR: str | None = None
#: file names of asyncio's modules once the program imports it (aiopatch.install): the
#: socket and future calls made there are the event loop's plumbing, not the program's
AIO_FILES: dict = {}

_AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
# The standard library is where os.py lives (sysconfig would cost milliseconds
# of start-up); installed packages are recognised by their directory name.
_LIB_DIRS = (os.path.realpath(os.path.dirname(os.__file__)) + os.sep,)
_PKG_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
# Installed packages that are the program being traced (a console script's own
# package, ``-m pkg``, or ``qpn trace --package``): their code is user code.
_USER_PKGS = frozenset(filter(None, os.environ.get("QPN_TRACE_PACKAGES", "").split(",")))


def spent(t0: int, c0: int) -> tuple:
    """(wall ns since t0, CPU ns since c0 if the wall time exceeded LONG, else None)."""
    d = mono() - t0
    return d, (cpu() - c0 if d > LONG else None)


def _spiller() -> None:
    # Checking the buffer size here rather than at every event keeps the
    # wrappers to one list.append.
    while not _state["done"]:
        _real_sleep(0.2)
        if len(BUF) >= SPILL_AT:
            spill()


def classify(filename: str) -> int:
    """0 for user code, 1 for the standard library/site-packages, 2 for the tracer (3 for
    its asyncio step wrapper, set by aiopatch: where a task's frames begin)."""
    if filename.startswith("<"):
        k = 0 if filename in ("<string>", "<stdin>") else 1
    else:
        path = os.path.realpath(filename)
        if path.startswith(_AGENT_DIR + os.sep):
            k = 2
        elif path.startswith(_LIB_DIRS) or any(d in path for d in _PKG_DIRS):
            k = 0 if _USER_PKGS and _package_of(path) in _USER_PKGS else 1
        else:
            k = 0
    _kind[filename] = k
    return k


def _package_of(path: str) -> str | None:
    """The top-level package (or module) of a file under site-packages."""
    for d in _PKG_DIRS:
        i = path.rfind(d)
        if i >= 0:
            top = path[i + len(d):].split(os.sep, 1)[0]
            return top[:-3] if top.endswith(".py") else top
    return None


def _frame_walk(library_fallback: bool, name: str, doc: str):
    """The frame walk of :func:`site` and :func:`user_site`, written once.  It runs at
    every event, so each is made from this text as a function of its own (a shared
    helper would add a call to every event: +1.7% on a traced lock operation).

    From the caller's caller outwards: the site of the first user-code frame; without
    one, that of the innermost library frame when ``library_fallback``, else None.  The
    walk stops at the start of an asyncio task's step, as a thread's stops at its start:
    the event loop that runs the step is not the task's caller.
    """
    def walk() -> int | None:
        f = sys._getframe(1)
        lib = None
        while f is not None:
            fn = f.f_code.co_filename
            k = _kind.get(fn)
            if k is None:
                k = classify(fn)
            if k == 0:
                return site_id(fn, f.f_lineno)
            if k == 1:
                if lib is None:
                    lib = f
            elif k == 3:             # an asyncio task's step begins here (aiostep.py)
                if lib is not None and lib.f_back is f:
                    lib = None       # asyncio's Handle._run: no site (aioconvert gives
                break                # the task's creation site)
            f = f.f_back
        if lib is None or not library_fallback:
            return None
        return site_id(lib.f_code.co_filename, lib.f_lineno)
    walk.__name__ = walk.__qualname__ = name
    walk.__doc__ = doc
    return walk


site = _frame_walk(True, "site", """Site id of the innermost user-code frame calling into a wrapper.

Library frames are skipped (a lock taken inside ``queue.Queue.put`` is
reported at the user's ``put`` line); if no user frame exists (a pool
worker's loop), the innermost library frame is used.""")

user_site = _frame_walk(False, "user_site",
                        """Like :func:`site`, but None when no user-code frame is on the stack.""")


def site_id(filename: str, lineno: int) -> int:
    """The number of a code site (file, line), given on first use."""
    key = (filename, lineno)
    sid = _sites.get(key)
    if sid is None:
        new = next(_ids)
        sid = _sites.setdefault(key, new)
        if sid == new:
            _site_rows.append((sid, filename, lineno))
    return sid


def created_by_library() -> bool:
    """True when the object being created is made by library code (e.g. the
    mutex inside ``queue.Queue``): such internals are left untraced."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        k = _kind.get(fn)
        if k is None:
            k = classify(fn)
        if k != 2:
            return k != 0
        f = f.f_back
    return False


def _write(rec: tuple) -> None:
    fd = _state["fd"]
    if fd is None:
        return
    data = marshal.dumps(rec)
    data = len(data).to_bytes(8, "little") + data
    while data:
        n = os.write(fd, data)
        data = data[n:]


def spill() -> None:
    """Move the buffered records to the raw file (safe to call from any thread)."""
    with _flush_lock:
        n = len(BUF)
        chunk = BUF[:n]
        del BUF[:n]              # atomic: appends racing with us land after n
        m = len(_site_rows)
        rows = _site_rows[:m]
        del _site_rows[:m]
        if not _state["child"]:
            _write(("E", chunk, rows))


#: the probe's timed loops, compiled as user code (``<string>``): each wrapper call then
#: walks the stack to a user frame and looks its site up, as it does in a program.
_PROBE_LOOPS = compile(
    "def timed(lock, n):\n"
    "    c0 = cpu()\n"
    "    for _ in range(n):\n"
    "        with lock:\n"
    "            pass\n"
    "    return cpu() - c0\n"
    "def timed_queue(q, n):\n"
    "    c0 = cpu()\n"
    "    for _ in range(n):\n"
    "        q.put(1)\n"
    "        q.get()\n"
    "    return cpu() - c0\n", "<string>", "exec")


def probe_cost(batches: int = 3, n: int = 2000) -> dict:
    """The recorder's own CPU time per event, in ns, as VEX calibrates its
    instrumentation cost (seed 003, section 3.2.3), for two kinds of event:
    ``"lock"``, ``with lock:`` on a traced lock (two events) against the same on
    a raw lock, and ``"cond"``, the same through a ``threading.Condition`` (a
    library frame between the user's code and the wrapper, as in queues and
    hand-overs).  Timed on the thread's CPU clock, the median of ``batches``
    batches of ``n``.  The traced lock runs the wrappers' own code with a scratch
    list for ``emit``, so nothing reaches the trace; the loops run as user code
    (``_PROBE_LOOPS``) and the scratch records are kept, as the run keeps its
    buffer: timed from the tracer's own frames with a list cleared every 100
    records, the probe came out 15-20% below the wrappers' cost measured inside
    traced programs (1.22 vs 1.41 us a lock event, 1.35 vs 1.59 through a
    Condition); so, within 4%.  At exit: the CPU's speed then, not during the run."""
    import types
    sync = sys.modules.get(__package__ + ".sync")
    if sync is None:                 # threading never imported: no wrapper to time
        return {}
    scratch: list = []
    g = dict(vars(sync), emit=scratch.append)
    T = sync.TracedLock

    def fn(name):
        f = getattr(T, name)
        return types.FunctionType(f.__code__, g, name, f.__defaults__)
    cls = type("_Probe", (), {"__slots__": ("_l", "_t"), "__enter__": fn("acquire"),
                              "__exit__": fn("__exit__"), "acquire": fn("acquire"),
                              "release": fn("release"), "_is_owned": fn("_is_owned")})
    loops = {"cpu": cpu}
    exec(_PROBE_LOOPS, loops)
    timed = loops["timed"]
    out = {}
    for kind in ("lock", "cond"):
        traced, raw = cls(), _thread.allocate_lock()
        traced._l, traced._t = _thread.allocate_lock(), 0
        if kind == "cond":
            traced, raw = sync._Condition(traced), sync._Condition(raw)
        costs = sorted(max(0, timed(traced, n) - timed(raw, n)) // (2 * n) for _ in range(batches))
        out[kind] = costs[batches // 2]
    queues = sys.modules.get(__package__ + ".queues")
    if queues is not None:           # a queue's put and get: a costlier wrapper than a lock's
        out["queue"] = _probe_queue(queues, loops["timed_queue"], batches, n, scratch)
    return out


def _probe_queue(queues, timed, batches: int, n: int, scratch: list) -> int | None:
    """The recorder's CPU per queue event: ``put``/``get`` through the traced queue's own
    methods (``emit`` a scratch list) against a plain ``queue.Queue``."""
    import types
    try:
        g = dict(vars(queues), emit=scratch.append)
        mix = queues._QueueMixin

        def fn(f, name):
            return types.FunctionType(f.__code__, g, name, f.__defaults__, f.__closure__)
        g["_traced_get"] = fn(queues._traced_get, "_traced_get")
        cls = type("_ProbeQueue", (mix, queues.RealQueue), {"put": fn(mix.put, "put"),
                                                            "get": fn(mix.get, "get")})
        traced = cls.__new__(cls)
        queues.RealQueue.__init__(traced)       # not the traced __init__: no object event
        raw = queues.RealQueue()
        costs = sorted(max(0, timed(traced, n) - timed(raw, n)) // (2 * n)
                       for _ in range(batches))
        return costs[batches // 2]
    except Exception:
        return None


def finish(reason: str = "exit") -> None:
    """Record the main thread's end and write everything (idempotent)."""
    if _state["done"] or _state["child"]:
        return
    _state["done"] = True
    try:
        # a second Ctrl-C or SIGTERM (a user's, a server's stop script, or both a parent
        # process and a kill of the whole session) must not cut the last write short: the
        # program is ending anyway, and the trace is all it leaves (_on_signal re-raises
        # the first with the default action once the record is written)
        for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
            _signal.signal(sig, _signal.SIG_IGN)
    except ValueError:                      # not the main thread: signals go there
        pass
    emit(("thread_end", gettid(), mono(), cpu(), None))
    used = process_cpu_ns()          # as the threads' clocks end: before the spill and probe
    spill()
    # Only the run's first traced process times the recorder: the runner gives the others
    # an ancestor's figure (same interpreter).  Timing it takes 0.1 s, which a parent
    # waiting for its child (a pool's shutdown, Popen.communicate) would wait too.
    probe = {} if _state["forked"] or _state["descendant"] else probe_cost()
    # sys.argv as the program left it: with `python -m pkg` it read ['-m', ...] at start-up,
    # before runpy put the module's path in argv[0]
    _write(("X", {"reason": reason, "end_ns": mono(), "argv": list(sys.argv), "probe_ns": probe.get("lock"),
                  "probe_cond_ns": probe.get("cond"), "probe_queue_ns": probe.get("queue"),
                  "cpu_ns": used}))
    fd, _state["fd"] = _state["fd"], None
    if fd is not None:
        os.close(fd)


def process_cpu_ns() -> int | None:
    """The CPU time the kernel counted for this process (user + system, all its threads,
    children excluded), in ns: ``CLOCK_PROCESS_CPUTIME_ID`` (what ``getrusage(RUSAGE_SELF)``
    gives, to the nanosecond and with no module to import at exit)."""
    try:
        return time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)
    except (AttributeError, OSError):
        try:
            t = os.times()
            return round((t.user + t.system) * 1e9)
        except OSError:
            return None


def _before_fork() -> None:
    # the forking thread's OS id and site: the forked child's main thread names them (the
    # child inherits the table of sites)
    _state["forker"] = native_tid()
    try:
        _state["fork_site"] = site()
    except Exception:                       # noqa: BLE001
        _state["fork_site"] = None


def _after_fork_in_child() -> None:
    # A forked child must not interleave records with its parent's.  When children
    # are followed it starts a record of its own (the forking thread is its main
    # thread; the sites already named go in again); else it is not traced, and a
    # spiller that discards keeps its memory bounded (its wrappers still append).
    BUF.clear()
    if FOLLOW_DIR is not None:
        _site_rows[:] = [(sid, fn, line) for (fn, line), sid in _sites.items()]
        _state["fd"] = None
        _state["forked"] = True
        start = open_record(os.path.join(FOLLOW_DIR, f"{os.getpid()}.bin"))
        emit(("thread_start", gettid(), start, cpu(), _state.get("fork_site"), "MainThread",
              _state["forker"], False, native_tid()))
    else:
        _state["child"] = True
        _state["fd"] = None
    _thread.start_new_thread(_spiller, ())


#: code of a wrapper that blocks (a wait, a get) -> builder(frame, tid, ns waited) of the
#: record of that wait cut short: a signal that ends the process while the thread it
#: interrupts waits there (a server's main thread in Event.wait until SIGTERM, a pool
#: worker stopped by Pool.terminate in its get) records the wait, with ``ok: false``.
#: Nothing is done while the program runs: the handler reads the wrapper's locals.
WAITS: dict = {}


def blocking(fn, builder) -> None:
    """Register wrapper ``fn`` (its code) as a blocking call recorded by ``builder``."""
    WAITS[fn.__code__] = builder


def _interrupted(frame) -> None:
    """Record the wait the signal handler's thread was in (the innermost registered
    wrapper on its stack), if it had begun timing it."""
    try:
        now = mono()
        f = frame
        while f is not None:
            build = WAITS.get(f.f_code)
            if build is not None:
                t0 = f.f_locals.get("t0")
                if type(t0) is int:
                    rec = build(f, gettid(), now - t0)
                    if rec is not None:
                        emit(rec)
                return
            f = f.f_back
    except Exception:                       # noqa: BLE001  the record must still be written
        pass


def _on_signal(signum, frame) -> None:
    if not _state["done"]:
        _interrupted(frame)
    finish(f"signal {signum}")
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def open_record(raw_path: str) -> int:
    """Start recording into ``raw_path``: the header; returns the start time (ns)."""
    _state["fd"] = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    start = mono()
    _write(("H", {
        "pid": os.getpid(), "ppid": os.getppid(), "argv": list(sys.argv), "executable": sys.executable,
        "cwd": os.getcwd(), "python": sys.version.split()[0], "packages": sorted(_USER_PKGS),
        "implementation": sys.implementation.name, "start_ns": start,
        "epoch_ns": time.time_ns(), "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "switch_interval_ns": int(sys.getswitchinterval() * 1e9)}))
    return start


def begin(start: int) -> None:
    """The main thread's start, then the spiller, the exit, signal and fork hooks, and the
    request API's recorder (after the wrappers are installed: :mod:`.boot`)."""
    import atexit
    emit(("thread_start", gettid(), start, cpu(), None, "MainThread", None, False,
          native_tid()))
    if FOLLOW_DIR is not None:
        _state["descendant"] = os.environ.get(_DESCENDANT) == "1"
        os.environ[_DESCENDANT] = "1"          # (inherited by the processes it starts)
    atexit.register(finish)
    _thread.start_new_thread(_spiller, ())
    for sig in (_signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(sig) == _signal.SIG_DFL:
            _signal.signal(sig, _on_signal)
    real_exit = os._exit

    def _exit(status):
        finish("os._exit")
        real_exit(status)
    os._exit = _exit
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    from .api import _install_recorder
    _install_recorder(emit, site, mono, cpu, gettid)
