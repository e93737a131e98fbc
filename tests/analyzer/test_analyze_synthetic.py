"""`qpn build` on synthetic traces with known answers, and the analyzer's parts.

Synthetic traces (frontends/analyze/synth.py) know their parameters exactly:
arrival rate, branch probability, CPU demand, queue capacity, pool size.  The
recovered values are checked against them within 3 standard errors.
"""
import doctest
import importlib
import math
import os
import pkgutil

import pytest

import qpn.frontends.analyze as analyze_pkg
import qpn
from analyze_support import simulate
from qpn.frontends.analyze import Options, build, build_file
from qpn.frontends.analyze.fit import fit
from qpn.frontends.analyze.steps import Step
from qpn.frontends.analyze.structure import Tokens, show, structure
from qpn.frontends.analyze.synth import batch_trace, server_trace, write
from qpn.frontends.trace import Trace, TraceHeader

MS = 1_000_000
REQUESTS, RATE, MISS, PARSE = 3000, 200.0, 0.25, 2 * MS


@pytest.mark.parametrize("mod", sorted(m.name for m in pkgutil.iter_modules(analyze_pkg.__path__)))
def test_doctests(mod):
    m = importlib.import_module(f"qpn.frontends.analyze.{mod}")
    failed, _ = doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert failed == 0


def test_welch_p_is_scipys_welch_t_test():
    # fit.welch_p replaces scipy.stats.ttest_ind (whose import took 1.2 s of qpn build)
    import numpy as np
    from scipy.stats import ttest_ind
    from qpn.frontends.analyze.fit import welch_p
    rng = np.random.default_rng(3)
    for n1, n2, shift in [(3, 3, 0.0), (5, 40, 0.3), (200, 7, 1.0), (30, 30, 0.05)]:
        a = rng.lognormal(0, 0.5, n1)
        b = rng.lognormal(shift, 1.0, n2)
        assert welch_p(a, b) == pytest.approx(ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)


@pytest.fixture(scope="module")
def server():
    tr = server_trace(REQUESTS, workers=4, rate=RATE, miss=MISS, parse=PARSE, seed=7)
    return tr, build(tr)


def test_server_structure_and_known_answers(server):
    _, res = server
    info = res.info
    qpn.parse(res.text)
    assert {k: (v["mode"], v["size"]) for k, v in info["runners"].items()} == {
        "acceptor": ("forever", 1), "worker": ("forever", 4)}
    assert info["params"]["workers"] == 4
    q = next(o for o in info["objects"].values() if o["kind"] == "queue" and o["capacity"])
    assert q["capacity"] == 32
    assert any(o["kind"] == "mutex" for o in info["objects"].values())
    # the open workload: a source with the arrival rate (mean inter-arrival, 3 SE)
    (src,) = info["sources"].values()
    mean, se = 1 / RATE, (1 / RATE) / math.sqrt(REQUESTS)
    assert abs(1 / src["rate"] - mean) < 3 * se
    assert src["scv"] == pytest.approx(1.0, abs=0.15)
    assert f"every exp(1 / {src['param']})" in res.text
    # the file read: page-cache hits vs device accesses, a branch with the hit probability
    (br,) = [b for b in info["branches"] if "io" in b]
    hits, misses = br["counts"]
    n = hits + misses
    assert n == REQUESTS
    assert abs(misses / n - MISS) < 3 * math.sqrt(MISS * (1 - MISS) / n)
    assert "io exp(" in res.text and "on disk as read_45_miss" in res.text
    # the parse fragment: exponential, mean within 3 SE
    parse = next(s for s in info["steps"]["worker"] if s["site"].endswith(":42"))
    assert abs(parse["mean"] - PARSE) < 3 * PARSE / math.sqrt(parse["n"])
    assert "cpu exp(" in res.text
    assert info["params"]["disk_servers"] >= 2          # device accesses overlapped


def test_server_model_solves(server):
    _, res = server
    r = simulate(res.text, time=3, replications=4)
    rate = res.info["params"][next(iter(res.info["sources"].values()))["param"]]
    assert r.get("throughput", "worker.begin") == pytest.approx(rate, rel=0.1)


