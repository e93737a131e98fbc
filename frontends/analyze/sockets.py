"""Socket operations between traced threads become queues.

Two patterns are recognized, both from timing alone (the trace has no socket
addresses on both ends):

* **connections**: ``accept`` on a listening socket takes a connection from
  the OS accept queue; a ``connect`` of a traced thread puts one there.  When
  both ends recorded their addresses (the Python tracer does), a connect's own
  address and its peer's are the accept's peer and own: matched exactly, also
  between processes (frontends/processes.py).  Without addresses, the i-th
  connection made is the i-th accepted (the queue is FIFO), so when the
  traced connects and accepts balance, the connects are the producers.  When
  nobody in the trace connects, the clients are outside: an open workload.
* **replies**: a ``recv`` that follows a ``send`` on the same socket of the
  same thread (request, then response) is a take from a reply queue that the
  send site at the connection's other end feeds (known by the addresses the
  connect and accept recorded); without them, a recv that blocks until another
  thread starts a ``send`` votes for that send's site.

Steps of a channel get ``action`` ``put``/``take`` and key ``("accept", fd)``
or ``("reply", site)``; other socket steps stay ``sock`` (computation).

>>> from qpn.frontends.analyze.steps import Step
>>> def st(tid, op, ts, dur, fd, site):
...     ev = {"kind": "io", "tid": tid, "ts": ts, "dur": dur, "op": op, "fd": fd, "site": site}
...     return Step(tid, "sock", op, site, ev, ts, 0, 0, 0, dur)
>>> client = [st(1, "send", 0, 5, 3, "c.py:1"), st(1, "recv", 10, 500_000, 3, "c.py:2")]
>>> server = [st(2, "send", 300_000, 20, 9, "s.py:7")]
>>> ch = link_sockets({1: client, 2: server})
>>> [(s.action, s.key) for s in client + server]
[('sock', 'send'), ('take', ('reply', 's.py:7')), ('put', ('reply', 's.py:7'))]
"""
from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass, field

from qpn.frontends.trace_query import connections

#: a recv must block this long (ns) to count as waiting for a reply
BLOCK_NS = 50_000


@dataclass
class SocketLinks:
    """What :func:`link_sockets` found (for the model's comments and tests)."""

    listeners: dict = field(default_factory=dict)    # key -> {"accepts", "connects", "sites"}
    replies: dict = field(default_factory=dict)      # key -> {"puts", "takes", "consumer"}
    external: list = field(default_factory=list)     # accept keys fed from outside the trace
    #: accept key -> its accepts of connections no traced thread made (known by address)
    outside: dict = field(default_factory=dict)
    rewritten: list = field(default_factory=list)    # the steps that became puts and takes


def link_sockets(walks: dict, *, block_ns: int = BLOCK_NS,
                 processes: dict | None = None) -> SocketLinks:
    """Rewrite the socket steps of ``walks`` (tid -> steps) that form channels
    (``processes``: tid -> process, in a trace of several: fds are per process)."""
    links = SocketLinks()
    accepts, connects, sends = [], [], []
    cands = collections.defaultdict(list)            # recv site -> candidate steps
    conns = _connections(walks, processes or {})
    # connection ends a thread sends on: a thread that only receives on an end (a
    # receiver beside the thread that sent the request) takes the answers the other
    # end's sends put there
    sending = {(s.tid, conns[id(s)]) for w in walks.values() for s in w
               if s.action == "sock" and s.key == "send" and id(s) in conns}
    for w in walks.values():
        last: dict = {}
        for s in [s for s in w if s.action == "sock"]:
            op = s.key
            # the connection where it is known (an fd is reused by the next one), else the fd
            fd = conns.get(id(s), s.fd)
            if op == "accept":
                accepts.append(s)
            elif op == "connect":
                connects.append(s)
            elif op == "send":
                sends.append(s)
            elif op == "recv" and (last.get(fd) == "send" or id(s) in conns
                                   and (s.tid, conns[id(s)]) not in sending):
                cands[s.site].append(s)
            last[fd] = op
    by_fd = collections.defaultdict(list)
    for s in accepts:       # the listener: its address if the trace has it, else its fd
        by_fd[s.ev.get("local") or (-1 if s.fd is None else s.fd)].append(s)
    for fd, acc in by_fd.items():
        key = ("accept", fd)
        for s in acc:
            s.action, s.key = "take", key
        links.rewritten.extend(acc)
        links.listeners[key] = {"accepts": len(acc), "connects": 0,
                                "sites": sorted({s.site for s in acc if s.site})}
    if by_fd and connects:
        connects = _link_endpoints(connects, accepts, links)
    elif by_fd:                          # nobody in the trace connects: every client outside
        for a in accepts:
            if a.ev.get("peer") and a.ev.get("local"):
                links.outside.setdefault(a.key, []).append(a)
    if by_fd and connects:
        _link_connects(connects, accepts, links)
    for key, info in links.listeners.items():
        if info["connects"] == 0:
            links.external.append(key)
    if sends and cands:
        _link_replies(sends, cands, links, block_ns, conns)
    _outside_requests(walks, conns, links, block_ns)
    return links


