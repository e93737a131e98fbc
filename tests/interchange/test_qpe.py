"""QPME .qpe import and export: known answers on twins of QPME's shipped examples,
round trips, and located errors for broken files."""
import math
import os

import numpy as np
import pytest

import qpn
from qpn import solvers
from qpn.dsl.qpe import qpe_to_qpn
from qpn.dsl.qpe_export import qpn_to_qpe
from qpn.cli import main
from qpn.errors import ModelError

from conftest import MODELS, TESTS_DIR

DATA = os.path.join(TESTS_DIR, "data", "qpe")
#: the bundled QPME file: users and a FCFS server, as QPME's editor saves them
with open(os.path.join(MODELS, "qpme", "closed_server.qpe"), "rb") as _fh:
    EXAMPLE = _fh.read()


def imported(xml: str | bytes, name: str = "model.qpe"):
    text, notes = qpe_to_qpn(xml if isinstance(xml, bytes) else xml.encode(), name)
    return qpn.parse(text, name), text, notes


# ------------------------------------------------- independent product-form reference
def _station_factor(servers, demands, N):
    """f(k1, k2) of a BCMP station for two chains (servers=inf: delay station)."""
    f = np.zeros((N[0] + 1, N[1] + 1))
    for k1 in range(N[0] + 1):
        for k2 in range(N[1] + 1):
            if math.isinf(servers):
                f[k1, k2] = demands[0] ** k1 / math.factorial(k1) * demands[1] ** k2 / math.factorial(k2)
            else:
                k = k1 + k2
                v = math.comb(k, k1) * demands[0] ** k1 * demands[1] ** k2
                for j in range(1, k + 1):
                    v /= min(j, servers)
                f[k1, k2] = v
    return f


def _conv(a, b):
    N = a.shape
    out = np.zeros(N)
    for i in range(N[0]):
        for j in range(N[1]):
            out[i, j] = sum(a[x, y] * b[i - x, j - y] for x in range(i + 1) for y in range(j + 1))
    return out


def product_form_queue_lengths(stations, N):
    """Mean customers per station and chain by the normalizing constant (convolution)."""
    fs = [_station_factor(c, d, N) for c, d in stations]
    out = []
    for s in range(len(fs)):
        rest = None
        for t, f in enumerate(fs):
            if t != s:
                rest = f if rest is None else _conv(rest, f)
        G = _conv(rest, fs[s])[N]
        q = [0.0, 0.0]
        for k1 in range(N[0] + 1):
            for k2 in range(N[1] + 1):
                w = fs[s][k1, k2] * rest[N[0] - k1, N[1] - k2] / G
                q[0] += k1 * w
                q[1] += k2 * w
        out.append(q)
    return out


def test_bcmp_twin_of_pepsy_matches_the_normalizing_constant():
    """QPME's pepsy-bcmp2 structure: MVA of the imported file = exact product form (1e-6)."""
    net = qpn.load(os.path.join(DATA, "bcmp_twin.qpe"))
    res = solvers.solve(net, "auto")
    assert res.method == "mva"
    # visits per cycle: the CPU routes 4:5:1:10 to disk1, disk2, disk3, terminals
    v_cpu = 20 / 10
    visits = [1, v_cpu, v_cpu * 4 / 20, v_cpu * 5 / 20, v_cpu * 1 / 20]
    mean = [(1e4, 1e4), (200, 250), (1000, 1000), (500, 500), (2e4, 2e4)]
    servers = [math.inf, 1, 1, 2, 3]
    stations = [(c, (v * m[0], v * m[1])) for c, v, m in zip(servers, visits, mean)]
    ref = product_form_queue_lengths(stations, (10, 12))
    for name, q in zip(["terminals", "cpu", "disk1", "disk2", "disk3"], ref):
        for color, value in zip(["c1", "c2"], q):
            assert res.get("tokens", name, color) == pytest.approx(value, rel=1e-6), (name, color)


def test_server_pools_twin_of_ispass03_has_its_63271_states():
    """QPME's ispass03 structure (pools of threads, connections, processes)."""
    net = qpn.load(os.path.join(DATA, "server_pools.qpe"))
    twin = qpn.load(os.path.join(DATA, "server_pools.qpn"))
    res, ref = solvers.solve(net, "ctmc"), solvers.solve(twin, "ctmc")
    assert res.info["states"] == 63271
    # the web server's CPU is the bottleneck: throughput just below its rate 0.0142857
    x = res.get("departures", "wls_cpu")
    assert 0.0142857 * (1 - 1e-6) < x < 0.0142857
    for place in ("threads", "conns", "procs", "db_cpu", "db_io", "clients", "wls_cpu"):
        assert res.get("tokens", place) == pytest.approx(ref.get("tokens", place), rel=1e-9)


