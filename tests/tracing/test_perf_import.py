"""The perf importer: scheduler and system-call tracepoints -> neutral events (known values
of a committed fixture), located errors, and a live recording of a compiled C program."""
import os
import shutil
import subprocess

import pytest

from qpn.cli import main
from qpn.frontends.perf_import import perf_to_events
from qpn.frontends.trace import TraceError, read_trace

from conftest import TESTS_DIR

FIXTURE = os.path.join(TESTS_DIR, "data", "perf", "server.perf.txt")
TASKPOOL = os.path.join(TESTS_DIR, "programs", "taskpool.c")


def _fixture():
    with open(FIXTURE) as fh:
        return perf_to_events(fh.read(), FIXTURE, root=100)


def test_cpu_clocks_come_from_the_scheduler_switches():
    ev = {(e["kind"], e.get("op") or e.get("on"), e["tid"]): e for e in _fixture().events}
    # 100 runs from its first event to its switch out (1.000410), again from 1.000710 to the
    # fsync's switch out (1.000905) and from 1.001490 (switched in from the idle task)
    assert ev[("io", "open", 100)]["cpu"] == 200_000
    assert ev[("wait", "barrier", 100)]["cpu"] == 500_000           # 410 + 90 us
    fsync = ev[("io", "fsync", 100)]
    assert (fsync["cpu"], fsync["dur"], fsync["cpu_dur"]) == (600_000, 600_000, 15_000)
    # 101 starts at its fork with a clock of 0 and first runs at 1.000410
    read = ev[("io", "read", 101)]
    assert (read["cpu"], read["dur"], read["cpu_dur"], read["bytes"], read["fd"]) == \
        (90_000, 30_000, 30_000, 65536, 3)
    assert ev[("thread_end", None, 101)]["cpu"] == 395_000
    assert ev[("thread_start", None, 101)]["parent"] == 100


def test_futex_calls_are_classified_and_other_processes_left_out():
    tr = _fixture()
    objs = {e["obj"]: (e["type"], e.get("parties")) for e in tr.events if e["kind"] == "object"}
    assert objs == {0x5000: ("cond", None), 0x6000: ("barrier", 2)}
    ev = {(e["kind"], e.get("on"), e["tid"]): e for e in tr.events}
    assert ev[("wait", "cond", 100)]["dur"] == 320_000
    assert ev[("notify", "cond", 101)]["waiters"] == 1
    assert ev[("wait", "barrier", 101)]["dur"] == 215_000 and ev[("wait", "barrier", 100)]["dur"] == 0
    assert {e["tid"] for e in tr.events} == {100, 101}              # pid 200's read is not ours
    # the wrapper shell's write before the root exec'd the command is not the program's
    assert not any(e.get("op") == "write" for e in tr.events)
    assert tr.header.capabilities["thread_cpu"] and tr.header.program["pid"] == 100


