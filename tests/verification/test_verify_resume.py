"""`qpn verify` keeps every measurement as it is taken: a run killed half-way (Ctrl-C,
SIGKILL) loses nothing it measured, and the next run measures only what is missing.
And what the measured values carry to the figure: their unit and the spread of the
repeats (verify.png, verify.json)."""
import importlib
import json
import os
import signal
import subprocess
import sys

import pytest

from qpn.frontends.verify import Report, figure, verify
from qpn.frontends.verify.manifest import load_suite
from qpn.errors import QPNError
from conftest import ROOT_DIR

measure_mod = importlib.import_module("qpn.frontends.verify.measure")   # (the package's
#                                                  `measure` is the module's function)

TINY = """
name = "tiny"
[program]
path = "prog.py"
args = ["{n}"]
[grid]
n = [1, 2, 3]
[build]
configs = [{n = 1}]
[measure]
kind = "wall"
repeats = 2
[predict]
expr = "1"
"""


def _tiny(tmp_path, text=TINY):
    (tmp_path / "prog.py").write_text("import sys\n")
    (tmp_path / "suite.toml").write_text(text)
    return load_suite(str(tmp_path))


class Runs:
    """A stand-in for one measured run: counts the calls, gives a wall time per
    configuration (``walls``: n -> list cycled through), and stops the run (``stop``)
    at call number ``stop_at``."""

    def __init__(self, walls=None, stop_at=None, stop=KeyboardInterrupt):
        self.calls, self.walls, self.stop_at, self.stop = [], walls or {}, stop_at, stop

    def __call__(self, suite, values, timeout=600.0):
        if self.stop_at is not None and len(self.calls) + 1 == self.stop_at:
            raise self.stop()
        seen = sum(1 for c in self.calls if c == values)
        self.calls.append(dict(values))
        walls = self.walls.get(values["n"], [1.0 + values["n"]])
        return {"wall": walls[seen % len(walls)], "value": None, "load": 0.5, "loop_ns": 40.0}


def _cached(tmp_path) -> dict:
    return json.loads((tmp_path / ".verify-cache.json").read_text())


def test_a_run_stopped_by_ctrl_c_keeps_what_it_measured(tmp_path, monkeypatch):
    suite = _tiny(tmp_path)
    first = Runs(stop_at=3)                   # Ctrl-C during the third run
    monkeypatch.setattr(measure_mod, "run_once", first)
    with pytest.raises(KeyboardInterrupt):
        measure_mod.measure(suite)
    assert len(first.calls) == 2
    assert sum(len(v) for v in _cached(tmp_path).values()) == 2     # both kept on disk
    again = Runs()
    monkeypatch.setattr(measure_mod, "run_once", again)
    out = measure_mod.measure(suite)
    # 3 points x 2 repeats = 6 runs in all: the second run takes the 4 that were missing
    assert len(again.calls) == 4
    assert [again.calls.count({"n": n}) for n in (1, 2, 3)] == [1, 1, 2]
    assert [out[i]["value"] for i in range(3)] == [2.0, 3.0, 4.0]
    assert all(out[i]["samples"] == 2 for i in range(3))
    done = Runs()
    monkeypatch.setattr(measure_mod, "run_once", done)
    measure_mod.measure(suite)
    assert done.calls == []                   # and a third run measures nothing


def test_a_killed_run_keeps_its_measurements_sigkill(tmp_path, monkeypatch):
    """SIGKILL leaves no handler a chance: the process kills itself in its third run, and
    the samples of the first two are in the cache file (each written when it was taken)."""
    _tiny(tmp_path)
    script = f"""
import os, signal, sys
sys.path.insert(0, {os.path.join(ROOT_DIR, 'tests')!r})
import importlib
m = importlib.import_module("qpn.frontends.verify.measure")
from qpn.frontends.verify.manifest import load_suite
calls = []
def run_once(suite, values, timeout=600.0):
    calls.append(values)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return {{"wall": 1.0 + values["n"], "value": None, "load": 0.5, "loop_ns": 40.0}}
m.run_once = run_once
m.measure(load_suite({str(tmp_path)!r}))
"""
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert sum(len(v) for v in _cached(tmp_path).values()) == 2
    again = Runs()
    monkeypatch.setattr(measure_mod, "run_once", again)
    measure_mod.measure(load_suite(str(tmp_path)))
    assert len(again.calls) == 4


