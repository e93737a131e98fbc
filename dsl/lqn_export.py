"""A layered qpn model (a software block in the LQN shape) as an LQN text model.

The reverse of :mod:`dsl.lqn_translate`, for models written in the same words:

* ``cpu NAME cores K fcfs|ps|rr quantum Q`` -> processor ``p NAME f|s Q m K``;
* ``semaphore T permits K`` -> task ``T`` with K threads; its entries are the
  behaviors that begin with ``acquire T``;
* ``behavior E { [acquire T] PHASE 1 [put LATER | release T] [forwarding] }`` -> entry E;
  a ``pool`` that takes ``LATER`` and ends with ``release T`` holds E's phase 2;
* ``population R size N think exp(Z) { ... }`` or ``pool R size N { ... }`` (not
  starting with ``take``) -> reference task R with one entry;
* ``source S every exp(M) { call E }`` -> open arrivals ``a E 1/M``;
* ``put Q`` where a pool does ``take Q`` then ``call E`` -> an asynchronous call to E.

A phase keeps its mean demand and its mean number of calls: ``branch`` alternatives
count with their probabilities, loops with their (mean) counts.  ``sleep`` steps are
the phase's think time ``Z`` (or its demand, when the entry has no cpu step: its task
then runs on an infinite processor ``TASK_host``).  Anything else (locks, barriers,
queues used otherwise, disks, core places) is refused at its line.

>>> from qpn.dsl.lqn import EXAMPLE
>>> from qpn.dsl.lqn_translate import lqn_to_qpn
>>> import qpn
>>> text, notes = qpn_to_lqn(qpn.parse(lqn_to_qpn(EXAMPLE, "cs.lqn")[0]))
>>> print(text[text.index("P "):])
P 2
  p server f
  p client_host i
-1
T 2
  t client r client_ref -1 client_host m 3
  t server_task n server_entry -1 server
-1
E 2
  s client_ref 1 -1
  y client_ref server_entry 1 -1
  s server_entry 0.5 -1
-1
<BLANKLINE>
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from qpn.errors import ModelError
from qpn.expr import evaluate
from qpn.software import ast as sw

from .lqn_layers import layered

from .lqn_model import number_text as _exact


def _num(x: float) -> str:
    """12 significant digits: sums of slices (0.25 + 0.25 + ...) print as written."""
    return _exact(float(f"{x:.12g}"))


@dataclass
class _Phase:
    demand: float = 0.0
    think: float = 0.0
    scvs: set = field(default_factory=set)
    cpus: set = field(default_factory=set)
    sync: dict = field(default_factory=lambda: defaultdict(float))
    asyn: dict = field(default_factory=lambda: defaultdict(float))
    stochastic: bool = False        # a branch or a geometric loop: the calls vary


@dataclass
class _Entry:
    name: str
    task: str
    phases: list
    forward: dict = field(default_factory=dict)
    open_rate: float = 0.0
    acts: list = field(default_factory=list)      # (activity, _Phase) when the body forks
    conns: list = field(default_factory=list)     # the activities' connections
    start: str = ""                               # the first activity


class _Reader:
    def __init__(self, net, env):
        self.net, self.env = net, env
        self.notes: list[str] = []
        self.decls = [d for block in net.software for d in block.decls]
        self.by_name = {d.name: d for d in self.decls if hasattr(d, "name")}
        # take Q at the start of a pool: Q is a queue of later phases or of asynchronous requests
        self.taker: dict[str, sw.Pool] = {}
        for d in self.decls:
            if isinstance(d, sw.Pool) and isinstance(d.body, tuple) and d.body \
                    and isinstance(d.body[0], sw.Take):
                self.taker[d.body[0].target] = d

    def value(self, e) -> float:
        return float(evaluate(e, self.env))

    def refuse(self, what: str, node, hint: str | None = None) -> ModelError:
        return ModelError(f"{what} has no LQN form", getattr(node, "loc", None),
                          hint=hint or "qpn exports software blocks in the LQN shape "
                                       "(docs/interchange.md, 'Writing LQN files')")

    # ---------------------------------------------------------------- phases
    def walk(self, steps, ph: _Phase, f: float) -> None:
        """Add the mean demand and calls of ``steps`` (run ``f`` times on average) to ph."""
        for st in steps:
            if isinstance(st, sw.Compute):
                d = st.dist.bind(self.env)
                ph.demand += f * d.mean()
                ph.scvs.add(round(d.scv(), 12))
                ph.cpus.add(st.on or self.default_cpu(st))
            elif isinstance(st, sw.Sleep):
                d = st.dist.bind(self.env)
                ph.think += f * d.mean()
                ph.scvs.add(round(d.scv(), 12))
            elif isinstance(st, sw.Call):
                ph.sync[st.target] += f
            elif isinstance(st, sw.Put) and st.target in self.taker and st.timeout is None:
                target = self.async_target(st)
                ph.asyn[target] += f
            elif isinstance(st, sw.Branch):
                ph.stochastic = True
                for alt in st.alternatives:
                    self.walk(alt.body, ph, f * self.value(alt.prob))
            elif isinstance(st, sw.Loop):
                ph.stochastic |= st.geometric
                self.walk(st.body, ph, f * self.value(st.count))
            else:
                raise self.refuse(f"'{type(st).__name__.lower()}' step", st)

    def cpu_means(self, cpu: str) -> list[float]:
        """Mean times of every cpu step on ``cpu``."""
        out: list[float] = []

        def visit(steps):
            for st in steps:
                if isinstance(st, sw.Compute) and (st.on or cpu) == cpu:
                    out.append(st.dist.bind(self.env).mean())
                # nested steps: a loop's body, a branch's alternatives, a fork's blocks
                for nested in [st] + list(getattr(st, "alternatives", ())) + list(getattr(st, "blocks", ())):
                    if isinstance(getattr(nested, "body", None), tuple):
                        visit(nested.body)
        for d in self.decls:
            if isinstance(getattr(d, "body", None), tuple):
                visit(d.body)
        return out

    def default_cpu(self, st) -> str:
        cpus = [d.name for d in self.decls if isinstance(d, sw.Cpu)]
        if len(cpus) != 1:
            raise self.refuse("a cpu step without 'on CPU' among several cpus", st)
        return cpus[0]

    def async_target(self, st: sw.Put) -> str:
        pool = self.taker[st.target]
        rest = pool.body[1:]
        if len(rest) != 1 or not isinstance(rest[0], sw.Call):
            raise self.refuse(f"queue '{st.target}' (its pool '{pool.name}' must be 'take; call "
                              "ENTRY')", st)
        return rest[0].target

    # ---------------------------------------------------------------- entries
    def entry(self, b: sw.Behavior) -> _Entry:
        body = list(b.body)
        task = None
        if body and isinstance(body[0], sw.Acquire):
            task = body.pop(0).target
            if not isinstance(self.by_name.get(task), sw.Semaphore):
                raise self.refuse(f"acquire of '{task}'", b)
        forward: dict[str, float] = {}
        tail = body[-1] if body else None
        if isinstance(tail, sw.Call) and task:
            forward[tail.target] = 1.0
            body.pop()
        elif isinstance(tail, sw.Branch) and all(
                not a.body or (len(a.body) == 1 and isinstance(a.body[0], sw.Call)) for a in tail.alternatives) \
                and len(body) >= 2 and isinstance(body[-2], (sw.Release, sw.Put)):
            for a in tail.alternatives:
                if a.body:
                    forward[a.body[0].target] = self.value(a.prob)
            body.pop()
        phases = [_Phase()]
        later = None
        if task and body and isinstance(body[-1], sw.Release) and body[-1].target == task:
            body.pop()
        elif task and body and isinstance(body[-1], sw.Put) and body[-1].target in self.taker:
            later = self.taker[body.pop().target]
            lb = list(later.body[1:])
            if not lb or not isinstance(lb[-1], sw.Release) or lb[-1].target != task:
                raise self.refuse(f"pool '{later.name}' (a later phase must end with 'release {task}')",
                                  later)
            phases.append(_Phase())
            self.walk(lb[:-1], phases[1], 1.0)
            if _segments(lb[:-1]) > 1:
                self.notes.append(f"entry '{b.name}': the steps after the reply (pool '{later.name}') "
                                  "are written as one phase 2, with their mean demand and calls")
        elif task:
            raise self.refuse(f"behavior '{b.name}' (it must release '{task}' at its end)", b)
        if any(isinstance(st, sw.Fork) for st in body):
            if later is not None:
                raise self.refuse(f"behavior '{b.name}' (a fork together with steps after the reply)", b)
            e = _Entry(b.name, task or f"{b.name}_task", [], forward)
            self.graph(e, body, reply=True)
            return e
        self.walk(body, phases[0], 1.0)
        if _segments(body) > 1:
            self.notes.append(f"entry '{b.name}': its steps are written as one phase, with their "
                              "mean demand and calls")
        return _Entry(b.name, task or f"{b.name}_task", phases, forward)

    def graph(self, e: _Entry, steps, reply: bool) -> None:
        """A body with forks as LQN activities: the steps between forks are one activity
        each, a fork's blocks start an AND-fork and their ends join."""
        def new_act(part) -> str:
            name = f"{e.name}_a{len(e.acts) + 1}"
            ph = _Phase()
            self.walk(part, ph, 1.0)
            if _segments(part) > 1:
                self.notes.append(f"activity '{name}' of '{e.name}': its steps are written as one "
                                  "activity, with their mean demand and calls")
            e.acts.append((name, ph))
            return name

        def build(body):
            first, frm, pending = None, None, []

            def attach(name):
                nonlocal first, frm
                if first is None:
                    first = name
                if isinstance(frm, str):
                    e.conns.append(f"{frm} -> {name}")
                elif isinstance(frm, list):
                    e.conns.append(" & ".join(frm) + f" -> {name}")
                frm = name

            for st in body:
                if not isinstance(st, sw.Fork):
                    pending.append(st)
                    continue
                if self.value(st.count) != 1:
                    raise self.refuse("a fork of several threads per block", st)
                if pending or frm is None or isinstance(frm, list):
                    attach(new_act(list(pending)))
                    pending.clear()
                parts = [build(list(blk.body)) for blk in st.blocks]
                e.conns.append(f"{frm} -> " + " & ".join(f for f, _ in parts))
                frm = [last for _, last in parts]
            if pending or first is None or isinstance(frm, list):
                attach(new_act(list(pending)))
            return first, frm

        first, last = build(list(steps))
        e.start = first
        e.phases = [p for _, p in e.acts]
        if reply:
            e.conns.append(f"{last}[{e.name}]")

    def reference(self, r) -> tuple[_Entry, float, float]:
        ph = _Phase()
        body = r.body if isinstance(r.body, tuple) else (sw.Call(r.body),)
        if any(isinstance(st, sw.Fork) for st in body):
            e = _Entry(f"{r.name}_ref", r.name, [])
            self.graph(e, body, reply=False)
            return e, *self._think_size(r)
        self.walk(body, ph, 1.0)
        if _segments(body) > 1:
            self.notes.append(f"'{r.name}': its steps are written as one phase of a reference task, "
                              "with their mean demand and calls")
        return (_Entry(f"{r.name}_ref", r.name, [ph]), *self._think_size(r))

    def _think_size(self, r) -> tuple[float, float]:
        think = 0.0
        if isinstance(r, sw.Population):
            d = r.think.bind(self.env)
            think = d.mean()
            if not r.think.is_exponential() and think > 0:
                self.notes.append(f"population '{r.name}': its think time is written as its mean "
                                  f"{_num(think)}; LQN draws it exponentially")
        return think, self.value(r.size)


