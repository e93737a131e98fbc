"""LQN models in the text ("SRVN") format of the layered queueing tools, read into plain data.

A layered queueing network (LQN) has *processors* (hosts with a scheduling
discipline and a multiplicity), *tasks* (software servers with a pool of threads,
or reference tasks: the users) running on processors, and *entries* (the services
a task offers).  An entry works in up to three *phases*: phase 1 until it replies
to its caller, phases 2 and 3 after the reply while its thread stays busy.  A phase
has a host demand (``s``), its squared coefficient of variation (``c``), calls to
other entries (``y`` synchronous, ``z`` asynchronous, ``F`` forwarding) and a think
time (``Z``).  :func:`read_lqn` turns a file into :class:`LqnModel`;
:mod:`dsl.lqn_translate` turns that into a qpn model of the software layer.

Entries may instead be activity graphs (``A entry first_activity`` and a section
``A task`` with the activities' values and connections): :class:`LqnActivities`.

Refused with a located error: SPEX parameters (``$x``), semaphore and lock tasks,
fair-share groups, replication, quorum joins, calls that form a cycle.

>>> m = read_lqn(EXAMPLE, "simple.lqn")
>>> [(t.name, t.ref, t.multiplicity) for t in m.tasks.values()]
[('client', True, 3), ('server', False, 1)]
>>> m.entries["client"].calls
[LqnCall(kind='y', target='server', phase=1, mean=1.0)]
"""
from __future__ import annotations

import math
import re
import threading
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

from qpn.errors import Loc, ModelError, QPNError, either, suggest

from .lqn_model import (MAX_PHASES, TASK_SCHED, LqnActivities, LqnCall, LqnConnection,  # noqa: F401
                        LqnEntry, LqnModel, LqnProcessor, LqnTask, reachable)
from .source import decode_source

EXAMPLE = b"""G "client and server" 1e-05 50 10 0.9 -1
P 2
  p client f i
  p server f
-1
T 2
  t client r client -1 client m 3
  t server n server -1 server
-1
E 2
  s client 1 -1
  y client server 1 -1
  s server 0.5 -1
-1
"""

# ------------------------------------------------------------------ parsing
_PARSER: Lark | None = None
_LOCK = threading.Lock()

_TERMS = {"NAME": "a name", "NUMBER": "a number", "STRING": 'a quoted string ("...")',
          "END": "-1 (end of the list)", "$END": "end of file"}


def _parser() -> Lark:
    global _PARSER
    with _LOCK:
        if _PARSER is None:
            _PARSER = Lark((Path(__file__).with_name("lqn.lark")).read_text(), parser="lalr",
                           propagate_positions=True, maybe_placeholders=False)
        return _PARSER


def _term_text(name: str) -> str:
    if name in _TERMS:
        return _TERMS[name]
    if name[:2] in ("L_", "K_"):
        return f"'{name[2]}'" if name[0] == "K" else f"'{name[2].lower()}'"
    try:
        pat = _parser().get_terminal(name).pattern
        return f"'{pat.value}'" if pat.type == "str" else name.lower()
    except KeyError:
        return name.lower()


def _expected(names) -> str:
    return either(sorted({_term_text(n) for n in names}))


def _syntax_error(exc: UnexpectedInput, file: str, text: str) -> ModelError:
    if isinstance(exc, UnexpectedEOF) or getattr(getattr(exc, "token", None), "type", "") == "$END":
        lines = text.splitlines() or [""]
        return ModelError("unexpected end of file", Loc(file, len(lines), len(lines[-1]) + 1, source=text),
                          expected=_expected(exc.expected),
                          hint="every section (G, P, T, E) and every list ends with -1")
    line, col = getattr(exc, "line", 0) or 0, getattr(exc, "column", 0) or 0
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else "?"
        shown = f"'{ch}'" if ch.isprintable() else f"U+{ord(ch):04X}"
        return ModelError(f"unexpected character {shown}", Loc(file, line, col, line, col + 1, text),
                          expected=_expected(exc.allowed) if exc.allowed else None,
                          hint="comments start with '#'")
    tok = str(exc.token)
    hint = None
    if line and re.match(r"\s*[UR]\b", text.splitlines()[line - 1]) and col == 1:
        hint = "fair-share groups (section U) and section R are not supported"
    return ModelError(f"unexpected '{tok}'", Loc(file, line, col, line, col + max(len(tok), 1), text),
                      expected=_expected(exc.expected), hint=hint)


