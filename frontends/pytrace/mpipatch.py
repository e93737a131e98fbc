"""Traced MPI calls of mpi4py programs (installed when the program imports ``mpi4py.MPI``).

mpi4py's communicators are extension types whose methods cannot be replaced, so
``MPI.COMM_WORLD`` is replaced by an instance of a subclass, :class:`TracedComm`, that
refers to the same communicator and records every blocking point-to-point call and
collective as an ``mpi`` event: the operation, the bytes this rank sends (a buffer's
size, or the pickled size of an object for the lower-case methods), the peer rank,
the wall time in the call (which includes waiting for the other ranks) and the CPU
time spent in it (MPI libraries poll while they wait).  An ``object`` event of type
``comm`` gives the communicator's size and this process's rank.

Non-blocking calls (``Isend``/``Irecv``, ``isend``/``irecv``) record their posting
(``isend``/``irecv`` events) and return a :class:`TracedRequest`, which ``MPI.Request``
becomes too, so that ``Wait``/``Waitall`` (and the lower-case ones) record a ``wait``
event: the time until the requests completed, the bytes the completed receives hold,
and ``count``, how many of them came from a rank (not ``PROC_NULL``).

Not recorded (yet): ``Test``/``Waitany``/``Waitsome``, persistent requests,
communicators made by ``Split``/``Dup``, one-sided operations and MPI-IO.

Only the standard library may be imported here (see :mod:`.agent`).
"""
from __future__ import annotations

import pickle

from .agent import cpu, emit, gettid, mono, site

#: wrapped methods: name -> (op, how to read the bytes and the peer from the call)
#: "buf": first argument is a buffer; "obj": first argument is a picklable object
_METHODS = {
    "Send": ("send", "buf", "dest"), "Ssend": ("send", "buf", "dest"),
    "Recv": ("recv", "buf", "source"), "Sendrecv": ("sendrecv", "buf", "dest"),
    "Barrier": ("barrier", None, None), "Bcast": ("bcast", "buf", "root"),
    "Reduce": ("reduce", "buf", "root"), "Allreduce": ("allreduce", "buf", None),
    "Gather": ("gather", "buf", "root"), "Scatter": ("scatter", "buf", "root"),
    "Allgather": ("allgather", "buf", None), "Alltoall": ("alltoall", "buf", None),
    "send": ("send", "obj", "dest"), "ssend": ("send", "obj", "dest"),
    "recv": ("recv", None, "source"), "sendrecv": ("sendrecv", "obj", "dest"),
    "barrier": ("barrier", None, None), "bcast": ("bcast", "obj", "root"),
    "reduce": ("reduce", "obj", "root"), "allreduce": ("allreduce", "obj", None),
    "gather": ("gather", "obj", "root"), "scatter": ("scatter", "obj", "root"),
    "allgather": ("allgather", "obj", None), "alltoall": ("alltoall", "obj", None),
    "Isend": ("isend", "buf", "dest"), "Irecv": ("irecv", "buf", "source"),
    "isend": ("isend", "obj", "dest"), "irecv": ("irecv", None, "source"),
}
_NONBLOCKING = ("isend", "irecv")
_PROC_NULL = [-1]            # MPI.PROC_NULL, set by install()
_REQUEST = [None]            # the traced Request class, set by install()
_PEER_POS = {"dest": 1, "source": 1, "root": 1}     # positional index of the peer argument


def _nbytes(buf) -> int | None:
    """Bytes of an mpi4py buffer argument: an array, or [array, datatype, ...]."""
    if isinstance(buf, (list, tuple)) and buf:
        buf = buf[0]
    try:
        return memoryview(buf).nbytes
    except TypeError:
        return None


