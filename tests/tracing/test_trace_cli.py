"""qpn trace end to end: exit status, signals, os._exit, children, sitecustomize chaining."""
import os
import signal
import sys
import time
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


def test_a_second_sigterm_while_the_record_is_written_does_not_cut_it_short(tmp_path):
    # a server stopped by its parent and by a kill of its session gets SIGTERM twice; the
    # second used to land while the first was writing 300,000 buffered events
    p = prog(tmp_path, """\
        import os, signal, sys, threading, time
        lock = threading.Lock()
        for _ in range(150_000):
            with lock:
                pass
        print("ready", flush=True)
        time.sleep(30)
        """)
    import threading

    def twice():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for pid in os.listdir("/proc"):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        if fh.read().split(b"\0")[1:2] == [p.encode()]:
                            os.kill(int(pid), signal.SIGTERM)
                            time.sleep(0.002)
                            os.kill(int(pid), signal.SIGTERM)
                            return
                except (OSError, IndexError):
                    continue
            time.sleep(0.05)
    out = tmp_path / "ready.txt"
    with open(out, "w") as fh:
        th = threading.Thread(target=lambda: (_wait_for(out), twice()), daemon=True)
        th.start()
        run = trace_command([sys.executable, p], str(tmp_path / "t.jsonl"), stdout=fh)
    th.join()
    assert run.trace.header.program["end"] == "signal 15" and not run.warnings
    assert len(run.trace.of_kind("acquire")) == 150_000


def _wait_for(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and "ready" not in path.read_text():
        time.sleep(0.02)


def _trace_with_site(tmp_path, follow: bool):
    """A program with a sitecustomize of its own that runs a Python child, traced."""
    site_dir = tmp_path / "site"
    site_dir.mkdir(exist_ok=True)
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
run = trace_command([sys.executable, {p!r}], {str(out)!r}, follow={follow})
"""], env=dict(env, PYTHONPATH=os.pathsep.join([str(site_dir), os.getcwd()] + sys.path)),
        capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "theirs"                            # the other sitecustomize still ran
    return lines, out


def test_without_follow_children_are_not_traced_and_sitecustomize_is_chained(tmp_path):
    lines, out = _trace_with_site(tmp_path, follow=False)
    assert lines[1].startswith("None ")                    # the child got no recorder
    t = read_trace(out)
    assert len(t.thread_names()) == 1 and not t.of_kind("object")   # child's lock not recorded
    assert "children" not in t.header.program


def test_python_children_are_traced_into_traces_of_their_own(tmp_path):
    lines, out = _trace_with_site(tmp_path, follow=True)
    assert not lines[1].startswith("None ")                # the child inherited the recorder
    t = read_trace(out)
    assert len(t.thread_names()) == 1 and not t.of_kind("object")   # the parent's trace: its own
    [child] = t.header.program["children"]
    c = read_trace(tmp_path / child)
    assert child == f"c.{c.header.program['pid']}.jsonl"
    assert c.header.program["ppid"] == t.header.program["pid"]
    assert c.header.program["argv"][0] == "-c" and len(c.of_kind("object")) == 1   # its lock


def test_a_forked_child_records_on_its_own(tmp_path):
    p = prog(tmp_path, """\
        import multiprocessing as mp, threading
        def work():
            lock = threading.Lock()
            for _ in range(3):
                with lock:
                    pass
        if __name__ == "__main__":
            threading.Lock()
            q = mp.get_context("fork").Process(target=work)
            q.start(); q.join()
        """)
    run = trace_command([sys.executable, p], str(tmp_path / "f.jsonl"))
    assert len(run.children) == 1 and len(run.trace.of_kind("object")) == 1
    c = read_trace(run.children[0])
    assert c.header.program["ppid"] == run.trace.header.program["pid"]
    assert [e["kind"] for e in c.events].count("acquire") == 3
    assert list(c.thread_names().values()) == ["MainThread"]


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
