"""MPI programs in verification suites (issue 19): ``[program] launcher`` runs the program
under mpiexec; the measured runs trace at 2 ranks and predict 1, 2 and 4."""
import os

import pytest

from qpn.errors import QPNError
from qpn.frontends.verify import verify
from qpn.frontends.verify.manifest import load_suite
from qpn.frontends.verify.measure import program_key
from conftest import ROOT_DIR

SUITES = os.path.join(ROOT_DIR, "suites")


def test_the_launcher_comes_before_the_program_and_is_part_of_what_is_measured():
    s = load_suite(os.path.join(SUITES, "mpi_jacobi"))
    argv = s.command({"ranks": 4})
    assert argv[1:3] == ["-n", "4"] and argv[0].endswith("mpiexec")
    assert argv[4].endswith("mpi_jacobi.py") and argv[5:] == ["768", "1500"]
    # the same program and arguments at another rank count is another measurement
    assert program_key(s, {"ranks": 1}) != program_key(s, {"ranks": 4})


def test_a_launcher_that_is_not_a_list_of_words_is_refused(tmp_path):
    prog = os.path.join(ROOT_DIR, "tests", "programs", "mpi_jacobi.py")
    (tmp_path / "suite.toml").write_text(
        f'[program]\npath = "{prog}"\nlauncher = "mpiexec -n 2"\nargs = []\n[grid]\nranks = [1]\n'
        '[build]\nconfigs = [{ranks = 1}]\n[predict]\nexpr = "1"\n')
    with pytest.raises(QPNError, match=r"\[program\] launcher must be a list of strings"):
        load_suite(str(tmp_path))


@pytest.mark.measured
@pytest.mark.parametrize("name", ["mpi_nbody", "mpi_heat"])
def test_the_program_is_predicted_within_15_percent_at_1_2_4_ranks(name, tmp_path):
    """mpi_nbody: Allgather + allreduce around 4.4 ms of numpy per step (at 2 ranks);
    mpi_heat: non-blocking halo exchange overlapped with 0.57 ms of numpy, a convergence
    check (allreduce) every 10th iteration."""
    rep = verify(os.path.join(SUITES, name), out_dir=str(tmp_path), retrace=True)
    print("\n" + rep.table())
    assert [r["point"]["ranks"] for r in rep.rows] == [1, 2, 4]
    assert max(r["eps"] for r in rep.rows) <= 0.15, rep.table()


@pytest.mark.measured
def test_the_jacobi_stencil_at_1_2_ranks_within_15_percent_4_ranks_under(tmp_path):
    """Sendrecv x 2 + allreduce around 0.5 ms of numpy per iteration (at 2 ranks).  With
    4 ranks on 2 cores each rank's compute grows ~10% and the last rank into the
    allreduce waits ~40 us for partners that are not running (2026-11-27: 62 context
    switches per iteration): the model, which shares the cores evenly, misses that and
    predicts 4 ranks 15-20% fast.  Asserted as it is, so that a change shows."""
    rep = verify(os.path.join(SUITES, "mpi_jacobi"), out_dir=str(tmp_path), retrace=True)
    print("\n" + rep.table())
    eps = {r["point"]["ranks"]: r["eps"] for r in rep.rows}
    pred = {r["point"]["ranks"]: (r["predicted"], r["measured"]) for r in rep.rows}
    assert eps[1] <= 0.15 and eps[2] <= 0.15, rep.table()
    assert pred[4][0] < pred[4][1] and eps[4] <= 0.25, rep.table()


@pytest.mark.measured
def test_the_jacobi_stencil_traced_at_2_and_1_ranks_predicts_4_within_15_percent(tmp_path):
    """With a second trace at 1 rank the model measures how the compute divides: a fixed
    part per iteration (interpreter and numpy call overhead, ~55-70 us) and a part divided
    by the ranks, instead of assuming it all divides; 4 ranks, out of sample, within 15%."""
    suite = tmp_path / "mpi_jacobi_two_traces"
    suite.mkdir()
    text = open(os.path.join(SUITES, "mpi_jacobi", "suite.toml")).read()
    text = text.replace('path = "../../tests/programs/mpi_jacobi.py"',
                        f'path = "{os.path.join(ROOT_DIR, "tests", "programs", "mpi_jacobi.py")}"')
    assert "configs = [{ranks = 2}]" in text
    (suite / "suite.toml").write_text(text.replace("configs = [{ranks = 2}]",
                                                   "configs = [{ranks = 2}, {ranks = 1}]"))
    rep = verify(str(suite), out_dir=str(tmp_path / "out"), retrace=True)
    print("\n" + rep.table())
    eps = {r["point"]["ranks"]: r["eps"] for r in rep.rows}
    assert max(eps.values()) <= 0.15, rep.table()
    with open(rep.model) as fh:
        assert "How the compute divides (traces at 1, 2 ranks)" in fh.read()


def test_a_key_is_the_same_whichever_spelling_of_this_interpreter_ran_it():
    """`qpn verify` runs as .venv/bin/python3, `python -m pytest` as .venv/bin/python: the
    traces and measurements of one must be found by the other (they were retraced)."""
    import json
    import sys
    from qpn.frontends.verify.measure import canonical_key
    bindir = os.path.dirname(sys.executable)
    spellings = [os.path.join(bindir, n) for n in ("python", "python3")
                 if os.path.exists(os.path.join(bindir, n))] + [os.path.realpath(sys.executable)]
    keys = {canonical_key(f"abc [\"x\"] server {json.dumps([p, '-m', 'srv'])}") for p in spellings}
    assert keys == {'abc ["x"] server ["{python}", "-m", "srv"]'}
    assert canonical_key('abc ["/usr/bin/other-python"]') == 'abc ["/usr/bin/other-python"]'