def _pickled(obj) -> int | None:
    try:
        return len(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
    except Exception:                    # noqa: BLE001 - mpi4py will raise it itself
        return None


def _wrap(base, name: str, op: str, size_of: str | None, peer_of: str | None):
    call = getattr(base, name)

    def traced(self, *args, **kwargs):
        s = site()
        first = args[0] if args else kwargs.get("buf", kwargs.get("obj", kwargs.get("sendbuf")))
        nb = None
        if size_of == "buf" and first is not None:
            nb = _nbytes(first)
        elif size_of == "obj":
            nb = _pickled(first)
        peer = None
        if peer_of is not None:
            peer = kwargs.get(peer_of)
            if peer is None and len(args) > _PEER_POS[peer_of]:
                peer = args[_PEER_POS[peer_of]]
        c0 = cpu()
        t0 = mono()
        out = call(self, *args, **kwargs)
        d = mono() - t0
        peer = peer if type(peer) is int else None
        emit(("mpi", gettid(), t0, c0, s, op, id(self), nb, peer, d, cpu() - c0))
        if op in _NONBLOCKING and _REQUEST[0] is not None:
            out = _REQUEST[0](out)
            out._qpn = (id(self), op, nb if op == "irecv" else None,
                        peer is not None and peer != _PROC_NULL[0])
        return out
    traced.__name__ = traced.__qualname__ = name
    traced.__doc__ = call.__doc__
    return traced


def _waited(requests) -> tuple:
    """(comm id, received bytes, receives from a rank) of the requests a wait completed."""
    comm, nb, count = None, 0, 0
    for r in requests:
        info = getattr(r, "_qpn", None)
        if info is None:
            continue
        comm = info[0] if comm is None else comm
        if info[1] == "irecv" and info[3]:
            count += 1
            nb += info[2] or 0
    return comm, nb, count


def _traced_request(mpi):
    """``MPI.Request`` whose waits are recorded (a subclass: mpi4py's type is immutable)."""
    base = mpi.Request

    def record(requests, run):
        s = site()
        comm, nb, count = _waited(requests)
        c0 = cpu()
        t0 = mono()
        out = run()
        d = mono() - t0
        if comm is not None:
            emit(("mpi", gettid(), t0, c0, s, "wait", comm, nb, None, d, cpu() - c0, count))
        return out

    def Wait(self, *args, **kwargs):
        return record((self,), lambda: base.Wait(self, *args, **kwargs))

    def wait(self, *args, **kwargs):
        return record((self,), lambda: base.wait(self, *args, **kwargs))

    def Waitall(cls, requests, *args, **kwargs):
        requests = list(requests) if not isinstance(requests, list) else requests
        return record(requests, lambda: base.Waitall(requests, *args, **kwargs))

    def waitall(cls, requests, *args, **kwargs):
        requests = list(requests) if not isinstance(requests, list) else requests
        return record(requests, lambda: base.waitall(requests, *args, **kwargs))

    return type("TracedRequest", (base,), {
        "Wait": Wait, "wait": wait, "Waitall": classmethod(Waitall),
        "waitall": classmethod(waitall), "_qpn": None,
        "__doc__": "MPI.Request, its waits recorded by qpn trace"})


def install(mpi) -> None:
    """Replace ``mpi.COMM_WORLD`` (the module ``mpi4py.MPI``) by a traced communicator."""
    world = mpi.COMM_WORLD
    if getattr(world, "_qpn_traced", False):
        return
    _PROC_NULL[0] = mpi.PROC_NULL
    _REQUEST[0] = _traced_request(mpi)
    mpi.Request = _REQUEST[0]
    ns = {name: _wrap(mpi.Intracomm, name, *spec) for name, spec in _METHODS.items()
          if hasattr(mpi.Intracomm, name)}
    ns["_qpn_traced"] = True
    ns["__doc__"] = "COMM_WORLD, its calls recorded by qpn trace"
    traced_cls = type("TracedComm", (mpi.Intracomm,), ns)
    comm = traced_cls(world)
    mpi.COMM_WORLD = comm
    emit(("object", gettid(), mono(), cpu(), site(), id(comm), "comm",
          {"parties": world.Get_size(), "rank": world.Get_rank(), "name": "world"}))
