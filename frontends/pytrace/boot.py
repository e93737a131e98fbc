"""Start the recorder in the traced process: the generated ``sitecustomize``'s entry point.

:func:`install_from_env` reads the ``QPN_TRACE_*`` variables and calls
:func:`install`, which opens the record (:mod:`.agent`), installs the I/O
wrappers (:mod:`.iopatch`) now and the others (:mod:`.sync`, :mod:`.queues`,
sockets, :mod:`.aiopatch`) when the program imports the module they wrap, then starts the
main thread's record.  The wrappers import the recorder; only this module
imports both, so the recorder imports none of them.

Only the standard library may be imported here (see :mod:`.agent`).
"""
from __future__ import annotations

import importlib
import os
import sys

# (not `from . import agent`: for a submodule not yet loaded it makes CPython import the
# top-level package, qpn, whose __init__ imports numpy; the runner loads this package
# without its parents, see runner.BOOT)
agent = importlib.import_module(".agent", __package__)
iopatch = importlib.import_module(".iopatch", __package__)


def install(raw_path: str) -> None:
    """Install every wrapper and start recording into ``raw_path``."""
    start = agent.open_record(raw_path)
    iopatch.install()
    # The other wrappers are installed when the program imports the module
    # they wrap, so a program that never imports socket does not pay for it.
    when_imported("threading", lambda m: _load("sync").install())
    when_imported("queue", lambda m: _load("queues").install())
    when_imported("concurrent.futures.thread", lambda m: _load("queues").install_futures())
    when_imported("socket", lambda m: iopatch.install_socket())
    when_imported("selectors", iopatch.install_select)
    when_imported("mpi4py.MPI", lambda m: _load("mpipatch").install(m))
    # the recorder was loaded without its parent packages (the runner's sitecustomize):
    # when the program imports qpn, this package becomes qpn.frontends.pytrace as usual
    when_imported("qpn", _adopt)
    # processes, the channels between them and process pools (procpatch, poolpatch)
    for name, module, fn in (
            ("subprocess", "procpatch", "install_subprocess"),
            ("multiprocessing.process", "procpatch", "install_process"),
            ("multiprocessing.util", "procpatch", "install_mp_util"),
            ("multiprocessing.connection", "procpatch", "install_connection"),
            ("multiprocessing.queues", "procpatch", "install_queues"),
            ("multiprocessing.pool", "poolpatch", "install_pool"),
            ("concurrent.futures._base", "poolpatch", "install_futures_base"),
            ("concurrent.futures.process", "poolpatch", "install_process_pool")):
        when_imported(name, _installer(module, fn))
    when_imported("asyncio", lambda m: _load("aiopatch").install())
    agent.begin(start)


def _adopt(qpn) -> None:
    try:
        frontends = importlib.import_module(".frontends", qpn.__name__)
        if getattr(frontends, "pytrace", None) is None and __package__ in sys.modules:
            frontends.pytrace = sys.modules[__package__]
    except Exception:                     # noqa: BLE001  (qpn without its frontends)
        pass


def _installer(module: str, fn: str):
    """A callback installing ``module.fn`` on the imported module; one that fails leaves
    the module as it was (the program must run as it would untraced)."""
    def install_on(mod) -> None:
        try:
            getattr(_load(module), fn)(mod)
        except Exception:                 # noqa: BLE001  never break the traced program
            pass
    return install_on


def _load(name: str):
    return importlib.import_module(f"{__package__}.{name}")


class _PostImportHook:
    """A meta-path finder that runs a callback right after a module is executed."""

    def __init__(self):
        self.hooks: dict = {}

    def find_spec(self, name, path=None, target=None):
        if name not in self.hooks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        # Patch only per-module loader instances: a class (frozen or built-in
        # importer) is shared by many modules.
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec
        callbacks = self.hooks.pop(name)
        run = loader.exec_module

        def exec_module(module):
            run(module)
            for cb in callbacks:
                cb(module)
        loader.exec_module = exec_module
        return spec


_hook = _PostImportHook()


def when_imported(name: str, callback) -> None:
    """Call ``callback(module)`` once ``name`` is imported (now if it already is)."""
    if name in sys.modules:
        callback(sys.modules[name])
        return
    _hook.hooks.setdefault(name, []).append(callback)
    if _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)


def install_from_env() -> None:
    """Entry point of the generated sitecustomize (reads QPN_TRACE_* variables).

    ``QPN_TRACE_RAW`` is the raw record's file, or with ``QPN_TRACE_FOLLOW=1`` a
    directory where each Python process of the program (the command and every child
    it starts, by exec or fork) records into ``PID.bin``: the variables are then left
    for the children to inherit."""
    raw = os.environ.get("QPN_TRACE_RAW")
    if os.environ.get("QPN_TRACE_FOLLOW") == "1":
        if raw:
            agent.FOLLOW_DIR = raw
            install(os.path.join(raw, f"{os.getpid()}.bin"))
        return
    os.environ.pop("QPN_TRACE_RAW", None)
    os.environ.pop("QPN_TRACE_PACKAGES", None)
    os.environ.pop("QPN_TRACE_AGENT", None)
    orig = os.environ.pop("QPN_TRACE_ORIG_PYTHONPATH", None)
    # Children of the traced program are not traced: restore their environment.
    if orig is not None:
        if orig == "":
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = orig
    if raw:
        install(raw)
