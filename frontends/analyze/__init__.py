"""The trace analyzer: from a neutral trace to a readable software model.

``qpn build run.jsonl -o model.qpn`` runs :func:`build`:

* :mod:`.steps` -- a thread's events as operations with the code fragment before each;
* :mod:`.sockets` -- socket connections and replies between traced threads as queues;
* :mod:`.threads` -- thread pools (threads that behave alike);
* :mod:`.phases` -- the work phase and each pool's steady-state loop;
* :mod:`.structure` -- loops and branches from the step sequences (the call graph);
* :mod:`.callgraph` -- the probabilistic call graph, for reading (``--pcg``);
* :mod:`.gil` -- how much of each fragment ran without the GIL;
* :mod:`.handoff` -- how long threads released by a barrier first held the GIL;
* :mod:`.fit` -- distributions chosen by SCV;
* :mod:`.futures` -- waits on futures as a semaphore between a pool and its waiter;
* :mod:`.model`, :mod:`.emit` -- the model text; :mod:`.assumptions` -- what one trace
  leaves open (barrier parties, divided work, open-loop clients, sleeps);
* :mod:`.across` -- several traces of one program: divided work, spread;
* :mod:`.synth` -- synthetic traces for tests and benchmarks.

>>> from qpn.frontends.analyze.synth import batch_trace
>>> res = build(batch_trace(tasks=12, workers=2))
>>> res.info["runners"]["worker"]["size"], res.info["loops"][0]["count"]
(2, 12)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .pipeline import Analysis, Options, analyze
from .emit import write_model

__all__ = ["build", "build_file", "read_grouped", "Options", "Analysis", "analyze",
           "write_model", "BuildResult"]


@dataclass
class BuildResult:
    """A built model: its text, side files, facts, and warnings."""

    text: str
    side_files: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    analysis: Analysis | None = None


def build(trace, options: Options | None = None, *, name: str | None = None,
          samples_dir: str | None = None, others: tuple = ()) -> BuildResult:
    """The model of a :class:`frontends.trace.Trace`; ``others``: more traces of the same
    program (other configurations or repeats), read for what one trace cannot tell and
    for the spread between traces (:mod:`.across`)."""
    from .across import across
    from .mpi import has_mpi, write_mpi_model
    from .pipeline import no_gc
    if has_mpi(trace):       # SPMD ranks: their loop of MPI calls, not threads (mpi.py)
        warnings = list(trace.warnings)
        text, info = write_mpi_model(trace, name=name, prune=(options or Options()).prune,
                                     others=others, warnings=warnings)
        return BuildResult(text, {}, info, warnings)
    an = analyze(trace, options)
    more = None
    if others:
        ans = [an] + [analyze(t, options) for t in others]
        more = across(ans, [_name(t) for t in (trace, *others)])
    with no_gc():
        mt = write_model(an, name=name, samples_dir=samples_dir, across=more)
    return BuildResult(mt.text, mt.side_files, mt.info, list(an.warnings), an)


def _name(trace) -> str:
    import os
    return os.path.basename(getattr(trace, "path", "") or "trace")


def build_file(path, output, options: Options | None = None, *, strict: bool = True,
               name: str | None = None, others: tuple = (), check: bool = False,
               check_wall: float = 5.0) -> BuildResult:
    """Read a trace file (and ``others``, more traces of the program), build the model,
    write it (and side files) atomically.  With ``check``, the model is first solved at
    the traced configuration and compared with the trace (:mod:`.reproduce`): the
    comparison goes into the model's header and ``info["check"]``.

    >>> import os, tempfile
    >>> from qpn.frontends.analyze.synth import batch_trace, write
    >>> d = tempfile.mkdtemp(); _ = write(batch_trace(tasks=10, workers=2), os.path.join(d, "b.jsonl"))
    >>> res = build_file(os.path.join(d, "b.jsonl"), os.path.join(d, "b.qpn"))
    >>> res.info["runners"]["worker"]["size"], os.path.exists(os.path.join(d, "b.qpn"))
    (2, True)
    """
    import os

    from qpn.fileio import write_atomic

    from qpn.frontends.processes import join_traces, same_run

    from .pipeline import no_gc
    with no_gc():
        trace, *more = (read_run(p, strict=strict) for p in (path, *others))
        if more and same_run([trace, *more]):     # processes of one run, named one by one
            trace, more = join_traces([trace, *more]), []
        more = tuple(more)
    stem = os.path.splitext(os.path.basename(output))[0]
    res = build(trace, options, name=name, samples_dir=f"{stem}_samples", others=more)
    base = os.path.dirname(os.path.abspath(output))
    for rel, text in res.side_files.items():
        full = os.path.join(base, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        write_atomic(full, text)
    if check and res.info.get("reproduce"):
        from .reproduce import check as reproduce, with_lines
        c = reproduce(res.text, res.info["reproduce"], wall=check_wall)
        res.info["check"] = c
        res.text = with_lines(res.text, c.lines())
    write_atomic(output, res.text)
    return res


def read_run(path, *, strict: bool = True):
    """:func:`read_grouped` of a trace, joined with the traces of the Python processes
    its program started (``program.children``: frontends/processes.py)."""
    import os

    from qpn.frontends.processes import children_of, join_traces
    trace = read_grouped(path, strict=strict)
    kids = [p for p in children_of(trace) if os.path.exists(p)]
    if len(kids) < len(children_of(trace)):
        trace.warnings.append("the traces of some child processes are missing: "
                              + ", ".join(os.path.basename(p) for p in children_of(trace)
                                          if not os.path.exists(p)))
    if not kids:
        return trace
    return join_traces([trace] + [read_grouped(p, strict=strict) for p in kids])


#: what the analysis holds beside the events, as a multiple of their memory: a build's
#: peak was 2.0 times what reading alone projects (suites/sentinel_pipeline, 360,032
#: events: 624 MB of which ~60 MB the interpreter, reading 277 MB) and 2.1 times
#: (suites/rwcache, 747,422 events: 1.0 GB, reading 487 MB)
ANALYSIS_BYTES = 1.3


def read_grouped(path, *, strict: bool = True):
    """:func:`frontends.trace.read_trace` that groups the events by thread while
    reading (one pass less over a million events); ``by_thread()`` is cached."""
    from operator import itemgetter

    from qpn.frontends.trace import Trace, TraceReader, without

    class GroupedTrace(Trace):
        def by_thread(self):
            return self._groups

    reader = TraceReader(path, strict=strict, analysis=("building a model from", ANALYSIS_BYTES))
    events: list = []
    groups: dict = {}
    last: dict = {}
    unsorted = set()
    # Whole validated chunks, each grouped right after parsing: no generator
    # step per event, and the chunk's dicts are still in the CPU cache (a pass
    # over 10^6 events in another order than the file's costs ~0.4 s of misses).
    for chunk in reader.chunks():
        events += chunk
        for ev in chunk:
            tid, ts = ev["tid"], ev["ts"]
            lst = groups.get(tid)
            if lst is None:
                lst = groups[tid] = []
            elif ts < last[tid]:
                unsorted.add(tid)
            last[tid] = ts
            lst.append(ev)
    if reader.dropped:                # lenient: impossible events (the warnings name them)
        events = without(events, reader.dropped)
        for tid in {e["tid"] for e in reader.dropped}:
            groups[tid] = without(groups[tid], reader.dropped)
            if not groups[tid]:
                del groups[tid]
    for tid in unsorted:
        groups[tid].sort(key=itemgetter("ts"))
    trace = GroupedTrace(reader.header, events, reader.path, reader.warnings, reader.complete)
    trace._groups = groups
    return trace