def qpn_to_lqn(net, params: dict | None = None) -> tuple[str, list[str]]:
    """The LQN text of a qpn model whose software block has the LQN shape, and notes.

    Parameters
    ----------
    net : a parsed model (``qpn.load`` / ``qpn.parse``)
    params : parameter values overriding the model's

    Returns
    -------
    (text, notes): the LQN model and what the export approximated.
    """
    from qpn.model import Param
    from qpn.params import param_values
    env = param_values(net, params)
    if not net.software:
        raise ModelError("the model has no software block: only layered models (software "
                         "blocks in the LQN shape) can be written as LQN", None,
                         hint="write QPME (.qpe) or PNML (.pnml) for plain nets")
    for it in net.items:
        if not isinstance(it, (Param, sw.Software)):
            raise ModelError(f"'{getattr(it, 'name', type(it).__name__)}' is a core declaration; "
                             "LQN has only processors, tasks and entries", getattr(it, "loc", None))
    net, layers = layered(net, env)      # pools handing requests over queues: lqn_layers.py
    r = _Reader(net, env)
    r.notes += layers
    procs: dict[str, str] = {}
    tasks: dict[str, list] = {}          # name -> [flag, entries, processor, options]
    entries: list[_Entry] = []
    for d in r.decls:
        if isinstance(d, sw.Cpu):
            k = int(r.value(d.cores))
            if d.discipline == "fcfs":
                head = f"p {d.name} f"
            elif d.discipline == "rr" and d.quantum is not None:
                head = f"p {d.name} s {_num(r.value(d.quantum))}"
            else:
                # LQN's 's' wants a quantum (lqns reads s as processor sharing, lqsim slices):
                # a thousandth of the shortest cpu step on this cpu
                q = 1e-3 * min(r.cpu_means(d.name), default=1.0)
                r.notes.append(f"cpu '{d.name}': processor sharing is written as 's {_num(q)}' "
                               "(LQN needs a quantum; lqsim slices with it)")
                head = f"p {d.name} s {_num(q)}"
            procs[d.name] = head + (f" m {k}" if k != 1 else "")
        elif isinstance(d, sw.Semaphore):
            tasks[d.name] = ["n", [], None, f" m {int(r.value(d.permits))}"
                             if int(r.value(d.permits)) != 1 else ""]
        elif isinstance(d, sw.BlockingQueue):
            if d.name not in r.taker:
                raise r.refuse(f"blocking queue '{d.name}' (nobody takes from it at the start of a pool)", d)
        elif isinstance(d, (sw.Behavior, sw.Pool, sw.Population, sw.Source)):
            continue
        else:
            raise r.refuse(f"'{type(d).__name__.lower()}' '{getattr(d, 'name', '')}'", d)
    opens: dict[str, float] = {}
    for d in r.decls:
        if isinstance(d, sw.Behavior):
            entries.append(r.entry(d))
        elif isinstance(d, (sw.Pool, sw.Population)) and not (
                isinstance(d, sw.Pool) and isinstance(d.body, tuple) and d.body
                and isinstance(d.body[0], sw.Take)):
            e, think, size = r.reference(d)
            entries.append(e)
            tasks[d.name] = ["r", [], None, (f" z {_num(think)}" if think else "")
                             + (f" m {int(size)}" if int(size) != 1 else "")]
        elif isinstance(d, sw.Source):
            body = d.body if isinstance(d.body, tuple) else (sw.Call(d.body),)
            if len(body) != 1 or not isinstance(body[0], sw.Call) or not d.every.is_exponential():
                raise r.refuse(f"source '{d.name}' (it must be 'every exp(M) {{ call ENTRY }}')", d)
            opens[body[0].target] = opens.get(body[0].target, 0) + 1 / d.every.bind(env).mean()
    # tasks get their entries and processors
    for e in entries:
        if e.task not in tasks:          # a behavior without a semaphore: an infinite task
            tasks[e.task] = ["i", [], None, ""]
        tasks[e.task][1].append(e)
        e.open_rate = opens.pop(e.name, 0.0)
    if opens:
        raise ModelError(f"sources call '{next(iter(opens))}', which is not an entry", None)
    for name, (flag, ents, _, opts) in tasks.items():
        if not ents:
            raise ModelError(f"semaphore '{name}' guards no behavior: it is not a task", None)
        cpus = {c for e in ents for p in e.phases for c in p.cpus}
        if len(cpus) > 1:
            raise ModelError(f"the entries of task '{name}' use the cpus {sorted(cpus)}; an LQN task "
                             "runs on one processor", None)
        if cpus:
            proc = cpus.pop()
        else:
            proc = f"{name.removesuffix('_task')}_host"
            procs[proc] = f"p {proc} i"
            for e in ents:               # delays are the demand on an infinite processor
                for p in e.phases:
                    p.demand, p.think = p.demand + p.think, 0.0
        tasks[name][2] = proc
    # reference tasks first, as LQN files list them
    tasks = {k: v for k, v in sorted(tasks.items(), key=lambda kv: kv[1][0] != "r")}
    doc = [ln for ln in (net.doc or "").splitlines() if ln.strip() and "translated from" not in ln]
    title = (doc[0].lstrip("# ").strip() if doc else net.name).replace('"', "'")
    out = [f'G "{title}" 1e-05 50 10 0.9 -1', "", f"P {len(procs)}"]
    out += [f"  {v}" for v in procs.values()] + ["-1", f"T {len(tasks)}"]
    for name, (flag, ents, proc, opts) in tasks.items():
        out.append(f"  t {name} {flag} {' '.join(e.name for e in ents)} -1 {proc}{opts}")
    out += ["-1", f"E {len(entries)}"]
    for _flag, ents, _proc, _opts in tasks.values():
        for e in ents:
            if e.acts:
                out.append(f"  A {e.name} {e.start}")
                out += [f"  F {e.name} {t} {_num(p)} -1" for t, p in e.forward.items()]
                out += [f"  a {e.name} {_num(e.open_rate)}"] if e.open_rate else []
            else:
                out += _entry_lines(e, r.notes)
    out += ["-1"]
    for name, (_flag, ents, _proc, _opts) in tasks.items():
        graphs = [e for e in ents if e.acts]
        if graphs:
            out.append(f"A {name}")
            for e in graphs:
                for act, ph in e.acts:
                    out += _activity_lines(act, ph, e.name, r.notes)
            out.append(":")
            conns = [c for e in graphs for c in e.conns]
            out += [f"  {c}" + (";" if i + 1 < len(conns) else "") for i, c in enumerate(conns)]
            out.append("-1")
    out.append("")
    return "\n".join(out), r.notes


