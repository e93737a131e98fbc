"""`qpn verify` suites with a server ([server] in suite.toml) and a setup step: the
server is started around each measured run of the load program and stopped after
it, traced while the load runs, and the manifest's errors name the entry."""
import json
import os
import socket
import sys

import pytest

from qpn.frontends.verify.manifest import load_suite
from qpn.frontends.verify.measure import program_key, run_once, setup
from qpn.frontends.verify.server import running_server, traced_server
from qpn.errors import QPNError

LOAD = '''import sys, time, urllib.request
t = time.perf_counter()
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=10).read()
print(f"got {len(body) > 0} in {1000 * (time.perf_counter() - t):.3f} ms")
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture
def suite_dir(tmp_path):
    (tmp_path / "load.py").write_text(LOAD)
    (tmp_path / "suite.toml").write_text(f"""
name = "http_small"
setup = ["{{python}}", "-c", "import http.server"]
[server]
command = ["{{python}}", "-m", "http.server", "--bind", "127.0.0.1", "{{port}}"]
port = "{{port}}"
[program]
path = "load.py"
args = ["{{port}}"]
[params]
port = {_free_port()}
[grid]
threads = [1, 2]
[build]
configs = [{{threads = 1}}]
[measure]
kind = "stdout"
pattern = "got True in ([\\\\d.]+) ms"
repeats = 1
[predict]
expr = "1"
""")
    return tmp_path


def test_the_server_runs_around_each_measured_run(suite_dir):
    s = load_suite(str(suite_dir))
    port = s.params["port"]
    assert s.server_argv({"threads": 1}) == [sys.executable, "-m", "http.server", "--bind",
                                             "127.0.0.1", str(port)]
    assert not _accepts(port)
    got = run_once(s, {"threads": 1})
    assert got["value"] > 0 and got["wall"] > 0
    assert not _accepts(port)                  # stopped after the run (SIGTERM)
    # the server's command is part of what a cached sample is of (this interpreter as
    # {python}, however it was spelt)
    assert program_key(s, {"threads": 1}).endswith(
        " server " + json.dumps(["{python}"] + s.server_argv({"threads": 1})[1:]))
    setup(s, log=open(os.devnull, "w"))        # the setup step runs (and succeeds)


def test_a_busy_port_is_an_error_not_a_wrong_measurement(suite_dir):
    s = load_suite(str(suite_dir))
    port = s.params["port"]
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        other.listen()
        with pytest.raises(QPNError, match=rf"127\.0\.0\.1:{port} already accepts connections "
                                           r"\(another server is running there\)"):
            with running_server(s, {"threads": 1}):
                pass


def test_a_server_that_dies_at_start_is_reported(suite_dir):
    s = load_suite(str(suite_dir))
    s.server = [sys.executable, "-c", "raise SystemExit(3)"]
    with pytest.raises(QPNError, match="exited before accepting connections on 127.0.0.1:"):
        with running_server(s, {"threads": 1}):
            pass


def test_the_server_is_traced_while_the_load_runs(suite_dir, tmp_path):
    from qpn.frontends.trace import read_trace
    s = load_suite(str(suite_dir))
    out = str(tmp_path / "server.jsonl")
    ran = traced_server(s, {"threads": 1}, out, lambda: "load ran")
    assert ran == "load ran"
    tr = read_trace(out)
    assert tr.header.program["argv"][-3:] == ["--bind", "127.0.0.1", str(s.params["port"])]
    assert tr.header.program["end"] == "signal 15"        # stopped by SIGTERM
    assert not _accepts(s.params["port"])


@pytest.mark.parametrize("extra, msg", [
    ('[server]\ncommand = ["x"]\n', "[server] needs 'port'"),
    ('[server]\nport = 1\n', "[server] needs 'command'"),
    ('setup = "pip install waitress"\n', "setup must be a command as a list of strings"),
])
def test_server_manifest_errors_name_the_entry(tmp_path, extra, msg):
    (tmp_path / "p.py").write_text("print(1)")
    text = ((extra if extra.startswith("setup") else "") +
            '[program]\npath = "p.py"\nargs = []\n[grid]\nw = [1]\n[build]\nconfigs = [{w = 1}]\n'
            '[predict]\nexpr = "1"\n' + ("" if extra.startswith("setup") else extra))
    (tmp_path / "suite.toml").write_text(text)
    with pytest.raises(QPNError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        load_suite(str(tmp_path))


@pytest.mark.parametrize("extra, msg", [
    ('outside = "minutes"\n[server]\ncommand = ["x"]\nport = 1\n', "outside is the unit of the "
     "measured response time, one of s, ms, us; got 'minutes'"),
    ('outside = "ms"\n', "outside needs a [server] and a response time the load program prints"),
])
def test_outside_manifest_errors(tmp_path, extra, msg):
    (tmp_path / "p.py").write_text("print(1)")
    (tmp_path / "suite.toml").write_text(
        '[program]\npath = "p.py"\nargs = []\n[grid]\nw = [1]\n[build]\nconfigs = [{w = 1}]\n'
        '[measure]\nkind = "stdout"\npattern = "(1)"\n[predict]\nexpr = "1"\n' + extra)
    with pytest.raises(QPNError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        load_suite(str(tmp_path))


def test_outside_is_the_client_s_response_less_the_server_s_connection_spans(suite_dir, tmp_path):
    """[predict] outside: the load program's response time in the traced run (kept beside
    the trace) less the mean span from the server's accept to its last send; the client's
    span holds the server's, so it is positive, and a few ms at most on loopback."""
    from qpn.frontends.verify import build_model
    toml = suite_dir / "suite.toml"
    toml.write_text(toml.read_text().replace('[predict]\n', '[predict]\noutside = "ms"\n'))
    (suite_dir / "load.py").write_text(LOAD.replace(
        'body = urllib', 'for _ in range(30):\n    body = urllib').replace(
        '1000 * (time.perf_counter() - t)', '1000 * (time.perf_counter() - t) / 30'))
    s = load_suite(str(suite_dir))
    assert s.outside == "ms"
    out = tmp_path / "out"
    out.mkdir()
    res = build_model(s, str(out), log=open(os.devnull, "w"))
    client = json.loads((out / "trace0.jsonl.client").read_text())["value"]
    (run,) = res.info["outside"]["runs"]
    assert run["client"] == pytest.approx(client) and run["connections"] >= 1
    assert res.info["outside"]["value"] == pytest.approx(run["client"] - run["server"], abs=1e-6)
    assert 0 < run["server"] < run["client"] and 0 < res.info["outside"]["value"] < 50
    # traces kept from a run without the client's figure: the error says what to do
    (out / "trace0.jsonl.client").unlink()
    with pytest.raises(QPNError, match="--retrace"):
        build_model(s, str(out), log=open(os.devnull, "w"), retrace=False)
