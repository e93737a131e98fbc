"""Impossible traces are never accepted silently (frontends/trace.py: _Timeline): times
that no clock reads, an event detached from all others, thread lifecycles out of order,
events of threads that never started, text that is not Unicode.  Each case is one event
changed in (or added to) a real trace; trace-check and build read it alike: an error
(file:line, what is wrong, a hint) or a warning naming the line; --lenient drops what is
impossible and names each line, so the model is the one of the trace without it."""
import glob
import gzip
import io
import json
import os
import random
import re
import time

import pytest

from qpn.cli import main
from qpn.frontends import trace as tr
from qpn.frontends.analyze import read_grouped
from qpn.frontends.trace import TraceError, read_trace
from qpn.frontends.trace_timeline import Timeline
from conftest import ROOT_DIR

REAL = os.path.join(ROOT_DIR, "tests", "traces", "cache_workers-120_2-0.jsonl.gz")
MAIN, W0, W1 = 29706, 29709, 29710           # its threads: main and two workers
DAY = 86400 * 10 ** 9


def real():
    """The real trace's header line and events (980: lines 2-981; the workers start at
    lines 6 and 8, end at 973 and 979, main ends at 981)."""
    with gzip.open(REAL, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    return lines[0], [json.loads(x) for x in lines[1:]]


def write(path, events, header=None):
    """A trace of ``events`` (dicts, or raw lines) after the real trace's header."""
    head = real()[0] if header is None else header
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + "\n")
        for e in events:
            fh.write((e if isinstance(e, str) else json.dumps(e)) + "\n")
    return str(path)


def both(path, capsys, *extra):
    """[(exit code, stderr lines)] of trace-check and build, never a traceback."""
    out = []
    for argv in (["trace-check", path, *extra],
                 ["build", path, "-o", path + ".qpn", "--no-check", *extra]):
        rc = main(argv)
        err = capsys.readouterr().err
        assert "Traceback" not in err and "UnicodeEncodeError" not in err, err
        out.append((rc, err.splitlines()))
    return out


def changed(index, **fields):
    """The real events with the event at ``index`` given ``fields``."""
    evs = real()[1]
    evs[index] = {**evs[index], **fields}
    return evs


def added(index, event):
    evs = real()[1]
    evs.insert(index, event)
    return evs


_, EVS = real()
T_END = EVS[-1]["ts"]