def test_the_cli_writes_a_trace_the_reader_accepts(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert main(["import-perf", FIXTURE, "-o", str(out), "--pid", "100"]) == 0
    assert "2 thread(s)" in capsys.readouterr().err
    assert len(read_trace(str(out)).events) == len(_fixture().events)


def test_a_broken_line_is_located_and_a_lenient_read_keeps_the_rest():
    with open(FIXTURE) as fh:
        lines = fh.read().splitlines()
    lines.insert(5, "100/100 [000] 1.0002: this is not perf")
    text = "\n".join(lines)
    with pytest.raises(TraceError) as err:
        perf_to_events(text, "x.txt", root=100)
    assert "x.txt:6" in str(err.value) and "perf script" in str(err.value)
    tr = perf_to_events(text, "x.txt", root=100, strict=False)
    assert tr.warnings and "x.txt:6" in tr.warnings[0]
    assert len(tr.events) == len(_fixture().events)
    with pytest.raises(TraceError, match="no event of the traced program"):
        perf_to_events("# only a comment\n", "empty.txt")


def test_a_recording_cut_short_ends_its_threads_at_its_last_event():
    with open(FIXTURE) as fh:
        lines = fh.read().splitlines()
    tr = perf_to_events("\n".join(lines[:16]), root=100)       # inside 101's barrier wait
    ends = [e for e in tr.events if e["kind"] == "thread_end"]
    assert len(ends) == 2 and {e["ts"] for e in ends} == {max(e["ts"] for e in tr.events)}


def _perf_works() -> str | None:
    if shutil.which("perf") is None or shutil.which("gcc") is None:
        return "needs perf and gcc (Debian packages linux-perf, gcc)"
    p = subprocess.run(["perf", "record", "-q", "-o", "/dev/null", "-e", "sched:sched_switch",
                        "--", "true"], capture_output=True)
    return None if p.returncode == 0 else "perf may not record tracepoints here (needs root)"


@pytest.mark.skipif(_perf_works() is not None, reason=str(_perf_works()))
def test_qpn_trace_perf_on_a_pthreads_program(tmp_path):
    exe = tmp_path / "taskpool"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), TASKPOOL], check=True)
    out = tmp_path / "run.jsonl"
    rc = main(["trace", "--perf", "-o", str(out), "--", str(exe), "2", "4", "12", "4",
               str(tmp_path / "data.bin"), str(tmp_path / "log.txt")])
    assert rc == 0
    tr = read_trace(str(out))
    starts = [e for e in tr.events if e["kind"] == "thread_start"]
    assert len(starts) == 3 and tr.header.program["exit_code"] == 0
    types = sorted(e["type"] for e in tr.events if e["kind"] == "object")
    assert "barrier" in types
    bar = next(e for e in tr.events if e["kind"] == "object" and e["type"] == "barrier")
    assert bar["parties"] == 3                                   # 2 workers and main
    # 4 rounds x 12 tasks, one 64 KiB pread each; every thread's CPU clock only grows
    reads = [e for e in tr.events if e.get("op") == "read" and e.get("bytes") == 65536]
    assert len(reads) == 48
    # an fsync per round, and one of the data file the program made (it was missing)
    assert sum(1 for e in tr.events if e.get("op") == "fsync") == 5
    for tid, evs in tr.by_thread().items():
        clocks = [e["cpu"] for e in evs if "cpu" in e]
        assert clocks == sorted(clocks)


@pytest.mark.measured
@pytest.mark.skipif(_perf_works() is not None, reason=str(_perf_works()))
def test_recording_costs_a_cpu_bound_program_at_most_a_tenth(tmp_path):
    """Issue 17: `qpn trace --perf` on a CPU-bound program (2 threads on the 2 cores, a
    pread and 0.6 ms of hashing per task) slows it by <= 10%: the program's own time of
    its rounds, median of 5 runs each, taken round robin with and without perf."""
    import statistics
    from qpn.frontends.perf_import import record_command
    exe = tmp_path / "taskpool"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), TASKPOOL], check=True)
    cmd = [str(exe), "2", "40", "50", "40", str(tmp_path / "data.bin"), str(tmp_path / "log.txt")]
    iso = ["setsid", "sh", "-c", 'echo -19 > /proc/self/autogroup 2>/dev/null; exec "$@"', "sh"]
    subprocess.run(cmd, capture_output=True, check=True)           # makes the data file
    plain, traced = [], []
    for i in range(5):
        plain.append(float(subprocess.run(iso + cmd, capture_output=True, text=True,
                                          check=True).stdout))
        rec = record_command(str(tmp_path / f"perf{i}.data"), str(tmp_path / "pid"), cmd)
        out = subprocess.run(iso + rec, capture_output=True, text=True, check=True).stdout
        traced.append(float(out.split()[-1]))
    ratio = statistics.median(traced) / statistics.median(plain)
    print(f"\nplain {sorted(plain)} s, perf {sorted(traced)} s: x{ratio:.3f}")
    assert ratio <= 1.10


PTHREAD = os.path.join(TESTS_DIR, "data", "perf", "pthread.perf.txt")