def _segments(steps) -> int:
    """1 if ``steps`` have the shape of one phase as the importer writes it (a timed
    step and a branch of calls, or timed steps alternating with calls, then an
    optional think time), else 2: the export then merges phases."""
    kinds = ["T" if isinstance(st, sw.Compute) else "S" if isinstance(st, sw.Sleep) else
             "B" if isinstance(st, sw.Branch) else "C" for st in steps]
    while len(kinds) > 1 and kinds[-1] == "S" and kinds[-2] in "TBC":
        kinds.pop()         # a think time ends the phase
    shape = "".join("T" if k == "S" else k for k in kinds)
    one = shape in ("", "T", "B", "TB") or all(k == "C" for k in shape) or (
        shape.startswith("T") and shape.endswith("T") and
        all(shape[i] == ("T" if i % 2 == 0 else "C") for i in range(len(shape))))
    return 1 if one else 2


def _activity_lines(act: str, ph: _Phase, entry: str, notes: list[str]) -> list[str]:
    out = [f"  s {act} {_num(ph.demand)}"]
    s = ph.scvs - {1.0}
    if s:
        if len(s) > 1 or 1.0 in ph.scvs:
            notes.append(f"activity '{act}' of '{entry}': steps with different variabilities; "
                         f"{_num(max(s))} written")
        out.append(f"  c {act} {_num(max(s))}")
    if (ph.sync or ph.asyn) and not ph.stochastic:
        out.append(f"  f {act} 1")
    if ph.think:
        out.append(f"  Z {act} {_num(ph.think)}")
    for kind, calls in (("y", ph.sync), ("z", ph.asyn)):
        for t in sorted(calls):
            out.append(f"  {kind} {act} {t} {_num(calls[t])}")
    return out


