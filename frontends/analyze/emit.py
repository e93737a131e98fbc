"""Assemble the model: header comments, params, the software block, printed.

:func:`write_model` is the one entry point: an
:class:`~frontends.analyze.pipeline.Analysis` in, a
:class:`~frontends.analyze.model.ModelText` out (the text, side files for
``--demands empirical`` and the facts the report and the tests use).  The model is a
:class:`qpn.net.Net` of the software layer's objects, written by the language's own
printer, so it reads as ``qpn fmt`` writes.
"""
from __future__ import annotations

import os

from qpn.dsl.printer import print_net
from dataclasses import replace

from qpn.expr import Num, Ref
from qpn.model import Param
from qpn.net import Net
from qpn.software import ast as sw

from .fit import fit, fmt_time
from .comments import doc
from .model import ModelText, Writer
from .reproduce import trace_facts
from .responses import response_timers
from .wakeups import MIN_WAKEUPS


def write_model(an, *, name: str | None = None, samples_dir: str | None = None,
                across=None) -> ModelText:
    """The model of an analysis as text (see docs/analyzer.md).

    ``samples_dir``: where ``--demands empirical`` sample files go, relative
    to the model (default ``<net>_samples``); ``across``: what other traces of
    the program said (:func:`.across.across`).
    """
    h = an.trace.header
    argv = h.program.get("argv") or []
    if name is None:
        name = os.path.splitext(os.path.basename(argv[0]))[0] if argv else "model"
    w = Writer(an, name=name, samples_dir=samples_dir, across=across)
    body = counted_queues(w, response_timers(w, w.runners()))   # responses.py; batches
    w.info["reproduce"] = trace_facts(w, an)         # what the check compares (reproduce.py)
    cpus = []
    if "host" in w.cpus:
        if an.gil:
            w.cores_param = w.param("cores", w.cores, "CPU cores (runtime.cpus)")
        # ps: any thread on any core (the default: docs/analyzer.md, Cores); jsq-ps: per-core
        # run queues, a thread placed on the less loaded core when it wakes stays there
        cpus.append(sw.Cpu("host", cores=Ref(w.cores_param), discipline=w.opt.cpu, doc=(
            "the machine's cores" + (": C code that released the GIL, and the GIL's holder"
                                     if an.gil else "")
            + ("; each core is shared by the threads placed on it when they woke"
               if w.opt.cpu == "jsq-ps" else ""))))
    for host in sorted(c for c in w.cpus if c.startswith("host_")):     # several machines
        n = w.host_cores.get(host) or w.cores
        cp = w.param(f"cores_{host[5:]}", n, f"CPU cores of machine {host[5:]} (its trace's "
                     "runtime.cpus)")
        cpus.append(sw.Cpu(host, cores=Ref(cp), discipline=w.opt.cpu,
                           doc=f"the cores of machine {host[5:]}"))
    for gil in sorted(c for c in w.cpus if c == "gil" or c.startswith("gil_")) if an.gil else ():
        whose = "" if gil == "gil" else f" of process {gil[4:]}"
        # a machine's wake-up, from the receives of all its processes: the mean rests on a
        # tail of waits for a core (a few %), too few in one process's receives alone
        host = w.host_of.get(gil[4:], "host")
        wakes = [t for p, ts in sorted(an.wakeups.items()) if w.host_of.get(p, "host") == host
                 for t in ts] if gil[4:] in an.wakeups else []
        handover = fit(wakes) if len(wakes) >= MIN_WAKEUPS else None
        cpus.append(sw.Mutex(gil, handover=handover.dist() if handover else None, doc=(
            f"the GIL{whose}: one thread at a time runs Python code, on one of the cores; it "
            "keeps the GIL\nuntil its fragment ends (fragments are mostly shorter than the "
            f"switch interval, {fmt_time(w.quantum)})" + (
                ";\na thread waiting for it gets it one wake-up after it is released (handover): on "
                f"this machine,\n{len(wakes)} receives blocked when another process's send ended "
                f"returned {fmt_time(handover.mean)} after it on average,\nmedian "
                f"{fmt_time(sorted(wakes)[len(wakes) // 2])} (frontends/analyze/wakeups.py)"
                if handover else ""))))
    if w.disk:
        n = _concurrency(w.disk_busy)
        dp = w.param("disk_servers", n, "requests the disk serves at once (at most "
                     + (f"{n} device accesses were" if n != 1 else "1 device access was")
                     + " in flight at a time in the trace)")
        cpus.append(sw.Disk("disk", servers=Ref(dp), discipline="random",
                            doc="the device behind the file I/O that missed the page cache"))
    items = []
    params = sorted(w.params, key=lambda p: p[0].startswith("speedup_"))
    first_speedup = True
    for pname, value, comment in params:
        note = comment or ""
        if pname.startswith("speedup_") and first_speedup:
            note = "speed-up factor of each code fragment (1 = as traced; 2 = twice as fast)"
            first_speedup = False
        items.append(Param(pname, value, doc=note))
    decls = [d for _, d in sorted(w.decls.values(), key=lambda d: d[0])]
    items.append(sw.Software(tuple(cpus + decls + body)))
    net = Net(w.net, tuple(items), doc=doc(_header(an, w) + _unused(an, w)))
    w.info["omitted"] = {r.name: r.why for r in an.runners if r.mode == "omitted"}
    w.info["warnings"] = list(an.warnings)
    w.info["net"] = w.net
    if across is not None:
        w.info["across"] = across.info
    w.info["object_names"] = dict(w.objnames)
    return ModelText(print_net(net), w.side, w.info)


