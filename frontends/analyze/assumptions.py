"""What one trace leaves open, and how the model says it (used by :mod:`.model`).

Each function takes the model :class:`~.model.Writer` ``w`` it writes for:

* :func:`barrier_parties` -- a barrier's parties as the sum of the runners that wait on
  it, so that it follows the pool parameters;
* :func:`divided_work` -- ``split_POOL`` / ``work_POOL`` for a pool that may divide a
  fixed amount of work among its threads (an assumption with one trace, fitted from
  traces at two pool sizes);
* :func:`serial_work` -- ``serial_main`` for the main thread's CPU before and after its
  modelled run: start-up and shut-down, or work each run repeats;
* :func:`open_loop` -- a client thread that keeps a schedule is an open workload;
* :func:`sleep_times`, :func:`geometric_mean_text` -- a sleep's real duration, a loop
  mean that stays above 1.
"""
from __future__ import annotations

from qpn.expr import BinOp, Num, Ref
from qpn.distributions import Det
from qpn.software import ast as sw

from .division import divided
from .fit import fit, fmt_time
from .structure import leaves


def geometric_mean_text(mean: float) -> str:
    """The mean of a ``loop about N times`` with as few digits as keep it above 1 (the
    language's geometric loop needs N > 1; 4 digits wrote 1.0001 as "1").

    >>> geometric_mean_text(2.345678), geometric_mean_text(1 + 1 / 11922)
    ('2.346', '1.0001')
    """
    return next(t for t in (f"{mean:.{p}g}" for p in range(4, 18)) if float(t) > 1)


