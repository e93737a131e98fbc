"""A model must reproduce the trace it came from before it predicts anything else.

``qpn build`` solves the model it wrote at the traced configuration (its parameters as
written are the traced ones) and compares it with what the trace measured:

* each runner's *cycle*: the time one of its threads takes per iteration of its loop
  (or per run, for a runner modelled over its whole run): in the trace the sum of its
  fragments and operations per iteration, in the model its threads over the
  throughput of ``RUNNER.begin`` (Little's law);
* the response time of each open workload the model times (``timer``), where it has
  one: in the trace from each arrival to the step that completed its request.

Beyond :data:`TOLERANCE` it names the largest unexplained part: the step of that runner
whose time per iteration differs most between the trace (fragment wall time plus the
operation's own time) and the model (the threads at the step's elements over the
runner's throughput).  The facts of the trace are gathered while the model is written
(:func:`trace_facts`), plain data in the build's info, so the check needs only the
model's text and them.

>>> f = {"runners": {"w": {"size": 2, "cycle_ns": 1e6, "parts": []}}, "timers": {}}
>>> c = Check(f, {"w": 1.06e6}, {}, {}, "ok", "des")
>>> c.worst()[0], round(c.worst()[1], 3), c.ok
('w', 0.06, False)
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from qpn.software import ast as sw
from qpn.software.env import RESERVED, assign_labels

from .structure import leaves

#: relative difference between the model and its trace beyond which the build says why
TOLERANCE = 0.05
#: a runner doing less than this share of the work of all is not compared (its cycle is
#: that of an idle thread: a listener that accepted two connections)
MINOR = 0.03


def walk_steps(steps):
    """Every step of a body, nested ones included, in order."""
    for st in steps:
        yield st
        for kid in sw.children(st):
            if isinstance(kid, sw.Alternative):
                yield from walk_steps(kid.body)
            elif not isinstance(kid, sw.Block):
                yield from walk_steps([kid])


def _fragment(st, w) -> bool:
    """A step written for a leaf's code fragment (its CPU and the GIL around it), not for
    its operation."""
    if isinstance(st, sw.Compute):
        return True
    return isinstance(st, (sw.Lock, sw.Unlock)) and (st.target == "gil" or
                                                     st.target.startswith("gil_"))


def _what(lf, w) -> str:
    """A leaf as the header names it: its operation, object and site."""
    a, key, site = lf.token
    obj = ""
    if a in ("take", "put", "lock", "unlock", "acquire", "release", "await", "wait"):
        try:
            obj = " " + w.obj(key)
        except Exception:              # an object the model did not declare
            obj = ""
    if site:
        site = os.path.basename(site)
    return f"{a}{obj}" + (f" at {site}" if site else "")


def trace_facts(w, an) -> dict:
    """What the trace measured, per modelled runner: threads, iterations, cycle time
    (ns per iteration and thread) and each step's time per iteration, its code fragment's
    and its operation's apart, with the model elements each became (``w``: the model's
    Writer after ``runners()``)."""
    runners = {}
    for name, (pool, r) in w.pools.items():
        labels = assign_labels(pool.body, RESERVED)
        by_leaf: dict = {}
        for st in walk_steps(pool.body):
            lf = w.origin.get(id(st))
            if lf is not None and id(st) in labels:
                by_leaf.setdefault(id(lf), (lf, []))[1].append(st)
        runs = r.iterations if r.mode == "forever" else len(r.group.tids)
        if runs <= 0:
            continue
        lvs = leaves(r.items)
        # a fragment of unknown CPU is start-up code (before the first step kept): the
        # model leaves it out (or times it as serial work, an assumption)
        total = sum((s.wall if s.cpu is not None else 0) + s.dur for lf in lvs for s in lf.steps)
        parts = []
        for lf, sts in by_leaf.values():
            frag = [f"{name}.{labels[id(st)]}" for st in sts if _fragment(st, w)]
            op = [f"{name}.{labels[id(st)]}" for st in sts if not _fragment(st, w)]
            parts.append({"what": _what(lf, w), "frag_elements": frag, "op_elements": op,
                          "idle": lf.action == "take",
                          "frag_ns": sum(s.wall - s.hidden for s in lf.steps
                                         if s.cpu is not None) / runs,
                          "hidden_ns": sum(s.hidden for s in lf.steps) / runs,
                          "op_ns": sum(s.dur for s in lf.steps) / runs})
        busy = sum(p["frag_ns"] + (0 if p["idle"] else p["op_ns"]) for p in parts) * runs
        runners[name] = {"size": r.size, "runs": runs, "cycle_ns": total / runs,
                         "mode": r.mode, "parts": parts, "work_ns": busy}
    timers = {name: {"trace_ns": t["trace_ns"], "where": t["where"]}
              for name, t in w.info.get("timers", {}).items() if t.get("trace_ns")}
    return {"runners": runners, "timers": timers}


@dataclass
class Check:
    """The model at the traced configuration against its trace."""

    facts: dict
    cycle_ns: dict                      # runner -> model's ns per iteration and thread
    part_ns: dict                       # (runner, part index) -> model's ns per iteration
    timer_ns: dict                      # timer -> model's mean response (ns)
    status: str                         # the solve's status
    method: str
    ci: dict = field(default_factory=dict)      # runner -> relative CI half-width of its cycle
    note: str = ""

    def major(self, runner: str) -> bool:
        """Whether ``runner`` does at least :data:`MINOR` of the work of all."""
        work = sum(f.get("work_ns", 0) for f in self.facts["runners"].values())
        f = self.facts["runners"][runner]
        return not (work > 0 and f.get("work_ns", work) < MINOR * work)

    def busy(self, runner: str) -> tuple[float, float] | None:
        """(trace, model) ns per iteration that ``runner`` spends other than waiting to
        take an item: its fragments and its other operations."""
        f = self.facts["runners"][runner]
        if not any(p["idle"] for p in f["parts"]):
            return None
        t = m = 0.0
        for i, p in enumerate(f["parts"]):
            fr, op = self.part_ns.get((runner, i), (math.nan, math.nan))
            t += p["frag_ns"] + (0 if p["idle"] else p["op_ns"])
            m += fr + (0 if p["idle"] else op)
        return t, m

    def rows(self) -> list[tuple[str, float, float, float]]:
        """(what, trace, model, relative difference): each runner's cycle, its busy time
        where it waits for items, and each timed response; in ns."""
        out = []
        for name, f in self.facts["runners"].items():
            if not self.major(name):
                continue                        # a thread that hardly works (a listener)
            m = self.cycle_ns.get(name)
            if m is not None and f["cycle_ns"] > 0:
                out.append((name, f["cycle_ns"], m, (m - f["cycle_ns"]) / f["cycle_ns"]))
                b = self.busy(name)
                if b is not None and b[0] > 0 and math.isfinite(b[1]):
                    out.append((f"{name} busy", b[0], b[1], (b[1] - b[0]) / b[0]))
        for name, t in self.facts.get("timers", {}).items():
            m = self.timer_ns.get(name)
            if m is not None and t["trace_ns"] > 0:
                out.append((f"response {name}", t["trace_ns"], m, (m - t["trace_ns"]) / t["trace_ns"]))
        return out

    def worst(self) -> tuple[str, float]:
        """The measure that differs most, and by how much (relative)."""
        rows = self.rows()
        if not rows:
            return "", 0.0
        r = max(rows, key=lambda x: abs(x[3]))
        return r[0], r[3]

    @property
    def ok(self) -> bool:
        """Solved, and every cycle and response within :data:`TOLERANCE`."""
        return self.status == "ok" and abs(self.worst()[1]) <= TOLERANCE

    def culprit(self, runner: str, busy: bool = False,
                sign: float = 0.0) -> tuple[str, float, float] | None:
        """The part of ``runner`` (a step's code fragment, its operation, or the waits
        before it that the model leaves out) whose time per iteration differs most:
        (what, trace ns, model ns); ``busy``: among the parts that are not waiting for
        work; ``sign`` (+1, -1): the part the model has most too much (too little) of."""
        f = self.facts["runners"].get(runner)
        if not f:
            return None
        best = None
        for i, p in enumerate(f["parts"]):
            m = self.part_ns.get((runner, i))
            if m is None:
                continue
            for what, t, mm in ((f"the code before {p['what']}", p["frag_ns"], m[0]),
                                (p["what"], p["op_ns"], m[1]),
                                (f"waits the model leaves out (select, receives on sockets "
                                 f"it does not link, joins, ...) before {p['what']}",
                                 p.get("hidden_ns", 0.0), 0.0)):
                if p["idle"] and what == p["what"] or busy and what.startswith("waits"):
                    continue                    # waiting for work: follows the rest
                if not math.isfinite(mm):
                    continue
                d = sign * (mm - t) if sign else abs(mm - t)
                if best is None or d > best[0]:
                    best = (d, what, t, mm)
        return best[1:] if best else None

    def lines(self) -> list[str]:
        """The comparison as comment lines for the model's header."""
        if self.status not in ("ok", "imprecise"):
            return [f"# Check: solved at the traced configuration by {self.method}, the model "
                    f"gave no answer ({self.status}{': ' + self.note if self.note else ''}); "
                    "the program did: the model does not reproduce its trace."]
        rows = self.rows()
        if not rows:
            return []
        name, d = self.worst()
        head = (f"# Check: solved at the traced configuration ({self.method}), the model "
                + (f"reproduces its trace within {100 * TOLERANCE:g}%:" if self.ok else
                   f"differs from its trace by {100 * d:+.1f}% ({name}):"))
        out = [head]
        for what, t, m, rel in rows:
            unit = "per iteration and thread" if not what.startswith("response") else "mean"
            if what.endswith(" busy"):
                unit = "per iteration and thread, not waiting for work"
            out.append(f"#   {what}: trace {_ms(t)}, model {_ms(m)} {unit} ({100 * rel:+.1f}%)")
        runner = name[:-5] if name.endswith(" busy") else name
        if not self.ok and name.startswith("response "):
            # a response is the sum of the parts on its way: the part of any runner that
            # the model has most too little (too much) of, as the response is short (long),
            # waits the model leaves out included
            sign = 1.0 if d > 0 else -1.0
            found = [(sign * (c[2] - c[1]), r, c) for r in self.facts["runners"]
                     if self.major(r) and (c := self.culprit(r, sign=sign)) is not None]
            if found:
                _, r, c = max(found, key=lambda x: x[0])
                out.append(f"#   the largest unexplained part, in '{r}': {c[0]}: "
                           f"{_ms(c[1])} per iteration in the trace, {_ms(c[2])} in the model")
        elif not self.ok and runner in self.facts["runners"]:
            c = self.culprit(runner, busy=name.endswith(" busy"))
            if c is not None:
                out.append(f"#   the largest unexplained part of '{runner}': {c[0]}: "
                           f"{_ms(c[1])} per iteration in the trace, {_ms(c[2])} in the model")
        if self.status == "imprecise":
            out.append(f"#   (the solve missed its precision: {self.note})")
        return out


