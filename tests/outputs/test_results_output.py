"""Results people look at: units in tables, plots of results, sweeps and
verifications, the HTML report, DataFrames and notebook views."""
import json
import os
import re
import shutil
import subprocess

import pytest

import qpn
from qpn import solvers
from qpn.cli import main
from qpn.errors import QPNError

from conftest import MODELS

matplotlib = pytest.importorskip("matplotlib")   # the 'plot' extra (installed with 'test')


def _result(name="central_server", method="mva", options=None):
    return solvers.solve(qpn.load(f"{MODELS}/{name}.qpn"), method, options=options)


def test_tables_carry_units():
    text = _result().table()
    head = text.splitlines()[1].split()
    assert head == ["measure", "element", "color", "unit", "value"]
    line = next(l for l in text.splitlines() if l.startswith("throughput") and "submit" in l)
    assert "1/s" in line.split()
    assert any(l.startswith("residence") and " s " in l for l in text.splitlines())


def test_result_figure_has_a_panel_per_measure_with_units_and_a_bar_per_element():
    from qpn.solvers.plot import figure
    res = _result()
    fig = figure(res.to_dict())
    axes = fig.get_axes()
    assert [a.get_xlabel() for a in axes] == ["utilization", "throughput [1/s]", "tokens"]
    queues = [r for r in res.rows if r.measure == "utilization" and not r.color]
    assert len(axes[0].patches) == len(queues) == 4
    assert [t.get_text() for t in axes[0].get_yticklabels()] == [r.element for r in queues]


def test_simulated_result_figure_draws_confidence_intervals():
    from qpn.solvers.plot import figure
    res = _result("mm1", "des", {"seed": 1, "wall": 30})
    fig = figure(res.to_dict(), ["tokens"])
    ax = fig.get_axes()[0]
    assert any(type(c).__name__ == "ErrorbarContainer" for c in ax.containers)   # CI whiskers


def test_sweep_figure_plots_each_element_against_the_swept_parameter():
    from qpn.solvers.plot import figure
    from qpn.solvers.sweep import run_sweep
    net = qpn.load(f"{MODELS}/tandem.qpn")
    sw = run_sweep(net, "mva", {"N": [1, 2, 4, 8]}, {})
    fig = figure(sw.to_dict(), ["throughput"])
    ax = fig.get_axes()[0]
    transitions = {r.element for r in sw.points[0].result.rows if r.measure == "throughput"}
    assert ax.get_xlabel() == "N" and ax.get_ylabel() == "throughput [1/s]"
    assert len(ax.get_lines()) == len(transitions)
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2, 4, 8]


def test_verify_figure_is_predicted_against_measured():
    from qpn.solvers.plot import figure
    d = {"suite": "s", "expr": "rate", "mean_eps": 0.05,
         "rows": [{"point": {"threads": t}, "measured": m, "predicted": p}
                  for t, m, p in ((1, 10.0, 10.5), (2, 19.0, 18.0), (4, 30.0, 33.0))]}
    ax = figure(d).get_axes()[0]
    assert ax.get_xlabel() == "measured rate" and ax.get_ylabel() == "predicted"
    assert ax.collections[0].get_offsets().shape == (3, 2)
    assert "mean eps 5.0%" in ax.get_title()


def test_cli_plot_and_solve_plot_write_png_and_svg(tmp_path, capsys):
    js, png, svg = tmp_path / "r.json", tmp_path / "r.png", tmp_path / "s.svg"
    assert main(["solve", f"{MODELS}/central_server.qpn", "--json", str(js), "--plot", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg")) and svg.stat().st_size > 10_000
    assert main(["plot", str(js), "-o", str(png)]) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize("content,message", [
    ("not json", "not JSON"), ("[1, 2]", "not a qpn result"), ('{"a": 1}', "not a qpn result")])
def test_cli_plot_refuses_files_that_are_not_results(tmp_path, capsys, content, message):
    f = tmp_path / "x.json"
    f.write_text(content)
    assert main(["plot", str(f)]) == 2
    assert message in capsys.readouterr().err


def test_plot_output_must_be_png_or_svg(tmp_path, capsys):
    assert main(["solve", f"{MODELS}/mm1.qpn", "--plot", str(tmp_path / "x.pdf")]) == 2
    assert "--plot writes .png or .svg files" in capsys.readouterr().err


def test_report_is_one_page_with_method_tables_units_figures_and_model(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", f"{MODELS}/central_server.qpn", "-o", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "auto: chose mva" in page and "product form" in page
    assert page.count("<table>") == len(_result().measures())
    assert "<td>1/s</td>" in page and "<svg" in page
    assert "<script" not in page and not re.search(r'(src|href)="https?:', page)   # nothing loaded
    assert "central_server" in page and "terminals" in page         # the model summary
    assert out.stat().st_size > 20_000


def test_report_of_a_simulation_shows_intervals_and_observations(tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", f"{MODELS}/mm1.qpn", "-o", str(out), "-m", "des", "--seed", "1"]) == 0
    page = out.read_text()
    assert "95% confidence intervals" in page and "observations" in page


def test_report_renders_in_headless_chromium(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt install chromium): the page is checked for "
                    "content above, its rendering is not")
    out = tmp_path / "r.html"
    assert main(["report", f"{MODELS}/central_server.qpn", "-o", str(out)]) == 0
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          out.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert "auto: chose mva" in dom and "<svg" in dom


def test_to_frame_and_notebook_view():
    pd = pytest.importorskip("pandas")
    res = _result()
    df = res.to_frame()
    assert list(df.columns) == ["measure", "element", "color", "value", "ci", "n", "unit"]
    assert len(df) == len(res.rows)
    row = df[(df.measure == "throughput") & (df.element == "submit") & (df.color == "")]
    assert float(row.value.iloc[0]) == pytest.approx(res.get("throughput", "submit"), rel=1e-15)
    assert row.unit.iloc[0] == "1/s"
    html = res._repr_html_()
    assert html.count("<table>") == len(res.measures()) and "<td>1/s</td>" in html


def test_a_measure_over_no_observations_is_n_a_with_a_note_and_null_in_json(tmp_path, capsys):
    # nothing ever enters b: its residence time is a mean over no tokens
    model = tmp_path / "idle.qpn"
    model.write_text("place a queue is service exp(1)\nplace b queue fcfs service exp(1)\n"
                     "transition src : -> a delay exp(1)\ntransition out : a ->\n"
                     "transition never : b -> a\n")
    out_json = tmp_path / "r.json"
    assert main(["solve", str(model), "--method", "des", "--time", "200", "--seed", "1",
                 "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("residence ") and " b " in ln)
    assert row.split()[3] == "n/a" and "nan" not in out
    assert out.rstrip().endswith("null in the JSON") and out.count("n/a:") == 1
    cells = json.loads(out_json.read_text())["measures"]
    assert next(c for c in cells if c["measure"] == "residence" and c["element"] == "b")["value"] is None
