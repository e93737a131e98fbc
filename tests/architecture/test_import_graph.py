"""The checkout's modules import each other without cycles, and the model's data modules
import no parser, printer or solver (tools/import_graph.py reads the imports)."""
import os

import networkx as nx

from tools.import_graph import cycles, import_graph
from conftest import ROOT_DIR

ROOT = ROOT_DIR
GRAPH = import_graph(ROOT)


def test_no_module_imports_itself_through_others():
    assert cycles(GRAPH) == []


def test_not_even_annotations_import_in_a_circle():
    # the model's modules type a net by the protocol qpn.model.NetLike, not by importing Net
    assert cycles(import_graph(ROOT, type_checking=True)) == []


def test_the_graph_sees_function_level_and_relative_imports():
    # edges the modules make at module level, inside functions and relative to their package
    for edge in [("qpn.net", "qpn.dsl.printer"), ("qpn.dsl.parser", "qpn.validate"),
                 ("qpn.solvers.des.api", "qpn.solvers.des.distributed"),  # module level, relative
                 ("qpn.solvers.des.group", "qpn.solvers.des.events"),     # inside make_engine
                 ("qpn.params", "qpn.dsl.grammar")]:                      # inside coerce_value
        assert GRAPH.has_edge(*edge), edge
    assert GRAPH.number_of_nodes() > 150 and GRAPH.number_of_edges() > 500


def test_the_model_is_data():
    # the items of a net, expressions and distributions reach no parser, printer or solver
    for mod in ("qpn.model", "qpn.expr", "qpn.distributions", "qpn.disciplines", "qpn.errors"):
        below = nx.descendants(GRAPH, mod)
        assert not any(m.startswith(("qpn.dsl", "qpn.solvers", "qpn.frontends", "tools")) for m in below), \
            (mod, sorted(below))
        assert "qpn.net" not in below


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import T\n"
                              "def g():\n    import pkg.c\n")
    (pkg / "c.py").write_text("from . import a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import g\n")
    (pkg / "e.py").write_text("from .d import x\n")
    g = import_graph(tmp_path, ["pkg"])
    assert cycles(g) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert not g.has_edge("pkg.d", "pkg.a")       # under TYPE_CHECKING: never run
    assert g.has_edge("pkg.e", "pkg.d")