def _ms(ns: float) -> str:
    if not math.isfinite(ns):
        return str(ns)
    return f"{ns / 1e6:.4g} ms" if ns >= 1e5 else f"{ns / 1e3:.4g} us"


def _tokens(res, element: str) -> float:
    """Threads at an element (summed over colors and sub-elements)."""
    tot = 0.0
    for r in res.rows:
        if r.measure == "tokens" and (r.element == element or r.element.startswith(element + ".")):
            if not r.color or not any(x.measure == "tokens" and x.element == r.element
                                      and not x.color for x in res.rows):
                tot += r.value
    return tot


def check(text: str, facts: dict, *, wall: float = 5.0, seed: int = 1) -> Check:
    """Solve the model ``text`` at its traced configuration and compare it with ``facts``
    (:func:`trace_facts`): a short simulation, to 2% (the check's tolerance is
    :data:`TOLERANCE`), for at most ``wall`` seconds."""
    import qpn
    from qpn.errors import QPNError
    try:
        net = qpn.parse(text)
        watch = tuple(f"{name}.begin" for name in facts["runners"]) + tuple(
            f"{name}.running" for name in facts.get("timers", {}))
        res = qpn.solve(net, "des", options={"quiet": True, "seed": seed, "wall": wall, "rtol": 0.02,
                                             "watch_elements": watch})
    except QPNError as exc:
        return Check(facts, {}, {}, {}, "error", "des", note=str(exc).splitlines()[0])
    status = res.status
    cycles, parts, cis = {}, {}, {}
    if status in ("ok", "imprecise"):
        for name, f in facts["runners"].items():
            try:
                x = res.get("throughput", f"{name}.begin")
                ci = res.ci("throughput", f"{name}.begin")
            except QPNError:
                continue
            if x <= 0:
                continue
            cycles[name] = f["size"] / x * 1e9
            if ci:
                cis[name] = ci / x
            for i, p in enumerate(f["parts"]):
                fr = sum(_tokens(res, e) for e in p["frag_elements"]) / x * 1e9
                op = sum(_tokens(res, e) for e in p["op_elements"]) / x * 1e9
                parts[(name, i)] = (fr, op)
    timers = {}
    for name in facts.get("timers", {}):
        try:
            timers[name] = res.get("residence", f"{name}.running") * 1e9
        except QPNError:
            pass
    return Check(facts, cycles, parts, timers, status, "des", cis,
                 note=res.imprecise or res.reason or "")


def with_lines(text: str, lines: list[str]) -> str:
    """The model ``text`` with comment ``lines`` at the end of its header (before the
    blank line above ``net NAME``)."""
    if not lines:
        return text
    rows = text.split("\n")
    at = next((i for i, ln in enumerate(rows) if ln.startswith("net ")), None)
    if at is None:
        return "\n".join(lines) + "\n" + text
    while at > 0 and rows[at - 1] == "":
        at -= 1
    return "\n".join(rows[:at] + lines + rows[at:])


__all__ = ["trace_facts", "check", "with_lines", "Check", "TOLERANCE"]
