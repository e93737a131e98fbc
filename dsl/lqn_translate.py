"""An LQN model (:class:`dsl.lqn.LqnModel`) as a qpn model of the software layer.

The translation keeps the layered semantics of the LQN solvers (the one the exact
Petri-net solver petrisrvn uses) in the words of the software layer:

* a processor is a ``cpu`` (``cores`` = its multiplicity; ``f`` -> ``fcfs``, ``s`` and
  ``c`` -> ``ps``); an infinite processor makes its demands ``sleep`` steps;
* a task with N threads is a ``semaphore`` of N permits: a synchronous call takes a
  thread of the called task for its phase 1 (the caller's thread waits, as in a
  rendezvous) and gives it back after the last phase;
* phases 2 and 3 run after the reply: the caller goes on while a pool of the task's
  size finishes them and releases the thread;
* a reference task is a ``population`` (think time ``z``) or, without think time, a
  ``pool``; open arrivals (``a``) are a ``source``; asynchronous calls (``z``) are put
  into a queue served by a pool of the called task's size;
* a stochastic phase with demand s and Y calls in all runs Y + 1 slices of mean
  s / (Y + 1) on average: a slice, then with probability Y / (Y + 1) a call (chosen
  by the calls' means) and another slice (a geometric number of calls with mean Y);
  a deterministic phase (``f 1``) makes exactly its calls, slices between them;
* a forwarding probability p (``F``) passes the request on after phase 1 with
  probability p: the caller waits for the forwarded entry too.

>>> from qpn.dsl.lqn import EXAMPLE
>>> text, notes = lqn_to_qpn(EXAMPLE, "simple.lqn")
>>> print(text[text.index("param"):text.index("    behavior")].rstrip())
param n_client = 3
<BLANKLINE>
software {
    cpu server cores 1 fcfs
    semaphore server_task permits 1
<BLANKLINE>
    pool client size n_client {
        sleep exp(0.5)
        branch {
            0.5: {
                loop about 2 times {
                    call server_entry
                    sleep exp(0.5)
                }
            }
            0.5: {}
        }
    }
"""
from __future__ import annotations

import re

from qpn.errors import ModelError

from .lqn import LqnCall, LqnEntry, LqnModel, LqnTask, read_lqn
from .lqn_activities import REPLY, activity_lines
from .lqn_model import number_text as _num

#: calls of a deterministic phase written one by one (each is a step of the model)
MAX_UNROLLED_CALLS = 100
_IDENT = re.compile(r"[^A-Za-z0-9_]")
_KEYWORDS = set("""net include param colors shared place transition subnet instance input output
software mode when unless weight priority delay init queue service capacity departure timed
immediate and or not inf is fcfs ps random prio rr""".split())


class _Names:
    """qpn names for LQN names: one namespace, so a processor, a task and an entry
    called 'server' become server, server_task and server_entry."""

    def __init__(self):
        self.used: set[str] = set()
        self.of: dict[tuple[str, str], str] = {}
        self.origin: dict[str, tuple[str, str]] = {}   # qpn name -> (kind, LQN name) it stands for

    def give(self, kind: str, name: str, suffix: str) -> str:
        base = _IDENT.sub("_", name) or kind
        if base[0].isdigit() or base in _KEYWORDS:
            base = f"{kind}_{base}"
        out = base
        if out in self.used:
            out = f"{base}_{suffix}"
        n = 2
        while out in self.used:
            out = f"{base}_{suffix}{n}"
            n += 1
        self.used.add(out)
        self.of[(kind, name)] = out
        self.origin.setdefault(out, (kind, name))
        return out


