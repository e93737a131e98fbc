"""Optional markers a traced program may use: request spans, marks and input features.

They cost nothing when the program is not traced, so programs can keep them::

    from qpn.frontends.pytrace import span
    with span("request", req=conn_id):
        handle(conn)

The tracer works without them; they only make request boundaries explicit.
"""
from __future__ import annotations

_rec: tuple | None = None          # (emit, site, mono, cpu, gettid) while tracing


def _install_recorder(emit, site, mono, cpu, gettid) -> None:
    global _rec
    _rec = (emit, site, mono, cpu, gettid)


def tracing() -> bool:
    """Whether this process is being traced by ``qpn trace``."""
    return _rec is not None


class span:
    """A named interval of the current thread (a ``span`` event), e.g. one request.

    >>> with span("work", req=1) as s:
    ...     pass
    >>> s.name
    'work'
    """

    __slots__ = ("name", "req", "_t0", "_c0", "_site")

    def __init__(self, name: str, req: int | str | None = None):
        self.name, self.req = name, req

    def __enter__(self) -> "span":
        if _rec is not None:
            self._site = _rec[1]()
            self._c0 = _rec[3]()
            self._t0 = _rec[2]()
        return self

    def __exit__(self, *exc) -> None:
        if _rec is not None:
            emit, _, mono, cpu, gettid = _rec
            t1, c1 = mono(), cpu()
            emit(("span", gettid(), self._t0, self._c0, self._site, self.name, self.req,
                  t1 - self._t0, c1 - self._c0))


def request_begin(req: int | str, name: str | None = None) -> None:
    """A request starts here (it may end in another thread)."""
    if _rec is not None:
        emit, site, mono, cpu, gettid = _rec
        emit(("request", gettid(), mono(), cpu(), site(), req, "begin", name))


def request_end(req: int | str, name: str | None = None) -> None:
    """The request ``req`` is complete."""
    if _rec is not None:
        emit, site, mono, cpu, gettid = _rec
        emit(("request", gettid(), mono(), cpu(), site(), req, "end", name))


def mark(name: str, text: str | None = None) -> None:
    """A free-form marker event (phase changes, iterations ...)."""
    if _rec is not None:
        emit, site, mono, cpu, gettid = _rec
        emit(("mark", gettid(), mono(), cpu(), site(), name, text))


def feature(name: str, value: float) -> None:
    """The item this thread is about to process has ``value`` of feature ``name`` (rows,
    items, an argument's size ...): ``qpn build`` fits the CPU demand of the code that
    follows as a function of it, like the bytes of a read, and makes the mix of its values
    a parameter of the model (frontends/analyze/features.py).

    >>> feature("rows", 120)      # untraced: nothing happens
    """
    if _rec is not None:
        emit, site, mono, cpu, gettid = _rec
        emit(("feature", gettid(), mono(), cpu(), site(), name, float(value)))
