"""The round trip: a known software model is run by ``qpn synth`` (a trace in the
neutral format), ``qpn build`` rebuilds a model from the trace, and the rebuilt
model must be the original one: the same pool size, queue capacity and mutex,
the cache-miss branch with its disk read (probability within 3 standard errors),
mean demands within 3%, and the same predictions (throughput and response time,
simulated, within the combined confidence intervals) over a sweep of worker
counts and arrival rates.

The model (tests/models_roundtrip/rt_server.qpn) is not product form and its
rebuilt twin has an unbounded accept backlog, so neither MVA nor the CTMC
applies (``--method auto`` picks the simulator); the simulator runs a fixed
simulated time with a fixed seed, so every check is deterministic.
Run with ``-s`` to see the figures.
"""
import math
import os
import re
import time

import pytest

import qpn
from qpn.frontends.analyze import build_file
from qpn.frontends.synth import synth_file
from qpn.cli import load_model
from conftest import TESTS_DIR

HERE = os.path.join(TESTS_DIR, "models_roundtrip")
MODEL = os.path.join(HERE, "rt_server.qpn")
SYNTH_TIME, SYNTH_SEED = 200, 7
#: simulator runs for the predictions: short, seeded, a few replications
DES = {"time": 12, "replications": 6, "seed": 3, "quiet": True}
#: sweep points (workers, arrivals per second); the trace was taken at (4, 60)
SWEEP = [(2, 40), (6, 75)]

TRUE = {"parse": 8.0, "lookup": 1.0, "render": 12.0, "read": 10.0}     # ms
MISS = 0.2


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    d = tmp_path_factory.mktemp("roundtrip")
    trace, out = str(d / "run.jsonl"), str(d / "rebuilt.qpn")
    t0 = time.perf_counter()
    synth_file(MODEL, trace, time=SYNTH_TIME, seed=SYNTH_SEED)
    t1 = time.perf_counter()
    res = build_file(trace, out)
    t2 = time.perf_counter()
    print(f"\nsynth {SYNTH_TIME} s simulated: {t1 - t0:.2f} s; build: {t2 - t1:.2f} s")
    print(res.text[res.text.index("software {"):])
    return res, out


def _lines(path):
    """Line of each named step (``as NAME``) of the original model."""
    out = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"\bas (\w+)\s*(})?\s*$", line)
            if m:
                out[m.group(1)] = i
    return out


def _covers(prev, site, line):
    """Whether the fragment from ``prev`` to ``site`` (file:line) holds ``line``;
    a fragment that ends at the loop's header wraps around."""
    a, b = int(prev.rpartition(":")[2]), int(site.rpartition(":")[2])
    return a < line < b if a < b else (line > a or line < b)


def test_structure_is_the_original(rt):
    res, _ = rt
    text, info = res.text, res.info
    # the pool and its size
    m = re.search(r"pool workers size (\w+) \{", text)
    assert m and info["params"][m.group(1)] == 4
    assert info["runners"]["workers"]["size"] == 4
    # the bounded queue and the mutex
    assert re.search(r"blocking queue \w+ capacity 40\n", text)
    assert re.search(r"^\s*mutex \w+$", text, re.M)
    body = text[m.end():]
    assert re.search(r"lock (\w+)\n(?:.*\n)*?\s*unlock \1\n", body)
    # the cache-miss branch, whose second arm reads the disk
    assert "disk disk servers" in text
    br = re.search(r"branch \{\n\s*(\d+) / (\d+): \{\}\n\s*(\d+) / \2: \{\n"
                   r"(?:\s*#.*\n)*\s*io exp\(([\d.]+) (ms|us)\) on disk as \w+\n", body)
    assert br, "the branch with the disk read is missing"
    hit, n, miss = int(br.group(1)), int(br.group(2)), int(br.group(3))
    assert hit + miss == n
    p = miss / n
    se = math.sqrt(MISS * (1 - MISS) / n)
    print(f"\nbranch: {miss}/{n} = {p:.4f} took the read; 0.2 +- 3 SE = +-{3 * se:.4f} "
          f"({abs(p - MISS) / se:.2f} SE off)")
    assert abs(p - MISS) <= 3 * se
    branches = [b for b in info["branches"] if b.get("runner") == "workers"]
    assert [b["counts"] for b in branches] == [[hit, miss]]


