"""The analyzer on a program nobody here wrote: waitress (PyPI), traced as run by its
console script while requests come in (suites/waitress installs it with its setup).

What it got wrong before (issue 14): the workers' Condition + deque hand-over was read
as `lock; wait; unlock` with nobody notifying, the per-connection locks made every
worker iteration different (91% of their CPU pruned), and the two identical workers
became two pools."""
import os
import re
import threading
import time
import urllib.request

import pytest

from frontends.analyze import build
from frontends.trace import read_trace
from frontends.verify.manifest import load_suite
from frontends.verify.server import traced_server

pytest.importorskip("waitress", reason="suites/waitress installs it: pip install waitress")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUESTS = 60


def _load(port: int) -> int:
    """REQUESTS requests, 4 at a time at most, each on its own connection."""
    ok = []
    gate = threading.Semaphore(4)

    def one():
        with gate:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/?n=20000", timeout=30) as r:
                ok.append(len(r.read()) == 64)
    ths = [threading.Thread(target=one) for _ in range(REQUESTS)]
    for th in ths:
        th.start()
        time.sleep(0.004)
    for th in ths:
        th.join()
    return sum(ok)


@pytest.fixture(scope="module")
def waitress_model(tmp_path_factory):
    suite = load_suite(os.path.join(ROOT, "suites", "waitress"))
    out = str(tmp_path_factory.mktemp("waitress") / "w.jsonl")
    values = {"threads": 2, "port": 18797}
    served = traced_server(suite, values, out, lambda: _load(values["port"]))
    assert served == REQUESTS
    tr = read_trace(out)
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
    ops = [ln.split()[0] for ln in body.splitlines() if re.match(r"\s+\w", ln)]
    assert ops == ["cpu", "acquire"]          # the app's work, then the next item


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
