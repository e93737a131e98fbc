"""Canonical text of ``software { ... }`` blocks (used by :mod:`dsl.printer`).

Defaults are left out (``cores 1``, ``servers 1``, ``fifo``, counts of 1); the
scheduling discipline of a cpu or disk is always written.  A block with a
single simple step stays on one line when it fits: ``loop 5 times { cpu det(1 ms) }``.
Comments attached to declarations and steps are written back above them.
"""
from __future__ import annotations

import re

from qpn.expr import Num, fmt
from qpn.software import ast as sw

from .printing import INDENT, WIDTH, doc_lines, fmt_dist, wrap_option


def _next_words() -> frozenset:
    """The words that may follow ``allreduce world`` (the first word of a step, or ``as``):
    a byte count that starts with one is written in parentheses, ``allreduce world
    (reduce)``, else the parser would read the word as the start of the next step (or of
    the label).  Imported here, not at the top: the builder imports lark, which
    ``import qpn`` does not load."""
    from .software_builder import STEP_WORDS
    return frozenset(w.lower() for w in STEP_WORDS) | {"as"}


def _count(e) -> str:
    """A count before a name: 2 or (expr)."""
    if type(e) is Num and e.unit is None and isinstance(e.value, int) and e.value >= 0:
        return str(e.value)
    return f"({fmt(e)})"


def _guarded(text: str, words) -> str:
    """An expression in parentheses when it starts with one of ``words``: where the parser
    would read that word as the keyword that may come next."""
    word = re.match(r"[A-Za-z_]\w*", text)
    return f"({text})" if word is not None and word[0] in words else text


def _opt_count(e) -> str:
    return "" if e == sw.ONE else _count(e) + " "


def _label(st) -> str:
    return f" as {st.label}" if getattr(st, "label", None) else ""


def _is_one(e) -> bool:
    return type(e) is Num and e.value == 1 and e.unit is None


# ----------------------------------------------------------------- resources
#: declaration type -> (keyword, its options in order: (word before the value or "",
#: field, how the value is written)): ``keyword name word value ...`` and nothing optional;
#: the declarations with optional parts are written by :func:`fmt_decl_head` itself
_PLAIN_DECLS = {
    sw.Semaphore: ("semaphore", (("permits", "permits", fmt),)),
    sw.Barrier: ("barrier", (("parties", "parties", fmt),)),
    sw.Limit: ("limit", (("", "count", fmt),)),
    sw.Timer: ("timer", ()),
    sw.Sink: ("sink", ()),
    sw.Pool: ("pool", (("size", "size", fmt),)),
    sw.Population: ("population", (("size", "size", fmt), ("think", "think", fmt_dist))),
    sw.Source: ("source", (("every", "every", fmt_dist),)),
    sw.Behavior: ("behavior", ()),
}


def fmt_decl_head(d) -> str:
    """The first line of a software declaration (``cpu host cores 2 ps``, ``pool w size n``)."""
    t = type(d)
    if t is sw.Cpu:
        s = f"cpu {d.name}"
        if not _is_one(d.cores):
            s += f" cores {fmt(d.cores)}"
        s += f" {d.discipline}"
        if d.quantum is not None:
            s += f" quantum {fmt(d.quantum)}"
        if d.switch is not None:
            s += f" switch {fmt(d.switch)}"
        return s
    if t is sw.Disk:
        s = f"disk {d.name}"
        if not _is_one(d.servers):
            s += f" servers {fmt(d.servers)}"
        if not d.load:
            s += f" {d.discipline}"
        if d.service is not None:
            s += f" service {fmt_dist(d.service)}"
        if d.load:
            s += " service by load " + ", ".join(f"{k}: {fmt_dist(x)}" for k, x in d.load)
        return s
    if t is sw.Mutex:
        return f"mutex {d.name}" + (f" handover {fmt_dist(d.handover)}" if d.handover else "")
    if t is sw.RwLock:
        return f"rwlock {d.name}" + (" prefer writers" if d.prefer_writers else "")
    if t is sw.Condition:
        return f"condition {d.name}" + (f" on {d.mutex}" if d.mutex else "")
    if t is sw.Comm:
        s = f"comm {d.name} ranks {fmt(d.ranks)}"
        if d.latency != sw.ZERO:
            s += f" latency {fmt(d.latency)}"
        if d.per_byte != sw.ZERO:
            s += f" per_byte {fmt(d.per_byte)}"
        return s + (f" on {d.on}" if d.on else "")
    if t is sw.BlockingQueue:
        s = f"blocking queue {d.name}"
        if d.capacity is not None:
            s += f" capacity {fmt(d.capacity)}"
        return s + (" lifo" if d.order == "lifo" else "")
    if t in _PLAIN_DECLS:
        keyword, fields = _PLAIN_DECLS[t]
        words = [keyword, d.name]
        for word, attr, show in fields:
            words += ([word] if word else []) + [show(getattr(d, attr))]
        return " ".join(words)
    raise TypeError(f"cannot print {d!r}")


