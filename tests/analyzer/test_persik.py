"""PERSIK probe logs: the thesis's worked examples (digest §F items 2-4) as known answers."""
import pytest

from qpn.frontends.pcg import build_pcg, code_fragments, insignificant, prune
from qpn.frontends.persik import parse_persik, persik_to_trace, probes_from_trace, read_persik
from qpn.frontends.pools import detect_pools, leaves_from_samples, library_functions, tuple_map
from qpn.frontends.trace import TraceError, read_trace, write_trace
from qpn.cli import main

# Thesis Fig. 5.4 (the args "0, 5" are the poll timeout and its unit code).
FIG_5_4 = """\
ProbeID  Timestamp  ObjectID  Arguments/return value
THREAD 1 main              # start of the section
10  11345231  7683745  0, 5        # reading from a queue (start probe)
11  11387461  7683745  4387459     # reading from a queue (end probe)
27  11391365  87235467             # entering the sync. region (start)
28  11392132                       # entering the sync. region (end)
29  19873872  87235467             # exiting the sync. region (start)
30  19873991
27  19874384  87235467
28  19875297
29  22155291  87235467
30  22156112
33  22157534  7683745  4387459     # writing to the queue (start probe)
34  22172675  7683745
DONE
THREAD 10 CalcForceThread_1
DONE
"""

# Thesis Fig. 5.8: two file reads through the same native (probes 1013/1014).
FIG_5_8 = """\
THREAD 1 main
27    12415876  87235467
28    12416127
1013  12435875  1872565  8238435 1024
1014  18357221  1872565
29    18375678  87235467
30    18411752
10    18413873  7683745
11    18418937  7683745  4387459
1013  18423144  5763292  5731786 1024
1014  29278981  5763292
33    34827982  7683745  4387459
34    34828216  7683745
DONE
"""

# The static analysis's view of Fig. 5.6: which probe pairs are instrumented.
SCHEMA = {10: (11, "in"), 27: (28, "sync"), 29: (30, "sync"), 33: (34, "out"),
          1013: (1014, "io")}


def cfs_of(text, **kw):
    log = parse_persik(text)
    return code_fragments(log.threads[0].probes, **kw)


def test_fig_5_4_cf_sequence_durations_and_pcg():
    cfs = cfs_of(FIG_5_4, schema=SCHEMA)
    assert [cf.id for cf in cfs] == [(10, 11), (11, 27), (27, 28), (28, 29), (29, 30), (30, 27),
                                     (27, 28), (28, 29), (29, 30), (30, 33), (33, 34)]
    dur = [cf.duration for cf in cfs]
    assert dur == [42230, 3904, 767, 8481740, 119, 393, 913, 2279994, 821, 1422, 15141]
    assert [cf.cls for cf in cfs] == ["in", "cpu", "sync", "cpu", "sync", "cpu", "sync", "cpu",
                                      "sync", "cpu", "out"]
    poll = cfs[0]
    assert poll.obj == 7683745 and poll.args == (0, 5)
    g = build_pcg([cfs])
    assert len(g.nodes) == 8
    assert g.successors((29, 30)) == {(30, 27): 0.5, (30, 33): 0.5}
    for node in g.nodes:
        if node not in ((29, 30), (33, 34)):
            assert list(g.successors(node).values()) == [1.0], node
    assert g.terminal() == {(33, 34)} and g.starts == {(10, 11): 1}
    assert sorted(g.durations[(28, 29)]) == [2279994, 8481740]


def test_fig_5_4_schema_inference_agrees_with_the_static_schema():
    inferred = cfs_of(FIG_5_4)
    given = cfs_of(FIG_5_4, schema=SCHEMA)
    assert [cf.id for cf in inferred] == [cf.id for cf in given]
    assert [cf.cls == "cpu" for cf in inferred] == [cf.cls == "cpu" for cf in given]


def test_fig_5_8_context_splitting_and_pruning():
    cfs = cfs_of(FIG_5_8, schema=SCHEMA, context_probes={1013, 1014})
    by_id = {cf.id: cf for cf in cfs}
    assert [cf.id for cf in cfs] == [
        (27, 28), (28, 1013), (28, 1013, 1014), (28, 1014, 29), (29, 30), (30, 10), (10, 11),
        (11, 1013), (11, 1013, 1014), (11, 1014, 33), (33, 34)]
    io = [cf for cf in cfs if cf.cls == "io"]
    assert [(cf.id, cf.duration) for cf in io] == [((28, 1013, 1014), 5921346),
                                                   ((11, 1013, 1014), 10855837)]
    assert by_id[(11, 1014, 33)].duration == 5549001 and by_id[(11, 1014, 33)].cls == "cpu"
    small = [(28, 1013), (28, 1014, 29), (30, 10), (11, 1013)]
    assert sum(by_id[i].duration for i in small) == 44533
    cpu_total = sum(cf.duration for cf in cfs if cf.cls == "cpu")
    assert 44533 / cpu_total < 0.01                       # "less than 1%"
    for t in (0.03, 0.04, 0.05):
        assert insignificant(cfs, t) == set(small)
    kept = prune(cfs, 0.03)
    assert [cf.id for cf in kept if cf.cls == "cpu"] == [(11, 1014, 33)]
    assert len({cf.id for cf in kept if cf.cls == "io"}) == 2
    # Without context the two reads collapse into one node with a spurious loop.
    plain = build_pcg([cfs_of(FIG_5_8, schema=SCHEMA)])
    assert (1013, 1014) in plain.nodes and plain.durations[(1013, 1014)] == [5921346, 10855837]
    assert len(plain.successors((1013, 1014))) == 2


