"""QPME's FIFO departure (a place offers its oldest token only) on the twin of QPME's
ispass03-02 example, against SimQPN's own results (15 runs of SimQPN built from the
QPME repository: tests/data/reference/simqpn-ispass03-02.toml says how).

A check passes when qpn's 95% interval and SimQPN's overlap (qpn's half-width with
the simulator tests' slack K_CI, see tests/des_support.py): for residence times
SimQPN's interval is the one a run prints (mean half-width of the 15 runs), for
throughputs, which SimQPN prints without one, 1.96 standard deviations of a run.
"""
import os
import tomllib

import pytest

import qpn
from des_support import K_CI, des

from conftest import TESTS_DIR

DATA = os.path.join(TESTS_DIR, "data")
with open(os.path.join(DATA, "reference", "simqpn-ispass03-02.toml"), "rb") as _fh:
    SIMQPN = tomllib.load(_fh)


def overlap(res, measure, element, color, ref, what, max_rel=0.02):
    est, h = res.get(measure, element, color), res.ci(measure, element, color)
    width = ref.get("ci", 1.96 * ref["sd"])
    assert abs(est - ref["mean"]) <= K_CI * h + width, (
        f"{what} {element} {color}: qpn {est:.6g} +/- {h:.3g}, SimQPN {ref['mean']:.6g} +/- {width:.3g}")
    assert h < max_rel * ref["mean"], f"{what} {element} {color}: qpn's interval {h:.3g} is too wide"


@pytest.fixture(scope="module")
def result():
    net = qpn.load(os.path.join(DATA, "qpe", "two_class_pools.qpe"))
    assert [p.departure for p in net.places if p.name == "clients"] == ["fifo"]
    return des(net, {"time": 5e6, "replications": 10})


def test_throughputs_within_simqpn_intervals(result):
    for color, ref in SIMQPN["throughput"].items():
        overlap(result, "departures", "clients", color, ref, "throughput")


@pytest.mark.parametrize("place", ["wls_cpu", "db_cpu", "db_io", "clients"])
def test_residence_times_within_simqpn_intervals(result, place):
    for color, ref in SIMQPN["residence"][place].items():
        overlap(result, "residence", place, color, ref, "residence")


def test_depository_waits_within_simqpn_intervals(result):
    """QPME's depository statistics: the wait for a thread in the order of arrival."""
    for color, ref in SIMQPN["depository"]["clients"].items():
        overlap(result, "depository_residence", "clients", color, ref, "depository", max_rel=0.25)


def test_export_writes_fifo_and_the_twin_reads_back_the_same():
    twin = qpn.load(os.path.join(DATA, "qpe", "two_class_pools.qpn"))
    from qpn.dsl.qpe_export import qpn_to_qpe
    xml = qpn_to_qpe(qpn.compile_net(twin))
    assert xml.count('departure-discipline="FIFO"') == 1
    assert xml.count('departure-discipline="NORMAL"') == len(twin.places) - 1
    with pytest.raises(qpn.QPNError, match="in-order"):
        qpn_to_qpe(qpn.compile_net(qpn.parse("place a queue ps service exp(1) departure in-order "
                                             "init 1\ntransition t : a -> a")))