# ------------------------------------------------------------------- round trips
ROUND_TRIP = ["central_server", "mm1", "tandem", "mutex", "bounded_queue", "subnets", "barrier",
              "mmc"]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip_import_export_import_is_a_fixed_point(name, tmp_path):
    net = qpn.load(f"{MODELS}/{name}.qpn")
    xml1 = qpn_to_qpe(qpn.compile_net(net))
    net1, text1, _ = imported(xml1)
    xml2 = qpn_to_qpe(qpn.compile_net(net1))
    net2, text2, _ = imported(xml2)
    assert net2 == net1          # the models are equal (comments keep QPME's names)
    assert xml2 == qpn_to_qpe(qpn.compile_net(net2))
    # and the imported model means what the original meant
    method = "mva" if name in ("central_server", "tandem", "mmc", "mm1") else "ctmc"
    a, b = solvers.solve(net, method), solvers.solve(net1, method)
    for m in ("tokens", "departures"):
        for row in a.rows:
            if row.measure == m and not row.color and math.isfinite(row.value):
                el = row.element.replace(".", "_")
                assert b.get(m, el) == pytest.approx(row.value, rel=1e-9, abs=1e-12), (m, el)


def test_two_stage_choice_of_a_competing_multimode_transition():
    """QPME picks a transition by weight, then a mode: 'back' (weight 3) with modes of
    firing weights 1 and 2 against 'other' (weight 1) routes 1/4, 2/4 and 1/4."""
    x = EXAMPLE.decode()
    x = x.replace('name="back" priority="0" weight="1"', 'name="back" priority="0" weight="3"')
    x = x.replace('<modes><mode id="m2" name="mode 1" firing-weight="1" real-color="#000000"/></modes>',
                  '<modes><mode id="m2" name="slow" firing-weight="1" real-color="#000000"/>'
                  '<mode id="m3" name="fast" firing-weight="2" real-color="#000000"/></modes>')
    x = x.replace('<connection id="x4" source-id="m2" target-id="r2" count="1"/>',
                  '<connection id="x4" source-id="m2" target-id="r2" count="1"/>'
                  '<connection id="x5" source-id="r1" target-id="m3" count="1"/>'
                  '<connection id="x6" source-id="m3" target-id="r2" count="1"/>')
    x = x.replace('  </transitions>', """
    <transition id="t3" name="other" priority="0" weight="1" xsi:type="immediate-transition"
                xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
      <modes><mode id="m4" name="mode 1" firing-weight="1" real-color="#000000"/></modes>
      <connections>
        <connection id="x7" source-id="r1" target-id="m4" count="1"/>
        <connection id="x8" source-id="m4" target-id="r2" count="1"/>
      </connections>
    </transition>
  </transitions>""")
    net, text, notes = imported(x)
    assert not notes      # both modes take the same input: the translation is exact
    res = solvers.solve(net, "ctmc")
    total = res.get("throughput", "go")
    assert total == pytest.approx(2.0, rel=1e-12)     # the server is always busy
    assert res.get("throughput", "back", "slow") == pytest.approx(total / 4, rel=1e-12)
    assert res.get("throughput", "back", "fast") == pytest.approx(total / 2, rel=1e-12)
    assert res.get("throughput", "other") == pytest.approx(total / 4, rel=1e-12)


def test_a_subnet_place_is_flattened_between_its_input_and_output_places():
    """A hand-written subnet place (QPME's editor's structure: input-place, 'actual
    population', output-place) holding a FCFS server for 4 users thinking exp(1):
    the machine-repairman closed form, throughput 2 (1 - p0) with 1/p0 = 10.5."""
    net, text, _ = imported(SUBNET.encode(), "subnet_server.qpe")
    assert "place storage_disk : color" in text and "in subnet place 'storage'" in text
    res = solvers.solve(net, "ctmc")
    assert res.get("departures", "storage_disk") == pytest.approx(2 * (1 - 1 / 10.5), rel=1e-9)
    assert res.get("tokens", "users") + res.get("tokens", "storage_actual_population") == \
        pytest.approx(4, rel=1e-12)


def test_simqpn_run_settings_become_the_qpn_options_of_the_same_run():
    meta = ('  <meta-attributes><meta-attribute configuration-name="cfg" id="m9" ramp-up-length="5E3" '
            'scenario="1" stopping-rule="FIXEDLEN" total-run-length="1E5" xsi:type="simqpn-configuration" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"/></meta-attributes>\n</net>')
    _, text, _ = imported(EXAMPLE.decode().replace("</net>", meta))
    line = [x for x in text.splitlines() if x.startswith("# SimQPN configuration 'cfg'")]
    assert line and line[0].endswith("qpn solve FILE --method des --time 100000 --warmup 5000")
    assert "batch means, a fixed length" in line[0]


