"""The MSER warm-up cut (qpn/truncation.py): known cuts, and a deterministic model's
series that is constant after its start, to rounding."""
import numpy as np
import pytest

import qpn
from qpn.truncation import mser


def test_the_cut_ends_a_known_transient():
    x = np.array([9.0, 9, 8, 2, 3, 2, 3, 2, 3, 2])
    assert int(mser(x[None, :, None])[0]) == 3


def test_a_tail_constant_to_rounding_is_cut_at_its_start_not_anywhere_up_to_half():
    tail = [2.0000000000000004, 1.9999999999999998] * 20        # rounding noise only
    x = np.array([5.0, 3.0] + tail)
    assert int(mser(x[None, :, None])[0]) == 2
    # a constant series from the start keeps everything
    assert int(mser(np.full((1, 30, 1), 7.0))[0]) == 0


def test_a_deterministic_loop_is_simulated_without_a_warm_up_warning():
    """Two ranks of deterministic compute and an allreduce: a periodic series.  MSER used to
    cut it at about half the run (rounding noise decided) and warn that the warm-up was
    half the run."""
    net = qpn.parse("""
param ranks = 2
software {
    cpu host cores 2 ps
    comm world ranks ranks latency 5 us on host
    pool rank size ranks {
        cpu det(1 ms) on host
        allreduce world 8
    }
}""")
    res = qpn.solve(net, method="des", options=dict(time=2.0, seed=1, quiet=True, workers=1))
    assert not [w for w in res.warnings if "warm-up" in w], res.warnings
    assert res.get("throughput", "world.trip") == pytest.approx(1 / 1.005e-3, rel=1e-4)   # whole cycles in the window
