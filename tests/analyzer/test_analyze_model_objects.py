"""The analyzer builds the software layer's objects and prints them with the language's
printer (frontends/analyze/model.py, emit.py): what it writes is canonical text that
reads back as the same net, and its distributions and counts are the objects their
written forms stand for."""
import random

import pytest

import qpn
from qpn.dsl.grammar import parse_expr, parse_items
from qpn.dsl.printing import fmt_dist
from qpn.frontends.analyze import build
from qpn.frontends.analyze.fit import fit
from qpn.frontends.analyze.joins import put_count, put_count_expr
from qpn.frontends.analyze.structure import Leaf, Loop
from qpn.frontends.analyze.synth import batch_trace, server_trace
from qpn.expr import BinOp, Num, Ref


@pytest.mark.parametrize("trace", [batch_trace(tasks=40, workers=2), server_trace(requests=300, workers=2)],
                         ids=["batch", "server"])
def test_a_built_model_is_canonical_and_reads_back(trace):
    text = build(trace).text
    net = qpn.parse(text)
    assert net.text() == text                  # as qpn fmt writes it, comments kept
    assert net.software and net.params


def _sleep_dist(text: str):
    items, _ = parse_items(f"software {{ pool p size 1 {{ sleep {text} }} }}")
    return items[0].decls[0].body[0].dist


@pytest.mark.parametrize("seed", range(4))
def test_fitted_distributions_are_what_their_text_says(seed):
    rng = random.Random(seed)
    for _ in range(50):
        scale = 10 ** rng.uniform(2, 9)
        heavy = rng.random() < 0.5
        xs = [max(1.0, rng.expovariate(1 / scale) if heavy else rng.gauss(scale, scale * rng.random() / 2))
              for _ in range(rng.randint(1, 30))]
        f = fit(xs)
        for kw in ({}, {"speedup": "speedup_a"}, {"speedup": "s", "scale": 0.25, "factor": Ref("work_p")},
                   {"mean": BinOp("/", Num(1), Ref("rate_q"))}):
            d = f.dist(**kw)
            assert _sleep_dist(fmt_dist(d)) == d, (f, kw)


def test_join_counts_are_the_expressions_their_text_says():
    put = Leaf(("put", "q", "p.py:3"))
    loops = {40: "n_tasks", 3: "n_rounds"}
    bodies = [
        [Loop([put], [40], 0), put],                                   # n_tasks + 1
        [Loop([Loop([put], [40], 0), put], [3], 0)],                   # n_rounds * (n_tasks + 1)
        [Loop([Loop([put], [40], 0)], [3], 0), put, put],              # n_rounds * n_tasks + 2
        [Loop([Loop([put], [40], 0), put], [1], 0), put],              # n_tasks + 1 + 1
    ]
    texts = [put_count(b, "q", loops) for b in bodies]
    assert texts == ["n_tasks + 1", "n_rounds * (n_tasks + 1)", "n_rounds * n_tasks + 2",
                     "n_tasks + 1 + 1"]
    for b, t in zip(bodies, texts):
        assert put_count_expr(b, "q", loops) == parse_expr(t), t