def test_batch_counted_loops_and_stop_markers():
    res = build(batch_trace(tasks=50, workers=3, seed=2))
    info = res.info
    assert info["runners"]["worker"]["size"] == 3 and info["runners"]["worker"]["exits"] == 3
    assert [lp["count"] for lp in info["loops"] if lp["runner"] == "main"] == [50, 50]
    assert "3 stop markers not modelled" in res.text
    assert "loop about" not in res.text                   # counted, not geometric
    assert not info["branches"]
    net = qpn.parse(res.text)
    assert net.param_values()["workers"] == 3


def test_cli_build_options(tmp_path):
    from qpn.cli import main
    path = tmp_path / "server.jsonl"
    write(server_trace(400, workers=2, seed=3), path)
    out = tmp_path / "m.qpn"
    assert main(["build", str(path), "-o", str(out), "--demands", "empirical"]) == 0
    text = out.read_text()
    assert 'empirical("m_samples/' in text and "speedup_" not in text
    files = os.listdir(tmp_path / "m_samples")
    assert files and all(f.endswith(".txt") for f in files)
    qpn.load(str(out))                                    # the sample files are found
    # a huge threshold: every read is a page-cache hit, no disk
    assert main(["build", str(path), "-o", str(out), "--io-threshold", "1 s"]) == 0
    assert "disk" not in out.read_text().split("software {")[1]
    # pruning: a high threshold leaves fewer CPU steps
    counts = []
    for prune in ("0", "0.2"):
        assert main(["build", str(path), "-o", str(out), "--prune", prune]) == 0
        counts.append(out.read_text().count("\n        cpu "))
    assert counts[0] > counts[1] >= 1
    assert main(["build", str(path), "-o", str(out), "--prune", "1.5"]) == 2
    assert main(["build", str(path), "-o", str(out), "--source-dir", str(tmp_path / "no")]) == 2
    assert main(["build", str(path), "-o", str(out), "--source-dir", str(tmp_path)]) == 0


def test_cli_prints_the_call_graph(tmp_path, capsys):
    from qpn.cli import main
    path = tmp_path / "b.jsonl"
    write(batch_trace(tasks=20, workers=2), path)
    assert main(["build", str(path), "-o", str(tmp_path / "b.qpn"), "--pcg"]) == 0
    out = capsys.readouterr().out
    assert "# call graph of 'worker'" in out
    assert "take queue_3 @batch.py:10  x20" in out and "-> lock lock_5 @batch.py:12 1" in out


def test_no_thread_cpu_falls_back_to_wall_time():
    tr = batch_trace(tasks=20, workers=2)
    tr.header.capabilities["thread_cpu"] = False
    res = build(tr)
    assert any("thread_cpu" in w for w in res.warnings)
    step = next(s for s in res.info["steps"]["worker"] if s["mean"] > MS)
    assert step["mean"] == pytest.approx(2 * MS, rel=0.3)   # gamma(4, 0.5 ms) work


def test_gil_model_when_the_runtime_has_one():
    tr = batch_trace(tasks=20, workers=2)
    tr.header.runtime["gil"] = True
    res = build(tr)
    # the GIL is a lock whose holder runs on one of the cores
    assert "mutex gil" in res.text and "lock gil\n" in res.text and " on host as " in res.text
    assert "cpu gil" not in res.text
    res = build(tr, Options(gil=False))
    assert "gil" not in res.text.split("software {")[1]


# ------------------------------------------------------------------- parts
T = Tokens()


def walk(text, site="p.py:1"):
    w = [Step(1, a.split("@")[0], None, a.split("@")[1] if "@" in a else site,
              {"ts": i}, i, 10, 10, 0, 0) for i, a in enumerate(text.split())]
    T.assign(w)
    return w


def test_structure_nested_loops_branches_and_context():
    items = structure([walk("a " + "b c " * 3 + "d " + "b c " * 3 + "d e")])
    assert show(items) == "a loop[2]{loop[3]{b c} d} e"
    # the same operation reached from two sites gives two steps (context splitting):
    # without the sites, take-put-take-put would merge into a loop
    items = structure([walk("take@x.py:1 put@x.py:2 take@x.py:9 put@x.py:3")])
    assert show(items, name=lambda lf: f"{lf.action}{lf.token[2][-1]}") == "take1 put2 take9 put3"
    assert show(structure([walk("take put take put")])) == "loop[2]{take put}"
    # threads that differ in the middle: a branch weighted by how many did what
    items = structure([walk("a b d"), walk("a b d"), walk("a c d")])
    assert show(items) == "a branch{2:(b) 1:(c)} d"