def fmt_decl(d, indent: str) -> list[str]:
    """The lines of a software declaration, with its body if it has one."""
    head = fmt_decl_head(d)
    if isinstance(d, sw.Disk) and d.load and len(indent) + len(head) > WIDTH:
        base, _, rest = head.partition(" service by load ")
        return [indent + base] + wrap_option("service by load " + rest, indent + INDENT)
    if isinstance(d, sw.RUNNERS + (sw.Behavior,)):
        if isinstance(d.body, str):
            return [f"{indent}{head} runs {d.body}"]
        return _block(indent + head, d.body, indent)
    return [indent + head]


# --------------------------------------------------------------------- steps
def step_head(st) -> str:
    """A step without its blocks (the text before ' {')."""
    t = type(st)
    if t is sw.Compute:
        return f"cpu {fmt_dist(st.dist)}" + (f" on {st.on}" if st.on else "") + _label(st)
    if t is sw.Io:
        s = "io" + (f" {fmt_dist(st.dist)}" if st.dist is not None else "")
        return s + (f" on {st.on}" if st.on else "") + _label(st)
    if t is sw.Sleep:
        return f"sleep {fmt_dist(st.dist)}" + _label(st)
    if t is sw.Lock:
        pre = "" if st.mode == "mutex" else f"{st.mode} "
        return f"{pre}lock {st.target}" + _label(st)
    if t is sw.Unlock:
        pre = "" if st.mode == "mutex" else f"{st.mode} "
        return f"{pre}unlock {st.target}"
    if t is sw.Acquire:
        return f"acquire {_opt_count(st.count)}{st.target}" + _label(st)
    if t is sw.Release:
        return f"release {_opt_count(st.count)}{st.target}"
    if t is sw.Await:
        return f"await {st.target}" + _label(st)
    if t is sw.Collective:
        if st.bytes == sw.ZERO:
            return f"{st.op} {st.comm}" + _label(st)
        return f"{st.op} {st.comm} {_guarded(fmt(st.bytes), _next_words())}" + _label(st)
    if t is sw.Wait:
        return f"wait {st.target}" + _label(st)
    if t is sw.Notify:
        return f"notify {'all ' if st.all else ''}{st.target}"
    if t in (sw.Put, sw.Take):
        s = f"{'put' if t is sw.Put else 'take'} {st.target}" + _label(st)
        if st.timeout is not None:
            s += f" timeout {fmt_dist(st.timeout)}"
        return s + (" else" if st.otherwise is not None else "")
    if t is sw.Allocate:
        return f"allocate {_opt_count(st.count)}{st.target}" + _label(st) + " else"
    if t is sw.Free:
        return f"free {_opt_count(st.count)}{st.target}"
    if t is sw.TimerStep:
        return f"timer {st.action} {st.target}"
    if t is sw.Branch:
        return "branch"
    if t is sw.Loop:
        return f"loop {'about ' if st.geometric else ''}{fmt(st.count)} times" + _label(st)
    if t is sw.Fork:
        return "fork" + ("" if _is_one(st.count) else f" {fmt(st.count)}") + _label(st)
    if t is sw.ParallelFor:
        s = f"parallel for {fmt(st.count)}"
        if st.threads is not None:
            s += f" threads {fmt(st.threads)}"
        if st.schedule != "static":
            s += f" schedule {st.schedule}"
            if st.chunk is not None:
                s += " " + _guarded(fmt(st.chunk), {"as", "threads", "schedule", "reduction"})
        if st.reduction is not None:
            s += f" reduction {fmt_dist(st.reduction)}" + (f" on {st.reduction_on}"
                                                           if st.reduction_on else "")
        return s + _label(st)
    if t is sw.Critical:
        return "critical" + (f" {st.name}" if st.name else "") + _label(st)
    if t is sw.Atomic:
        return f"atomic {fmt_dist(st.dist)}" + (f" on {st.on}" if st.on else "") + _label(st)
    if t is sw.Single:
        return "single" + (" nowait" if st.nowait else "") + _label(st)
    if t is sw.Call:
        return f"call {st.target}" + _label(st)
    if t is sw.Return:
        return "return"
    raise TypeError(f"cannot print {st!r}")