def sleep_times(steps) -> tuple[list, str]:
    """How long a sleep takes: what the program asked for plus what the OS added (timer
    slack, wake-up; ~75 us per 1 ms sleep on this VM), the lower quartile of the
    overshoot at this site, so that time spent re-taking the GIL after waking -- which
    the model's GIL station adds itself -- is not counted twice.  Without requested
    durations in the trace: the measured ones.

    >>> class S:
    ...     def __init__(self, req, dur): self.ev, self.dur = {"requested": req}, dur
    >>> sleep_times([S(1000, 1070), S(1000, 1080), S(1000, 1075), S(1000, 3000)])
    ([1075, 1075, 1075, 1075], '; asked for 1 us, took 75 ns longer (lower quartile of 4 sleeps)')
    """
    req = [s.ev.get("requested") for s in steps]
    if not steps or any(r is None for r in req):
        return [s.dur for s in steps], ""
    over = sorted(max(0, s.dur - r) for s, r in zip(steps, req))
    extra = over[len(over) // 4]
    mean = sum(req) / len(req)
    return ([r + extra for r in req],
            f"; asked for {fmt_time(mean)}, took {fmt_time(extra)} longer (lower quartile of "
            f"{len(over)} sleeps)")


def barrier_parties(w, key, parties: int) -> tuple[list[str], str]:
    """A barrier's parties as the terms of a sum of the sizes of the runners that wait on
    it (``workers + 1`` for a pool and the main thread), so that the barrier follows the
    pool parameters; the traced number when the waiting threads do not add up to it
    (with a comment saying so)."""
    users = [r for r in w.an.runners if r.mode != "omitted" and any(
        lf.action == "await" and lf.token[1] == key for lf in leaves(r.items))]
    if not users:
        return [str(parties)], ""
    if sum(r.size for r in users) != parties:
        waiting = " + ".join(f"{r.size} ({r.name})" for r in users)
        return [str(parties)], (f"; the threads modelled waiting on it are {waiting}: the "
                                "traced number is kept, check it when pool sizes change")
    terms = [w.size_param[r.name] for r in users if r.name in w.size_param]
    ones = len(users) - len(terms)            # the main thread, and runners of one thread
    if ones:
        terms.append(str(ones))
    expr = " + ".join(terms)
    return terms, (f": the threads that wait on it ({expr})" if len(users) > 1 else "")


def open_loop(w, r):
    """(queue key, put times) when runner ``r`` is an open-loop client: its steady loop
    only takes planned requests (a schedule: :mod:`.schedules`) and puts each into one
    unbounded queue, or (a trace without the times asked for) only sleeps and puts, the
    sleeps varying.  Its arrivals do not depend on the rest of the program: a ``source``
    with a rate parameter that puts into that queue directly, or, when the client works
    for each request, into its plan (the third value True: the client stays a thread)."""
    if r.mode != "forever":
        return None
    lvs = leaves(r.items)
    acts = {lf.action for lf in lvs}
    plans = {lf.token[1] for lf in lvs if lf.action == "take"
             and w.an.objects.info(lf.token[1]).get("name_type") == "plan"}
    # (a schedule's thread also sleeps a little after each planned instant: its wake-up)
    if not (acts == {"sleep", "put"} or acts - {"sleep"} == {"take", "put"} and len(plans) == 1
            and sum(lf.action == "take" for lf in lvs) == 1):
        return None
    keys = {lf.token[1] for lf in lvs if lf.action == "put"}
    if len(keys) != 1:
        return None
    key = next(iter(keys))
    if w.an.objects.info(key).get("capacity"):
        return None                          # a bounded queue: the client can block
    if not plans:
        asked = [s.ev.get("requested") for lf in lvs if lf.action == "sleep" for s in lf.steps]
        if len(asked) < 3 or None in asked or fit(asked).scv < 0.05:
            return None                      # fixed sleeps: the period follows its own work
    if len(plans) == 1 and _works(lvs):
        # a client that keeps a schedule and works for each request (builds it, hands it
        # over: CPU under the GIL beside the threads serving it, what holds its arrivals
        # back when they are busy) stays a thread: the source puts the planned instants,
        # it takes them, late when busy
        (plan,) = plans
        puts = sorted(s.end for lf in lvs if lf.action == "put" for s in lf.steps)
        w.relays[plan] = (r.name, key, puts)          # its requests start at its puts
        return plan, sorted(s.end for lf in lvs if lf.action == "take" for s in lf.steps), True
    return key, sorted(s.end for lf in lvs if lf.action == "put" for s in lf.steps), False


def _works(lvs) -> bool:
    """Whether a loop's steps hold CPU time of their own (code fragments)."""
    return any(s.cpu for lf in lvs for s in lf.steps if s.cpu)


def divided_work(w, r, base: str) -> None:
    """Parameters for the assumption that each thread's work per iteration does not
    depend on the pool size.  One trace cannot tell it from a program that divides a
    fixed amount among its threads (n / threads rows each): ``split_*`` says which
    share is divided, ``work_*`` scales the pool's CPU demands accordingly."""
    size = w.size_param[r.name]
    fitted = w.across.splits.get(r.name) if w.across else None
    by = w.an.trace.by_thread()
    starts = [by[t][0] for t in r.group.tids if by.get(t) and by[t][0]["kind"] == "thread_start"]
    given, why = divided(starts)
    w.info.setdefault("division", {})[r.name] = {"fitted": fitted[0] if fitted else None,
                                                "from_arguments": why or None}
    if fitted:
        v = fitted[0]
        sp = w.param(f"split_{base}", int(v) if v == int(v) else v,
                        f"{fitted[1]} (0: each thread's work does not depend on the pool "
                        f"size; 1: {r.size} / {size} of the traced work each)")
    elif given:
        sp = w.param(f"split_{base}", 1,
                     f"share of the work per iteration of pool '{r.name}' that the program "
                     f"divides among its threads: 1, from what the threads were given: {why} "
                     f"(0: each thread's work does not depend on the pool size; 1: {r.size} / "
                     f"{size} of the traced work each)")
    else:
        sp = w.param(f"split_{base}", 0,
                        f"ASSUMPTION: share of the work per iteration of pool '{r.name}' that "
                        f"the program divides among its threads (0: each thread's work does "
                        f"not depend on the pool size; 1: a fixed amount is split, {r.size} / "
                        f"{size} of the traced work each)")
        second = second_trace(w.an.trace.header, r.size)
        w.assumptions.append((sp, f"pool '{r.name}': work per iteration not divided "
                                     "among its threads (one trace cannot tell; traces at "
                                     "two pool sizes can: qpn build a.jsonl b.jsonl"
                                     + (f"; the second: {second}" if second else "") + ")"))
        w.info.setdefault("second_trace", {})[r.name] = {"split": sp, "command": second}
    # 1 - split + split * traced / size, as the parser groups it
    work = BinOp("+", BinOp("-", Num(1), Ref(sp)), BinOp("/", BinOp("*", Ref(sp), Num(r.size)), Ref(size)))
    w.work_param[r.name] = w.param(
        f"work_{base}", f"1 - {sp} + {sp} * {r.size} / {size}",
        f"work per iteration of a thread of '{r.name}', relative to the trace", expr=work)


def second_trace(header, size: int) -> str | None:
    """The command that traces the program at another pool size: its arguments with the
    one that equals the traced pool size (only one may) set to another, or None.

    >>> from qpn.frontends.trace import TraceHeader
    >>> second_trace(TraceHeader(program={"argv": ["prog.py", "2", "400"]}), 2)
    'qpn trace -o second.jsonl -- python prog.py 1 400'
    >>> second_trace(TraceHeader(program={"argv": ["prog.py", "2", "2"]}), 2) is None
    True
    """
    argv = list((header.program or {}).get("argv") or [])
    hits = [i for i, a in enumerate(argv[1:], 1) if a == str(size)]
    if len(hits) != 1:
        return None
    other = 1 if size != 1 else 2
    argv[hits[0]] = str(other)
    import shlex
    return "qpn trace -o second.jsonl -- python " + " ".join(shlex.quote(a) for a in argv)


#: serial CPU below this (ns) is not worth a parameter
SERIAL_MIN = 1_000_000


def serial_work(w, r, on: str | None) -> tuple[list, list]:
    """The steps before and after a whole-run main thread's body for its CPU outside the
    modelled run (``Runner.serial``), scaled by ``serial_NAME``: 0 (the default: start-up
    and shut-down, once per program) or 1 (each run repeats them: data prepared before the
    work, output checked after it).  One trace cannot tell them apart; the header says so.
    The steps run on the host's cores (``on``), not the GIL: a step of no time must not
    wait for the GIL's turn (at 0 it is no step at all; the language has no loop of 0
    times), and while the main thread prepares or checks, the threads it forks are not
    running."""
    before, after = r.serial
    if before + after < SERIAL_MIN:
        return [], []
    sp = w.param(f"serial_{r.name}", 0,
                 f"ASSUMPTION: 0: the {fmt_time(before)} of CPU the thread used before its run "
                 f"and the {fmt_time(after)} after it are start-up and shut-down; 1: every run "
                 "repeats them (data prepared before the work, output checked after it)")
    w.assumptions.append((sp, f"'{r.name}': its CPU before and after the modelled run is "
                              "start-up and shut-down, not work each run repeats (the trace "
                              "cannot tell)"))
    out = []
    for ns, label in ((before, "prologue"), (after, "epilogue")):
        steps = []
        if ns > 0:
            mean = BinOp("*", Num(float(f"{ns / 1e6:.4g}"), "ms"), Ref(sp))
            steps.append(sw.Compute(Det(mean), on, w.names.unique(label),
                                    doc=f"{label}: {fmt_time(ns)} of CPU, times {sp}"))
        out.append(steps)
    return out[0], out[1]


__all__ = ["barrier_parties", "divided_work", "serial_work", "open_loop", "sleep_times",
           "geometric_mean_text", "second_trace"]
