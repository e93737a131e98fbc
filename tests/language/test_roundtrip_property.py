"""Property: for every generated net, parse(print(net)) == net."""
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qpn
from qpn.distributions import (Det, Empirical, Erlang, Exp, Gamma, HyperExp, HyperExpFit,
                               Lognormal, Normal, Uniform)
from qpn.expr import BinOp, Num, Ref, TupleExpr
from qpn.model import (Arc, EnumColors, Instance, Mode, Param, Place, Port, Queue,
                       QueueingPlace, RangeColors, RecordColors, Service, Subnet, SubnetParam,
                       Term, Transition)
from qpn.net import Net

ONE = Num(1)
UNITS = [None, "s", "ms", "us"]


def times(draw, tparams):
    kind = draw(st.integers(0, 3))
    if kind == 0 or not tparams:
        v = draw(st.one_of(st.integers(1, 1000), st.floats(0.001, 1000.0, allow_nan=False)))
        return Num(v, draw(st.sampled_from(UNITS)))
    p = Ref(draw(st.sampled_from(tparams)))
    if kind == 1:
        return p
    if kind == 2:
        return BinOp("*", Num(draw(st.integers(1, 5))), p)
    return BinOp("+", p, Num(draw(st.integers(1, 9)), "ms"))


def counts(draw, iparams, lo=1):
    if iparams and draw(st.booleans()):
        p = Ref(draw(st.sampled_from(iparams)))
        return BinOp("+", p, Num(1)) if draw(st.booleans()) else p
    return Num(draw(st.integers(lo, 3)))


def dist(draw, tparams):
    k = draw(st.integers(0, 9))
    t = lambda: times(draw, tparams)  # noqa: E731
    if k == 0:
        return Exp(t())
    if k == 1:
        return Det(t())
    if k == 2:
        lo = draw(st.integers(0, 5))
        return Uniform(Num(lo), Num(lo + draw(st.integers(1, 5))))
    if k == 3:
        return Erlang(Num(draw(st.integers(1, 6))), t())
    if k == 4:
        p = draw(st.sampled_from([0.25, 0.5, 0.75]))
        return HyperExp((Num(p), Num(1 - p)), (t(), t()))
    if k == 5:
        return HyperExpFit(t(), Num(draw(st.integers(1, 9))))
    if k == 6:
        return Gamma(t(), Num(draw(st.floats(0.1, 5.0))))
    if k == 7:
        return Lognormal(t(), Num(draw(st.floats(0.1, 5.0))))
    if k == 8:
        return Normal(t(), Num(draw(st.floats(0.001, 5.0))))
    samples = tuple(draw(st.lists(st.floats(0.001, 100.0), min_size=1, max_size=5)))
    return Empirical(samples, replay=draw(st.booleans()), unit=draw(st.sampled_from([None, "ms"])))


