"""File I/O in the model: page-cache hits as CPU, device accesses on the disk.

An operation whose wait (less the GIL waits the trace explains) is below the
``--io-threshold`` was served from the page cache: its CPU is a compute step; longer
ones are device accesses, ``io`` on the model's ``disk`` (with their own CPU when it
matters).  Both: a branch by their counts (docs/analyzer.md, "File I/O").
"""
from __future__ import annotations

from qpn.software import ast as sw

from .blocks import cpu_sum as _cpu_sum
from .blocks import io_sum as _io_sum
from .comments import doc, documented, probs
from .fit import fit, fmt_time
from .naming import split_site

#: operations that reach the file system (others are computation)
DISK_OPS = frozenset({"read", "write", "open", "stat", "fsync"})


def _quick_cpu(w, lf) -> float:
    """ns of the calls that did not wait (a page-cache hit, a close): CPU of the call."""
    return float(sum(s.own_cpu or s.dur for s in lf.steps if s.blocked < w.opt.io_threshold))


def file_io(w, lf, ctx) -> list:
    """A file operation of the model writer ``w``: page-cache hits as CPU, device
    accesses as I/O on the disk, a branch by their counts when both occur."""
    if lf.token[1] not in DISK_OPS:
        if _cpu_sum(lf) + _io_sum(lf) > 0 and w._keeps_cpu(lf, ctx):
            return w.cpu(lf, ctx)
        ctx.prune(_io_sum(lf) + _cpu_sum(lf), _cpu_sum(lf) + _quick_cpu(w, lf))
        return []
    if not w._keeps_io(lf, ctx):
        # the I/O is too small to keep, the code before it may not be (reading a
        # log back and checking each record: the checking is the work)
        keep = w._keeps_cpu(lf, ctx)
        ctx.prune(_io_sum(lf) + (0 if keep else _cpu_sum(lf)),
                  (0 if keep else _cpu_sum(lf)) + _quick_cpu(w, lf))
        return w.cpu(lf, ctx) if keep else []
    out = w.cpu(lf, ctx) if w._keeps_cpu(lf, ctx) else []
    if not out and _cpu_sum(lf) > 0:
        ctx.prune(_cpu_sum(lf), _cpu_sum(lf))
    op, site = lf.token[1], lf.token[2]
    thr = w.opt.io_threshold
    gil_wait = w.an.shares.get(("gil_wait", id(lf))) or [0.0] * len(lf.steps)
    device = [max(0.0, s.blocked - g) for s, g in zip(lf.steps, gil_wait)]
    fast = sum(1 for d in device if d < thr)
    rare = 0 < fast < w.opt.prune * len(device)
    if rare:
        # a few quick accesses among device accesses (an exponential service
        # time is sometimes tiny) are the device's too, not a page cache
        thr = 0
    hits = [s.own_cpu or s.dur for s, d in zip(lf.steps, device) if d < thr]
    miss = [d for d in device if d >= thr]
    n = len(lf.steps)
    name = w.names.unique(f"{op}_{split_site(site)[1] or ''}")
    comment = [f"# {op}" + (f" at {site}" if site else "") + f": {n} calls, {fast} waited less than "
               f"{fmt_time(w.opt.io_threshold)} "
               + ("(too few for a page cache: the device's)" if rare else
                  f"(page cache), {len(miss)} longer (device)")
               + ("; waits for the GIL held by other threads not counted" if w.an.gil
                  else "")]
    alts = []
    if hits:
        f = fit(hits)
        alts.append((len(hits), (sw.Compute(f.dist(), w._on("host"), f"{name}_hit",
                                            doc=f"page-cache hits: {f.describe()}"),)))
    if miss:
        f = fit(miss)
        w.disk = True
        w.disk_busy += [(s.ts, s.end) for s, d in zip(lf.steps, device) if d >= thr]
        steps = [sw.Io(f.dist(), "disk", f"{name}_miss", doc=f"device accesses: {f.describe()}")]
        # a device access costs CPU too (filling the page cache, copying out): a cold
        # 512 KiB read used 0.31 ms of CPU beside its wait, a warm one 0.08 ms
        own = [s.own_cpu for s, d in zip(lf.steps, device) if d >= thr]
        if sum(own) > w.opt.prune * sum(miss):
            g = fit(own)
            steps.append(sw.Compute(g.dist(), w._on("host"), f"{name}_miss_cpu",
                                    doc=f"the device accesses' own CPU: {g.describe()}"))
        alts.append((len(miss), tuple(steps)))
    if len(alts) == 1:
        return out + documented(list(alts[0][1]), comment)
    ps = probs([c for c, _ in alts])
    w.info["branches"].append({"io": name, "counts": [c for c, _ in alts]})
    branch = sw.Branch(tuple(sw.Alternative(p, steps) for p, (_, steps) in zip(ps, alts)),
                       doc=doc(comment))
    return out + [branch]