def _prescan(text: str, file: str) -> None:
    """Refuse what the grammar leaves out, at its place, before parsing."""
    for i, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0]
        m = re.search(r"\$\w*", body)
        if m and '"' not in body[:m.start()]:
            raise ModelError(f"SPEX parameter '{m.group()}' is not supported", Loc(file, i, m.start() + 1,
                             i, m.end() + 1, text),
                             hint="replace the parameters by numbers (lqn2lqn or lqns --no-execute "
                                  "prints the model with values), then use qpn's param and --set")


def _loc(meta, file: str, text: str) -> Loc:
    return Loc(file, meta.line, meta.column, meta.end_line, meta.end_column, text)


class _Build(Transformer):
    """Parse tree -> LqnModel, checking each line as it is read."""

    def __init__(self, file: str, text: str):
        super().__init__()
        self.file, self.text = file, text
        self.model = LqnModel(name="")

    def _err(self, msg: str, at, **kw) -> ModelError:
        if isinstance(at, Token):
            loc = Loc(self.file, at.line, at.column, at.end_line, at.end_column, self.text)
        else:
            loc = _loc(at, self.file, self.text)
        return ModelError(msg, loc, **kw)

    def number(self, c):
        v = float(c[0])
        if not math.isfinite(v):
            raise self._err(f"{c[0]} is too large for a number", c[0],
                            expected="a number below 1.8e308")
        return (v, c[0])

    def _count(self, num, what: str) -> int:
        v, tok = num
        if v != int(v) or v < 1:
            raise self._err(f"{what} must be a whole number >= 1, not {tok}", tok)
        return int(v)

    def pflag(self, c):
        return c[0]

    tflag = pkey = ckey = okey = pflag

    # ---------------------------------------------------------- general
    def general(self, c):
        self.model.comment = str(c[1])[1:-1].strip()

    # ---------------------------------------------------------- processors
    @v_args(meta=True)
    def processor(self, meta, c):
        name, flag = str(c[1]), c[2]
        rest = c[3:]
        proc = LqnProcessor(name, str(flag), 1, loc=_loc(meta, self.file, self.text))
        if rest and isinstance(rest[0][0], float):      # the quantum of s, c or p
            proc.quantum = rest[0][0]
            rest = rest[1:]
        if proc.sched == "i":
            proc.multiplicity = None
        for opt in rest:
            kind, val = opt
            if kind == "m":
                proc.multiplicity = self._count(val, "a processor's multiplicity")
            elif kind == "i":
                proc.multiplicity = None
            elif kind == "R":
                if not val[0] > 0:
                    raise self._err(f"a processor's speed must be > 0, not {val[1]}", val[1])
                proc.rate = val[0]
            elif kind == "r":
                raise self._err("replicated processors ('r N') are not supported", val[1],
                                hint="write the replicas out (lqn2lqn --flatten does)")
        if name in self.model.processors:
            raise self._err(f"processor '{name}' defined twice", c[1])
        self.model.processors[name] = proc

    # options of processors and tasks: (letter, value)
    def o_mult(self, c):
        return ("m", c[1])

    def o_inf(self, c):
        return ("i", None)

    def o_repl(self, c):
        return ("r", c[1])

    def p_rate(self, c):
        return ("R", c[0])

    # ---------------------------------------------------------- tasks
    @v_args(meta=True)
    def task(self, meta, c):
        name, flag = c[1], str(c[2])
        i = 3
        entries = []
        while isinstance(c[i], Token) and c[i].type == "NAME":
            entries.append(c[i])
            i += 1
        i += 1                                   # the -1 after the entry list
        proc = c[i]
        opts = c[i + 1:]
        if flag in ("p", "S", "W", "b", "w", "h"):
            raise self._err(f"{TASK_SCHED[flag]} tasks ('{flag}') are not supported", c[2],
                            expected="r (reference), n or f (first come, first served), i (infinite)")
        task = LqnTask(str(name), flag == "r", flag, [str(e) for e in entries], str(proc),
                       loc=_loc(meta, self.file, self.text))
        if flag == "i":
            task.multiplicity = None
        for kind, val in opts:
            if kind == "priority":
                task.priority = int(val[0])
            elif kind == "z":
                if val[0] < 0:
                    raise self._err("a think time must be >= 0", val[1])
                task.think = val[0]
            elif kind == "m":
                task.multiplicity = self._count(val, "a task's multiplicity")
            elif kind == "i":
                task.multiplicity = None
            elif kind == "r":
                raise self._err("replicated tasks ('r N') are not supported", val[1],
                                hint="write the replicas out (lqn2lqn --flatten does)")
            else:
                raise self._err(f"task option '{kind}' is not supported", val if isinstance(val, Token)
                                else val[1])
        if task.ref and task.multiplicity is None:
            raise self._err(f"reference task '{name}' has infinite multiplicity", name,
                            hint="a reference task is a population of users: give 'm N'")
        if str(name) in self.model.tasks:
            raise self._err(f"task '{name}' defined twice", name)
        self.model.tasks[str(name)] = task
        for e in entries:
            if str(e) in self.model.entries:
                raise self._err(f"entry '{e}' belongs to two tasks", e)
            self.model.entries[str(e)] = LqnEntry(str(e), str(name), loc=Loc(
                self.file, e.line, e.column, e.end_line, e.end_column, self.text))

    def t_priority(self, c):
        return ("priority", c[0])

    def t_think(self, c):
        return ("z", c[1])

    def t_group(self, c):
        return ("g", c[0])

    def t_queue(self, c):
        return ("q", c[0])

    # ---------------------------------------------------------- entries
    def _entry(self, tok) -> LqnEntry:
        e = self.model.entries.get(str(tok))
        if e is None:
            did = suggest(str(tok), list(self.model.entries))
            raise self._err(f"entry '{tok}' is not listed by any task", tok,
                            did_you_mean=did, hint="list it after the task's name in section T")
        return e

    def _phases(self, nums, at) -> list[tuple[float, Token]]:
        if len(nums) > MAX_PHASES:
            raise self._err(f"at most {MAX_PHASES} phases, got {len(nums)} values", nums[MAX_PHASES][1])
        for v, tok in nums:
            if not math.isfinite(v):
                raise self._err(f"not a finite number: {tok}", tok)
        return nums

    def e_phases(self, c):
        key, e = str(c[0]), self._entry(c[1])
        vals = self._phases(c[2:-1], c[1])
        for p, (v, tok) in enumerate(vals):
            if key == "s":
                e.demand[p] = v
            elif key == "c":
                e.scv[p] = v
            elif key == "f":
                if v not in (0, 1):
                    raise self._err(f"a phase type is 0 (stochastic) or 1 (deterministic), not {tok}", tok)
                e.deterministic[p] = v == 1
            elif key == "Z":
                e.think[p] = v
            # 'M' (maximum service time) is an output request: nothing to model
            if key in "sZ" and v > 0:
                e.phases = max(e.phases, p + 1)

    @v_args(meta=True)
    def e_calls(self, meta, c):
        key, src = str(c[0]), self._entry(c[1])
        at = _loc(meta, self.file, self.text)
        dst = self._entry(c[2])
        vals = self._phases(c[3:-1], c[2])
        if key == "F" and len(vals) > 1:
            raise self._err("forwarding takes one probability (it happens at the end of phase 1)", vals[1][1])
        for p, (v, tok) in enumerate(vals):
            if v == 0:
                continue
            if key == "F" and v > 1:
                raise self._err(f"a forwarding probability must be <= 1, not {tok}", tok)
            src.calls.append(LqnCall(key, dst.name, p + 1, v, at))
            src.phases = max(src.phases, p + 1)

    def e_arrival(self, c):
        e = self._entry(c[0])
        e.open_rate = c[1][0]

    def e_priority(self, c):
        raise self._err("entry priorities ('p') are not supported", c[0])

    def e_other(self, c):
        raise self._err(f"'{c[0]}' entries (semaphore and lock signals) are not supported", c[0])

    def e_histogram(self, c):
        return None      # a histogram is an output request

    @v_args(meta=True)
    def e_activity(self, meta, c):
        e = self._entry(c[1])
        e.start = str(c[2])
        e.start_loc = _loc(meta, self.file, self.text)
        e.phases = max(e.phases, 1)

    # ---------------------------------------------------------- activities
    def a_value(self, c):
        return ("value", str(c[0]), c[1], c[2])

    @v_args(meta=True)
    def a_call(self, meta, c):
        return ("call", str(c[0]), c[1], c[2], c[3], _loc(meta, self.file, self.text))

    def a_histogram(self, c):
        return None

    def hist_type(self, c):
        return None

    def reply_act(self, c):
        return (c[0], list(c[1:]))

    def j_one(self, c):
        return ("one", c)

    def j_and(self, c):
        if c and not isinstance(c[-1], tuple):
            raise self._err("quorum joins are not supported", c[-1])
        return ("and", c)

    def j_or(self, c):
        return ("or", c)

    def quorum(self, c):
        return c[0][1]           # the token, for the error

    def f_one(self, c):
        return ("seq", [c[0]])

    def f_and(self, c):
        return ("and", list(c))

    def f_or(self, c):
        total = sum(p for p, _ in c)
        if abs(total - 1) > 1e-6:
            raise self._err(f"the probabilities of an OR-fork add up to {total:g}, not 1", c[0][1])
        return ("or", list(c))

    def f_loop(self, c):
        loops = [x for x in c if isinstance(x, tuple)]
        end = c[-1] if not isinstance(c[-1], tuple) else None
        return ("loop", loops, end)

    def prob_act(self, c):
        return (c[0][0], c[1])

    def loop_act(self, c):
        return (c[0][0], c[1])

    @v_args(meta=True)
    def conn(self, meta, c):
        return LqnConnection(c[0], c[1] if len(c) > 1 else None, _loc(meta, self.file, self.text))

    @v_args(meta=True)
    def activities(self, meta, c):
        task = c[1]
        if str(task) not in self.model.tasks:
            raise self._err(f"activities of task '{task}', which is not defined", task,
                            did_you_mean=suggest(str(task), list(self.model.tasks)))
        g = LqnActivities(str(task), loc=_loc(meta, self.file, self.text))
        calls = []
        for item in c[2:-1]:
            if item is None:
                continue
            if isinstance(item, LqnConnection):
                g.connections.append(item)
            elif item[0] == "value":
                _, key, name, (v, tok) = item
                a = g.acts.setdefault(str(name), LqnEntry(str(name), str(task), loc=Loc(
                    self.file, name.line, name.column, name.end_line, name.end_column, self.text)))
                if not math.isfinite(v):
                    raise self._err(f"not a finite number: {tok}", tok)
                if key == "s":
                    a.demand[0] = v
                elif key == "c":
                    a.scv[0] = v
                elif key == "f":
                    a.deterministic[0] = v == 1
                elif key == "Z":
                    a.think[0] = v
            else:
                calls.append(item)
        for _, key, src, dst, (v, tok), at in calls:
            if key == "F":
                raise self._err("forwarding from an activity is not supported", src)
            a = g.acts.setdefault(str(src), LqnEntry(str(src), str(task)))
            self._entry(dst)
            if v:
                a.calls.append(LqnCall(key, str(dst), 1, v, at))
        for conn in g.connections:
            for name, replies in conn.join[1]:
                if str(name) not in g.acts:        # an activity with no values takes no time
                    g.acts[str(name)] = LqnEntry(str(name), str(task))
                for r in replies:        # a reply names an entry of this task
                    owner = self._entry(r).task
                    if owner != str(task):
                        raise self._err(f"activity '{name}' replies to entry '{r}' of task '{owner}'; "
                                        f"an activity of task '{task}' replies for its own entries", r)
                if replies:
                    g.replies[str(name)] = [str(r) for r in replies]
            fork = conn.fork
            if fork is not None:
                names = ([n for n in fork[1]] if fork[0] in ("seq", "and")
                         else [n for _, n in fork[1]] + ([fork[2]] if fork[0] == "loop" and fork[2] else []))
                for n in names:
                    g.acts.setdefault(str(n), LqnEntry(str(n), str(task)))
        if str(task) in self.model.activities:
            raise self._err(f"a second activity section for task '{task}'", task)
        self.model.activities[str(task)] = g


