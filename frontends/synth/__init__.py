"""Synthetic traces: a software model run as a program (``qpn synth``).

``qpn synth MODEL.qpn -o run.jsonl [--time T] [--seed S] [--set name=value]``
interprets the ``software { ... }`` blocks of a model (docs/software-layer.md)
as a multithreaded program in a discrete-event simulation and writes the trace
that program would give a tracer, in the neutral format (docs/trace-format.md):
threads with identities (``workers-1`` ...), objects with their parameters,
lock acquisitions with waits and hold times, queue hand-overs with item ids,
the thread CPU clock on every event, and code sites ``model.qpn:LINE``.  The
analyzer (``qpn build``) reads it like any other trace, so a known model can
be rebuilt from its own trace (the round trip).

* :mod:`.engine` -- the clock, threads as generators, events;
* :mod:`.sampling` -- the model's distributions, sampled with one seed;
* :mod:`.servers` -- cpus and disks (ps, fcfs, random, rr with quantum and switch);
* :mod:`.sync` -- locks, read-write locks, semaphores, barriers, conditions,
  blocking queues, limits;
* :mod:`.interp` -- what each step does and writes;
* :mod:`.program` -- the main thread, the runners, the header.

>>> import qpn
>>> net = qpn.parse('''
... software {
...     cpu host cores 2 ps
...     blocking queue jobs
...     source clients every exp(10 ms) { put jobs }
...     pool workers size 2 { take jobs  cpu exp(4 ms) as work }
... }''')
>>> res = synthesize(net, time=1.0, seed=1)
>>> res.info["threads"], res.info["sources"]
({'main': 1, 'clients': 1, 'workers': 2}, {'clients': 'acceptor'})
>>> sorted({e["kind"] for e in res.events})
['get', 'io', 'object', 'put', 'thread_end', 'thread_start', 'wait']
"""
from __future__ import annotations

from .program import SynthResult, parse_time, synthesize

__all__ = ["synthesize", "synth_file", "SynthResult", "parse_time"]


def synth_file(model: str, output: str, *, time: float = 60.0, seed: int | None = 1,
               sets: list[str] | None = None, sources: str = "auto",
               max_events: int | None = None) -> SynthResult:
    """Load ``model`` (with ``--set`` overrides), run it, write the trace to ``output``."""
    from qpn.cli import load_model

    from qpn.frontends.trace import write_trace
    net = load_model(model, sets)
    res = synthesize(net, time=time, seed=seed, sources=sources, max_events=max_events,
                     model_path=model)
    write_trace(output, res.header, res.events)
    return res
