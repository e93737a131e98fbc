"""thread_steps: which events become steps, and what their fragments cost.

thread_steps inlines the common cases of classify() for speed; these known
answers hold both to the same meaning.
"""
from qpn.frontends.analyze.objects import ObjectTable
from qpn.frontends.analyze.steps import classify, thread_steps


def ev(kind, ts, cpu, **kw):
    return {"kind": kind, "tid": 1, "ts": ts, "cpu": cpu, **kw}


EVENTS = [
    ev("thread_start", 0, 0),
    ev("object", 1, 1, obj=1, type="rlock"),
    ev("object", 2, 2, obj=2, type="bsem", permits=2),
    ev("object", 3, 3, obj=3, type="queue"),
    ev("acquire", 100, 90, obj=1, site="p.py:10"),            # outer: a step
    ev("acquire", 110, 95, obj=1, site="p.py:20"),            # re-entrant: folded
    ev("release", 150, 130, obj=1, site="p.py:20"),           # inner: folded
    ev("release", 200, 170, obj=1, site="p.py:10"),           # outer: a step
    ev("acquire", 300, 260, obj=2, dur=40, cpu_dur=5, site="p.py:30"),
    ev("release", 400, 320, obj=2, site="p.py:31"),
    ev("acquire", 450, 360, obj=1, ok=False, site="p.py:40"),  # failed try: folded
    ev("put", 500, 400, obj=3, item=7, site="p.py:50"),
    ev("get", 600, 450, obj=3, item=7, site="p.py:51"),
    ev("get", 650, 470, obj=3, ok=False, site="p.py:52"),      # timed out: folded
    ev("io", 700, 500, op="read", fd=4, dur=30, cpu_dur=10, site="p.py:60"),
    ev("io", 800, 560, op="send", fd=5, dur=5, site="p.py:61"),
    ev("thread_end", 900, 600),
]


def test_steps_known_answers():
    steps = thread_steps(EVENTS, ObjectTable(EVENTS))
    got = [(s.action, s.site, s.cpu, s.wall) for s in steps]
    assert got == [
        ("lock", "p.py:10", 90, 100),
        # the re-entrant pair's fragments and own time fold into the outer unlock
        ("unlock", "p.py:10", 80, 100),
        ("acquire", "p.py:30", 95, 100),          # a semaphore, its own CPU counted before
        ("release", "p.py:31", 55, 60),           # fragment after the 40 ns wait
        ("put", "p.py:50", 80, 100),              # with the failed try's fragment
        ("take", "p.py:51", 50, 100),
        ("io", "p.py:60", 20 + 30, 100),          # with the timed-out get's; not its own CPU
        ("sock", "p.py:61", 50, 70),
    ]
    assert [s.item for s in steps if s.action in ("put", "take")] == [7, 7]
    assert [s.fd for s in steps if s.action in ("io", "sock")] == [4, 5]
    assert all(s.ts == s.ev["ts"] and s.end == s.ts + s.dur for s in steps)


def test_inlined_cases_agree_with_classify():
    objects = ObjectTable(EVENTS)
    held: dict = {}
    expected = []
    for e in EVENTS:
        what = classify(e, objects, held)
        if what is not None:
            expected.append((what[0], e["site"]))
    steps = thread_steps(EVENTS, objects)
    assert [(s.action, s.site) for s in steps] == expected


def test_probe_cost_comes_off_each_fragment():
    """probe_ns (the recorder's own CPU per event) comes off the CPU between each
    two events, each difference kept at zero or more; folded events' shares
    go with them, an operation's own CPU (cpu_dur) stays whole."""
    steps = thread_steps(EVENTS, ObjectTable(EVENTS), probe_ns=10)
    assert [(s.action, s.cpu) for s in steps] == [
        ("lock", 0 + 0 + 0 + (87 - 10)),          # three object events 1 ns apart: 0 each
        ("unlock", 0 + (35 - 10) + (40 - 10)),    # re-entrant acquire 5 ns after: 0
        ("acquire", (90 - 10) + 5),               # its own CPU (cpu_dur 5) in full
        ("release", 55 - 10),
        ("put", (40 - 10) + (40 - 10)),           # with the failed try's fragment
        ("take", 50 - 10),
        ("io", (20 - 10) + (30 - 10)),            # with the timed-out get's
        ("sock", 50 - 10),
    ]
    assert [s.cpu for s in thread_steps(EVENTS, ObjectTable(EVENTS), probe_ns=10**6)] == \
        [0, 0, 5, 0, 0, 0, 0, 0]


def test_per_thread_note_names_threads_that_differ():
    """The model notes a fragment whose threads spent clearly different CPU
    (means 1.2x apart, beyond chance), naming each thread's mean."""
    from types import SimpleNamespace as NS
    from qpn.frontends.analyze.blocks import per_thread_note
    group = NS(tids=[11, 12], thread_names=["worker-0", "worker-1"])

    def leaf(a, b):
        return NS(steps=[NS(tid=11, cpu=x) for x in a] + [NS(tid=12, cpu=x) for x in b]
                  + [NS(tid=12, cpu=None)])
    note = per_thread_note(leaf([1000, 1010, 990, 1000], [1500, 1490, 1510]), group)
    assert note.startswith("# per thread: worker-0 1 us, worker-1 1.5 us; the mean is used")
    assert per_thread_note(leaf([1000, 1010, 990], [1100, 1090, 1110]), group) is None  # 1.1x
    assert per_thread_note(leaf([200, 1000, 1800], [500, 2000, 3500]), group) is None  # chance
    assert per_thread_note(leaf([1000, 1000], [2000, 2000]), group) is None   # too few
