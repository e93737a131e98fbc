"""Thread pools, closed populations and open sources.

* ``pool workers size N { ... }``: N threads in ``workers.start``; ``workers.begin``
  starts a run of the body and every run ends back in ``workers.start``, so
  ``throughput workers.begin`` counts runs per second.
* ``population users size N think DIST { ... }``: the same, with a think time
  (the infinite-server place ``users.think``) before every run: a closed
  workload.
* ``source clients every DIST { ... }``: the timed transition ``clients.arrive``
  creates a request thread at each inter-arrival time (``DIST`` may be
  ``replay("arrivals.txt", unit = ms)`` to replay a measured trace); the request
  runs the body once and vanishes (an open workload).

``runs NAME`` instead of a body runs ``behavior NAME { ... }``.

>>> import qpn
>>> net = qpn.parse('''software { cpu host
... population users size 5 think exp(1 s) { cpu exp(10 ms) } }''')
>>> [p.name for p in net.places]
['users.start', 'users.think', 'users.cpu']
"""
from __future__ import annotations

from ..model import Mode
from . import ast as sw
from .cfg import End, Exit
from .control import start_station
from .env import Env
from .kit import arc


def body_of(d, table) -> tuple:
    """A runner's steps: its own body, or the behavior it ``runs``."""
    return table.decls[d.body].body if isinstance(d.body, str) else d.body


def build_runner(d, root: Env) -> None:
    """The places and stations of a pool, population or source and its body."""
    body = body_of(d, root.table)
    kind = sw.KIND_NAMES[type(d)]
    if isinstance(d, sw.Source):
        start = start_station(root, d.name, d.loc, f"a request of source '{d.name}'")
        root.kit.transition(f"{d.name}.arrive", [Mode(None, (), (arc(start.place),), delay=d.every,
                                                      loc=d.loc)], kind="timed", loc=d.loc)
        env = root.scope(d.name, body, ret=End(), ctx=())
        start.exits.append(Exit(f"{d.name}.begin", next=env.build(body, End()), loc=d.loc))
        return
    start = start_station(root, d.name, d.loc, f"a thread of {kind} '{d.name}'", init=d.size)
    env = root.scope(d.name, body, ret=start, ctx=(),
                     reserved=("think",) if isinstance(d, sw.Population) else ())
    think = None
    if isinstance(d, sw.Population):
        think = env.station(f"{d.name}.think", d.loc, delay=True, service=d.think)
    first = env.build(body, start)
    if think is not None:
        think.exits.append(Exit(f"{d.name}.think.done", next=first, loc=d.loc))
        first = think
    start.exits.append(Exit(f"{d.name}.begin", next=first, loc=d.loc))
