"""Import PERSIK probe logs (Tarvo's thesis, Fig. 5.4) into the neutral format.

A log holds one section per thread::

    THREAD 1 main
    10  11345231  7683745  0, 5      # ProbeID Timestamp(ns) ObjectID Args...
    11  11387461  7683745  4387459
    28  11392132                     # ObjectID and args are optional
    DONE

``#`` starts a comment; a ``ProbeID Timestamp ...`` title row is skipped.  Rows
of library entry/exit probes may carry the probe id alone (no timestamp).
Mistakes are reported as ``file:line: error: ...``; ``strict=False`` keeps the
valid part and warns.

>>> log = parse_persik("THREAD 1 main\\n10 100 7\\n11 250\\nDONE\\n")
>>> [(p.probe, p.ts, p.obj) for p in log.threads[0].probes]
[(10, 100, 7), (11, 250, None)]
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import NamedTuple

from .trace import Trace, TraceError, TraceHeader


class Probe(NamedTuple):
    """One probe hit: id, timestamp (ns, None for id-only rows), object id, args."""

    probe: int
    ts: int | None
    obj: int | None = None
    args: tuple = ()
    line: int = 0


@dataclass
class PersikThread:
    """One thread of a PERSIK log: its id, name and probe records."""
    tid: int
    name: str
    probes: list[Probe] = field(default_factory=list)
    line: int = 0


@dataclass
class PersikLog:
    """A PERSIK log's threads, with the warnings of a lenient read."""
    threads: list[PersikThread]
    path: str = "<persik>"
    warnings: list[str] = field(default_factory=list)


def _arg(tok: str):
    try:
        return int(tok)
    except ValueError:
        return tok


def parse_persik(text: str, path: str = "<persik>", *, strict: bool = True) -> PersikLog:
    """Parse the text of a probe log (see the module docstring for the format)."""
    log = PersikLog([], path)
    cur: PersikThread | None = None

    def fail(line: int, msg: str, src: str) -> bool:
        err = TraceError(msg, path, line, 0, src)
        if strict:
            raise err
        log.warnings.append(f"{path}:{line}: {msg}")
        return False

    for no, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        toks = body.replace(",", " ").split()
        head = toks[0]
        if head == "THREAD":
            if cur is not None:
                fail(no, f"THREAD inside the open section of thread {cur.tid} "
                         f"(line {cur.line}): missing DONE", raw)
                log.threads.append(cur)
            if len(toks) < 2 or not toks[1].lstrip("-").isdigit():
                fail(no, "expected 'THREAD <tid> <name>'", raw)
                cur = None
                continue
            cur = PersikThread(int(toks[1]), " ".join(body.split()[2:]), [], no)
        elif head == "DONE":
            if cur is None:
                fail(no, "DONE without a THREAD section", raw)
                continue
            log.threads.append(cur)
            cur = None
        elif head.lower() == "probeid":
            continue
        else:
            if cur is None:
                fail(no, "probe row outside a THREAD ... DONE section", raw)
                continue
            try:
                nums = [int(t) for t in toks[:3]]
            except ValueError:
                fail(no, "expected 'ProbeID Timestamp [ObjectID] [args]' with integer "
                         "ProbeID, Timestamp (ns) and ObjectID", raw)
                continue
            ts = nums[1] if len(nums) > 1 else None
            if ts is not None:
                last = next((p.ts for p in reversed(cur.probes) if p.ts is not None), None)
                if last is not None and ts < last:
                    fail(no, f"timestamp {ts} is earlier than the previous one ({last}) "
                             f"in thread {cur.tid}", raw)
                    continue
            cur.probes.append(Probe(nums[0], ts, nums[2] if len(nums) > 2 else None,
                                    tuple(_arg(t) for t in toks[3:]), no))
    if cur is not None:
        fail(len(text.splitlines()), f"the section of thread {cur.tid} (line {cur.line}) "
                                     "has no DONE: truncated log?", "")
        log.threads.append(cur)
    return log


def read_persik(path: str | os.PathLike, *, strict: bool = True) -> PersikLog:
    """Read a PERSIK log file (``strict``: a located error on the first bad line, else a
    warning)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return parse_persik(fh.read(), os.fspath(path), strict=strict)


def persik_to_trace(log: PersikLog) -> tuple[TraceHeader, list[dict]]:
    """Neutral events: thread_start, one ``probe`` event per row, thread_end.

    Id-only rows (library probes) take the timestamp of the previous row (or the
    next one at the start of a section): they mark context, not time.
    """
    events: list[dict] = []
    for th in log.threads:
        known = [p.ts for p in th.probes if p.ts is not None]
        if not known:
            continue
        ts = known[0]
        events.append({"kind": "thread_start", "tid": th.tid, "ts": ts, "name": th.name})
        for p in th.probes:
            ts = p.ts if p.ts is not None else ts
            ev = {"kind": "probe", "tid": th.tid, "ts": ts, "probe": p.probe}
            if p.obj is not None:
                ev["obj"] = p.obj
            if p.args:
                ev["args"] = list(p.args)
            if p.ts is None:
                ev["untimed"] = True
            events.append(ev)
        events.append({"kind": "thread_end", "tid": th.tid, "ts": known[-1]})
    events.sort(key=lambda e: e["ts"])
    header = TraceHeader(source="persik", capabilities={"probes": True},
                         program={"log": log.path})
    return header, events


def probes_from_trace(trace: Trace) -> dict[int, list[Probe]]:
    """Probe sequences per thread from a neutral trace (the analyzer's view)."""
    out: dict[int, list[Probe]] = {}
    for tid, evs in trace.by_thread().items():
        ps = [Probe(e["probe"], None if e.get("untimed") else e["ts"], e.get("obj"),
                    tuple(e.get("args", ())))
              for e in evs if e["kind"] == "probe"]
        if ps:
            out[tid] = ps
    return out