def test_library_probe_stack_prefixes_cf_ids():
    seq = [500, 27, 28, 1013, 1014, 29, 30, 502, 10, 11, 1013, 1014, 503, 33, 34, 501]
    text = "THREAD 1 t\n" + "".join(
        f"{p}\n" if p >= 500 and p < 1000 else f"{p} {i * 10} {1 if p in (27, 29, 10, 33, 1013) else ''}\n"
        for i, p in enumerate(seq)) + "DONE\n"
    ids = [cf.id for cf in cfs_of(text, library={500: 501, 502: 503}, context_probes={1013, 1014})]
    assert ids == [(500, 27, 28), (500, 28, 1013), (500, 28, 1013, 1014), (500, 28, 1014, 29),
                   (500, 29, 30), (500, 30, 10), (500, 502, 10, 11), (500, 502, 11, 1013),
                   (500, 502, 11, 1013, 1014), (500, 502, 11, 1014, 33), (500, 33, 34)]


def test_fig_5_2_thread_pool_detection():
    leaves = [{"tr1": 5}, {"tr1": 126}, {"tr1": 137},
              {"tr2": 409, "tr3": 512}, {"tr2": 98, "tr3": 117}, {"tr2": 722, "tr3": 698},
              {"tr4": 384, "tr5": 276}, {"tr4": 12}, {"tr5": 25}]
    assert tuple_map(leaves) == {frozenset({"tr1"}): 268, frozenset({"tr2", "tr3"}): 2556,
                                 frozenset({"tr4", "tr5"}): 660, frozenset({"tr4"}): 12,
                                 frozenset({"tr5"}): 25}
    assert detect_pools(leaves) == [(frozenset({"tr2", "tr3"}), 2556),
                                    (frozenset({"tr4", "tr5"}), 697), (frozenset({"tr1"}), 268)]
    # A subset is spurious only when the superset's count is much larger.
    assert len(detect_pools([{"a": 50, "b": 50}, {"a": 40}])) == 2


def test_pools_and_libraries_from_sample_events():
    ev = [{"kind": "sample", "tid": t, "ts": 0, "stack": s} for t, s, n in
          [(1, ["calc", "run"], 30), (2, ["calc", "run"], 20), (1, ["log", "calc"], 1),
           (2, ["log", "main"], 0)] for _ in range(n or 1)]
    pools = detect_pools(leaves_from_samples(ev))
    assert pools == [(frozenset({1, 2}), 52)]   # {1}: 1 and {2}: 1 merged into it
    assert library_functions([e["stack"] for e in ev]) == {"log"}


def test_neutral_round_trip_gives_the_same_fragments(tmp_path):
    log = parse_persik(FIG_5_4)
    header, events = persik_to_trace(log)
    path = tmp_path / "p.jsonl"
    write_trace(path, header, events)
    trace = read_trace(path)
    assert trace.header.source == "persik" and trace.header.has("probes")
    assert trace.thread_names() == {1: "main"}          # the empty section has no events
    probes = probes_from_trace(trace)[1]
    assert [cf.id for cf in code_fragments(probes, schema=SCHEMA)] == \
        [cf.id for cf in code_fragments(log.threads[0].probes, schema=SCHEMA)]
    assert probes[0].args == (0, 5)


@pytest.mark.parametrize("text, line, msg", [
    ("10 100 7\n", 1, "outside a THREAD"),
    ("THREAD 1 a\n10 100\n11 x\nDONE\n", 3, "integer"),
    ("THREAD 1 a\n10 100\n11 50\nDONE\n", 3, "earlier than the previous"),
    ("THREAD 1 a\n10 100\nTHREAD 2 b\nDONE\n", 3, "missing DONE"),
    ("DONE\n", 1, "DONE without"),
    ("THREAD x\n", 1, "THREAD <tid>"),
])
def test_malformed_logs_are_located(text, line, msg):
    with pytest.raises(TraceError) as exc:
        parse_persik(text, "p.log")
    assert f"p.log:{line}:" in str(exc.value) and msg in str(exc.value)


def test_truncated_log_lenient_keeps_the_valid_part():
    text = FIG_5_4[:FIG_5_4.index("33  22157534")]   # cut off mid-section
    with pytest.raises(TraceError, match="no DONE"):
        parse_persik(text, "p.log")
    log = parse_persik(text, "p.log", strict=False)
    assert len(log.threads[0].probes) == 10 and "truncated" in log.warnings[0]


def test_cli_import_persik(tmp_path, capsys):
    src = tmp_path / "fig58.log"
    src.write_text(FIG_5_8)
    out = tmp_path / "fig58.jsonl"
    assert main(["import-persik", str(src), "-o", str(out), "--pcg",
                 "--context-probes", "1013,1014"]) == 0
    listing = capsys.readouterr().out
    assert "11_1014_33 [cpu] x1 mean 5549001 ns" in listing
    assert "28_1013 [cpu]" not in listing                 # pruned at 3 %
    assert "28_1013_1014 [io]" in listing and "11_1013_1014 [io]" in listing
    assert len(read_persik(src).threads[0].probes) == 12
    assert sum(e["kind"] == "probe" for e in read_trace(out).events) == 12
