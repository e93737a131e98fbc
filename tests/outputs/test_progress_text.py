"""What a progress bar says: counts as people write them (``10.6/100 %``, ``2/6 runs``),
not the float the loop added up (``10.566954874594641/100``)."""
import os
import re

import pytest

from qpn.cli import main
from qpn.progress import number, progress, ticking

from conftest import MODELS


@pytest.fixture
def bars(monkeypatch):
    monkeypatch.setenv("QPN_PROGRESS", "1")          # as on a terminal


def test_a_share_done_is_shown_to_a_tenth_with_its_unit(bars):
    with progress("simulating", total=100, unit="%") as bar:
        bar.update(10.566954874594641)
        text = str(bar)
    assert "| 10.6/100 % [" in text and "10.566954874594641" not in text
    assert text.startswith("simulating:  11%|")


def test_whole_counts_stay_whole_and_large_ones_are_scaled(bars):
    with progress("verify s: measuring", total=6, unit="runs") as bar:
        bar.update(2)
        assert "| 2/6 runs [" in str(bar)
    with progress("exploring the CTMC", total=20_000, unit="states") as bar:
        bar.update(12_345)
        assert "| 12.3k/20.0k states [" in str(bar)
    with progress("exploring the CTMC", total=None, unit="states") as bar:
        bar.update(7)
        assert str(bar).startswith("exploring the CTMC: 7 states [")


def test_the_rate_is_rounded_too():
    from qpn.progress import _bar_class
    line = _bar_class().format_meter(10.566954874594641, 100, 1.0, prefix="simulating", unit="%")
    assert line.endswith("| 10.6/100 % [00:01<00:08, 10.6 %/s]")
    slow = _bar_class().format_meter(3, 10, 30.0, unit="runs")
    assert slow.endswith("| 3/10 runs [00:30<01:10, 10 s/runs]")


def test_a_ticking_bar_shows_the_time_alone(bars):
    with ticking("solving the CTMC (6 states)") as bar:
        assert str(bar) == "solving the CTMC (6 states): 00:00 so far"


def test_numbers():
    assert [number(x) for x in (10.566954874594641, 100.0, 7, 0.012345, 99.96, 12345.6, None)] == \
        ["10.6", "100", "7", "0.0123", "100.0", "12346", "?"]


def test_the_simulators_bar_prints_no_long_floats(bars, capsys):
    # the simulator adds its share done as a float: the user saw 10.566954874594641/100
    assert main(["solve", os.path.join(MODELS, "mutex.qpn"), "--method", "des", "--events",
                 "20000", "-R", "2", "--allow-imprecise"]) in (0, 3)
    err = capsys.readouterr().err
    shown = re.findall(r"\| ([\d.]+)/100 % \[", err)
    assert shown, err
    assert all(re.fullmatch(r"\d+(\.\d)?", s) for s in shown), shown
