"""qpn trace end to end: exit status, signals, os._exit, children, sitecustomize chaining."""
import os
import sys
import textwrap

from qpn.frontends.pytrace import trace_command
from qpn.frontends.trace import read_trace
from qpn.cli import main


def prog(tmp_path, body, name="p.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_cli_trace_returns_the_program_status(tmp_path, capsys):
    p = prog(tmp_path, """\
        import threading, sys
        lock = threading.RLock()
        with lock:
            with lock:          # re-entry: no second acquire event
                pass
        sys.exit(3)
        """)
    out = tmp_path / "run.jsonl"
    assert main(["trace", "-o", str(out), "--", sys.executable, p]) == 3
    assert "program exit status 3" in capsys.readouterr().err
    t = read_trace(out)
    assert t.header.program["exit_code"] == 3 and t.header.program["end"] == "exit"
    kinds = [e["kind"] for e in t.events if e.get("obj") is not None]
    assert kinds == ["object", "acquire", "release"]
    assert t.of_kind("acquire")[0]["site"].endswith("p.py:3")


def test_os_exit_and_sigterm_still_flush(tmp_path):
    p = prog(tmp_path, """\
        import os, time
        time.sleep(0.001)
        os._exit(0)
        """)
    run = trace_command([sys.executable, p], str(tmp_path / "a.jsonl"))
    assert run.trace.header.program["end"] == "os._exit"
    assert [e["on"] for e in run.trace.of_kind("wait")] == ["sleep"]
    p = prog(tmp_path, """\
        import threading, time
        threading.Event().set()
        time.sleep(30)
        """, "slow.py")
    run = trace_command([sys.executable, p], str(tmp_path / "b.jsonl"), timeout=1.0)
    assert run.returncode == -15 and run.trace.header.program["end"] == "signal 15"
    assert len(run.trace.of_kind("notify")) == 1


def test_children_are_not_traced_and_sitecustomize_is_chained(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text("MARK = 'theirs'\n")
    p = prog(tmp_path, """\
        import os, subprocess, sys, threading
        import sitecustomize
        print(sitecustomize.MARK)
        code = "import os, threading; threading.Lock(); print(os.environ.get('QPN_TRACE_RAW'), os.environ.get('PYTHONPATH'))"
        print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
        """)
    env = dict(os.environ, PYTHONPATH=str(site_dir))
    out = tmp_path / "c.jsonl"
    import subprocess
    r = subprocess.run([sys.executable, "-c", f"""
import sys
from qpn.frontends.pytrace import trace_command
run = trace_command([sys.executable, {p!r}], {str(out)!r})
"""], env=dict(env, PYTHONPATH=os.pathsep.join([str(site_dir), os.getcwd()] + sys.path)),
        capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "theirs"                            # the other sitecustomize still ran
    assert lines[1].startswith("None ")                    # the child got no recorder
    t = read_trace(out)
    assert len(t.thread_names()) == 1 and not t.of_kind("object")   # child's lock not recorded


def test_non_python_commands_are_refused(tmp_path, capsys):
    assert main(["trace", "-o", str(tmp_path / "x.jsonl"), "--", "true"]) == 2
    assert "recorded nothing" in capsys.readouterr().err
    assert main(["trace", "-o", str(tmp_path / "x.jsonl"), "--", "no-such-command-xyz"]) == 2
    assert "cannot run" in capsys.readouterr().err
    assert main(["trace", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert not (tmp_path / "x.jsonl").exists()


def test_locks_made_inside_the_standard_library_are_not_traced(tmp_path):
    p = prog(tmp_path, """\
        import queue, threading, concurrent.futures as cf
        q = queue.Queue()
        q.put(1); q.get()
        with cf.ThreadPoolExecutor(1) as ex:
            ex.submit(print, "hi").result()
        """)
    run = trace_command([sys.executable, p], str(tmp_path / "d.jsonl"))
    types = sorted(o["type"] for o in run.trace.objects().values())
    assert types == ["pool", "queue", "simple_queue"]       # no internal mutexes/conditions
    assert not run.trace.of_kind("acquire")
