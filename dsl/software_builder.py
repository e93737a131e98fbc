"""Builder callbacks for the software layer (mixed into the parser's builder).

Each method receives the children of one grammar rule of ``software { ... }``
(dsl/qpn.lark) and returns a :mod:`qpn.software.ast` node.  Only what the
grammar cannot say is checked here (options given twice, an rr cpu without a
quantum, load levels out of order); names and numbers are checked when the
block is expanded (:mod:`qpn.software.check`).
"""
from __future__ import annotations

from typing import Any

from lark import Token

from qpn import disciplines
from qpn.errors import either, suggest
from qpn.expr import Num
from qpn.software import ast as sw

#: the first words of steps, kept by the grammar so that steps are located at them
STEP_WORDS = frozenset("""CPU IO SLEEP LOCK UNLOCK READ WRITE ACQUIRE RELEASE AWAIT WAIT NOTIFY PUT
TAKE ALLOCATE FREE TIMER BRANCH LOOP FORK PARALLEL CRITICAL ATOMIC SINGLE CALL RETURN""".split()) | \
    frozenset(op.upper() for op in sw.COLLECTIVES)
#: how a software cpu may schedule threads and a disk serve requests (policies of the
#: software layer; what each discipline means is in qpn.disciplines)
CPU_DISCIPLINES = ("ps", "jsq-ps", "fcfs", "rr")
DISK_DISCIPLINES = ("fcfs", "ps", "random")
#: the cpu disciplines that slice time (take 'quantum' and 'switch')
SLICED_CPU_DISCIPLINES = tuple(d for d in CPU_DISCIPLINES if disciplines.get(d).takes_quantum)


class _Blk:
    """A ``{ ... }`` block while building: its steps and where it opens."""
    __slots__ = ("steps", "loc")

    def __init__(self, steps, loc):
        self.steps, self.loc = steps, loc


def _words(fn):
    """Strip the kept step words from the children; remember the first one."""
    def wrapper(self, c):
        head = None
        rest = []
        for x in c:
            if isinstance(x, Token) and x.type in STEP_WORDS:
                head = head or x
            else:
                rest.append(x)
        self._head = head
        return fn(self, rest)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