def counted_queues(w, body: list) -> list:
    """The queues whose items a batch hands over at once (``release (n)``, model.py
    ``_burst``) as semaphores of items: takes of them acquire one, puts release one."""
    if not w.counted:
        return body
    for key, (order, decl) in list(w.decls.items()):
        if isinstance(decl, sw.BlockingQueue) and decl.name in w.counted:
            w.decls[key] = (order, sw.Semaphore(decl.name, Num(0), doc=(
                (decl.doc + "\n" if decl.doc else "") + "its items counted as permits: a batch "
                "hands them over at once (release (n))")))

    def step(st):
        if isinstance(st, sw.Take) and st.target in w.counted and st.timeout is None:
            return sw.Acquire(st.target, label=st.label, doc=st.doc)
        if isinstance(st, sw.Put) and st.target in w.counted and st.timeout is None:
            return sw.Release(st.target, doc=st.doc)
        kids = sw.children(st)
        if not kids or isinstance(st, (sw.Put, sw.Take, sw.Allocate)):
            return st
        if isinstance(st, (sw.Branch, sw.Fork)):
            return sw.with_children(st, [replace(k, body=tuple(step(x) for x in k.body))
                                         for k in kids])
        return sw.with_children(st, [step(x) for x in kids])

    out = []
    for d in body:
        if isinstance(d, (sw.Pool, sw.Source)) and isinstance(d.body, tuple):
            new = replace(d, body=tuple(step(x) for x in d.body))
            for name, (pool, r) in list(w.pools.items()):
                if pool is d:
                    w.pools[name] = (new, r)
            d = new
        out.append(d)
    return out


def _unused(an, w) -> list[str]:
    """Comment lines for the objects of the trace that the steady state does not use."""
    from .naming import split_site
    from .objects import kind_of
    seen: dict = {}
    w.info["objects_unused"] = {}
    for key in an.objects.keys():
        if key in w.objnames:
            continue
        ev = an.objects.info(key)
        kind = kind_of(ev.get("type"))
        if kind not in ("mutex", "semaphore", "barrier", "condition", "queue", "event", "rwlock"):
            continue
        name = an.sources.object_name(ev.get("site")) or f"{ev.get('type')}_{split_site(ev.get('site'))[1]}"
        facts = {k: ev[k] for k in ("capacity", "parties", "permits") if k in ev}
        if kind == "condition" and ev.get("lock") is not None:
            lk = an.objects.info(an.objects.key(ev["lock"], ev["ts"]))
            facts["lock"] = an.sources.object_name(lk.get("site")) or lk.get("type", "lock")
        w.info["objects_unused"][name] = {"kind": kind, "type": ev.get("type"), **facts}
        more = ", ".join(f"{k} {v}" for k, v in facts.items())
        line = (f"#   {ev.get('type')} {name}" + (f" ({more})" if more else "")
                + (f" at {ev['site']}" if ev.get("site") else ""))
        seen[line] = seen.get(line, 0) + 1
    # objects made per request repeat one line per object: one line per site, counted
    out = [ln if n == 1 else f"{ln} ({n} objects)" for ln, n in seen.items()]
    if out:
        out.insert(0, "# Objects of the trace used only in start-up, shut-down or by threads "
                      "not modelled:")
    return out


def _concurrency(spans) -> int:
    """The most intervals that overlap at one time (at least 1)."""
    ev = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    n = best = 0
    for _, d in ev:
        n += d
        best = max(best, n)
    return max(1, best)


def _header(an, w) -> list[str]:
    h = an.trace.header
    argv = " ".join(h.program.get("argv") or []) or "?"
    rt = h.runtime
    threads = sum(len(r.group.tids) for r in an.runners)
    out = [f"# Model of `{argv}`, built by `qpn build` from {os.path.basename(an.trace.path)}:",
           f"# a {h.source} trace of {len(an.trace.events)} events and {threads} threads; "
           f"{rt.get('implementation', 'unknown runtime')} {rt.get('version', '')}".rstrip()
           + (" with a GIL" if an.gil else "") + f", {w.cores} CPUs."]
    load = h.machine_text()
    if load:
        out.append(f"# Machine while tracing: {load}"
                   + (" (BUSY: see the warnings)." if h.busy() else "."))
    if an.phase is not None:
        lo, hi = an.phase
        out.append(f"# Work phase: {fmt_time(hi - lo)} "
                   + ("from the first to the last hand-over" if an.phase_by == "hand-overs" else
                      "while the threads the main thread started ran (no hand-overs)")
                   + " (start-up and shut-down are not modelled).")
    for r in an.runners:
        if r.mode == "omitted":
            out.append(f"# Not modelled: '{r.name}' ({', '.join(r.group.thread_names[:3])}): "
                       f"{r.why}.")
    if not an.trace.complete:
        out.append("# The trace was malformed; this model describes its valid part only.")
    out.append(f"# Fragments below {100 * an.options.prune:g}% of a runner's CPU and I/O time "
               "are pruned; CPU demands are " + ("measured samples." if an.options.demands
                                                 == "empirical" else "fitted by their SCV."))
    if an.probe_ns:
        cond = getattr(an.trace.header, "probe_cond_ns", None)
        out.append(f"# The tracer's own CPU, {fmt_time(an.probe_ns)} per event"
                   + (f" ({fmt_time(cond)} on a condition's lock or a notify)" if cond else "")
                   + " (probe_ns, timed at the traced program's exit), is taken off the demands.")
    out += an.notes
    if w.across and w.across.lines:
        out += w.across.lines
    if w.assumptions:
        out.append("# Assumptions (what this trace cannot tell; a param of the same name, where "
                   "there is one, changes it):")
        out += [f"#   {p}: {what}" for p, what in w.assumptions]
    return out