def test_files_of_qpme_1_5_name_their_types_without_the_xsi_prefix():
    old = EXAMPLE.decode().replace("xsi:type=", "type=")
    net, text, _ = imported(old)
    assert "queue fcfs" in text
    ref = solvers.solve(imported(EXAMPLE)[0], "ctmc")
    assert solvers.solve(net, "ctmc").get("departures", "server") == \
        pytest.approx(ref.get("departures", "server"), rel=1e-12)


# ---------------------------------------------------------------- located errors
def _mutate(old, new):
    src = EXAMPLE.decode()
    assert old in src, old
    return src.replace(old, new, 1)


with open(os.path.join(DATA, "subnet_server.qpe"), "rb") as _fh:
    SUBNET = _fh.read().decode()


def _sub_mutate(old, new):
    assert old in SUBNET, old
    return SUBNET.replace(old, new, 1)


BROKEN = [
    ("truncated", EXAMPLE.decode()[:400], "not well-formed XML"),
    ("not a net", '<?xml version="1.0"?>\n<model/>\n', "not a QPME model"),
    ("doctype", EXAMPLE.decode().replace('<net ', '<!DOCTYPE net [<!ENTITY a "b">]>\n<net ', 1),
     "document type declaration"),
    ("unknown color", _mutate('color-id="c1" initial-population="0"', 'color-id="c9" initial-population="0"'),
     "color-id 'c9' names no color"),
    ("unknown queue", _mutate('queue-ref="q1"\n           xsi:type="queueing-place"',
                              'queue-ref="q7"\n           xsi:type="queueing-place"'),
     "queue-ref 'q7' names no queue"),
    ("strategy", _mutate('strategy="FCFS"', 'strategy="LIFO"'), "unknown queueing strategy 'LIFO'"),
    ("lambda text", _mutate('lambda="2"', 'lambda="fast"'), "attribute 'lambda' is not a number"),
    ("lambda negative", _mutate('lambda="2"', 'lambda="-2"'), "attribute 'lambda' = -2 is out of range"),
    ("lambda missing", _mutate('lambda="2"', ''), "attribute 'lambda' is missing"),
    ("distribution", _mutate('"Exponential"', '"BreitWigner"'), "distribution 'BreitWigner' has no qpn"),
    ("fifo taking two", _mutate('id="x3" source-id="r1" target-id="m2" count="1"',
                                'id="x3" source-id="r1" target-id="m2" count="2"').replace(
        'departure-discipline="NORMAL" queue-ref="q1"\n           xsi:type="queueing',
        'departure-discipline="FIFO" queue-ref="q1"\n           xsi:type="queueing'),
     "whose FIFO departure offers one at a time"),
    ("unknown departure", _mutate('departure-discipline="NORMAL" queue-ref="q1"',
                                  'departure-discipline="LIFO" queue-ref="q1"'),
     "unknown departure discipline 'LIFO'"),
    ("subnet without a net", _mutate('xsi:type="ordinary-place"', 'xsi:type="subnet-place"'),
     "has 0 <subnet> elements"),
    ("subnet without its output place", _sub_mutate('name="output-place"', 'name="out"'),
     "has no output-place"),
    ("tokens on a subnet place", _sub_mutate('initial-population="0" maximum-capacity="0"\n        direction',
                                             'initial-population="2" maximum-capacity="0"\n        direction'),
     "initial tokens on a subnet place"),
    ("dangling connection", _mutate('source-id="r2"', 'source-id="r5"'), "does not join"),
    ("count zero", _mutate('id="x1" source-id="r2" target-id="m1" count="1"',
                           'id="x1" source-id="r2" target-id="m1" count="0"'), "attribute 'count' = 0"),
    ("fractional population", _mutate('initial-population="3"', 'initial-population="2.5"'),
     "attribute 'initial-population' = 2.5"),
    ("no servers", _mutate('number-of-servers="1"', 'number-of-servers="0"'), "number-of-servers"),
    ("duplicate ref", _mutate('id="r2"', 'id="r1"'), "color-ref id 'r1' is used twice"),
    ("no modes", _mutate('<modes><mode id="m2" name="mode 1" firing-weight="1" real-color="#000000"/></modes>',
                         '<modes></modes>'), "has no modes"),
    ("transition type", _mutate('xsi:type="immediate-transition"', 'xsi:type="stochastic"'),
     "unknown transition type"),
    ("weight zero", _mutate('firing-weight="1" real-color="#000000"/></modes>\n      <connections>\n'
                            '        <connection id="x1"',
                            'firing-weight="0" real-color="#000000"/></modes>\n      <connections>\n'
                            '        <connection id="x1"'), "attribute 'firing-weight' = 0"),
    ("no colors", _mutate('<colors><color id="c1" name="job" real-color="#000000"/></colors>', '<colors/>'),
     "declares no colors"),
    ("not utf-8 name", _mutate('name="users"', 'name="us\udcffers"'), None),
    ("place type", _mutate('xsi:type="ordinary-place"', 'xsi:type="bogus-place"'), "unknown place type 'bogus-place'"),
    ("uniform order", _mutate('distribution-function="Exponential" lambda="2"',
                              'distribution-function="Uniform" min="3" max="1"'), "Uniform with min 3 > max 1"),
    ("timed without delay", _mutate('xsi:type="immediate-transition"', 'xsi:type="timed-transition"'),
     "attribute 'mean-firing-delay' is missing"),
]