class _Writer:
    def __init__(self, m: LqnModel):
        self.m = m
        self.notes: list[str] = []
        self.names = _Names()
        self.decls: list[str] = []
        self.runners: list[str] = []
        self.behaviors: dict[str, list[str]] = {}
        self.async_targets: set[str] = set()
        self.params: list[str] = []
        self.size_of: dict[str, str] = {}       # task -> its thread count (a parameter or 1)

    # ------------------------------------------------------------ resources
    def declare(self) -> None:
        m, n = self.m, self.names
        for p in m.processors.values():
            name = n.give("proc", p.name, "cpu") if p.multiplicity is not None else p.name
            if p.sched in ("p", "h"):
                prios = {t.priority for t in m.tasks.values() if t.processor == p.name}
                if len(prios) > 1:
                    raise ModelError(f"processor '{p.name}' schedules by task priority, which qpn's "
                                     "software layer cannot express yet", p.loc,
                                     hint="give its tasks one priority, or write the model in qpn "
                                          "with a 'prio' queue")
            if p.multiplicity is None:
                continue
            if p.sched == "r":
                self.notes.append(f"processor '{p.name}' serves in random order; qpn's cpu serves "
                                  "first come, first served (the same means when the demands on it "
                                  "are exponential with one mean)")
            if p.sched in ("s", "c") and p.quantum:
                self.notes.append(f"processor '{p.name}': a quantum of {_num(p.quantum)} is read as "
                                  "processor sharing")
            disc = "ps" if p.sched in ("s", "c") else "fcfs"
            cores = self.param(name + '_cores', p.multiplicity, ("proc", p.name))
            self.decls.append(f"cpu {name} cores {cores} {disc}")
        for t in m.tasks.values():
            if not t.ref:
                name = n.give("task", t.name, "task")
                if t.multiplicity is not None:
                    self.size_of[t.name] = self.param(name.removesuffix("_task") + "_threads",
                                                      t.multiplicity, ("task", t.name))
                    self.decls.append(f"semaphore {name} permits {self.size_of[t.name]}")
            else:
                n.give("task", t.name, "task")
        for e in m.entries.values():
            n.give("entry", e.name, "entry")

    def param(self, name: str, value: int, of: tuple[str, str]) -> str:
        """A count of the LQN element ``of`` (kind, name) as a parameter (so that --set
        sweeps it); 1 stays a literal."""
        if value == 1:
            return "1"
        name = self.names.give("param", name, "n")
        self.names.origin[name] = of
        self.params.append(f"param {name} = {value}")
        return name

    # ------------------------------------------------------------ steps
    def demand(self, e: LqnEntry, mean: float, indent: str, p: int) -> list[str]:
        """One slice of a phase: cpu time on the task's processor, or a delay."""
        task = self.m.tasks[e.task]
        proc = self.m.processors[task.processor]
        mean = mean / proc.rate
        if mean <= 0:
            return []
        dist = self.dist(mean, e.scv[p - 1], e)
        if proc.multiplicity is None:
            return [f"{indent}sleep {dist}"]
        return [f"{indent}cpu {dist} on {self.names.of[('proc', proc.name)]}"]

    def dist(self, mean: float, scv: float, e: LqnEntry) -> str:
        if scv == 1:
            return f"exp({_num(mean)})"
        if scv == 0:
            return f"det({_num(mean)})"
        if scv > 1:
            return f"hyperexp(mean = {_num(mean)}, scv = {_num(scv)})"
        if scv < 1e-3:      # erlang(1000) and beyond: constant for every purpose here
            self.notes.append(f"entry '{e.name}': a squared coefficient of variation of {_num(scv)} "
                              "is read as 0 (deterministic)")
            return f"det({_num(mean)})"
        k = max(1, round(1 / scv))
        if abs(1 / k - scv) > 1e-9:
            self.notes.append(f"entry '{e.name}': a squared coefficient of variation of {_num(scv)} "
                              f"is read as erlang({k}) (scv {_num(1 / k)})")
        return f"erlang({k}, {_num(mean)})"

    def call(self, c: LqnCall, indent: str) -> list[str]:
        target = self.m.entries[c.target]
        if c.kind == "z":
            self.async_targets.add(c.target)
            return [f"{indent}put {self.queue_name(target)}"]
        return [f"{indent}call {self.names.of[('entry', c.target)]}"]

    def choose(self, calls: list[LqnCall], indent: str) -> list[str]:
        calls = sorted(calls, key=lambda c: (c.kind, c.target))
        if len(calls) == 1:
            return self.call(calls[0], indent)
        total = sum(c.mean for c in calls)
        out = [f"{indent}branch {{"]
        for c in calls:
            out.append(f"{indent}    {_num(c.mean / total)}: {{")
            out += self.call(c, indent + "        ")
            out.append(f"{indent}    }}")
        out.append(f"{indent}}}")
        return out

    def phase(self, e: LqnEntry, p: int, indent: str) -> list[str]:
        """The steps of phase p (1-based) of entry e."""
        calls = [c for c in e.calls if c.phase == p and c.kind in "yz"]
        s = e.demand[p - 1]
        Y = sum(c.mean for c in calls)
        out: list[str] = []
        deterministic = e.deterministic[p - 1]
        if not calls:
            out += self.demand(e, s, indent, p)
        elif deterministic:
            for c in calls:
                if c.mean != int(c.mean):
                    raise ModelError(f"entry '{e.name}' phase {p} is deterministic but makes "
                                     f"{_num(c.mean)} calls to '{c.target}'", e.loc,
                                     hint="a deterministic phase makes a whole number of calls")
            if Y > MAX_UNROLLED_CALLS:
                raise ModelError(f"entry '{e.name}' phase {p} is deterministic with {_num(Y)} calls; "
                                 f"qpn writes at most {MAX_UNROLLED_CALLS} calls one by one",
                                 e.loc, hint="make the phase stochastic (f 0): the same mean, a "
                                             "geometric number of calls")
            seq = [c for c in calls for _ in range(int(c.mean))]
            slice_ = s / (len(seq) + 1)
            out += self.demand(e, slice_, indent, p)
            for c in seq:
                out += self.call(LqnCall(c.kind, c.target, p, 1), indent)
                out += self.demand(e, slice_, indent, p)
        else:
            slice_ = s / (Y + 1)
            out += self.demand(e, slice_, indent, p)
            q = Y / (Y + 1)
            out.append(f"{indent}branch {{")
            out.append(f"{indent}    {_num(q)}: {{")
            out.append(f"{indent}        loop about {_num(Y + 1)} times {{")
            out += self.choose(calls, indent + "            ")
            out += self.demand(e, slice_, indent + "            ", p)
            out.append(f"{indent}        }}")
            out.append(f"{indent}    }}")
            out.append(f"{indent}    {_num(1 - q)}: {{}}")
            out.append(f"{indent}}}")
        if e.think[p - 1] > 0:
            out.append(f"{indent}sleep exp({_num(e.think[p - 1])})")
        return out

    def forward(self, e: LqnEntry, indent: str) -> list[str]:
        fw = [c for c in e.calls if c.kind == "F"]
        if not fw:
            return []
        rest = 1 - sum(c.mean for c in fw)
        if rest < -1e-9:
            raise ModelError(f"entry '{e.name}' forwards with probabilities adding up to "
                             f"{_num(1 - rest)} > 1", e.loc)
        out = [f"{indent}branch {{"]
        for c in fw:
            out.append(f"{indent}    {_num(c.mean)}: {{ call {self.names.of[('entry', c.target)]} }}")
        if rest > 1e-12:
            out.append(f"{indent}    {_num(rest)}: {{}}")
        out.append(f"{indent}}}")
        if len(fw) == 1 and rest <= 1e-12:
            out = [f"{indent}call {self.names.of[('entry', fw[0].target)]}"]
        return out

    # ------------------------------------------------------------ runners
    def derived(self, kind: str, e: LqnEntry, suffix: str) -> str:
        """The name of an element made for entry e (a queue, a pool, a source), from the
        entry's qpn name without '_entry': stable when a model goes to LQN and back."""
        if (kind, e.name) not in self.names.of:
            base = self.names.of[("entry", e.name)].removesuffix("_entry")
            self.names.of[(kind, e.name)] = self.names.give(kind, base + "_" + suffix, suffix)
            self.names.origin[self.names.of[(kind, e.name)]] = ("entry", e.name)
        return self.names.of[(kind, e.name)]

    def queue_name(self, e: LqnEntry) -> str:
        return self.derived("async", e, "requests")

    def server_body(self, e: LqnEntry) -> list[str]:
        """What a request to entry e runs: its thread, its phases, the forwarding."""
        task = self.m.tasks[e.task]
        tname = self.names.of[("task", task.name)]
        limited = task.multiplicity is not None
        ind = "    "
        out = [f"{ind}acquire {tname}"] if limited else []
        if e.start is not None:          # an activity graph: the steps after its reply come later
            lines = self.activities(e, ind)
            cut = lines.index(REPLY) if REPLY in lines else len(lines)
            out += lines[:cut]
            later = ["    " + ln for ln in lines[cut + 1:] if ln != REPLY]
        else:
            out += self.phase(e, 1, ind)
            later = [ln for p in range(2, e.phases + 1) for ln in self.phase(e, p, ind + "    ")]
        if later:
            if not limited:
                raise ModelError(f"entry '{e.name}' has a phase after its reply, on infinite task "
                                 f"'{task.name}': qpn needs a thread count for it", task.loc,
                                 hint="give the task a multiplicity ('m N') large enough")
            qname = self.derived("later", e, "later")
            self.decls.append(f"blocking queue {qname}")
            pool = self.derived("laterpool", e, "phase2")
            self.runners.append(f"pool {pool} size {self.size_of[task.name]} {{\n{ind}take {qname}\n"
                                + "\n".join(ln[4:] for ln in later) + f"\n{ind}release {tname}\n}}")
            out.append(f"{ind}put {qname}")
        else:
            out += [ln[4:] for ln in later]
            if limited:
                out.append(f"{ind}release {tname}")
        out += self.forward(e, ind)
        return out

    def activities(self, e: LqnEntry, ind: str) -> list[str]:
        g = self.m.activities[e.task]
        if self.m.tasks[e.task].multiplicity not in (1, None) and any(
                c.fork and c.fork[0] == "and" for c in g.connections):
            self.notes.append(f"task '{e.task}': the join of a fork is exact while one request at a "
                              "time waits at it; with several threads a join may take the branches "
                              "of another request (docs/software-layer.md, fork)")
        return activity_lines(g, e.start, lambda act, i: self.phase(act, 1, i), ind)

    def write(self) -> str:
        m = self.m
        self.declare()
        for t in m.tasks.values():
            if t.ref:
                self.reference(t)
        for e in m.entries.values():
            if m.tasks[e.task].ref:
                continue
            self.behaviors[self.names.of[("entry", e.name)]] = self.server_body(e)
            if e.open_rate > 0:
                src = self.derived("source", e, "arrivals")
                self.runners.append(f"source {src} every exp({_num(1 / e.open_rate)}) {{ "
                                    f"call {self.names.of[('entry', e.name)]} }}")
        for name in sorted(self.async_targets):
            e = m.entries[name]
            task = m.tasks[e.task]
            if task.multiplicity is None:
                raise ModelError(f"asynchronous calls to '{name}' of infinite task '{task.name}': "
                                 "qpn needs a thread count for them", task.loc,
                                 hint="give the task a multiplicity ('m N')")
            q = self.queue_name(e)
            self.decls.append(f"blocking queue {q}")
            # the request runs the entry as a synchronous call would; the pool's thread
            # stands for the sender, who does not wait (phases after the reply go on
            # in the entry's own pool)
            pool = self.derived("asyncpool", e, "server")
            self.runners.append(f"pool {pool} size {self.size_of[task.name]} {{\n    take {q}\n"
                                f"    call {self.names.of[('entry', name)]}\n}}")
        return self.text()

    def reference(self, t: LqnTask) -> None:
        e = self.m.entries[t.entries[0]]
        name = self.names.of[("task", t.name)]
        if e.start is not None:
            body = [ln for ln in self.activities(e, "    ") if ln != REPLY]
        else:
            body = [ln for p in range(1, max(e.phases, 1) + 1) for ln in self.phase(e, p, "    ")]
        if not body:
            raise ModelError(f"reference task '{t.name}' does nothing: its entry '{e.name}' has "
                             "no demand and no calls", t.loc)
        size = self.param("n_" + name.removesuffix("_task"), t.multiplicity, ("task", t.name))
        head = (f"population {name} size {size} think exp({_num(t.think)})" if t.think > 0
                else f"pool {name} size {size}")
        self.runners.append(head + " {\n" + "\n".join(body) + "\n}")

    def text(self) -> str:
        m = self.m
        lines = [f"net {_IDENT.sub('_', m.name) if m.name and not m.name[0].isdigit() else 'lqn_' + _IDENT.sub('_', m.name)}"]
        for ln in m.comment.splitlines():
            if ln.strip():
                lines.append(f"# {ln.strip()}")
        lines.append("# translated from an LQN model by qpn (dsl/lqn_translate.py)")
        lines.append("")
        if self.params:
            lines += self.params + [""]
        lines.append("software {")
        lines += ["    " + d for d in self.decls]
        for r in self.runners:
            lines.append("")
            lines += ["    " + ln if ln else "" for ln in r.split("\n")]
        for name, body in self.behaviors.items():
            lines.append("")
            lines.append(f"    behavior {name} {{")
            lines += ["    " + ln for ln in body] if body else []
            lines.append("    }")
        lines.append("}")
        return "\n".join(lines) + "\n"


