"""The analyzer on a program nobody here wrote: waitress (PyPI), traced as run by its
console script while requests come in (suites/waitress installs it with its setup).

What it got wrong before (issue 14): the workers' Condition + deque hand-over was read
as `lock; wait; unlock` with nobody notifying, the per-connection locks made every
worker iteration different (91% of their CPU pruned), and the two identical workers
became two pools."""
import re

import pytest

from analyze_support import SOURCES, WAITRESS_REQUESTS as REQUESTS, recorded_waitress, trace_waitress
from qpn.frontends.analyze import build


@pytest.fixture(scope="module", params=SOURCES)
def waitress_model(request, tmp_path_factory):
    """The recorded trace in the default run (tests/traces), a fresh one when measured."""
    if request.param == "recorded":
        tr = recorded_waitress()
    else:
        tr = trace_waitress(str(tmp_path_factory.mktemp("waitress") / "w.jsonl"))
    return tr, build(tr)


def test_waitress_workers_are_one_pool_fed_by_a_semaphore_of_items(waitress_model):
    tr, res = waitress_model
    text = res.text
    assert tr.header.program["packages"] == ["waitress"]
    assert res.info["runners"]["waitress"]["size"] == 2
    assert set(res.info["runners"]) == {"main", "waitress"}
    assert "semaphore cond_54_items permits 0" in text
    m = re.search(r"its (\d+) notifies are releases of a semaphore of items \(suffix _items\), "
                  r"and the (\d+) passes of the waiting threads", text)
    assert m and int(m[1]) == int(m[2]) == REQUESTS
    body = re.search(r"pool waitress size \w+ \{\n(.*?)\n    \}", text, re.S)[1]
    ops = [ln.split()[0] for ln in body.splitlines() if re.match(r"\s+\w", ln)
           and not ln.split()[-1] == "gil"]          # the model's GIL around Python code
    # the next item, the app's work, the end of its response (the body turned to begin
    # with the take, so that the timer stops after the work: responses.py)
    assert ops == ["acquire", "cpu", "timer"]


def test_waitress_per_connection_objects_fold_and_the_app_cpu_stays(waitress_model):
    tr, res = waitress_model
    text = res.text
    # channel.py:65/67 make a lock, an RLock and a condition per connection
    assert re.search(r"#   \S+/waitress/channel\.py:65: \d+ lock made; \d+ acquisitions", text)
    assert re.search(r"#   \S+/waitress/channel\.py:67: \d+ cond, \d+ rlock made", text)
    assert not re.search(r"^    (mutex|condition) (lock|rlock|cond)_6[57]", text, re.M)
    # the app (20000 loop steps + sha256) is the workers' CPU: well above 1 ms per request
    # (pruned as fragments below 3% before); nothing of it is pruned
    body = re.search(r"pool waitress size \w+ \{\n(.*?)\n    \}", text, re.S)[1]
    mean = re.search(r"cpu \w+\((?:\d+, )?([\d.]+) (us|ms) \* work_waitress", body)
    assert mean and float(mean[1]) * (1000 if mean[2] == "ms" else 1) > 500
    assert "# pruned" not in re.search(r"(# thread pool 'waitress'.*?)pool waitress",
                                       text, re.S)[1]
