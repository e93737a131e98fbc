"""``qpn solve --sweep``: ranges, one table per measure, exact analytic points,
simulated points as lanes of one run (within their confidence intervals),
JSON/CSV exports and clear errors."""
import csv
import json
import subprocess
import sys

import pytest

from qpn.cli import main
from qpn.errors import ParameterError
from qpn.solvers.sweep import parse_range, parse_sweeps, parse_values, sweep_points

from conftest import MODELS

MM1 = f"{MODELS}/mm1.qpn"
MMC = f"{MODELS}/mmc.qpn"


def mm1_exact(lam: float, demand: float = 1.0) -> dict:
    rho = lam * demand
    return {"utilization": rho, "tokens": rho / (1 - rho), "response": demand / (1 - rho),
            "throughput": lam}


def erlang_c_response(lam: float, c: int, demand: float = 1.0) -> float:
    import math
    a = lam * demand
    rho = a / c
    top = a ** c / math.factorial(c) / (1 - rho)
    pw = top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)
    return demand + pw * demand / (c * (1 - rho))


def tables(out: str) -> dict[str, list[dict[str, str]]]:
    """The sweep tables of stdout: {measure: [{column: cell}]} (cells cut by the dash line)."""
    res: dict[str, list[dict[str, str]]] = {}
    lines = out.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.endswith(":") and i + 2 < len(lines) and set(lines[i + 2]) <= {"-", " "} and lines[i + 2]:
            measure = line[:-1].split(" [")[0]
            spans, pos = [], 0
            for dash in lines[i + 2].split("  "):
                spans.append((pos, pos + len(dash)))
                pos += len(dash) + 2
            cut = lambda s: [s[a:b].strip() for a, b in spans]  # noqa: E731
            head = cut(lines[i + 1])
            rows = []
            i += 3
            while i < len(lines) and lines[i].strip():
                rows.append(dict(zip(head, cut(lines[i].ljust(pos)))))
                i += 1
            res[measure] = rows
        else:
            i += 1
    return res


def value_ci(cell: str) -> tuple[float, float | None]:
    if "±" in cell:
        v, h = cell.split("±")
        return float(v), float(h)
    return float(cell), None


# ----------------------------------------------------------------- parsing
def test_ranges_are_inclusive_exact_and_keep_integers():
    assert parse_values("10:100:10") == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert all(type(v) is int for v in parse_values("10:100:10"))
    assert parse_values("0.1:0.5:0.1") == [0.1, 0.2, 0.3, 0.4, 0.5]          # no 0.30000000000000004
    assert parse_values("0:1:0.3") == [0, 0.3, 0.6, 0.9]                      # stop not on the grid
    assert parse_values("1:0:-0.25") == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert parse_values("1e-3:3e-3:1e-3") == [0.001, 0.002, 0.003]
    assert parse_values("5:5:1") == [5]
    assert parse_values("1,2, 10:30:10") == [1, 2, 10, 20, 30]
    assert parse_values("1,2.5,10 ms") == [1, 2.5, "10 ms"]                   # text stays an expression
    assert len(parse_range("0:1:0.001")) == 1001
    sweep = parse_sweeps(["threads=1,2", "rate=10:30:10"])
    assert list(sweep) == ["threads", "rate"]
    assert sweep_points(sweep)[:3] == [{"threads": 1, "rate": 10}, {"threads": 1, "rate": 20},
                                       {"threads": 1, "rate": 30}]
    assert len(sweep_points(sweep)) == 6


@pytest.mark.parametrize("spec, message", [
    ("rate=1:2", "malformed range '1:2'"),
    ("rate=1:2:3:4", "malformed range"),
    ("rate=1::2", "malformed range"),
    ("rate=1:x:1", "the range stop 'x' is not a plain number"),
    ("rate=10ms:20ms:1ms", "the range start '10ms' is not a plain number"),
    ("rate=1:2:0", "step must not be zero"),
    ("rate=10:1:1", "a step of 1 never reaches 1 from 10"),
    ("rate=0:1e9:1", "at most 100,000"),
    ("rate", "expects NAME=VALUES"),
    ("=1,2", "no name"),
    ("rate=", "no values"),
    ("rate=1,,2", "empty value"),
])
def test_malformed_sweeps_are_parameter_errors(spec, message):
    with pytest.raises(ParameterError, match=message):
        parse_sweeps([spec])