def _outside_requests(walks: dict, conns: dict, links: SocketLinks, block_ns: int) -> None:
    """Receives that waited for a client outside the trace on a connection it keeps open
    (a request line read on a keep-alive connection, a stream of requests): takes of the
    requests arriving there (key ``("recv", site)``), which the analysis makes an open
    source when nobody in the trace sends them."""
    ends = {(a.ev.get("local"), a.ev.get("peer")) for accs in links.outside.values()
            for a in accs if a.ev.get("local") and a.ev.get("peer")}
    if not ends:
        return
    by_site: dict = collections.defaultdict(list)
    for w in walks.values():
        for s in w:
            if s.action == "sock" and s.key == "recv" and conns.get(id(s)) in ends:
                by_site[s.site].append(s)
    for site, recvs in by_site.items():
        if sum(r.blocked >= block_ns for r in recvs) < 0.5 * len(recvs):
            continue                   # the data was there: not waiting for a request
        key = ("recv", site)
        for r in recvs:
            r.action, r.key = "take", key
        links.rewritten.extend(recvs)
        links.external.append(key)


def _connections(walks: dict, processes: dict) -> dict:
    """id(send or recv step) -> (own address, peer address) of its connection, where the
    ``connect`` or ``accept`` that opened its fd recorded them
    (:func:`trace_query.connections`; accepts and connects may already be takes and
    puts here: their events say what they were)."""
    steps = [s for w in walks.values() for s in w if s.ev.get("kind") == "io"]
    end_of = {id(e): k for k, evs in connections([s.ev for s in steps], processes)
              if k[0] != "fd" for e in evs[1:]}
    return {id(s): end_of[id(s.ev)] for s in steps if id(s.ev) in end_of}


def _link_endpoints(connects, accepts, links) -> list:
    """Match connects to accepts by the connection's two addresses (a connect's own
    and its peer's are an accept's peer and own: exact, also across processes); the
    connects left (no addresses, or to a server outside the trace) are returned."""
    ends = {(s.ev.get("peer"), s.ev.get("local")): s for s in accepts
            if s.ev.get("peer") and s.ev.get("local")}
    if not ends:
        return connects
    left = []
    made = set()
    for c in connects:
        a = ends.get((c.ev.get("local"), c.ev.get("peer")))
        if a is None:
            if not (c.ev.get("local") and c.ev.get("peer")):
                left.append(c)
            continue
        c.action, c.key = "put", a.key
        links.rewritten.append(c)
        links.listeners[a.key]["connects"] += 1
        made.add(id(a))
    # the accepts of connections no traced thread made: clients outside the trace
    for a in ends.values():
        if id(a) not in made:
            links.outside.setdefault(a.key, []).append(a)
    return left


def _link_connects(connects, accepts, links) -> None:
    """Match connects to accepts in completion order (the accept queue is FIFO)."""
    if abs(len(connects) - len(accepts)) > max(2, 0.1 * len(accepts)):
        return
    acc = sorted(accepts, key=lambda s: s.end)
    ends = [s.end for s in acc]
    used = [False] * len(acc)
    for c in sorted(connects, key=lambda s: s.end):
        i = bisect.bisect_left(ends, c.ts)
        while i < len(acc) and used[i]:
            i += 1
        if i == len(acc):
            continue
        used[i] = True
        key = acc[i].key
        c.action, c.key = "put", key
        links.rewritten.append(c)
        links.listeners[key]["connects"] += 1


def _link_replies(sends, cands, links, block_ns, conns: dict) -> None:
    sends.sort(key=lambda s: s.ts)
    starts = [s.ts for s in sends]
    by_conn: dict = {}                  # a connection's end -> its sends, in time order
    for s in sends:
        if id(s) in conns:
            by_conn.setdefault(conns[id(s)], []).append(s)
    for site, recvs in cands.items():
        votes: collections.Counter = collections.Counter()
        for r in recvs:
            end = conns.get(id(r))
            if end is not None:         # the other end of its connection sent the answer
                theirs = [x for x in by_conn.get((end[1], end[0]), ()) if x.ts <= r.end]
                if theirs:
                    votes[theirs[-1].site] += 1
                # its connection is known: the other end's sends answer it, or nothing in
                # the trace does (a client outside it)
                continue
            if r.blocked < block_ns:
                continue
            i = bisect.bisect_right(starts, r.end) - 1
            while i >= 0 and starts[i] >= r.ts:
                # (a send on the receiver's own end of the connection answers nobody's
                # receive on it: the other side of a connection to outside the trace)
                if sends[i].tid != r.tid and (end is None or conns.get(id(sends[i])) != end):
                    votes[sends[i].site] += 1
                    break
                i -= 1
        if not votes or sum(votes.values()) < 0.5 * len(recvs):
            continue
        producer, _ = votes.most_common(1)[0]
        puts = [s for s in sends if s.site == producer and s.action == "sock"]
        if abs(len(puts) - len(recvs)) > max(2, 0.15 * len(recvs)):
            continue
        key = ("reply", producer)
        for s in puts:
            s.action, s.key = "put", key
        for s in recvs:
            s.action, s.key = "take", key
        links.rewritten.extend(puts + recvs)
        links.replies[key] = {"puts": len(puts), "takes": len(recvs), "consumer": site}
