"""strace -f -ttt -T output into the neutral trace format: a committed fixture with every
event kind the importer writes (known events, fields and values), a live strace run of a
C program with pthreads compiled here, and located errors for broken logs."""
import os
import shutil
import subprocess
from collections import Counter

import pytest

from qpn.frontends.strace_import import read_strace, strace_to_events
from qpn.frontends.trace import TraceError, read_trace, write_trace
from qpn.cli import main

from conftest import TESTS_DIR

FIXTURE = os.path.join(TESTS_DIR, "data", "strace", "server.strace")


def test_the_fixture_gives_each_kind_of_event_with_its_fields():
    tr = read_strace(FIXTURE)
    ev = {(e["kind"], e.get("op") or e.get("on")): e for e in tr.events}
    assert tr.header.program == {"pid": 100, "exit_code": 0} and tr.skipped == 1     # SIGCHLD
    start = [e for e in tr.events if e["kind"] == "thread_start"]
    assert [(e["tid"], e.get("parent")) for e in start] == [(100, None), (101, 100)]
    # futex addresses told apart by their waits and wakes (frontends/futexes.py): a mutex
    # (a wait for 2, joined across an interleaved line; the unlock that woke it) ...
    acq, rel = ev[("acquire", None)], ev[("release", None)]
    assert (acq["tid"], acq["dur"], acq["obj"], acq["contended"]) == (101, 420_000, 0x5610A040, True)
    assert (rel["tid"], rel["obj"]) == (100, 0x5610A040)
    # ... a condition variable (a bitset wait, a signal), a barrier (woken all at once; the
    # last to arrive waits 0), an address of neither kind (a wait that timed out)
    cond, signal = ev[("wait", "cond")], ev[("notify", "cond")]
    assert (cond["tid"], cond["dur"], cond["obj"], signal["tid"], signal["all"], signal["waiters"]) == \
        (100, 2_070_000, 0x5610A068, 101, False, 1)
    bar = sorted((e["tid"], e["dur"]) for e in tr.events if e.get("on") == "barrier")
    assert bar == [(100, 3_970_000), (101, 0)]
    other = ev[("wait", "other")]
    assert (other["tid"], other["obj"], other["ok"], other["dur"]) == (100, 0x5610A0F0, False, 110_000)
    objs = {e["obj"]: e for e in tr.events if e["kind"] == "object"}
    assert {o: (e["type"], e.get("parties")) for o, e in objs.items()} == \
        {0x5610A040: ("lock", None), 0x5610A068: ("cond", None), 0x5610A024: ("barrier", 2)}
    read = [e for e in tr.events if e.get("op") == "read"]
    assert (read[0]["path"], read[0]["bytes"], read[0]["dur"]) == ("/srv/data.bin", 65536, 250_000)
    assert read[1]["ok"] is False and "bytes" not in read[1]           # EBADF
    # descriptors are the process's: a thread fsyncs the file another opened
    assert ev[("io", "fsync")]["path"] == "/srv/data.bin" and ev[("io", "fsync")]["dur"] == 4_000_000
    assert ev[("io", "accept")]["conn"] == 5 and ev[("io", "recv")]["bytes"] == 16
    assert ev[("io", "send")]["bytes"] == 17
    assert ev[("wait", "sleep")]["requested"] == 1_000_000
    join = ev[("wait", "join")]                    # pthread_join: a wait on the thread's id word
    assert (join["tid"], join["target"], join["dur"]) == (100, 101, 660_000)
    assert Counter(e["kind"] for e in tr.events)["thread_end"] == 2


