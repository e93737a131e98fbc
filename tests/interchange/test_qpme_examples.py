"""QPME's own shipped example models (not in this repository: they are QPME's, under the
EPL).  The tests read them from a clone of github.com/DescartesResearch/QPME, found by
QPN_QPME_REPO (a git directory) or QPN_QPME_EXAMPLES (a directory holding the .qpe files),
or at /work/.mirror/DescartesResearch+QPME/repo; without one they skip and say so.

* pepsy-bcmp2: MVA of the file = MVA of its twin tests/data/qpe/bcmp_twin.qpe, which
  test_qpe.py checks against the normalizing constant (1e-6);
* ispass03: the CTMC has 63,271 tangible states, the values of its twin server_pools;
  with the database as a subnet place (ispass03_hierarchical, QPME 2.0's format), the same;
* ispass03-02 (FIFO departure on a place of two colors): the simulation within SimQPN's
  intervals (tests/data/reference/simqpn-ispass03-02.toml).
"""
import os
import shutil
import subprocess
import tomllib

import pytest

import qpn
from qpn import solvers
from des_support import K_CI, des

from conftest import TESTS_DIR

EXAMPLES = "sources/qpme.qpe.feature/root_files/examples"
#: ispass03 with its database as a subnet place, in the QPME 2.0 format (type=, no xsi:)
HIERARCHICAL = ("sources/qpme.model.migration.tests/src/edu/kit/ipd/descartes/qpme/model/migration/"
                "testfiles/v2_0/ispass03_hierarchical.qpe")
MIRROR = "/work/.mirror/DescartesResearch+QPME/repo"
DATA = os.path.join(TESTS_DIR, "data")


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    given = os.environ.get("QPN_QPME_EXAMPLES")
    if given:
        return given
    repo = os.environ.get("QPN_QPME_REPO", MIRROR)
    if not os.path.isdir(repo) or shutil.which("git") is None:
        pytest.skip("QPME's example models are not part of qpn (EPL): set QPN_QPME_REPO to a "
                    "clone of github.com/DescartesResearch/QPME or QPN_QPME_EXAMPLES to a "
                    "directory of its .qpe files")
    out = tmp_path_factory.mktemp("qpme")
    git = ["git", f"--git-dir={repo}"] if not os.path.isdir(os.path.join(repo, ".git")) \
        else ["git", "-C", repo]
    for path in [f"{EXAMPLES}/{n}.qpe" for n in ("pepsy-bcmp2", "ispass03", "ispass03-02")] + [HIERARCHICAL]:
        blob = subprocess.run(git + ["show", f"HEAD:{path}"], capture_output=True)
        if blob.returncode:
            pytest.skip(f"{repo} has no {path}: {blob.stderr.decode()[:200]}")
        (out / os.path.basename(path)).write_bytes(blob.stdout)
    return str(out)


def test_pepsy_bcmp2_solves_by_mva_as_its_checked_twin(examples):
    res = solvers.solve(qpn.load(os.path.join(examples, "pepsy-bcmp2.qpe")), "auto")
    twin = solvers.solve(qpn.load(os.path.join(DATA, "qpe", "bcmp_twin.qpe")), "mva")
    assert res.method == "mva"
    values = sorted(m.value for m in res.rows if m.measure == "tokens")
    assert values == pytest.approx(sorted(m.value for m in twin.rows if m.measure == "tokens"), rel=1e-6)


def test_ispass03_has_63271_states_and_its_twins_values(examples):
    res = solvers.solve(qpn.load(os.path.join(examples, "ispass03.qpe")), "ctmc")
    twin = solvers.solve(qpn.load(os.path.join(DATA, "qpe", "server_pools.qpe")), "ctmc")
    assert res.info["states"] == 63271
    assert sorted(m.value for m in res.rows if m.measure == "tokens") == \
        pytest.approx(sorted(m.value for m in twin.rows if m.measure == "tokens"), rel=1e-9)


def test_ispass03_with_a_subnet_place_is_the_flat_ispass03(examples):
    res = solvers.solve(qpn.load(os.path.join(examples, "ispass03_hierarchical.qpe")), "ctmc")
    flat = solvers.solve(qpn.load(os.path.join(examples, "ispass03.qpe")), "ctmc")
    assert res.info["states"] == 63271
    for a, b in (("WLS_CPU", "WLS_CPU"), ("Client", "Client"), ("DBS_DBS_CPU", "DBS_CPU"),
                 ("DBS_DBS_I_O", "DBS_I_O")):
        assert res.get("tokens", a) == pytest.approx(flat.get("tokens", b), rel=1e-9)


def test_ispass03_02_within_simqpn_intervals(examples):
    with open(os.path.join(DATA, "reference", "simqpn-ispass03-02.toml"), "rb") as fh:
        ref = tomllib.load(fh)
    net = qpn.load(os.path.join(examples, "ispass03-02.qpe"))
    res = des(net, {"time": 5e6, "replications": 10})
    cells = [("departures", "Client", c, r) for c, r in ref["throughput"].items()]
    names = {"wls_cpu": "WLS_CPU", "db_cpu": "DBS_CPU", "db_io": "DBS_I_O", "clients": "Client"}
    cells += [("residence", names[p], c, r) for p, rs in ref["residence"].items() for c, r in rs.items()]
    for measure, element, color, r in cells:
        est, h = res.get(measure, element, color), res.ci(measure, element, color)
        width = r.get("ci", 1.96 * r["sd"])
        assert abs(est - r["mean"]) <= K_CI * h + width, (measure, element, color, est, h, r)