# Each case: the trace's events, the line of the impossible event, what the error says.
ERRORS = {
    "negative ts": (changed(500, ts=-5), 502,
                    "acquire event: ts -5 is negative: a clock reading never is"),
    "ts of 2^63 - 1": (changed(500, ts=2 ** 63 - 1), 502,
                       "acquire event: ts 9223372036854775807 is beyond 2^62 ns (146 years): "
                       "no clock a tracer reads gets there"),
    "an event a day after all others": (
        changed(979, ts=T_END + DAY), 981,
        f"thread_end event: ts {T_END + DAY} is 24 h after the trace's other 979 events, "
        "which span 44.6 ms"),
    "an event hours before all others": (
        added(0, {"kind": "mark", "tid": MAIN, "ts": 0, "name": "x"}), 2,
        f"mark event: ts 0 is {EVS[0]['ts'] / 3600e9:.3g} h before the trace's other 980 "
        "events, which span 44.7 ms"),
    "thread_end before thread_start": (
        added(3, {"kind": "thread_end", "tid": W0, "ts": EVS[2]["ts"]}), 5,
        f"thread_end of thread {W0} (ts {EVS[2]['ts']}) before the thread started: its "
        f"thread_start is at line 7 (ts {EVS[4]['ts']})"),
    "an event after its thread's end": (
        changed(300, ts=EVS[300]["ts"] + 5 * 10 ** 9), 302,
        f"{EVS[300]['kind']} event of thread {EVS[300]['tid']} (ts {EVS[300]['ts'] + 5 * 10 ** 9})"
        f" after the thread ended: its thread_end is at line 979 (ts {EVS[977]['ts']})"),
    "a second thread_start of a running thread": (
        added(600, {**EVS[4], "ts": EVS[599]["ts"]}), 602,
        f"thread {W0} started twice: thread_start at line 6 (ts {EVS[4]['ts']}) and at line 602 "
        f"(ts {EVS[599]['ts']}), with no thread_end between"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_impossible_events_fail_check_and_build_alike(tmp_path, capsys, case):
    events, line, message = ERRORS[case]
    path = write(tmp_path / "t.jsonl", events)
    for rc, err in both(path, capsys):
        assert rc == 2 and err[0] == f"{path}:{line}: error: {message}"
        assert err[1].startswith(f" {line} | {{") and err[-1].startswith("hint: ")
        assert err[-1].endswith("--lenient drops the event and says so")


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_lenient_drops_the_impossible_event_and_names_its_line(tmp_path, capsys, case):
    events, line, message = ERRORS[case]
    path = write(tmp_path / "t.jsonl", events)
    t = read_trace(path, strict=False)
    bad = events[line - 2]
    assert t.events == [e for e in events if e is not bad] and t.complete
    assert t.warnings == [f"{path}:{line}: {message}; dropped (line {line})"]
    g = read_grouped(path, strict=False)                 # what build reads: the same
    assert g.events == t.events and g.by_thread() == t.by_thread() and g.warnings == t.warnings
    for rc, err in both(path, capsys, "--lenient"):
        assert rc == 0 and f"warning: {path}:{line}: {message}; dropped (line {line})" in err


def test_lenient_builds_the_model_of_the_trace_without_the_impossible_events(tmp_path, capsys):
    clean = write(tmp_path / "clean.jsonl", real()[1])
    evs = list(ERRORS["thread_end before thread_start"][0])
    evs.insert(600, {**evs[5], "ts": evs[599]["ts"]})    # and a copied thread_start
    evs.append({**evs[-1], "ts": evs[-1]["ts"] + DAY})   # and a thread_end a day later
    bad = write(tmp_path / "bad.jsonl", evs)
    assert main(["build", clean, "-o", str(tmp_path / "clean.qpn"), "--no-check"]) == 0
    capsys.readouterr()
    assert main(["build", bad, "-o", str(tmp_path / "bad.qpn"), "--no-check"]) == 2
    assert capsys.readouterr().err.splitlines()[0].endswith(
        "(2 more impossible event(s) after it)")
    assert main(["build", bad, "-o", str(tmp_path / "bad.qpn"), "--no-check", "--lenient"]) == 0
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning:")]
    assert [w.split(": ")[1] for w in warnings] == [f"{bad}:5", f"{bad}:602", f"{bad}:984"]
    assert all(w.endswith(f"dropped (line {w.split(':')[2]})") for w in warnings)
    text = open(tmp_path / "bad.qpn").read().replace("bad.jsonl", "clean.jsonl")
    assert text.replace("bad.qpn", "clean.qpn") == open(tmp_path / "clean.qpn").read()


def test_the_verdicts_do_not_depend_on_the_file_order(tmp_path):
    """The tracers write events sorted by ts and the reader checks them as they come;
    the format allows any order: then it sorts them once read, and finds the same."""
    for case, (events, line, message) in sorted(ERRORS.items()):
        bad = events[line - 2]
        shuffled = events[:]
        random.Random(line).shuffle(shuffled)
        path = write(tmp_path / "s.jsonl", shuffled)
        with pytest.raises(TraceError) as exc:
            read_trace(path)
        assert re.sub(r"line \d+", "line N", exc.value.message) == re.sub(
            r"line \d+", "line N", message), case
        assert exc.value.line == 2 + next(i for i, e in enumerate(shuffled) if e is bad)
        t = read_trace(path, strict=False)
        assert t.events == [e for e in shuffled if e is not bad], case


def test_a_thread_started_again_after_its_end_is_a_warning(tmp_path, capsys):
    # the format lets an id be reused after its thread_end (the OS reuses thread ids),
    # so this is possible; but the analyzer reads both threads as one: it says so
    evs = real()[1] + [{**EVS[4], "ts": T_END + 10}]
    path = write(tmp_path / "t.jsonl", evs)
    warning = (f"warning: {path}:982: thread id {W0} is started again (ts {T_END + 10}) after "
               f"its thread_end at line 973 (ts {EVS[971]['ts']}): two threads with one id, "
               "read as one thread")
    for rc, err in both(path, capsys):
        assert rc == 0 and warning in err
    assert len(read_trace(path, strict=False).events) == 981      # kept


def test_events_of_a_thread_that_never_started_are_a_warning(tmp_path, capsys):
    # possible (a thread that ran before tracing began, one started with _thread directly:
    # docs/trace-format.md), so kept, but never silently
    evs = added(500, {**EVS[500], "tid": 12345})
    path = write(tmp_path / "t.jsonl", evs)
    warning = (f"warning: {path}:502: thread 12345 has events but no thread_start (the first: "
               f"{EVS[500]['kind']}, ts {EVS[500]['ts']}): read as running from there (a thread "
               "started before tracing began, or with _thread)")
    for rc, err in both(path, capsys):
        assert rc == 0 and warning in err
    # one that starts later did not run before it: its earlier events are impossible
    evs = added(500, {**EVS[500], "tid": 12345}) + [{**EVS[4], "tid": 12345, "ts": T_END}]
    path = write(tmp_path / "t.jsonl", evs)
    for rc, err in both(path, capsys):
        assert rc == 2 and err[0] == (
            f"{path}:502: error: {EVS[500]['kind']} event of thread 12345 (ts {EVS[500]['ts']}) "
            f"before the thread started: its thread_start is at line 983 (ts {T_END})")


def test_a_thread_id_beyond_64_bits_is_refused(tmp_path, capsys):
    path = write(tmp_path / "t.jsonl", added(500, {**EVS[500], "tid": 2 ** 70}))
    for rc, err in both(path, capsys):
        assert rc == 2 and err[0] == (f"{path}:502: error: {EVS[500]['kind']} event: tid must "
                                      f"be an integer of 64 bits, got {2 ** 70}")
    top = 2 ** 64 - 1                        # a pthread ident may be that
    unsigned = write(tmp_path / "u.jsonl", [{**e, "tid": top if e["tid"] == W0 else e["tid"]}
                                            for e in EVS])
    assert read_trace(unsigned).warnings == []


@pytest.mark.parametrize("where, line, escape, message", [
    ("thread name", 6, "\\ud800", "thread_start event: field 'name' is not Unicode text: it "
                                  "holds a lone UTF-16 surrogate \\ud800"),
    ("low half alone", 6, "\\udc00", "thread_start event: field 'name' is not Unicode text: it "
                                     "holds a lone UTF-16 surrogate \\udc00"),
    ("field name", 6, "\\ud800", "thread_start event: a field name in the line is not Unicode "
                                 "text: it holds a lone UTF-16 surrogate \\ud800"),
    ("list", 502, "\\udbff", "mark event: field 'stack'[1] is not Unicode text: it holds a lone "
                             "UTF-16 surrogate \\udbff"),
    ("header", 1, "\\ud800", "header: field 'program'['argv'][0] is not Unicode text: it holds "
                             "a lone UTF-16 surrogate \\ud800"),
])
def test_lone_surrogates_are_refused_at_the_door_not_a_traceback(tmp_path, capsys, where, line,
                                                                  escape, message):
    # JSON may escape a UTF-16 surrogate; alone it is no character: once a traceback
    # (UnicodeEncodeError) when build wrote the model
    head, evs = real()
    raw = [json.dumps(e) for e in evs]
    if where == "thread name":
        raw[4] = raw[4].replace('"worker-0"', '"worker-\\ud800"')
    elif where == "low half alone":
        raw[4] = raw[4].replace('"worker-0"', '"worker-\\udc00"')
    elif where == "field name":
        raw[4] = raw[4].replace('"cpu"', '"\\ud800cpu"')
    elif where == "list":                    # after a valid pair (an emoji, escaped)
        raw.insert(500, json.dumps({"kind": "mark", "tid": MAIN, "ts": EVS[499]["ts"], "name": "m",
                                    "stack": ["\U0001f600", "x"]}).replace('"x"', '"\\udbff"'))
    else:
        h = json.loads(head)
        h["program"] = {**h.get("program", {}), "argv": ["prog"]}
        head = json.dumps(h).replace('"prog"', '"prog\\ud800"')
    path = write(tmp_path / "t.jsonl", raw, header=head)
    text = head if line == 1 else raw[line - 2]
    col = text.rindex(escape) + 1
    for rc, err in both(path, capsys):
        assert rc == 2 and err[0] == f"{path}:{line}:{col}: error: {message}", err
        assert err[-1].startswith("hint: a JSON \\ud800-\\udfff escape is half of a pair")


def test_surrogate_pairs_are_text_and_json_without_orjson_refuses_lone_ones(tmp_path, monkeypatch):
    head, evs = real()
    raw = [json.dumps(e) for e in evs]
    raw[4] = raw[4].replace('"worker-0"', '"worker-\\ud83d\\ude00"')      # an emoji, escaped
    path = write(tmp_path / "t.jsonl", raw, header=head)
    assert read_trace(path).thread_names()[W0] == "worker-\U0001f600"
    monkeypatch.setattr(tr, "_loads", json.loads)           # json reads lone surrogates
    raw[4] = raw[4].replace("\\ude00", "")
    path = write(tmp_path / "t.jsonl", raw, header=head)
    with pytest.raises(TraceError, match=r":6:138: error: thread_start event: field 'name' is not"):
        read_trace(path)


# --- the detached-event rule (_Timeline, rule 2), on small traces --------------
S = 10 ** 9
T0 = 10 ** 13
HEADER = json.dumps({"kind": "header", "format": "qpn-trace", "version": 1, "source": "test"})
BODY = [{"kind": "thread_start", "tid": 1, "ts": T0, "cpu": 0, "name": "main"}] + [
    {"kind": "mark", "tid": 1, "ts": T0 + i * S // 4, "cpu": i * S // 8, "name": "m"}
    for i in range(1, 21)]                                  # 21 events over 5 s
LATE = T0 + 5 * S + 7200 * S                                # 2 hours after them


def verdict(events):
    try:
        t = read_trace(io.StringIO("\n".join([HEADER] + [json.dumps(e) for e in events]) + "\n"))
        return t.warnings
    except TraceError as exc:
        return exc.message


def test_a_long_silence_is_detached_only_when_nothing_accounts_for_it():
    end = {"kind": "thread_end", "tid": 1, "ts": LATE, "cpu": 3 * S}
    assert verdict(BODY + [end]) == (f"thread_end event: ts {LATE} is 2 h after the trace's "
                                     "other 21 events, which span 5 s")
    # the thread slept, said its wait: the silence is the wait's
    sleep = {"kind": "wait", "tid": 1, "ts": T0 + 5 * S + 10, "cpu": 3 * S, "on": "sleep",
             "dur": LATE - T0 - 5 * S - 1000}
    assert verdict(BODY + [sleep, end]) == []
    # the thread computed all along: its CPU clock says so
    assert verdict(BODY + [{**end, "cpu": 7200 * S}]) == []
    # less than 1000 times the body's span (10 s: 2.8 h) is a pause, not a corrupt time
    slow = [{**e, "ts": T0 + 2 * (e["ts"] - T0)} for e in BODY]
    assert verdict(slow + [end]) == []
    # fewer than 10 events cannot tell a pause from a corrupt time
    assert verdict(BODY[:5] + [{**end, "ts": T0 + 30 * DAY}]) == []
    # within an hour, never
    assert verdict(BODY + [{**end, "ts": T0 + 5 * S + 3599 * S}]) == []


# --- no false alarms on real traces; the cost ---------------------------------
def real_traces():
    paths = glob.glob(os.path.join(ROOT_DIR, "tests", "traces", "**", "*.jsonl*"), recursive=True)
    paths += glob.glob(os.path.join(ROOT_DIR, "suites", "*", "verify", "*.jsonl"))
    return sorted(p for p in paths if p.endswith((".jsonl", ".jsonl.gz")))


def test_every_bundled_real_trace_passes_trace_check_without_warnings(capsys):
    # the tracers' real output (pytrace, strace, perf, JFR; threads, processes, asyncio
    # tasks): the rules raise no false alarm.  (~8 s here for ~110 traces, 1.2 million
    # events; the two largest, 0.75 and 0.36 million events, are most of it)
    paths = real_traces()
    assert len(paths) >= 20
    t0 = time.process_time()
    for path in paths:
        assert main(["trace-check", path]) == 0, path
        err = capsys.readouterr().err
        assert err == "", (path, err)
    print(f"{len(paths)} traces checked in {time.process_time() - t0:.1f} s CPU")


def test_a_sorted_trace_shows_the_timeline_its_thread_starts_and_ends_and_new_shapes_only(
        tmp_path, monkeypatch):
    # the cost of the checks: in a file sorted by ts (what the tracers write) the
    # reader's scanner vouches for every other event with two comparisons and a set
    # lookup, once it has learned the event's shape (until then events go through
    # check_event and the timeline): what the timeline sees does not grow with the trace
    seen = []
    see = Timeline.see
    monkeypatch.setattr(Timeline, "see", lambda self, ev, i: (seen.append(ev["kind"]),
                                                                 see(self, ev, i)))
    span = T_END - EVS[0]["ts"] + 1000
    others = []
    for runs in (2, 10):                      # runs of the program, one after the other
        evs = [{**e, "ts": e["ts"] + k * span, "tid": e["tid"] + k * 100000,
                **({"parent": e["parent"] + k * 100000} if "parent" in e else {})}
               for k in range(runs) for e in EVS]
        seen.clear()
        t = read_trace(write(tmp_path / "t.jsonl", evs))
        marks = [e["kind"] for e in t.events if e["kind"] in ("thread_start", "thread_end")]
        assert len(t.events) == 980 * runs and t.warnings == [] and len(marks) == 6 * runs
        assert sorted(k for k in seen if k in ("thread_start", "thread_end")) == sorted(marks)
        others.append(len([k for k in seen if k not in ("thread_start", "thread_end")]))
    assert others[0] == others[1] < 400, others


def test_many_events_out_of_their_threads_life_are_one_problem_naming_every_line(tmp_path):
    # a thread_end with a wrong (early) ts: the thread's later events are after its end
    evs = changed(977, ts=EVS[299]["ts"])                  # worker-1 "ends" at line 301's time
    path = write(tmp_path / "t.jsonl", evs)
    later = [i + 2 for i, e in enumerate(evs) if e["tid"] == W1 and e["ts"] > EVS[299]["ts"]
             and e["kind"] != "thread_end"]
    assert len(later) > 100
    with pytest.raises(TraceError) as exc:
        read_trace(path)
    first = evs[later[0] - 2]
    assert exc.value.line == later[0] and exc.value.message == (
        f"{first['kind']} event of thread {W1} (ts {first['ts']}) after the thread ended: its "
        f"thread_end is at line 979 (ts {EVS[299]['ts']}); {len(later) - 1} more of its events "
        "after that (or that thread_end is wrong)")
    t = read_trace(path, strict=False)
    assert len(t.events) == 980 - len(later) and len(t.warnings) == 1
    named = t.warnings[0].split("; dropped (lines ")[1].rstrip(")").split(", ")
    lines = [n for r in named for n in range(int(r.split("-")[0]), int(r.split("-")[-1]) + 1)]
    assert lines == later                                  # every line, as runs: 302-312, ...


def test_the_timelines_scanner_vouches_only_for_what_check_event_accepts():
    # the reader's scanner with the timeline's tests (tid running, ts in order) stops at
    # exactly the first event check_event rejects, like the plain one
    from qpn.frontends.trace_schema import EventChecker, check_event
    rnd = random.Random(5)
    odd = [None, -1, 1.5, True, "7", 2 ** 63, 2 ** 64, -2 ** 70, [1]]
    events = []
    for e in EVS * 3:
        e = dict(e)
        if rnd.random() < 0.02:
            e[rnd.choice(sorted(e))] = rnd.choice(odd)
        events.append(e)
    checker = EventChecker()
    for start in range(0, len(events), 70):
        part = events[start:start + 70]
        timeline = Timeline("<t>")
        timeline.chunk(0, part, 2, None)
        expected = next((i for i, e in enumerate(part) if check_event(e) is not None), None)
        assert checker.first_invalid(part, timeline) == expected