@pytest.mark.parametrize("label,text,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_qpe_files_give_located_errors(label, text, message):
    data = text.encode("utf-8", "surrogateescape")
    try:
        net, _, _ = imported(data, "broken.qpe")
    except ModelError as e:
        assert e.loc is not None and e.loc.file == "broken.qpe" and e.loc.line >= 1
        if message:
            assert message in str(e), str(e)
        shown = str(e)
        assert "broken.qpe:" in shown
        return
    assert message is None, f"{label}: no error"


def test_error_names_the_element_and_shows_its_line():
    text = _mutate('lambda="2"', 'lambda="-2"')
    with pytest.raises(ModelError) as e:
        imported(text, "m.qpe")
    line = text[:text.index('lambda="-2"')].count("\n") + 1
    ref_line = text[:text.index('<color-ref id="r1"')].count("\n") + 1
    assert e.value.loc.line == ref_line and line >= ref_line
    assert '<color-ref id="r1">' in str(e.value)


# ------------------------------------------------------------------------ CLI
def test_cli_convert_both_ways_and_solve_a_qpe_file(tmp_path, capsys):
    qpe = tmp_path / "m.qpe"
    qpe.write_bytes(EXAMPLE)
    out = tmp_path / "m.qpn"
    assert main(["convert", str(qpe), "-o", str(out)]) == 0
    assert "net m" in out.read_text()
    back = tmp_path / "back.qpe"
    assert main(["convert", str(out), "-o", str(back)]) == 0
    assert back.read_text().startswith("<?xml")
    assert main(["solve", str(qpe), "--method", "ctmc"]) == 0
    assert main(["fmt", "--write", str(qpe)]) == 2          # never overwrite XML with qpn text
    assert qpe.read_bytes() == EXAMPLE
    assert main(["convert", str(qpe), "-o", str(qpe)]) == 2
    assert main(["convert", str(qpe), "-o", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err
    assert "would overwrite its input" in err and "turns .qpe, .pnml or .lqn into .qpn and back" in err


def test_export_refuses_what_qpme_cannot_say():
    for name, message in (("rr_cpu", "QPME has no rr queues"), ("priorities", "no inhibitor arcs"),
                          ("fifo_departure", "in-order departure"), ("distributions", "no hyperexp")):
        with pytest.raises(ModelError, match=message) as e:
            qpn_to_qpe(qpn.compile_net(qpn.load(f"{MODELS}/{name}.qpn")))
        assert e.value.loc is not None and e.value.loc.file.endswith(f"{name}.qpn")


def test_an_error_in_the_translation_is_shown_at_the_qpme_element_that_made_it(tmp_path):
    # the reader takes 1e308 servers (a number >= 1); qpn's queue refuses it: the error
    # stands at the place that uses the queue, with its translated line as a hint
    text = open(os.path.join(DATA, "bcmp_twin.qpe"), encoding="utf-8").read()
    old = '<queue id="_q4" name="disk2" number-of-servers="2"'
    assert old in text
    f = tmp_path / "m.qpe"
    f.write_text(text.replace(old, old.replace('"2"', '"1e308"')))
    with pytest.raises(ModelError) as err:
        qpn.load(str(f))
    e = err.value
    place_line = next(i for i, ln in enumerate(text.splitlines(), 1) if 'name="disk2" queue-ref' in ln)
    assert (e.loc.file, e.loc.line) == (str(f), place_line)
    assert e.message.startswith("place 'disk2' translates to qpn that is not valid: ")
    assert "servers" in e.message and "(as qpn)" not in str(e)
    assert "of 'qpn convert'): queue fcfs servers 1" in e.hint
