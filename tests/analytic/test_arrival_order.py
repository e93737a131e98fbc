"""One firing that puts tokens of two colors into one FCFS queue lines them up in the
order its output arcs are written (as QPME's SimQPN does, in the order of its
connections).  A batch of a and b reaches a server together: the one written first is
served first, so its response time is its own service, the other's is the sum of both
(exp(1) for a, exp(2) for b): known answers for the CTMC and the simulator, in both
orders."""
import pytest

import qpn
from des_support import assert_covers, des

BATCH = """net batch
colors job = {{a, b}}
place start init 1
place cpu : job
    queue fcfs
    service a: exp(1), b: exp(2)
place gather : job
transition go : start -> {outputs}
transition done : cpu(x) -> gather(x)
transition reset : gather(a), gather(b) -> start
"""
ORDERS = {"cpu(a), cpu(b)": {"a": 1.0, "b": 3.0}, "cpu(b), cpu(a)": {"a": 3.0, "b": 2.0},
          "cpu(b, a)": {"a": 3.0, "b": 2.0}}


@pytest.mark.parametrize("outputs", list(ORDERS))
def test_the_ctmc_lines_a_firings_tokens_up_as_written(outputs):
    res = qpn.solve(qpn.parse(BATCH.format(outputs=outputs)), method="ctmc")
    for color, r in ORDERS[outputs].items():
        assert res.get("response", "cpu", color) == pytest.approx(r, rel=1e-9), (outputs, color)


@pytest.mark.parametrize("outputs", list(ORDERS)[:2])
def test_the_simulator_lines_them_up_the_same_way(outputs):
    res = des(qpn.parse(BATCH.format(outputs=outputs)), {"time": 20000, "replications": 10})
    for color, r in ORDERS[outputs].items():
        assert_covers(res, "response", "cpu", color, r, max_rel=0.03, what=outputs)