def lqn_to_qpn(data: bytes | str, file: str = "<string>") -> tuple[str, list[str]]:
    """The qpn text (a software block) of an LQN text model, and the translation's notes.

    Parameters
    ----------
    data : the LQN file's bytes or text
    file : the path used in error messages

    Returns
    -------
    (text, notes): a qpn model and what the translation approximated.
    """
    model = read_lqn(data, file)
    w = _Writer(model)
    called = {c.target for e in model.entries.values() for c in e.calls}
    idle = [e.name for e in model.entries.values()
            if not model.tasks[e.task].ref and not e.open_rate and e.name not in called]
    if idle:
        w.notes.append(f"no request reaches entr{'y' if len(idle) == 1 else 'ies'} "
                       f"{', '.join(repr(n) for n in idle)}: nothing calls {'it' if len(idle) == 1 else 'them'}")
    return w.write(), w.notes


#: a line of the translation that declares a named element (the name is what
#: _Names.origin maps back to the LQN element)
_DECLARES = re.compile(r"\s*(?:param\s+(?P<p>\w+)\s*=|behavior\s+(?P<b>\w+)\s*\{|"
                       r"(?:pool|population)\s+(?P<r>\w+)\s+size|source\s+(?P<s>\w+)\s+every|"
                       r"cpu\s+(?P<c>\w+)\s+cores|semaphore\s+(?P<m>\w+)\s+permits|"
                       r"blocking queue\s+(?P<q>\w+))")