def _blocks_of(st) -> list | None:
    """The step's blocks (None: a one-line step)."""
    if isinstance(st, (sw.Put, sw.Take)):
        return [st.otherwise] if st.otherwise is not None else None
    if isinstance(st, sw.Allocate):
        return [st.otherwise]
    if isinstance(st, (sw.Loop, sw.ParallelFor, sw.Critical, sw.Single)):
        return [st.body]
    if isinstance(st, sw.Fork):
        return [b.body for b in st.blocks]
    return None


def _simple(steps) -> bool:
    return len(steps) == 1 and not steps[0].doc and _blocks_of(steps[0]) is None \
        and not isinstance(steps[0], sw.Branch)


def _block(opener: str, steps, indent: str, trailer: str = "") -> list[str]:
    """``opener { ... }``; ``opener`` is already indented.  ``trailer``: comments
    that close the block (a forked block's own comments)."""
    if not steps and not trailer:
        return [opener + " {}"]
    if _simple(steps) and not trailer:
        one = f"{opener} {{ {step_head(steps[0])} }}"
        if len(one) <= WIDTH:
            return [one]
    out = [opener + " {"]
    for st in steps:
        out += fmt_step(st, indent + INDENT)
    out += doc_lines(trailer, indent + INDENT)
    out.append(indent + "}")
    return out


def fmt_step(st, indent: str) -> list[str]:
    """The lines of one step of a thread's body (nested blocks indented)."""
    lines = doc_lines(st.doc, indent)
    if isinstance(st, sw.Branch):
        lines.append(f"{indent}branch {{")
        for alt in st.alternatives:
            lines += doc_lines(alt.doc, indent + INDENT)
            lines += _block(f"{indent}{INDENT}{fmt(alt.prob)}:", alt.body, indent + INDENT)
        lines.append(f"{indent}}}")
        return lines
    blocks = _blocks_of(st)
    if blocks is None:
        return lines + [indent + step_head(st)]
    opener = indent + step_head(st)
    trailers = [b.doc for b in st.blocks] if isinstance(st, sw.Fork) else [""] * len(blocks)
    body: list[str] = []
    for k, steps in enumerate(blocks):
        if k:
            opener = body.pop() + " and"
        body += _block(opener, steps, indent, trailers[k])
    return lines + body


# --------------------------------------------------------------------- block
def _group(d) -> str:
    if isinstance(d, (sw.Mutex, sw.RwLock, sw.Semaphore, sw.Barrier, sw.Comm, sw.Condition)):
        return "sync"
    if isinstance(d, (sw.Cpu, sw.Disk)):
        return "hardware"
    if isinstance(d, (sw.BlockingQueue, sw.Sink, sw.Timer, sw.Limit)):
        return "queues"
    return type(d).__name__


def fmt_software(block: sw.Software, indent: str) -> list[str]:
    """The lines of a ``software { ... }`` block."""
    if not block.decls:
        return [f"{indent}software {{}}"]
    out = [f"{indent}software {{"]
    prev = None
    for d in block.decls:
        body = fmt_decl(d, indent + INDENT)
        doc = doc_lines(d.doc, indent + INDENT)
        multi = len(body) > 1
        if prev is not None and (prev[0] != _group(d) or multi or doc or prev[1]):
            out.append("")
        out += doc + body
        prev = (_group(d), multi)
    out.append(f"{indent}}}")
    return out