def test_a_parameter_swept_twice_is_refused():
    with pytest.raises(ParameterError, match="given twice"):
        parse_sweeps(["rate=1", "rate=2"])


# ------------------------------------------------------- analytic sweeps
def test_mva_sweep_matches_mm1_closed_forms_per_point(tmp_path, capsys):
    js, cs = tmp_path / "s.json", tmp_path / "s.csv"
    lams = [0.1, 0.3, 0.5, 0.7, 0.9]
    assert main(["solve", MM1, "--method", "mva", "--sweep", "lambda=0.1:0.9:0.2",
                 "--measure", "utilization,response,tokens", "--json", str(js), "--csv", str(cs)]) == 0
    cap = capsys.readouterr()
    t = tables(cap.out)
    assert list(t) == ["utilization", "response", "tokens"]          # --measure order, others left out
    assert cap.out.startswith("mm1: mva, sweep over lambda (5 points)")
    for m in t:
        assert [float(r["lambda"]) for r in t[m]] == lams
        for r in t[m]:
            assert float(r["server"]) == pytest.approx(mm1_exact(float(r["lambda"]))[m], rel=1e-5)
    assert "sweep over lambda: 5 point(s) solved by mva" in cap.err
    # JSON: every point with its full result, exact
    d = json.loads(js.read_text())
    assert d["method"] == "mva" and d["sweep"] == {"lambda": lams}
    assert [p["params"] for p in d["points"]] == [{"lambda": x} for x in lams]
    for p in d["points"]:
        ex = mm1_exact(p["params"]["lambda"])
        cells = {(c["measure"], c["element"]): c for c in p["result"]["measures"]}
        assert p["result"]["params"]["lambda"] == p["params"]["lambda"]
        assert p["result"]["params"]["demand"] == 1
        for m in ("utilization", "tokens", "response"):
            assert cells[(m, "server")]["value"] == pytest.approx(ex[m], rel=1e-12)
        assert cells[("throughput", "arrive")]["value"] == pytest.approx(ex["throughput"], rel=1e-12)
    # CSV: long format, every measure of every point
    rows = list(csv.DictReader(cs.open()))
    assert list(rows[0]) == ["lambda", "measure", "element", "color", "value", "ci_halfwidth", "unit"]
    assert len(rows) == 5 * len(d["points"][0]["result"]["measures"])
    resp = [r for r in rows if r["measure"] == "response"]
    assert [(float(r["lambda"]), r["unit"], r["ci_halfwidth"]) for r in resp] == [(x, "s", "") for x in lams]
    assert all(float(r["value"]) == pytest.approx(mm1_exact(float(r["lambda"]))["response"], rel=1e-12)
               for r in resp)


def test_ctmc_sweep_over_two_parameters_is_the_cartesian_product(capsys):
    assert main(["solve", MM1, "-m", "ctmc", "--sweep", "lambda=0.2,0.5", "--sweep", "demand=0.5:1.5:0.5",
                 "--measure", "response", "-q"]) == 0
    cap = capsys.readouterr()
    assert cap.err == ""                                                 # -q: nothing on stderr
    rows = tables(cap.out)["response"]
    assert [(float(r["lambda"]), float(r["demand"])) for r in rows] == \
        [(0.2, 0.5), (0.2, 1.0), (0.2, 1.5), (0.5, 0.5), (0.5, 1.0), (0.5, 1.5)]
    for r in rows:
        lam, dem = float(r["lambda"]), float(r["demand"])
        if lam * dem < 1:
            assert float(r["server"]) == pytest.approx(mm1_exact(lam, dem)["response"], rel=1e-5)