class SoftwareBuilder:
    """The software layer's rules, mixed into :class:`dsl.builder.Builder` (uses its
    ``tloc``/``iloc``/``err``); each public method's docstring is its rule's syntax."""

    _head = None

    def sloc(self, c):
        """Location of a step: its first word, spanning to its last line."""
        if self._head is None:
            return self.iloc(c)
        return self.tloc(self._head).with_end(max(self.ctx.prev_line, self._head.line))

    # -- the block -------------------------------------------------------------
    def software(self, c):
        """``"software" "{" sw_decl* "}"``"""
        kw = c[0]
        decls = tuple(x for x in c if not isinstance(x, Token))
        return sw.Software(decls, loc=self.tloc(kw).with_end(max(self.ctx.prev_line, kw.line)))

    def _opts(self, opts) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        for key, value, where in opts:
            if key in kw:
                raise self.err(f"'{key}' given twice", where)
            kw[key] = (value, where)
        return kw

    # -- resources -------------------------------------------------------------
    @_words
    def sw_cpu(self, c):
        """``"cpu" NAME cpu_opt*``"""
        name, kw = str(c[0]), self._opts(c[1:])
        disc, disc_loc = kw.get("discipline", ("ps", None))
        if disc not in CPU_DISCIPLINES:
            raise self.err(f"a cpu schedules threads by {either(CPU_DISCIPLINES)}, not {disc}",
                           disc_loc, expected=either(CPU_DISCIPLINES) + " quantum <time>")
        sliced = disciplines.get(disc).takes_quantum
        if sliced and "quantum" not in kw:
            raise self.err(f"an {disc} cpu needs a time slice: '{disc} quantum 10 ms'", disc_loc,
                           expected=f"'quantum <time>' after '{disc}'")
        for key in ("quantum", "switch"):
            if key in kw and not sliced:
                raise self.err(f"'{key}' applies to {either(SLICED_CPU_DISCIPLINES)} cpus only",
                               kw[key][1],
                               hint="time-sliced cpus are 'cpu host cores 2 rr quantum 10 ms'")
        return sw.Cpu(name, cores=kw.get("cores", (Num(1),))[0], discipline=disc,
                      quantum=kw.get("quantum", (None,))[0], switch=kw.get("switch", (None,))[0],
                      loc=self.iloc(c))

    @_words
    def cpu_cores(self, c):
        """``CORES sum``"""
        return ("cores", c[1], self.tloc(c[0]))

    @_words
    def cpu_discipline(self, c):
        """``DISCIPLINE``"""
        return ("discipline", str(c[0]), self.tloc(c[0]))

    @_words
    def cpu_quantum(self, c):
        """``QUANTUM sum``"""
        return ("quantum", c[1], self.tloc(c[0]))

    @_words
    def cpu_switch(self, c):
        """``SWITCH sum``"""
        return ("switch", c[1], self.tloc(c[0]))

    @_words
    def sw_disk(self, c):
        """``"disk" NAME disk_opt*``"""
        name, kw = str(c[0]), self._opts(c[1:])
        disc, disc_loc = kw.get("discipline", ("fcfs", None))
        if disc not in DISK_DISCIPLINES:
            raise self.err(f"a disk serves requests by {either(DISK_DISCIPLINES)}, not {disc}", disc_loc)
        if "service" in kw and "load" in kw:
            raise self.err("a disk has one service time: 'service DIST' or 'service by load ...'",
                           kw["load"][1])
        load = kw.get("load", ((),))[0]
        if load and disc != "fcfs":
            raise self.err("a disk with 'service by load' picks waiting requests at random; "
                           "leave out the discipline", disc_loc)
        return sw.Disk(name, servers=kw.get("servers", (Num(1),))[0],
                       discipline=disc if not load else "fcfs",
                       service=kw.get("service", (None,))[0], load=tuple(load), loc=self.iloc(c))

    @_words
    def disk_servers(self, c):
        """``SERVERS sum``"""
        return ("servers", c[1], self.tloc(c[0]))

    @_words
    def disk_discipline(self, c):
        """``DISCIPLINE``"""
        return ("discipline", str(c[0]), self.tloc(c[0]))

    @_words
    def disk_service(self, c):
        """``SERVICE dist``"""
        return ("service", c[1], self.tloc(c[0]))

    @_words
    def disk_load(self, c):
        """``SERVICE "by" "load" level ("," level)*``"""
        kw_tok, c = c[0], c[1:]
        prev = 0
        for tok, _dist in c:
            text = str(tok)
            if not text.isdigit() or len(text) > 18 or int(text) < 1:     # 18 digits: beyond any count
                raise self.err(f"a load level is a whole number of concurrent requests >= 1, "
                               f"got {text}", tok)
            if int(text) <= prev:
                raise self.err("load levels must increase: 1, 2, 4, ...", tok)
            if prev == 0 and int(text) != 1:
                raise self.err("the load table starts at 1 (one request at the disk)", tok,
                               expected="1: <distribution>, ...")
            prev = int(text)
        return ("load", tuple((int(str(t)), d) for t, d in c), self.tloc(kw_tok))

    @_words
    def level(self, c):
        """``NUMBER ":" dist``"""
        return (c[0], c[1])

    @_words
    def sw_mutex(self, c):
        """``"mutex" NAME ["handover" dist]``"""
        return sw.Mutex(str(c[0]), c[1] if len(c) > 1 else None, loc=self.iloc(c))

    @_words
    def sw_rwlock(self, c):
        """``"rwlock" NAME``"""
        return sw.RwLock(str(c[0]), loc=self.iloc(c))

    @_words
    def sw_rwlock_writers(self, c):
        """``"rwlock" NAME "prefer" "writers"``"""
        return sw.RwLock(str(c[0]), prefer_writers=True, loc=self.iloc(c))

    @_words
    def sw_semaphore(self, c):
        """``"semaphore" NAME "permits" sum``"""
        return sw.Semaphore(str(c[0]), c[1], loc=self.iloc(c))

    @_words
    def sw_barrier(self, c):
        """``"barrier" NAME "parties" sum``"""
        return sw.Barrier(str(c[0]), c[1], loc=self.iloc(c))

    @_words
    def sw_comm(self, c):
        """``"comm" NAME "ranks" sum comm_opt*``"""
        kw = self._opts(c[2:])
        return sw.Comm(str(c[0]), c[1], latency=kw.get("latency", (sw.ZERO,))[0],
                       per_byte=kw.get("per_byte", (sw.ZERO,))[0], on=kw.get("on", (None,))[0],
                       loc=self.iloc(c))

    @_words
    def comm_latency(self, c):
        """``LATENCY sum``"""
        return ("latency", c[1], self.tloc(c[0]))

    @_words
    def comm_per_byte(self, c):
        """``PER_BYTE sum``"""
        return ("per_byte", c[1], self.tloc(c[0]))

    @_words
    def comm_on(self, c):
        """``ON NAME``"""
        return ("on", str(c[1]), self.tloc(c[0]))

    @_words
    def sw_condition(self, c):
        """``"condition" NAME ["on" NAME]``"""
        return sw.Condition(str(c[0]), str(c[1]) if c[1] is not None else None, loc=self.iloc(c))

    @_words
    def sw_queue(self, c):
        """``"blocking" "queue" NAME bq_opt*``"""
        kw = self._opts(c[1:])
        if "fifo" in kw and "lifo" in kw:
            raise self.err("a queue is fifo or lifo, not both", kw["lifo"][1])
        return sw.BlockingQueue(str(c[0]), capacity=kw.get("capacity", (None,))[0],
                                order="lifo" if "lifo" in kw else "fifo", loc=self.iloc(c))

    @_words
    def bq_capacity(self, c):
        """``CAPACITY sum``"""
        return ("capacity", c[1], self.tloc(c[0]))

    @_words
    def bq_fifo(self, c):
        """``FIFO``"""
        return ("fifo", True, self.tloc(c[0]))

    @_words
    def bq_lifo(self, c):
        """``LIFO``"""
        return ("lifo", True, self.tloc(c[0]))

    @_words
    def sw_limit(self, c):
        """``"limit" NAME sum``"""
        return sw.Limit(str(c[0]), c[1], loc=self.iloc(c))

    @_words
    def sw_timer(self, c):
        """``"timer" NAME``"""
        return sw.Timer(str(c[0]), loc=self.iloc(c))

    @_words
    def sw_sink(self, c):
        """``"sink" NAME``"""
        return sw.Sink(str(c[0]), loc=self.iloc(c))

    # -- runners ---------------------------------------------------------------
    @_words
    def sw_pool(self, c):
        """``"pool" NAME "size" sum sw_body``"""
        return sw.Pool(str(c[0]), c[1], c[2], loc=self.iloc(c))

    @_words
    def sw_population(self, c):
        """``"population" NAME "size" sum "think" dist sw_body``"""
        return sw.Population(str(c[0]), c[1], c[2], c[3], loc=self.iloc(c))

    @_words
    def sw_source(self, c):
        """``"source" NAME "every" dist sw_body``"""
        return sw.Source(str(c[0]), c[1], c[2], loc=self.iloc(c))

    @_words
    def sw_behavior(self, c):
        """``"behavior" NAME block``"""
        return sw.Behavior(str(c[0]), c[1].steps, loc=self.iloc(c))

    @_words
    def body_block(self, c):
        """``block``"""
        return c[0].steps

    @_words
    def body_runs(self, c):
        """``"runs" NAME``"""
        return str(c[0])

    @_words
    def lbrace(self, c):
        """``"{"``"""
        return c[0]

    @_words
    def block(self, c):
        """``lbrace step* "}"``"""
        steps = tuple(c[1:])
        self._nest_blocks(steps)
        return _Blk(steps, self.tloc(c[0]).with_end(max(self.ctx.prev_line, c[0].line)))

    def _nest_blocks(self, steps: tuple) -> None:
        """Record how deep steps nest in the block ``steps`` (0: no step holds a block; a
        branch of plain steps: 1); a located error at a step holding steps nested
        MAX_BLOCK_DEPTH deep.  The parser builds inner blocks first, so only one level is
        looked at each time."""
        depths = self.ctx.depths
        height = 0
        for st in steps:
            inner = sw.bodies(st)
            if not inner:
                continue
            h = 1 + max(depths[id(b)][1] if id(b) in depths else 0 for b in inner)
            if h > sw.MAX_BLOCK_DEPTH:
                word = self._step_word(st)
                raise self.err(f"steps nested too deep: this '{word}' is step {h} of steps "
                               f"with blocks (branch, loop, fork, ...) one inside another, "
                               f"counting from the innermost; the limit is {sw.MAX_BLOCK_DEPTH}",
                               st.loc,
                               expected=f"at most {sw.MAX_BLOCK_DEPTH} levels of blocks",
                               hint="write the inner levels one after another, or merge nested "
                                    "branches into one (multiply their probabilities)")
            height = max(height, h)
        depths[id(steps)] = (steps, height)    # the tuple is kept alive: its id is not reused

    @staticmethod
    def _step_word(st) -> str:
        text = st.loc.line_text() if st.loc is not None else None
        if text:
            word = text[st.loc.col - 1:].split(None, 1)
            if word:
                return word[0]
        return type(st).__name__.lower()

    # -- steps -----------------------------------------------------------------
    @_words
    def label(self, c):
        """``"as" NAME``"""
        return str(c[0])

    def _s(self, c):
        return str(c) if c is not None else None

    @_words
    def st_cpu(self, c):
        """``CPU dist ["on" NAME] [label]``"""
        return sw.Compute(c[0], self._s(c[1]), c[2], loc=self.sloc(c))

    @_words
    def st_io(self, c):
        """``IO [dist] ["on" NAME] [label]``"""
        return sw.Io(c[0], self._s(c[1]), c[2], loc=self.sloc(c))

    @_words
    def st_sleep(self, c):
        """``SLEEP dist [label]``"""
        return sw.Sleep(c[0], c[1], loc=self.sloc(c))

    @_words
    def lock_mutex(self, c):
        """``LOCK NAME [label]``"""
        return sw.Lock(str(c[0]), "mutex", c[1], loc=self.sloc(c))

    @_words
    def lock_read(self, c):
        """``READ "lock" NAME [label]``"""
        return sw.Lock(str(c[0]), "read", c[1], loc=self.sloc(c))

    @_words
    def lock_write(self, c):
        """``WRITE "lock" NAME [label]``"""
        return sw.Lock(str(c[0]), "write", c[1], loc=self.sloc(c))

    @_words
    def unlock_mutex(self, c):
        """``UNLOCK NAME``"""
        return sw.Unlock(str(c[0]), "mutex", loc=self.sloc(c))

    @_words
    def unlock_read(self, c):
        """``READ "unlock" NAME``"""
        return sw.Unlock(str(c[0]), "read", loc=self.sloc(c))

    @_words
    def unlock_write(self, c):
        """``WRITE "unlock" NAME``"""
        return sw.Unlock(str(c[0]), "write", loc=self.sloc(c))

    @_words
    def scount_int(self, c):
        """``NUMBER``"""
        return self._whole(c[0], "a count")

    @_words
    def scount_expr(self, c):
        """``"(" sum ")"``"""
        return c[0]

    def _count(self, x):
        return x if x is not None else Num(1)

    @_words
    def st_acquire(self, c):
        """``ACQUIRE [scount] NAME [label]``"""
        return sw.Acquire(str(c[1]), self._count(c[0]), c[2], loc=self.sloc(c))

    @_words
    def st_release(self, c):
        """``RELEASE [scount] NAME``"""
        return sw.Release(str(c[1]), self._count(c[0]), loc=self.sloc(c))

    @_words
    def st_await(self, c):
        """``AWAIT NAME [label]``"""
        return sw.Await(str(c[0]), c[1], loc=self.sloc(c))

    @_words
    def st_collective(self, c):
        """``_collective NAME [sum] [label]`` (``_collective``: ALLREDUCE, REDUCE, BCAST, GATHER,
        SCATTER, ALLGATHER, ALLTOALL or SENDRECV)"""
        return sw.Collective(str(self._head), str(c[0]), c[1] if c[1] is not None else sw.ZERO,
                             c[2], loc=self.sloc(c))

    @_words
    def st_wait(self, c):
        """``WAIT NAME [label]``"""
        return sw.Wait(str(c[0]), c[1], loc=self.sloc(c))

    @_words
    def notify_one(self, c):
        """``NOTIFY NAME``"""
        return sw.Notify(str(c[0]), False, loc=self.sloc(c))

    @_words
    def notify_all(self, c):
        """``NOTIFY "all" NAME``"""
        return sw.Notify(str(c[0]), True, loc=self.sloc(c))

    @_words
    def timeout(self, c):
        """``"timeout" dist``"""
        return c[0]

    @_words
    def otherwise(self, c):
        """``"else" block``"""
        return c[0].steps

    @_words
    def st_put(self, c):
        """``PUT NAME [label] [timeout] [otherwise]``"""
        return sw.Put(str(c[0]), c[1], c[2], c[3], loc=self.sloc(c))

    @_words
    def st_take(self, c):
        """``TAKE NAME [label] [timeout] [otherwise]``"""
        return sw.Take(str(c[0]), c[1], c[2], c[3], loc=self.sloc(c))

    @_words
    def st_allocate(self, c):
        """``ALLOCATE [scount] NAME [label] otherwise``"""
        return sw.Allocate(str(c[1]), self._count(c[0]), c[2], c[3], loc=self.sloc(c))

    @_words
    def st_free(self, c):
        """``FREE [scount] NAME``"""
        return sw.Free(str(c[1]), self._count(c[0]), loc=self.sloc(c))

    @_words
    def timer_start(self, c):
        """``TIMER "start" NAME``"""
        return sw.TimerStep(str(c[0]), "start", loc=self.sloc(c))

    @_words
    def timer_stop(self, c):
        """``TIMER "stop" NAME``"""
        return sw.TimerStep(str(c[0]), "stop", loc=self.sloc(c))

    @_words
    def st_branch(self, c):
        """``BRANCH "{" alt+ "}"``"""
        return sw.Branch(tuple(c), loc=self.sloc(c))

    @_words
    def alt(self, c):
        """``sum ":" block``"""
        return sw.Alternative(c[0], c[1].steps, loc=self.iloc(c))

    @_words
    def loop_counted(self, c):
        """``LOOP sum "times" [label] block``"""
        return sw.Loop(c[0], c[2].steps, False, c[1], loc=self.sloc(c))

    @_words
    def loop_about(self, c):
        """``LOOP "about" sum "times" [label] block``"""
        return sw.Loop(c[0], c[2].steps, True, c[1], loc=self.sloc(c))

    @_words
    def st_fork(self, c):
        """``FORK [sum] [label] block ("and" block)*``"""
        count, label, blocks = c[0], c[1], c[2:]
        loc = self.sloc(c)
        return sw.Fork(tuple(sw.Block(b.steps, loc=b.loc) for b in blocks),
                       self._count(count), label, loc=loc)

    @_words
    def st_parallel_for(self, c):
        """``PARALLEL "for" sum omp_opt* [label] block``"""
        count, opts, label, blk = c[0], c[1:-2], c[-2], c[-1]
        kw = self._opts(opts)
        schedule, chunk = kw.get("schedule", (("static", None),))[0]
        reduction, on = kw.get("reduction", ((None, None),))[0]
        return sw.ParallelFor(count, blk.steps, threads=kw.get("threads", (None,))[0],
                              schedule=schedule, chunk=chunk, label=label, reduction=reduction,
                              reduction_on=on, loc=self.sloc(c))

    @_words
    def omp_threads(self, c):
        """``THREADS sum``"""
        return ("threads", c[1], self.tloc(c[0]))

    @_words
    def omp_schedule(self, c):
        """``SCHEDULE NAME [sum]`` (NAME: static, dynamic or guided)"""
        word, chunk = str(c[1]), c[2]
        if word not in sw.SCHEDULES:
            raise self.err(f"a parallel for is scheduled {either(sw.SCHEDULES)}, not {word}",
                           c[1], expected="'schedule static' or 'schedule dynamic|guided [CHUNK]'",
                           did_you_mean=suggest(word, sw.SCHEDULES))
        if word == "static" and chunk is not None:
            raise self.err("'schedule static' takes no chunk size (blocks of N / T iterations); "
                           "chunks are for 'schedule dynamic' and 'schedule guided'",
                           getattr(chunk, "loc", None) or c[1])
        return ("schedule", (word, chunk), self.tloc(c[0]))

    @_words
    def omp_reduction(self, c):
        """``REDUCTION dist ["on" NAME]``"""
        return ("reduction", (c[1], self._s(c[2])), self.tloc(c[0]))

    @_words
    def st_critical(self, c):
        """``CRITICAL [NAME] [label] block``"""
        return sw.Critical(self._s(c[0]), c[2].steps, c[1], loc=self.sloc(c))

    @_words
    def st_atomic(self, c):
        """``ATOMIC dist ["on" NAME] [label]``"""
        return sw.Atomic(c[0], self._s(c[1]), c[2], loc=self.sloc(c))

    @_words
    def st_single(self, c):
        """``SINGLE [NOWAIT] [label] block``"""
        return sw.Single(c[2].steps, c[0] is not None, c[1], loc=self.sloc(c))

    @_words
    def st_call(self, c):
        """``CALL NAME [label]``"""
        return sw.Call(str(c[0]), c[1], loc=self.sloc(c))

    @_words
    def st_return(self, c):
        """``RETURN``"""
        return sw.Return(loc=self.sloc(c))