def test_pthread_probes_give_every_lock_operation_with_its_site():
    with open(PTHREAD) as fh:
        tr = perf_to_events(fh.read(), PTHREAD, root=10)
    caps = tr.header.capabilities
    assert caps["lock_uncontended"] and caps["lock_hold"] and caps["sites"]
    objs = {e["obj"]: e for e in tr.events if e["kind"] == "object"}
    assert objs[4096]["type"] == "barrier" and objs[4096]["parties"] == 2      # barrier_init
    assert objs[8256]["type"] == "cond" and objs[8256]["lock"] == 8192         # cond_wait's mutex
    got = [(e["tid"], e["kind"], e.get("dur"), e.get("hold"), e.get("site"), e.get("cpu"))
           for e in tr.events if e["kind"] in ("acquire", "release", "wait", "notify")]
    assert got == [
        (11, "acquire", 5_000, None, "pool+0x1520", 10_000),    # return address -> binary+offset
        (11, "wait", 90_000, None, "pool+0x1550", 20_000),       # switched out while waiting
        (10, "acquire", 2_000, None, "pool+0x11f0", 90_000),
        (10, "notify", None, None, "pool+0x1210", 100_000),
        (10, "release", None, 13_000, "pool+0x1220", 105_000),
        (11, "release", None, 10_000, "pool+0x1570", 45_000),    # held since the wait returned
        (11, "wait", 115_000, None, "pool+0x1600", 295_000),
        (10, "wait", 5_000, None, "pool+0x1240", 490_000)]


@pytest.mark.skipif(_perf_works() is not None, reason=str(_perf_works()))
def test_qpn_trace_perf_pthread_probes_a_program_and_removes_its_probes(tmp_path, capsys):
    exe = tmp_path / "taskpool"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), TASKPOOL], check=True)
    out = tmp_path / "run.jsonl"
    args = [str(exe), "2", "3", "10", "2", str(tmp_path / "data.bin"), str(tmp_path / "log.txt")]
    assert main(["trace", "--perf", "--pthread", "-o", str(out), "--", *args]) == 0
    tr = read_trace(str(out))
    assert tr.header.has("lock_uncontended")
    # every put (3 rounds x (10 tasks + 2 markers) + 2 stop items) takes the queue's lock, and
    # every get; each signals the condition once
    cond = next(e["obj"] for e in tr.events if e["kind"] == "object" and e["type"] == "cond"
                and e.get("lock") is not None)
    notifies = [e for e in tr.events if e["kind"] == "notify"]
    assert len(notifies) == 3 * 12 + 2 and all(e["obj"] == cond for e in notifies)
    # the program's calls are named in its binary (the loader takes its own locks too)
    sites = {e["site"].split("+")[0] for e in tr.events if e.get("site")}
    assert "taskpool" in sites and sites <= {"taskpool", "ld-linux-x86-64.so.2", "libc.so.6"}
    probes = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True).stdout
    assert "qpn_" not in probes
    capsys.readouterr()
    assert main(["trace", "--pthread", "-o", str(out), "--", *args]) != 0
    assert "give --perf too" in capsys.readouterr().err


def test_mutated_lines_are_errors_not_tracebacks():
    """Found by mutating perf script texts (28,000 with the strace logs, 0 tracebacks left):
    a probe's value with a leading zero, a fork whose child_pid does not parse."""
    with open(PTHREAD) as fh:
        text = fh.read().replace("m=8192 ra=", "m=08192 ra=", 1)
    tr = perf_to_events(text, "p.txt", root=10)
    assert any(e.get("obj") == 8192 and e["kind"] == "acquire" for e in tr.events)
    with open(FIXTURE) as fh:
        bad = fh.read().replace("child_pid=101", "child_pid=", 1)
    with pytest.raises(TraceError, match="p.txt:7: .*fork without its pid"):
        perf_to_events(bad, "p.txt", root=100)
    lenient = perf_to_events(bad, "p.txt", root=100, strict=False)
    assert any("p.txt:7" in w for w in lenient.warnings)
