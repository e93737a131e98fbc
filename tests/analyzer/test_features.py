"""Demands that depend on the size of a thread's input (frontends/analyze/features.py,
issue 19): the fit, which input a fragment's executions had, and the model they give."""
import gzip
import os
import re

import numpy as np
import pytest

import qpn
from qpn.frontends.analyze import Options, build
from qpn.frontends.analyze.features import MIN_SAMPLES, feature_of, fit_feature
from qpn.frontends.trace import read_trace

from conftest import TESTS_DIR

TRACE = os.path.join(TESTS_DIR, "data", "pytrace", "sized_items-400_2_0.2.jsonl.gz")


def test_a_demand_that_grows_with_the_size_is_fitted_and_one_that_does_not_is_not():
    rng = np.random.default_rng(3)
    x = rng.integers(1_000, 100_000, size=300).astype(float)      # many sizes: 4 classes
    y = 5_000 + 20 * x + rng.normal(0, 20_000, size=300)
    f = fit_feature(x, y)
    assert f.kind == "line" and len(f.classes) == 4 and f.slope == pytest.approx(20, rel=0.05)
    assert 0.9 < f.r2 <= 1 and sum(c.share for c in f.classes) == pytest.approx(1)
    # the classes' means follow the line
    for c in f.classes:
        assert np.mean(c.samples) == pytest.approx(f.intercept + f.slope * c.value, rel=0.05)
    assert fit_feature(x, rng.normal(1e6, 1e5, size=300)) is None             # no relation
    assert fit_feature(x[:MIN_SAMPLES - 1], y[:MIN_SAMPLES - 1]) is None       # too few
    # a demand that is not a line in the size, over few sizes: a mean per size
    x3 = np.repeat([1_000.0, 2_000.0, 3_000.0], 40)
    y3 = np.where(x3 == 2_000, 9e5, 1e5) + rng.normal(0, 1e4, size=120)
    f3 = fit_feature(x3, y3)
    assert f3.kind == "classes" and [round(np.mean(c.samples), -4) for c in f3.classes] == \
        [1e5, 9e5, 1e5]


def test_the_input_of_a_pass_is_the_last_one_since_the_thread_s_previous_pass():
    sizes = {7: ([100, 200, 300], [(10.0, "read_5"), (20.0, "read_5"), (30.0, "recv_9")])}
    assert feature_of(sizes, 7, 150, 250) == (20.0, "read_5")
    assert feature_of(sizes, 7, 200, 250) is None          # nothing read since the last pass
    assert feature_of(sizes, 7, float("-inf"), 99) is None
    assert feature_of(sizes, 8, 0, 1000) is None


@pytest.fixture(scope="module")
def sized_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("sized") / "trace.jsonl"
    with gzip.open(TRACE, "rb") as src:
        path.write_bytes(src.read())
    # the trace recorded the cwd of the machine it was taken on: name elements after
    # the program's files here, wherever that directory is (or is not)
    return build(read_trace(str(path)), Options(source_dir=os.path.join(TESTS_DIR, "programs")))


def test_the_mix_of_input_sizes_is_a_parameter_of_the_model(sized_model):
    """tests/programs/sized_items.py traced with 20% of its items 64 KiB (the rest 4 KiB):
    the fold's demand follows the bytes read, so the model branches on the size with
    the share of large items as a parameter.  With one worker an item takes its demands
    one after another, so 1 / throughput grows by 0.6 x (large - small) from share 0.2
    to 0.8 (simulated, within 4%)."""
    text = sized_model.text
    assert "param share_read_32_65536 = 0.2\n" in text
    assert "1 - share_read_32_65536: {" in text and "share_read_32_65536: {" in text
    assert "cross-validated R²" in text
    means = {int(m[1]): float(m[2]) * {"us": 1e-6, "ms": 1e-3}[m[3]] for m in re.finditer(
        r"# about (\d+) bytes: \d+ samples, mean ([\d.]+) (us|ms)", text)}
    assert set(means) == {4096, 65536} and means[65536] > 10 * means[4096]
    net = qpn.parse(text)
    # 5 s simulated: each throughput within ~1.4% (its confidence half-width; the same
    # numbers every run: seed 1)
    x = {s: qpn.solve(net, "des", options={"quiet": True, "seed": 1, "time": 5},
                      share_read_32_65536=s, workers=1).get("throughput", "worker.begin")
         for s in (0.2, 0.8)}
    assert 1 / x[0.8] - 1 / x[0.2] == pytest.approx(0.6 * (means[65536] - means[4096]), rel=0.04)