def test_demands_within_3_percent(rt):
    res, _ = rt
    lines = _lines(MODEL)
    steps = res.info["steps"]["workers"]
    print()
    for name in ("parse", "lookup", "render"):
        hits = [s for s in steps if _covers(s["prev"], s["site"], lines[name])]
        assert len(hits) == 1, (name, steps)
        got = hits[0]["mean"] / 1e6
        print(f"cpu {name}: {got:.4f} ms (model {TRUE[name]} ms, "
              f"{100 * (got / TRUE[name] - 1):+.2f}%) as {hits[0]['name']}, n={hits[0]['n']}")
        assert abs(got / TRUE[name] - 1) <= 0.03
    m = re.search(r"io exp\(([\d.]+) (ms|us)\) on disk", res.text)
    io = float(m.group(1)) * (1 if m.group(2) == "ms" else 1e-3)
    print(f"io read: {io:.4f} ms (model {TRUE['read']} ms, {100 * (io / TRUE['read'] - 1):+.2f}%)")
    assert abs(io / TRUE["read"] - 1) <= 0.03


def _rebuilt_params(text):
    size = re.search(r"pool workers size (\w+) \{", text).group(1)
    rate = re.search(r"source \w+ every exp\(1 / (\w+)\)", text).group(1)
    return size, rate


def _predict(net, queues, take):
    """Throughput of the workers and the mean response time (Little: requests
    queued or in service / throughput), with 95% CI half-widths."""
    r = qpn.solve(net, "des", options=dict(DES))
    x, cx = r.get("throughput", "workers.begin"), r.ci("throughput", "workers.begin")
    n, cn2 = 0.0, 0.0
    for q in queues:
        n += r.get("tokens", f"{q}.items")
        cn2 += r.ci("tokens", f"{q}.items") ** 2
    idle, cidle = r.get("tokens", take), r.ci("tokens", take)
    return x, cx, n, math.sqrt(cn2 + cidle ** 2), idle


def test_predictions_agree_over_a_sweep(rt):
    res, path = rt
    size, rate = _rebuilt_params(res.text)
    queues = re.findall(r"blocking queue (\w+)", res.text)
    take = "workers.take_" + re.search(r"take (queue_\w+)", res.text).group(1)
    print()
    for workers, lam in SWEEP:
        t0 = time.perf_counter()
        a = load_model(MODEL, [f"workers={workers}", f"rate={lam}"])
        b = load_model(path, [f"{size}={workers}", f"{rate}={lam}"])
        out = []
        for net, qs, tk in ((a, ["requests"], "workers.take_requests"), (b, queues, take)):
            x, cx, nq, cn, idle = _predict(net, qs, tk)
            busy = workers - idle
            resp, cr = (nq + busy) / x, None
            # relative half-widths add in quadrature for a ratio
            cr = resp * math.sqrt((cn / (nq + busy)) ** 2 + (cx / x) ** 2)
            out.append((x, cx, resp, cr))
        (xa, cxa, ra, cra), (xb, cxb, rb, crb) = out
        print(f"workers={workers} rate={lam}: throughput {xa:.2f} +- {cxa:.2f} vs rebuilt "
              f"{xb:.2f} +- {cxb:.2f}; response {1e3 * ra:.2f} +- {1e3 * cra:.2f} ms vs "
              f"{1e3 * rb:.2f} +- {1e3 * crb:.2f} ms ({time.perf_counter() - t0:.1f} s)")
        assert abs(xa - xb) <= cxa + cxb
        assert abs(ra - rb) <= cra + crb
