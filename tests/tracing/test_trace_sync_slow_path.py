"""The tracer's out-of-line paths: a refused, a timed-out and a contended acquire of each
lock type, and the site of a call with no user frame on the stack (library fallback for
``site``, untraced for ``user_site``)."""
import sys

from qpn.frontends.pytrace import trace_command

PROGRAM = '''\
import threading, time

def holder(lock, got, go):
    lock.acquire()
    got.set()
    go.wait()
    time.sleep(0.02)
    lock.release()

for make in (threading.Lock, threading.RLock, lambda: threading.Semaphore(1)):
    lock, got, go = make(), threading.Event(), threading.Event()
    t = threading.Thread(target=holder, args=(lock, got, go))
    t.start()
    got.wait()
    assert lock.acquire(False) is False
    assert lock.acquire(True, 0.01) is False
    go.set()
    assert lock.acquire() is True
    lock.release()
    t.join()

bare = threading.Lock()
t = threading.Thread(target=bare.acquire)       # no user frame in that thread
t.start(); t.join()
open("mine.txt", "w").close()
t = threading.Thread(target=open, args=("library.txt", "w"))
t.start(); t.join()
'''
REFUSED, TIMED_OUT, CONTENDED, RELEASE = 15, 16, 18, 19


def test_refused_timed_out_and_contended_acquires_and_library_sites(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    r = trace_command([sys.executable, "prog.py"], str(tmp_path / "t.jsonl"), cwd=str(tmp_path))
    assert r.returncode == 0 and r.warnings == []
    events = r.trace.events
    objs = [e for e in events if e["kind"] == "object" and e["type"] in ("lock", "rlock", "sem")]
    assert [o["type"] for o in objs[:3]] == ["lock", "rlock", "sem"]
    def life(o):
        """Events of object ``o``: its id from its object event until an object event
        reuses the id (ids are addresses: a freed lock's may come back, docs/trace-format.md)."""
        end = next((e["ts"] for e in events if e["kind"] == "object" and e["obj"] == o["obj"]
                    and e["ts"] > o["ts"]), float("inf"))
        return [e for e in events if e.get("obj") == o["obj"] and o["ts"] <= e["ts"] < end]

    for o in objs[:3]:
        mine = {int(e["site"].rsplit(":", 1)[1]): e for e in life(o)
                if e["site"].startswith("prog.py:") and e["kind"] in ("acquire", "release")}
        refused, timed_out, acq, rel = (mine[n] for n in (REFUSED, TIMED_OUT, CONTENDED, RELEASE))
        assert (refused["dur"], refused["contended"], refused["ok"]) == (0, True, False)
        assert "timeout" not in refused
        assert timed_out["contended"] is True and timed_out["ok"] is False
        assert timed_out["timeout"] == 10_000_000 and timed_out["dur"] > 0
        assert acq.get("ok", True) is True and "timeout" not in acq
        assert acq["dur"] > 0 if acq["contended"] else acq["dur"] == 0
        if o["type"] != "sem":
            # the hold is counted from the end of the wait: _t is set by the slow path too
            assert rel["hold"] == rel["ts"] - (acq["ts"] + acq["dur"])
    bare = objs[3]
    acq = next(e for e in life(bare) if e["kind"] == "acquire")
    assert acq["site"] and not acq["site"].startswith("prog.py:")   # library frame fallback
    opened = [e.get("path") for e in events if e["kind"] == "io" and e["op"] == "open"]
    assert any(p.endswith("mine.txt") for p in opened)
    assert not any(p.endswith("library.txt") for p in opened)     # user_site: None