def test_the_cli_writes_a_trace_the_reader_accepts(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert main(["import-strace", FIXTURE, "-o", str(out)]) == 0
    trace = read_trace(str(out))
    assert trace.header.source == "strace" and not trace.header.capabilities.get("thread_cpu")
    assert len(trace.events) == len(read_strace(FIXTURE).events)


BROKEN = [
    ("not strace", "hello world\n", "no strace line here", 1),
    ("resumed alone", "7 1.0 <... read resumed>\"x\", 4) = 1 <0.000001>\n", "without its unfinished start", 1),
    ("mangled call", "7 1.0 execve(\"a\") = 0 <0.1>\n7 1.1 read(3, \"x\", 4) = = 1\n",
     "does not parse", 2),
]


@pytest.mark.parametrize("label,text,message,line", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_logs_are_located(label, text, message, line):
    with pytest.raises(TraceError, match=message) as e:
        strace_to_events(text, f"{label}.strace")
    assert e.value.line == line


def test_a_truncated_log_keeps_what_it_has_and_says_so():
    text = open(FIXTURE).read().splitlines()
    cut = "\n".join(text[:6])          # ends inside the futex wait of thread 101
    tr = strace_to_events(cut, "cut.strace", strict=False)
    assert any("never resumed" in w for w in tr.warnings)
    assert [e["kind"] for e in tr.events].count("thread_end") == 2     # ended at the log's end
    lenient = strace_to_events(BROKEN[2][1], "bad.strace", strict=False)
    assert lenient.warnings and "line left out" in lenient.warnings[0]


@pytest.mark.skipif(shutil.which("strace") is None or shutil.which("gcc") is None,
                    reason="needs strace and gcc (Debian packages strace, gcc)")
def test_a_pthreads_program_traced_by_strace(tmp_path):
    src = tmp_path / "prog.c"
    src.write_text("""#include <pthread.h>
#include <fcntl.h>
#include <unistd.h>
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
void *work(void *a) { char b[64]; usleep(50000);   /* main is in pthread_join by then */
  for (int i = 0; i < 50; i++) { pthread_mutex_lock(&m); usleep(100); pthread_mutex_unlock(&m);
    int fd = open("/etc/hostname", O_RDONLY); read(fd, b, sizeof b); close(fd); }
  return 0; }
int main(void) { pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, work, 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], 0); return 0; }
""")
    exe = tmp_path / "prog"
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(exe), str(src)], check=True)
    log = tmp_path / "run.strace"
    subprocess.run(["strace", "-f", "-ttt", "-T", "-o", str(log), str(exe)], check=True)
    tr = read_strace(str(log))
    starts = [e for e in tr.events if e["kind"] == "thread_start"]
    assert len(starts) == 4 and sum(1 for e in starts if e.get("parent") == starts[0]["tid"]) == 3
    reads = [e for e in tr.events if e.get("op") == "read" and e.get("path") == "/etc/hostname"]
    assert len(reads) == 150                                   # 3 threads x 50, every fd resolved
    sleeps = [e for e in tr.events if e["kind"] == "wait" and e["on"] == "sleep"]
    assert len(sleeps) == 153 and all(e["dur"] >= 100_000 for e in sleeps)
    locks = [e for e in tr.events if e["kind"] == "object"]
    assert [e["type"] for e in locks] == ["lock"]                 # the mutex, contended
    assert any(e["kind"] == "acquire" and e["obj"] == locks[0]["obj"] and e["contended"]
               for e in tr.events)
    assert not any(e.get("on") == "other" for e in tr.events)
    children = {e["tid"] for e in starts[1:]}
    joins = [e for e in tr.events if e["kind"] == "wait" and e["on"] == "join"]
    assert joins and all(e["target"] in children and e["tid"] == starts[0]["tid"] for e in joins)
    write_trace(str(tmp_path / "run.jsonl"), tr.header, tr.events)
    read_trace(str(tmp_path / "run.jsonl"))


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (Debian package strace)")
def test_qpn_trace_strace_runs_any_program(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    code = main(["trace", "--strace", "-o", str(out), "--", "/bin/sh", "-c",
                 "head -c 100 /etc/hostname > /dev/null; exit 3"])
    assert code == 3
    trace = read_trace(str(out))
    assert trace.header.source == "strace" and trace.header.program["exit_code"] == 3
    assert trace.header.program["argv"][0] == "/bin/sh"
    kinds = Counter(e["kind"] for e in trace.events)
    assert kinds["thread_start"] >= 2 and kinds["thread_start"] == kinds["thread_end"]   # sh + head
    assert any(e.get("path") == "/etc/hostname" and e.get("op") == "read" for e in trace.events)
    assert main(["trace", "--strace", "-o", str(tmp_path / "x.jsonl"), "--", "/nonexistent/x"]) == 2