def test_fit_families_by_scv():
    assert fit([5.0] * 10).family == "det"
    assert fit([2, 5, 8, 5, 3, 7]).family == "erlang"
    import random
    rng = random.Random(1)
    assert fit([rng.expovariate(1) for _ in range(5000)]).family == "exp"
    heavy = fit([rng.lognormvariate(0, 1.5) for _ in range(5000)])
    assert heavy.family == "lognormal" and heavy.scv > 2
    bimodal = fit([rng.expovariate(1) if rng.random() < 0.9 else rng.expovariate(0.02)
                   for _ in range(5000)])
    assert bimodal.family == "hyperexp"


def test_empty_work_is_an_error():
    h = TraceHeader(source="test", capabilities={"thread_cpu": True})
    tr = Trace(h, [{"kind": "thread_start", "tid": 1, "ts": 0, "cpu": 0},
                   {"kind": "thread_end", "tid": 1, "ts": 10, "cpu": 5}])
    with pytest.raises(qpn.QPNError, match="nothing to model"):
        build(tr)


def test_build_file_writes_atomically(tmp_path):
    path = tmp_path / "b.jsonl"
    write(batch_trace(tasks=10, workers=2), path)
    out = tmp_path / "b.qpn"
    res = build_file(path, out)
    assert out.read_text() == res.text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_same_code_in_two_places_keeps_each_place_s_samples_across_traces():
    """Traces of one configuration pool each CPU step's samples; where the same code (same
    sites) sits in two places of a body, busiest is matched to busiest, so a rare path's
    few GIL-bound samples do not dilute the main path's GIL-free share (a live measured test
    saw 1.0 pooled into 0.93 before)."""
    from types import SimpleNamespace as NS

    from frontends.analyze.across import across
    from frontends.analyze.structure import Leaf

    def analysis(main_n, rare_n):
        main = Leaf(("take", "q", "w.py:40"), [NS(cpu=1000) for _ in range(main_n)], prev="w.py:36")
        rare = Leaf(("take", "q", "w.py:40"), [NS(cpu=3000) for _ in range(rare_n)], prev="w.py:36")
        runner = NS(mode="forever", name="w", items=[main, rare], group=NS(main=False),
                    iterations=main_n + rare_n, size=2)
        return NS(runners=[runner], gil=True, shares={id(main): 1.0, id(rare): 0.0}), main, rare

    (a, main, rare), (b, _, _) = analysis(100, 5), analysis(90, 6)
    res = across([a, b], ["a.jsonl", "b.jsonl"])
    xs, share, traces = res.samples("w", main, [1000] * 100, 1.0)
    assert (len(xs), share, traces) == (190, 1.0, 2)
    xs, share, traces = res.samples("w", rare, [3000] * 5, 0.0)
    assert (len(xs), share, traces) == (11, 0.0, 2)


def test_a_device_read_keeps_its_own_cpu():
    """A read that missed the page cache waits for the device and then uses CPU itself
    (filling the page cache, copying out): the model's device branch is the wait on the
    disk, then that CPU (known answer: 400 us per device read, constant)."""
    res = build(server_trace(2000, workers=4, rate=RATE, miss=0.5, disk=MS, miss_cpu=400_000,
                             seed=3))
    lines = res.text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().endswith("as read_45_miss"))
    assert "on disk" in lines[i]
    assert lines[i + 2].strip() == "cpu det(400 us) as read_45_miss_cpu", lines[i:i + 3]
    # the wait on the device is what is left: exp(1 ms) + 100 us, mean 1.1 ms (3 SE)
    (br,) = [b for b in res.info["branches"] if "io" in b]
    misses = br["counts"][1]
    mean = float(lines[i - 1].split("mean ")[1].split(" ms")[0])
    assert abs(mean - 1.1) < 3 * 1.0 / math.sqrt(misses)
    qpn.parse(res.text)
    # own CPU not worth a step (8 us against a 1.1 ms wait): none
    plain = build(server_trace(500, workers=4, rate=RATE, miss=0.5, disk=MS, seed=3))
    assert "read_45_miss_cpu" not in plain.text