def _entry_lines(e: _Entry, notes: list[str]) -> list[str]:
    ph = e.phases
    out = [f"  s {e.name} " + " ".join(_num(p.demand) for p in ph) + " -1"]
    scv = [(p.scvs - {1.0}) for p in ph]
    if any(scv):
        vals = []
        for p, s in zip(ph, scv):
            if len(s) > 1 or (s and 1.0 in p.scvs):
                notes.append(f"entry '{e.name}': steps with different variabilities; LQN keeps one "
                             f"squared coefficient of variation per phase ({_num(max(s))} written)")
            vals.append(_num(max(s)) if s else "1")
        out.append(f"  c {e.name} " + " ".join(vals) + " -1")
    if any(p.sync or p.asyn for p in ph) and not all(p.stochastic for p in ph if p.sync or p.asyn):
        # calls made a fixed number of times: a deterministic phase (f 1)
        out.append(f"  f {e.name} " + " ".join("0" if p.stochastic or not (p.sync or p.asyn) else "1"
                                                for p in ph) + " -1")
    if any(p.think for p in ph):
        out.append(f"  Z {e.name} " + " ".join(_num(p.think) for p in ph) + " -1")
    for kind, attr in (("y", "sync"), ("z", "asyn")):
        targets = sorted({t for p in ph for t in getattr(p, attr)})
        for t in targets:
            out.append(f"  {kind} {e.name} {t} " + " ".join(_num(getattr(p, attr).get(t, 0)) for p in ph)
                       + " -1")
    for t, prob in e.forward.items():
        out.append(f"  F {e.name} {t} {_num(prob)} -1")
    if e.open_rate:
        out.append(f"  a {e.name} {_num(e.open_rate)}")
    return out
