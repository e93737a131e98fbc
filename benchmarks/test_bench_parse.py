"""Parsing a generated flat net of 10,000 places and 10,000 transitions (< 2 s).

Run: pytest benchmarks/test_bench_parse.py --benchmark-only
"""
import time

import qpn

from gen import big_flat_net


def test_parse_10k_places_10k_transitions(benchmark):
    text = big_flat_net(10_000)
    qpn.parse("place warmup")  # grammar tables loaded once, as in any session
    net = benchmark.pedantic(qpn.parse, args=(text,), rounds=3, iterations=1)
    assert len(net.places) == 10_000 and len(net.transitions) == 10_000
    t0 = time.perf_counter()
    qpn.parse(text)
    assert time.perf_counter() - t0 < 2.0