@st.composite
def nets(draw):
    names = iter(f"n{i}" for i in range(1000))
    items = []
    iparams, tparams = [], []
    for _ in range(draw(st.integers(0, 3))):
        n = next(names)
        items.append(Param(n, Num(draw(st.integers(1, 4)))))
        iparams.append(n)
    for _ in range(draw(st.integers(0, 3))):
        n = next(names)
        items.append(Param(n, Num(draw(st.floats(0.01, 10.0)), draw(st.sampled_from(UNITS)))))
        tparams.append(n)
    if len(iparams) >= 2:
        n = next(names)
        items.append(Param(n, BinOp("+", Ref(iparams[0]), BinOp("*", Num(2), Ref(iparams[1])))))
        iparams.append(n)
    # color sets: name -> list of constant color expressions
    csets: dict[str, list] = {}
    if draw(st.booleans()):
        vals = [f"c{i}" for i in range(draw(st.integers(1, 3)))]
        items.append(EnumColors("e", tuple(vals)))
        csets["e"] = [Ref(v) for v in vals]
    if draw(st.booleans()):
        lo = draw(st.integers(0, 3))
        hi = lo + draw(st.integers(0, 2))
        items.append(RangeColors("r", Num(lo), Num(hi)))
        csets["r"] = [Num(i) for i in range(lo, hi + 1)]
    if "e" in csets and "r" in csets and draw(st.booleans()):
        items.append(RecordColors("rec", (("k", "e"), ("i", "r"))))
        csets["rec"] = [TupleExpr((a, b)) for a in csets["e"] for b in csets["r"]]
    shared = None
    if draw(st.booleans()):
        shared = "sq"
        items.append(Queue("sq", draw(st.sampled_from(["ps", "fcfs", "random"])),
                           servers=Num(draw(st.integers(1, 3)))))
    places = []  # (name, colorset)
    for _ in range(draw(st.integers(1, 5))):
        n = next(names)
        cs = draw(st.sampled_from([None] + sorted(csets)))
        init = ()
        if draw(st.booleans()):
            if cs is None:
                init = (Term(counts(draw, iparams), None),)
            else:
                colors = draw(st.lists(st.sampled_from(csets[cs]), min_size=1, max_size=3, unique=True))
                init = tuple(Term(counts(draw, []), c) for c in colors)
        cap = None
        if draw(st.integers(0, 4)) == 0:
            cap = Num(100)
        if draw(st.booleans()):
            if shared and draw(st.booleans()):
                queue = shared
            else:
                disc = draw(st.sampled_from(["is", "fcfs", "ps", "random", "prio", "lcfs-pr", "rr"]))
                servers = Num(math.inf) if disc == "is" else (
                    Num(draw(st.integers(1, 4))) if draw(st.booleans()) else ONE)
                queue = Queue(n, disc, servers=servers,
                              quantum=times(draw, tparams) if disc == "rr" else None,
                              switch=Num(50, "us") if disc == "rr" and draw(st.booleans()) else None,
                              preemptive=draw(st.booleans()) if disc == "prio" else True)
            if cs is None or draw(st.booleans()):
                service = (Service(None, dist(draw, tparams)),)
            else:
                service = tuple(Service(c, dist(draw, tparams)) for c in csets[cs])
            prio = ()
            if isinstance(queue, Queue) and queue.discipline == "prio" and cs is not None:
                prio = tuple((c, Num(i)) for i, c in enumerate(csets[cs]))
            p = QueueingPlace(name=n, colors=cs, capacity=cap, init=init, queue=queue, service=service,
                              priority=prio, departure=draw(st.sampled_from(["normal", "fifo", "random", "in-order"])))
        else:
            p = Place(name=n, colors=cs, capacity=cap, init=init,
                      departure=draw(st.sampled_from(["normal", "fifo", "random"])))
        items.append(p)
        places.append((n, cs))
    for _ in range(draw(st.integers(0, 4))):
        tname = next(names)
        kind = draw(st.sampled_from(["immediate", "timed"]))
        modes = []
        for mi in range(draw(st.integers(1, 3))):
            bound: dict[str, str] = {}

            def arc(pname, cs, role):
                if cs is None:
                    return Arc(pname, (Term(counts(draw, iparams), None),))
                choice = draw(st.integers(0, 2))
                if role == "input" and choice == 0:
                    var = f"v{cs}"
                    bound[var] = cs
                    return Arc(pname, (Term(ONE, Ref(var)),))
                if role == "output" and choice == 0 and any(v for v, c in bound.items() if c == cs):
                    var = [v for v, c in bound.items() if c == cs][0]
                    return Arc(pname, (Term(ONE, Ref(var)),))
                return Arc(pname, (Term(counts(draw, []), draw(st.sampled_from(csets[cs]))),))

            ins = tuple(arc(n, cs, "input") for n, cs in
                        draw(st.lists(st.sampled_from(places), max_size=2, unique_by=lambda x: x[0])))
            outs = tuple(arc(n, cs, "output") for n, cs in
                         draw(st.lists(st.sampled_from(places), max_size=2, unique_by=lambda x: x[0])))
            inh = ()
            if draw(st.integers(0, 3)) == 0:
                n, cs = draw(st.sampled_from(places))
                inh = (arc(n, cs, "inhibitor"),)
            guard = None
            evars = [v for v, c in bound.items() if c == "e"]
            if evars and draw(st.booleans()):
                guard = BinOp(draw(st.sampled_from(["==", "!="])), Ref(evars[0]),
                              draw(st.sampled_from(csets["e"])))
            mname = f"m{mi}" if draw(st.booleans()) else None
            if kind == "immediate":
                w = Num(draw(st.integers(1, 5))) if draw(st.booleans()) else None
                modes.append(Mode(mname, ins, outs, inh, guard, w, None))
            else:
                modes.append(Mode(mname, ins, outs, inh, guard, None, dist(draw, tparams)))
        named = [m.name for m in modes if m.name]
        if len(named) != len(set(named)):
            continue
        if kind == "immediate":
            prio = Num(draw(st.integers(0, 3))) if draw(st.booleans()) else None
            items.append(Transition(tname, kind, tuple(modes), priority=prio))
        else:
            servers = draw(st.sampled_from([None, ONE, Num(2), Num(math.inf)]))
            items.append(Transition(tname, kind, tuple(modes), servers=servers))
    if draw(st.booleans()):
        body = (Port(name="i", direction="input"), Port(name="o", direction="output"),
                Place(name="idle", init=(Term(Ref("k"), None),)),
                QueueingPlace(name="work", queue=Queue("work", "ps"), service=(Service(None, Exp(Ref("d"))),)),
                Transition("take", "immediate", (Mode(None, (Arc("i", (Term(ONE, None),)), Arc("idle", (Term(ONE, None),))),
                                                      (Arc("work", (Term(ONE, None),)),)),)),
                Transition("give", "immediate", (Mode(None, (Arc("work", (Term(ONE, None),)),),
                                                      (Arc("o", (Term(ONE, None),)), Arc("idle", (Term(ONE, None),)))),)))
        items.append(Subnet("S", (SubnetParam("k", Num(2)), SubnetParam("d", Num(5, "ms"))), body))
        src = next(names)
        items.append(Place(name=src, init=(Term(Num(3), None),)))
        for _ in range(draw(st.integers(1, 2))):
            inst = next(names)
            args = ()
            if draw(st.booleans()):
                args = (("k", counts(draw, iparams)),)
            if draw(st.booleans()):
                args += (("d", times(draw, tparams)),)
            items.append(Instance(inst, "S", args))
            items.append(Transition(next(names), "immediate",
                                    (Mode(None, (Arc(src, (Term(ONE, None),)),), (Arc(f"{inst}.i", (Term(ONE, None),)),)),)))
            items.append(Transition(next(names), "timed",
                                    (Mode(None, (Arc(f"{inst}.o", (Term(ONE, None),)),), (Arc(src, (Term(ONE, None),)),),
                                          delay=Exp(Num(1))),)))
    return Net(draw(st.sampled_from(["model", "model_x", "web.server"])), tuple(items))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nets())
def test_parse_print_round_trip(net):
    text = net.text()
    parsed = qpn.parse(text)
    assert parsed == net, text
    assert parsed.text() == text
