"""Control flow: branches, loops, forks, calls and returns.

* ``branch { 0.3: { A } 0.7: { B } }`` adds no place: the transition that leaves
  the step before the branch gets one mode per alternative (``alt1``, ``alt2``),
  weighted by the probabilities.
* ``loop N times { ... }`` runs the body exactly N times: threads inside the loop
  carry the iteration number in their color (color set ``RUNNER.loop = 1 .. N``);
  the transition that ends an iteration has a mode ``again`` (when i < N, color
  i + 1) and a mode ``exit`` (when i == N).  Nested loops carry a record of
  counters.  ``loop about N times { ... }`` repeats a geometric number of times
  with mean N (modes ``again``/``exit`` weighted 1 - 1/N and 1/N), which keeps the
  mean but not the variance: prefer the counted form when the count is known.
* ``fork [n] { A } and { B }`` starts n threads running A (and n running B) and
  waits in ``RUNNER.fork`` until all of them have finished: each child starts in
  ``RUNNER.fork.child.start`` (``child1``, ``child2``, ... for several blocks) and
  ends in ``RUNNER.fork.child.done``; ``RUNNER.fork.done`` joins.  Children of
  different parents are not told apart: the join is exact while one parent at a
  time forks (n = 1, or a single forking thread), approximate otherwise.
* ``call B`` runs behavior B in place (its steps are named ``RUNNER.B.*``);
  ``return`` leaves the current behavior (a pool thread starts over, a request
  of a source ends, a forked child finishes, a call returns).

>>> import qpn
>>> net = qpn.parse('''software { cpu host
... pool w size 1 { loop 5 times { cpu det(1 ms) } } }''')
>>> [m.name for m in net.transition_map["w.cpu.done"].modes]
['again', 'exit']
"""
from __future__ import annotations

from . import ast as sw
from .cfg import Act, Alt, End, Exit, ExitMode, LoopBack, LoopEnter, LoopInfo, Station
from .env import step
from .kit import arc


@step(sw.Branch)
def branch(st: sw.Branch, nxt, env):
    """``branch { p: {...} q: {...} }``: a probabilistic choice of bodies."""
    alts = [Alt(f"alt{k}", alt.prob, next=env.build(alt.body, nxt))
            for k, alt in enumerate(st.alternatives, 1)]
    return Act(alts, st.loc)


@step(sw.Loop)
def loop(st: sw.Loop, nxt, env):
    """``loop N times { ... }`` (a fixed count) or ``loop about N times { ... }`` (a
    geometric count of mean N): repeat the body."""
    if st.geometric:
        back = LoopBack(None, st.count, after=nxt, loc=st.loc)
        back.body = env.build(st.body, back)
        return LoopEnter(None, back.body)
    info = LoopInfo(env.kit.range_colors(env.path(st), st.count, st.loc), st.count)
    back = LoopBack(info, st.count, after=nxt, loc=st.loc)
    back.body = env.with_ctx(env.ctx + (info,)).build(st.body, back)
    return LoopEnter(info, back.body)


@step(sw.Fork)
def fork(st: sw.Fork, nxt, env):
    """``fork [n] { ... } and { ... }``: start n threads for each body and wait until all
    of them are done."""
    kit = env.kit
    path = env.path(st)
    spawn, join = [], []
    for k, blk in enumerate(st.blocks, 1):
        child = f"{path}.child" if len(st.blocks) == 1 else f"{path}.child{k}"
        done = kit.place(f"{child}.done", loc=blk.loc).name
        start = start_station(env, child, blk.loc, f"a forked thread of {path}")
        cenv = env.scope(child, blk.body, ret=End([arc(done)]), ctx=(), reserved=("done",))
        start.exits.append(Exit(f"{child}.begin", next=cenv.build(blk.body, cenv.ret), loc=blk.loc))
        spawn.append(arc(start.place, st.count, loc=st.loc))
        join.append(arc(done, st.count, loc=st.loc))
    s = env.station(path, st.loc, entry=spawn)
    s.exits.append(Exit(f"{path}.done", modes=[ExitMode(ins=join)], next=nxt, loc=st.loc))
    return s


@step(sw.Call)
def call(st: sw.Call, nxt, env):
    """``call f``: run a callable's body and come back."""
    body = env.table.decls[st.target].body
    cenv = env.scope(env.path(st), body, ret=nxt, stack=env.stack + (st.target,))
    return cenv.build(body, nxt)


@step(sw.Return)
def return_(st: sw.Return, nxt, env):
    """``return``: leave the callable."""
    return env.ret


def start_station(env, prefix: str, loc, what: str, init=None) -> Station:
    """``PREFIX.start``: where a thread begins (a plain place, outside any loop)."""
    return env.station(f"{prefix}.start", loc, colors=None, init=init, ctx=(),
                       cycle_error=f"{what} can run without any time passing")
