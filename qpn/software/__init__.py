"""The software layer: threads, locks, queues and CPUs that expand into the core net.

A ``software { ... }`` block in a model declares resources (``cpu``, ``disk``,
``mutex``, ``rwlock``, ``semaphore``, ``barrier``, ``comm``, ``condition``,
``blocking queue``, ``limit``, ``timer``, ``sink``), runners (``pool``,
``population``, ``source``) and ``behavior``s made of steps.  :func:`expand`
turns the blocks of a net into ordinary places and transitions, so every
solver works on them unchanged.  The guide is docs/software-layer.md.

>>> import qpn
>>> net = qpn.parse('''
... software {
...     mutex m
...     pool workers size 2 {
...         sleep exp(1 s)
...         lock m
...         sleep exp(100 ms) as hold
...         unlock m
...     }
... }''')
>>> sorted(p.name for p in net.places)[:4]
['m.free', 'm.held', 'm.waiting', 'workers.hold']
"""
from __future__ import annotations

from .ast import Software

__all__ = ["Software", "expand"]


def expand(blocks, core_items=()):
    """Core items (colors, queues, places, transitions) of software blocks."""
    from .expansion import expand as _expand
    return _expand(blocks, core_items)