def test_auto_and_symbolic_sweeps_say_what_they_used(capsys):
    assert main(["solve", MMC, "--sweep", "c=4,5", "--measure", "response"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("mmc: auto (chose mva), sweep over c (2 points)")
    for r in tables(cap.out)["response"]:
        assert float(r["station"]) == pytest.approx(erlang_c_response(3, int(r["c"])), rel=1e-5)
    assert main(["solve", MM1, "-m", "symbolic", "--sweep", "lambda=0.25,0.5", "--measure", "tokens", "-q"]) == 0
    rows = tables(capsys.readouterr().out)["tokens"]
    assert [float(r["server"]) for r in rows] == pytest.approx([1 / 3, 1.0], rel=1e-5)   # 6 digits


def test_unstable_points_are_reported_and_the_others_kept(tmp_path, capsys):
    js = tmp_path / "s.json"
    assert main(["solve", MM1, "-m", "mva", "--sweep", "lambda=0.5,1.2", "--measure", "utilization",
                 "--json", str(js)]) == 5
    cap = capsys.readouterr()
    assert cap.out.splitlines()[0].endswith("(2 points) -- UNSTABLE at 1 point(s)")
    rows = tables(cap.out)["utilization"]
    assert rows[0]["server"] == "0.5" and rows[1]["server"] == "-"
    assert "unstable at lambda=1.2: the open workload saturates place server" in cap.err
    pts = json.loads(js.read_text())["points"]
    assert pts[0]["result"]["status"] == "ok"
    assert pts[1]["result"]["status"] == "unstable" and "saturates" in pts[1]["result"]["reason"]
    # every point unstable: still the unstable status, naming the point, no traceback
    assert main(["solve", MM1, "-m", "mva", "--sweep", "lambda=1.5,2"]) == 5
    err = capsys.readouterr().err
    assert "unstable at lambda=1.5:" in err and "Traceback" not in err


# --------------------------------------------------------- simulated sweeps
def test_des_sweep_runs_as_lanes_and_covers_the_closed_forms(tmp_path, capsys):
    js = tmp_path / "s.json"
    args = ["solve", MM1, "-m", "des", "--sweep", "lambda=0.3,0.6", "--time", "20000", "--seed", "11",
            "--replications", "10", "--measure", "utilization,tokens,response,throughput", "--json", str(js)]
    assert main(args) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("mm1: des, sweep over lambda (2 points), 95% confidence intervals")
    assert "2 point(s) x 10 replication(s) = 20 lanes in one engine run" in cap.err
    t = tables(cap.out)
    assert list(t) == ["utilization", "tokens", "response", "throughput"]
    for m, col in (("utilization", "server"), ("tokens", "server"), ("response", "server"),
                   ("throughput", "arrive"), ("throughput", "leave")):
        for r in t[m]:
            exact = mm1_exact(float(r["lambda"]))["throughput" if m == "throughput" else m]
            v, h = value_ci(r[col])
            assert h is not None and 0 < h < 0.05 * exact, (m, r)      # a real, narrow interval
            assert abs(v - exact) <= 2.5 * h, (m, r, exact)             # within 2.5 printed half-widths
    d = json.loads(js.read_text())
    assert d["info"]["lanes"] == 20 and d["method"] == "des"
    for p in d["points"]:
        res = p["result"]
        assert res["level"] == 0.95 and res["info"]["replications"] == 10 and res["info"]["seed"] == 11
        assert res["params"]["lambda"] == p["params"]["lambda"]
        assert res["info"]["simulated_time"] == pytest.approx(20000, rel=0.01)
    # the same seed reproduces the same table
    assert main(args) == 0
    assert tables(capsys.readouterr().out) == t


def test_des_options_reach_the_simulator(tmp_path, capsys):
    base = ["solve", MM1, "-m", "des", "--sweep", "lambda=0.5,0.5", "--time", "30 min", "-R", "4",
            "--measure", "tokens", "-q"]
    assert main(base + ["--crn"]) == 0
    a, b = [r["server"] for r in tables(capsys.readouterr().out)["tokens"]]
    assert a == b                                                        # common random numbers
    assert main(base + ["--option", "crn=true"]) == 0                   # --option still works
    assert [r["server"] for r in tables(capsys.readouterr().out)["tokens"]] == [a, b]
    assert main(base) == 0
    a2, b2 = [r["server"] for r in tables(capsys.readouterr().out)["tokens"]]
    assert a2 == a and b2 != b                                          # independent streams
    js = tmp_path / "s.json"
    assert main(base + ["--level", "0.9", "--warmup", "none", "--no-histograms", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "90% confidence intervals" in out
    res = json.loads(js.read_text())["points"][0]["result"]
    assert res["level"] == 0.9 and res["info"]["replications"] == 4
    assert res["info"]["simulated_time"] == pytest.approx(1800, rel=0.01)        # 30 min
    assert res["info"]["warmup_time"] == 0                                       # --warmup none
    assert not any(m["measure"] == "residence_p50" for m in res["measures"])    # no histograms


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("args, message", [
    (["--sweep", "lamda=0.1,0.2"], ["--sweep: unknown parameter 'lamda'", "did you mean 'lambda'?",
                                    "one of: demand, lambda"]),
    (["--sweep", "lambda=0.1:0.5"], ["malformed range '0.1:0.5'", "start:stop:step"]),
    (["--sweep", "lambda=0.1:fast:0.1"], ["the range stop 'fast' is not a plain number"]),
    (["--sweep", "lambda=fast"], ["--sweep lambda=fast:", "'fast' is neither"]),
    (["--sweep", "demand=-1", "-m", "mva"], ["sweep point demand=-1 does not make a valid net",
                                             "mean must be a positive"]),
    (["--sweep", "lambda=0.5", "--set", "lambda=0.2"], ["both with --set and with --sweep"]),
    (["--sweep", "lambda=0.5", "--compare", "ctmc"], ["--compare cannot be combined with --sweep"]),
    (["-m", "mva", "--seed", "3"], ["--seed is a simulation option", "--method mva"]),
    (["-m", "auto", "--scheduler", "tcp://127.0.0.1:1"], ["--scheduler needs --method des"]),
    (["--measure", "utilisation"], ["unknown measure 'utilisation'", "did you mean 'utilization'?"]),
])
def test_user_mistakes_are_clear_errors(args, message, capsys):
    assert main(["solve", MM1] + args) == 2
    cap = capsys.readouterr()
    for m in message:
        assert m in cap.err, cap.err
    assert cap.out == "" and "Traceback" not in cap.err


def test_scheduler_without_the_distributed_simulator_is_a_clear_error(monkeypatch, capsys):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "qpn.solvers.des.distributed" else real(name, *a))
    for extra in ([], ["--sweep", "lambda=0.5,0.6"]):
        assert main(["solve", MM1, "-m", "des", "--scheduler", "tcp://127.0.0.1:1", "--time", "10"] + extra) == 2
        cap = capsys.readouterr()
        assert "distributed simulation (--scheduler) is not available" in cap.err and cap.out == ""


def test_scheduler_sweep_gives_the_local_numbers(capsys):
    distributed = pytest.importorskip("dask.distributed")
    args = ["solve", MM1, "-m", "des", "--sweep", "lambda=0.3,0.6", "--time", "5000", "--seed", "5",
            "--measure", "utilization,tokens", "-q"]
    assert main(args) == 0
    local = tables(capsys.readouterr().out)
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=":0") as cluster:
        assert main(args + ["--scheduler", cluster.scheduler_address]) == 0
    assert tables(capsys.readouterr().out) == local


@pytest.mark.parametrize("args, message", [
    (["--level", "95"], "argument --level: must be between 0 and 1"),
    (["--seed", "x"], "argument --seed: expected an integer, got 'x'"),
    (["--time", "-5"], "argument --time: must be > 0"),
    (["--warmup", "soon"], "argument --warmup: expected 'mser', 'none' or a time"),
    (["--events", "1.5"], "argument --events: expected a whole number"),
])
def test_bad_option_values_are_usage_errors(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["solve", MM1] + args)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_console_sweep_errors_have_no_traceback():
    # (the entry point as installed; `python -m qpn.cli` registers no plugin commands)
    entry = "import sys; from qpn.cli import main; sys.exit(main(sys.argv[1:]))"
    for args, text in ((["--sweep", "lamda=1,2"], "did you mean 'lambda'?"),
                       (["--sweep", "lambda=1:2:0"], "step must not be zero")):
        proc = subprocess.run([sys.executable, "-c", entry, "solve", MM1] + args,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and text in proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""