_KIND_WORDS = {"proc": "processor", "task": "task", "entry": "entry"}


def origin_of(data: bytes | str, file: str, line: int):
    """The LQN element that line ``line`` of the translation comes from: (its Loc in the
    LQN file, "entry 'x'") -- the element declared at that line or the nearest one
    above it (a step of a behavior is its entry's, where its task line names it) --
    or None.

    >>> text = ("G \\"g\\" 1e-05 50 10 0.9 -1\\nP 2\\np users f i\\np box f\\n-1\\nT 2\\n"
    ...         "t users r go -1 users z 1 m 3\\nt app n serve -1 box m 2\\n-1\\nE 2\\n"
    ...         "s go 0.1 -1\\ny go serve 1 -1\\ns serve 1e-320 -1\\n-1\\n")
    >>> qtext, _ = lqn_to_qpn(text, "m.lqn")
    >>> n = next(i for i, ln in enumerate(qtext.splitlines(), 1) if "1e-320" in ln)
    >>> loc, what = origin_of(text, "m.lqn", n)
    >>> (str(loc), what)
    ('m.lqn:8:9', "entry 'serve'")
    """
    m = read_lqn(data, file)
    w = _Writer(m)
    lines = w.write().splitlines()
    where = {"proc": m.processors, "task": m.tasks, "entry": m.entries}
    for i in range(min(line, len(lines)) - 1, -1, -1):
        d = _DECLARES.match(lines[i])
        name = d and next((g for g in d.groups() if g), None)
        if name in w.names.origin:
            kind, lqn = w.names.origin[name]
            element = where.get(kind, {}).get(lqn)
            if element is not None and element.loc is not None:
                return element.loc, f"{_KIND_WORDS[kind]} '{lqn}'"
    return None
