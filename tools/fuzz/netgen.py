"""A grammar-aware Hypothesis strategy for small nets: parameters, a color set,
plain and queueing places of every discipline, transitions with modes, weights,
delays, guards and inhibitor arcs, sources and sinks.  The nets are mostly
valid, with numbers drawn now and then from the extremes, so that they get past
the parser into the checks and the solvers."""
from __future__ import annotations

import threading

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

from qpn import disciplines

DISCIPLINES = disciplines.names()
COLORS = ("a", "b", "c")
EXTREMES = ("0", "-1", "1e308", "1e999", "2147483648", "9223372036854775808", "nan", "1e-300",
            str(10 ** 40))

# about one number in 25 is extreme: a net has a dozen numbers, and most nets
# should get past the checks into the solvers (sampled_from draws uniformly;
# integers would favour its bounds)
number = st.sampled_from(("1", "2", "3", "0.5", "0.1", "5", "10") * 4 + EXTREMES[:1]
                         ).flatmap(lambda v: st.sampled_from(EXTREMES) if v == "0" else st.just(v))
count = st.sampled_from(("1", "2", "3", "5") * 6 + ("0",)).flatmap(
    lambda v: st.sampled_from(("0", "40", "2147483648")) if v == "0" else st.just(v))


@st.composite
def dist(draw, mean: str | None = None) -> str:
    m = mean or draw(number)
    kind = draw(st.sampled_from(("exp", "exp", "exp", "det", "erlang", "hyperexp", "uniform",
                                 "gamma", "lognormal", "normal")))
    if kind in ("exp", "det"):
        return f"{kind}({m})"
    if kind == "erlang":
        return f"erlang({draw(count)}, {m})"
    if kind == "hyperexp":
        return f"hyperexp(mean = {m}, scv = {draw(st.one_of(st.sampled_from(('1', '2', '4')), number))})"
    if kind == "uniform":
        return f"uniform({draw(number)}, {m})"
    return f"{kind}({m}, {draw(number)})"


@st.composite
def nets(draw) -> str:
    lines = ["net gen"]
    params = draw(st.lists(number, max_size=2))
    for i, v in enumerate(params):
        lines.append(f"param p{i} = {v}")
    pnames = [f"p{i}" for i in range(len(params))]
    colored = draw(st.booleans())
    if colored:
        lines.append(f"colors job = {{{', '.join(COLORS[:draw(st.integers(1, 3))])}}}")
    n_places = draw(st.integers(1, 4))
    places, col_places = [], set()
    for i in range(n_places):
        name = f"q{i}"
        parts = [f"place {name}"]
        is_col = colored and draw(st.booleans())
        if is_col:
            parts.append(": job")
            col_places.add(name)
        queued = draw(st.booleans())
        if queued:
            disc = draw(st.sampled_from(DISCIPLINES))
            q = f"queue {disc}"
            if disc != "is" and draw(st.booleans()):
                q += f" servers {draw(st.one_of(count, st.sampled_from(pnames or ['2'])))}"
            if disc == "rr":
                q += f" quantum {draw(number)}"
            parts.append(q)
            parts.append(f"service {draw(dist())}")
            if disc == "prio" and draw(st.booleans()):
                parts.append(f"priority {draw(count)}")
        if draw(st.integers(0, 3)):
            init = draw(st.one_of(count, st.sampled_from(pnames or ["1"])))
            parts.append(f"init {init} a" if is_col else f"init {init}")
        if draw(st.integers(0, 5)) == 0:
            parts.append(f"capacity {draw(count)}")
        if draw(st.integers(0, 5)) == 0:
            parts.append("departure " + draw(st.sampled_from(
                ("fifo", "random", "in-order") if queued else ("fifo", "random"))))
        places.append(name)
        lines.append(" ".join(parts))

    def arc(p: str, var: bool) -> str:
        c = draw(st.sampled_from(("", "", "", "2 ")))
        if p in col_places:
            return f"{c}{p}({'x' if var else draw(st.sampled_from(COLORS[:1]))})"
        return f"{c}{p}"

    def mode_body(kind: str, timing: str) -> str:
        ins = draw(st.lists(st.sampled_from(places), max_size=2, unique=True))
        outs = draw(st.lists(st.sampled_from(places), max_size=2, unique=True))
        bound = any(p in col_places for p in ins)
        body = ", ".join(arc(p, True) for p in ins) + " -> " + ", ".join(arc(p, bound) for p in outs)
        opt = draw(st.sampled_from(("", "", "when", "unless")))
        if opt == "when" and bound:
            body += " when x == a"
        elif opt == "unless":
            plain = [p for p in places if p not in col_places]
            if plain:
                body += f" unless {draw(st.sampled_from(plain))}"
        if timing == "delay":
            body += f" delay {draw(dist())}"
        elif timing == "weight":
            body += f" weight {draw(number)}"
        return body

    for j in range(draw(st.integers(1, 4))):
        head = f"transition t{j}"
        kind = draw(st.sampled_from(("", "", "immediate", "timed")))
        if kind:
            head += " " + kind
        if draw(st.integers(0, 2)) == 0 and kind == "immediate":
            head += f" priority {draw(count)}"
        n_modes = draw(st.integers(0, 2))
        # a timed transition needs a delay, an immediate one may have a weight;
        # an unmarked one is whichever its options make it
        timing = {"timed": "delay", "immediate": draw(st.sampled_from(("", "weight")))}.get(
            kind, draw(st.sampled_from(("delay", "delay", "weight", ""))))
        if n_modes == 0:
            lines.append(f"{head} : {mode_body(kind, timing)}")
        else:
            lines.append(head + " {")
            for k in range(n_modes):
                lines.append(f"  mode m{k} : {mode_body(kind, timing)}")
            lines.append("}")
    return "\n".join(lines) + "\n"


#: set by the campaign's Ctrl-C / SIGTERM handler; generation stops at the next net
STOP = threading.Event()


def generated_models(n: int, seed: int) -> list[str]:
    """``n`` nets drawn by Hypothesis, reproducibly from ``seed``."""
    out: list[str] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(nets())
    def collect(text: str) -> None:
        if STOP.is_set():
            raise KeyboardInterrupt
        out.append(text)

    collect()
    return out[:n]
