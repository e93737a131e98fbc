"""The wrapper of asyncio's ``Handle._run`` that records each step of a task (:mod:`.aiopatch`).

It has a file of its own: the recorder's frame walk (``agent.site``) stops at its frame,
where a task's own frames begin, as a thread's ends where the thread started.

Only the standard library may be imported here (see :mod:`.agent`).
"""
from __future__ import annotations

import types
from typing import Callable

from .agent import cpu, emit, gettid, mono

_BUILTIN, _METHOD = types.BuiltinMethodType, types.MethodType


def make_run(run, step_cb: dict, is_task: dict, learn_cb, learn_task, adopt, waits_on,
             step_names: frozenset) -> Callable:
    """``Handle._run`` that, when the handle runs a step of a task (a callback bound to
    the task: the C task's ``TaskStepMethWrapper`` or ``task_wakeup``, the Python task's
    ``__step`` or ``__wakeup``), records an ``aio_step``: the task's serial, the step's
    start, the thread's CPU clock then, its duration and CPU, and what the task then
    awaits (``waits_on``)."""
    def _run(self):
        cb = self._callback
        k = step_cb.get(type(cb))
        if k is None:
            k = learn_cb(type(cb))
        if k:
            t = cb.__self__
            kt = is_task.get(type(t))
            if kt is None:
                kt = learn_task(type(t))
            if kt and (type(cb) is not _BUILTIN and type(cb) is not _METHOD
                       or cb.__name__ in step_names):
                n = getattr(t, "_qpn", None)
                if n is None:
                    n = adopt(t)
                if n:
                    c0 = cpu()
                    t0 = mono()
                    try:
                        run(self)
                    finally:
                        t1 = mono()
                        c1 = cpu()
                        try:
                            w = t._fut_waiter
                            w = None if w is None else waits_on(t, w)
                        except Exception:       # never the program's problem
                            w = None
                        emit(("aio_step", gettid(), t0, c0, n, t1 - t0, c1 - c0, w))
                    return
        run(self)
    _run.__name__ = "_run"
    _run.__qualname__ = "Handle._run"
    _run.__doc__ = run.__doc__
    return _run