def test_pruned_fragments_keep_their_cpu_in_the_model(sized_model):
    """Fragments below 3% of the worker's time are left out of the body, their CPU is
    not: the fold, whose demand follows the size, takes it in each class (without it the
    model of sized_items was 7% fast)."""
    text = sized_model.text
    m = re.search(r"# their CPU \(([\d.]+)% of the runner's\) is in the demand of fold_4096, "
                  r"fold_65536 \(\+([\d.]+) us per execution\)", text)
    assert m and float(m[1]) > 3
    for size in (4096, 65536):
        c = re.search(rf"# about {size} bytes: \d+ samples, mean ([\d.]+) (us|ms).*\n.*\n.*\n"
                      rf"\s+cpu det\(([\d.]+) (us|ms) / speedup_fold\) on host as fold_{size}", text)
        unit = {"us": 1.0, "ms": 1000.0}
        assert c and float(c[3]) * unit[c[4]] == pytest.approx(
            float(c[1]) * unit[c[2]] + float(m[2]), rel=2e-3)


def test_the_cpu_pruning_leaves_out_goes_into_the_largest_fragment_on_every_pass():
    """tests/programs/pool_queue_lock.py (recorded): the worker's three pruned fragments
    (3.5% of its CPU) raise its largest fragment's demand by that much: the step's mean is
    the fragment's own (its comment) times the factor in the pool's header."""
    import sys
    sys.path.insert(0, TESTS_DIR)
    from analyze_support import recorded_runs
    trace, _ = recorded_runs("pool_queue_lock.py", 30, 3)[0]
    text = build(trace).text
    m = re.search(r"# their CPU \(([\d.]+)% of the runner's\) is in the demand of (\w+) \(x ([\d.]+)\)",
                  text)
    assert m and m[2] == "compute" and float(m[3]) == pytest.approx(1 + float(m[1]) / 100, abs=0.01)
    own = re.search(r"samples, mean ([\d.]+) us, scv [\d.e-]+; .*\n.*\n\s+cpu \w+\((?:\d+, )?"
                    r"([\d.]+) us / speedup_compute\)", text)
    assert own and float(own[2]) == pytest.approx(float(own[1]) * float(m[3]), rel=1e-3)


def test_a_demand_that_grows_with_the_square_of_the_size_is_fitted_by_a_parabola():
    rng = np.random.default_rng(5)
    x = rng.choice([80.0, 120.0, 160.0, 320.0], size=400, p=[0.6, 0.15, 0.15, 0.1])
    y = 3_000 + 20 * x + 21 * x * x + rng.normal(0, 3_000, size=400)
    f = fit_feature(x, y)
    assert f.kind == "quadratic" and f.r2 > 0.99
    c0, c1, c2 = f.quadratic
    assert c2 == pytest.approx(21, rel=0.05)
    assert "ns per unit²" in f.formula("unit")
    # three sizes: a parabola only passes through their means, no evidence of a square law
    x3 = rng.choice([80.0, 160.0, 320.0], size=300)
    f3 = fit_feature(x3, 21 * x3 * x3 + rng.normal(0, 3_000, size=300))
    assert f3.kind in ("classes", "line") and not f3.quadratic


def test_a_feature_the_program_names_is_fitted_and_its_mix_is_a_parameter(tmp_path):
    """tests/programs/feature_items.py names each item's size with pytrace.feature and reads
    nothing: the model branches on the named feature, and the largest items (4x the
    numbers of the smallest) take about 16x their CPU (every pair compared)."""
    import subprocess
    import sys
    out = str(tmp_path / "fi.jsonl")
    prog = os.path.join(TESTS_DIR, "programs", "feature_items.py")
    p = subprocess.run([sys.executable, "-m", "qpn.cli", "trace", "-o", out, "--", sys.executable,
                        prog, "300", "1", "0.2"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    feats = [e for e in read_trace(out).events if e["kind"] == "feature"]
    assert len(feats) == 300 and {e["name"] for e in feats} == {"numbers"}
    assert sorted({e["value"] for e in feats}) == [80, 120, 160, 320]
    text = build(read_trace(out)).text
    assert "param share_numbers_320 = 0.2\n" in text and "share_numbers_120" in text
    assert "the program's feature 'numbers' (pytrace.feature)" in text and "a parabola" in text
    means = {int(m[1]): float(m[2]) * {"us": 1e-6, "ms": 1e-3}[m[3]] for m in re.finditer(
        r"# about (\d+) numbers: \d+ samples, mean ([\d.]+) (us|ms)", text)}
    assert set(means) == {80, 120, 160, 320}
    assert means[320] / means[80] == pytest.approx(16, rel=0.25)