def test_the_extra_round_of_noisy_points_is_finished_after_a_kill(tmp_path, monkeypatch):
    # n = 1 and 2 spread by 1/1.5 (> 25%): each gets a third run; the kill falls after the
    # first of those, and the next run takes only the other
    suite = _tiny(tmp_path, TINY.replace("n = [1, 2, 3]", "n = [1, 2]"))
    noisy = {1: [1.0, 2.0, 1.5], 2: [1.0, 2.0, 1.5]}
    first = Runs(walls=noisy, stop_at=6)
    monkeypatch.setattr(measure_mod, "run_once", first)
    with pytest.raises(KeyboardInterrupt):
        measure_mod.measure(suite)
    assert sorted(len(v) for v in _cached(tmp_path).values()) == [2, 3]
    again = Runs(walls=noisy)
    monkeypatch.setattr(measure_mod, "run_once", again)
    out = measure_mod.measure(suite)
    assert again.calls == [{"n": 2}]
    assert [out[i]["samples"] for i in (0, 1)] == [3, 3]
    done = Runs(walls=noisy)
    monkeypatch.setattr(measure_mod, "run_once", done)
    measure_mod.measure(suite)
    assert done.calls == []


def _recorded(tmp_path):
    sys.path.insert(0, os.path.dirname(__file__))
    from test_verify import _recorded_suite
    _recorded_suite(tmp_path, calibrate=False)


def test_remeasure_killed_before_its_first_sample_forgets_the_old_ones_and_the_traces(
        tmp_path, monkeypatch):
    """--remeasure (and --retrace) make the samples and traces stale from the start: a run
    killed before it measured or traced anything must not leave them to pass as current
    (a trace's .key went only after the trace was removed: a kill while tracing again left
    a partial trace beside its old key)."""
    _recorded(tmp_path)
    out = tmp_path / "verify"
    assert sorted(p.name for p in out.glob("*.key")) == ["trace0.jsonl.key", "trace1.jsonl.key"]
    monkeypatch.setattr(measure_mod, "run_once", Runs(stop_at=1))
    with pytest.raises(KeyboardInterrupt):
        verify(str(tmp_path), remeasure=True)
    assert _cached(tmp_path) == {}
    assert list(out.glob("*.key")) == []


def test_the_figure_has_units_and_the_spread_of_the_repeats(tmp_path):
    """verify.json carries the measured value's unit and each point's lowest and highest
    repeat; verify.png draws them: axes in that unit, a bar over the repeats' range."""
    from matplotlib.container import ErrorbarContainer
    _recorded(tmp_path)
    rep = verify(str(tmp_path))
    rec = json.loads((tmp_path / "verify" / "verify.json").read_text())
    assert rep.unit == rec["unit"] == "rounds/s"          # kind rate, over = "rounds"
    for row in rec["rows"]:
        lo, hi = row["range"]
        assert lo <= row["measured"] <= hi and lo < hi
    fig = figure(rep)
    scatter, swept = fig.axes
    assert scatter.get_xlabel() == "measured [rounds/s]"
    assert scatter.get_ylabel() == "predicted [rounds/s]"
    bars = [c for c in scatter.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1
    (segments,) = bars[0].lines[2]
    spans = sorted(float(end[0]) for seg in segments.get_segments() for end in seg)
    assert spans == pytest.approx(sorted(x for r in rec["rows"] for x in r["range"]))
    # the grid varies one parameter: both against it, the measured with its bars
    assert swept.get_xlabel() == "workers"
    assert swept.get_ylabel() == "measured and predicted [rounds/s]"
    assert any(isinstance(c, ErrorbarContainer) for c in swept.containers)


@pytest.mark.parametrize("measure,predict,unit", [
    ('kind = "wall"', "", "s"),
    ('kind = "stdout"\npattern = "mean response ([\\\\d.]+) ms"', "", "ms"),
    ('kind = "stdout"\npattern = "elapsed ([\\\\d.]+)\\\\s+s"', "", "s"),
    ('kind = "stdout"\npattern = "^([\\\\d.]+)"', "", None),
    ('kind = "stdout"\npattern = "^([\\\\d.]+)"\nunit = "requests/s"', "", "requests/s"),
    ('kind = "rate"\nover = "n"\nvalues = [1, 2]', "", "n/s"),
])
def test_the_measured_unit_is_what_the_suite_tells(tmp_path, measure, predict, unit):
    suite = _tiny(tmp_path, TINY.replace('kind = "wall"', measure))
    assert suite.measured_unit == unit


def test_a_figure_without_a_unit_or_ranges_still_draws(tmp_path):
    """Rows from before ranges were kept, a suite that names no unit: plain labels, bars of
    zero length; a grid over two parameters: the scatter alone."""
    rows = [{"point": {"a": 1, "b": 1}, "measured": 2.0, "spread": 0.1, "predicted": 2.2,
             "eps": 0.1},
            {"point": {"a": 2, "b": 3}, "measured": 4.0, "spread": 0.1, "predicted": 3.0,
             "eps": 0.25, "range": [3.5, 4.5]}]
    fig = figure(Report("s", rows=rows))
    (ax,) = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("measured", "predicted")


def test_a_unit_that_is_not_a_name_is_refused(tmp_path):
    with pytest.raises(QPNError, match=r"\[measure\] unit must be a unit's name"):
        _tiny(tmp_path, TINY.replace("repeats = 2", "repeats = 2\nunit = 3"))