def read_lqn(data: bytes | str, file: str = "<string>") -> LqnModel:
    """The model in an LQN text file, checked.

    Parameters
    ----------
    data : the file's bytes (UTF-8) or text
    file : the path used in error messages

    Returns
    -------
    LqnModel with processors, tasks and entries by name.
    """
    text = decode_source(data, file) if isinstance(data, bytes) else data
    _prescan(text, file)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, file, text) from None
    build = _Build(file, text)
    try:
        build.transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QPNError):
            raise exc.orig_exc from None
        raise
    model = build.model
    model.name = Path(file).stem
    _check(model, file, text)
    return model


def _check(m: LqnModel, file: str, text: str) -> None:
    """References, reference tasks and the call graph."""
    for t in m.tasks.values():
        if t.processor not in m.processors:
            raise ModelError(f"task '{t.name}' runs on processor '{t.processor}', which is not defined",
                             t.loc, did_you_mean=suggest(t.processor, list(m.processors)))
        if t.ref and len(t.entries) != 1:
            raise ModelError(f"reference task '{t.name}' has {len(t.entries)} entries; qpn reads one",
                             t.loc, hint="split it into one reference task per entry")
    for e in m.entries.values():
        task = m.tasks[e.task]
        for call in e.calls:
            if m.tasks[m.entries[call.target].task].ref:
                raise ModelError(f"entry '{e.name}' calls '{call.target}', an entry of reference "
                                 f"task '{m.entries[call.target].task}'", call.loc or e.loc,
                                 hint="reference tasks only make calls")
            if call.target == e.name or m.entries[call.target].task == e.task:
                raise ModelError(f"entry '{e.name}' calls '{call.target}' of its own task", call.loc or e.loc,
                                 hint="a task calling itself deadlocks once its threads are busy")
        if task.ref and e.open_rate:
            raise ModelError(f"open arrivals to '{e.name}', an entry of a reference task", e.loc)
        if e.phases == 0 and not task.ref and not e.calls:
            pass   # an entry that does nothing is legal (it replies at once)
    if not any(t.ref for t in m.tasks.values()) and not any(e.open_rate for e in m.entries.values()):
        first = next(iter(m.tasks.values()), None)
        raise ModelError("nothing drives the model: no reference task ('t NAME r ...') and no open "
                         "arrivals ('a ENTRY RATE')", first.loc if first else Loc(file, 1, 1, source=text),
                         hint="add a reference task (the users) or open arrivals to an entry")
    for e in m.entries.values():
        if e.start is not None:
            g = m.activities.get(e.task)
            if g is None or e.start not in g.acts:
                raise ModelError(f"entry '{e.name}' starts with activity '{e.start}', which task "
                                 f"'{e.task}' does not define", e.start_loc or e.loc)
            # the calls of its activities count as the entry's own (for the checks below)
            e.calls = e.calls + [c for a in reachable(g, e.start) for c in g.acts[a].calls]
    # the call graph must be acyclic (a cycle is an unbounded recursion)
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for call in m.entries[name].calls:
            t = call.target
            if state.get(t) == 1:
                cyc = " -> ".join(path[path.index(t):] + [name, t] if t in path else [name, t])
                where = next((c.loc for c in m.entries[name].calls if c.target == t), None)
                raise ModelError(f"the calls form a cycle: {cyc}", where or m.entries[name].loc)
            if t not in state:
                visit(t, path + [name])
        state[name] = 2

    for name in m.entries:
        if name not in state:
            visit(name, [])
