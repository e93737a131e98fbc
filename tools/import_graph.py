"""The checkout's import graph, module to module, and its cycles.

Every ``import`` counts, at module level or inside a function (a function-level import
hides a dependency from the reader, not from the design), except those under
``if TYPE_CHECKING:``, which never run.  An edge goes to the module named, not to
the packages above it: ``from qpn.model import Net`` is an edge to ``qpn.model``
(Python imports the package ``qpn`` first, as it does for every submodule, so that
edge says nothing).  Imports by a name held in a string (the solver registry's
``importlib.import_module``) are not seen.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "pkg").mkdir()
>>> _ = (root / "pkg" / "__init__.py").write_text("")
>>> _ = (root / "pkg" / "a.py").write_text("from . import b\\n")
>>> _ = (root / "pkg" / "b.py").write_text("def f():\\n    from .a import x\\n")
>>> cycles(import_graph(root, ["pkg"]))
[['pkg.a', 'pkg.b']]

Run ``python -m tools.import_graph [CHECKOUT]`` to list the cycles of a checkout (this one: none).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

import networkx as nx

#: the checkout's folders and the package each installs as (pyproject.toml's package-dir)
PACKAGES = {"qpn": "qpn", "dsl": "qpn.dsl", "solvers": "qpn.solvers", "frontends": "qpn.frontends",
            "tools": "tools"}


def module_files(root: Path, packages) -> dict[str, Path]:
    """Each module's name (as it installs) and file, below ``root``'s ``packages`` (folders,
    or a mapping folder -> the package it installs as)."""
    if not isinstance(packages, dict):
        packages = {p: p for p in packages}
    out = {}
    for folder, pkg in packages.items():
        for d, _, files in os.walk(root / folder):
            for f in files:
                if f.endswith(".py"):
                    path = Path(d) / f
                    parts = path.relative_to(root / folder).with_suffix("").parts
                    name = ".".join((pkg,) + parts)
                    out[name.removesuffix(".__init__")] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and getattr(n.test, "id", getattr(n.test, "attr", None)) == "TYPE_CHECKING":
            skip.update(id(x) for b in n.body for x in ast.walk(b))
    return skip


def _imported(node, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement asks for (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module if is_package else module.rpartition(".")[0]
    if node.level:
        parts = base.split(".")
        base = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
    else:
        base = node.module
    return [f"{base}.{a.name}" for a in node.names] + [base]


def import_graph(root: str | os.PathLike = ".", packages=PACKAGES,
                 type_checking: bool = False) -> nx.DiGraph:
    """The import graph of the modules under ``root``'s ``packages``.

    Parameters
    ----------
    root : the checkout's directory
    packages : the folders to read, or a mapping folder -> the package it installs as
    type_checking : also count the imports under ``if TYPE_CHECKING:`` (names only
        annotations use: a cycle through them is one a reader still has to follow)

    Returns
    -------
    A directed graph: a node per module (dotted name), an edge from each module to
    every module of the checkout it imports.
    """
    root = Path(root)
    mods = module_files(root, packages)
    graph = nx.DiGraph()
    for name, path in mods.items():
        graph.add_node(name)
        tree = ast.parse(path.read_text(), str(path))
        skip = set() if type_checking else _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            asked = _imported(node, name, path.name == "__init__.py")
            # 'from pkg import sub' names the submodule; 'from pkg.mod import f' the module
            found = [t for t in asked[:-1] if t in mods] if isinstance(node, ast.ImportFrom) else []
            if isinstance(node, ast.ImportFrom) and len(found) < len(asked) - 1:
                found.append(asked[-1])
            for target in (found or asked):
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    """The graph's import cycles: each strongly connected group of two or more modules,
    sorted, largest first."""
    groups = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    return sorted(groups, key=lambda c: (-len(c), c))


if __name__ == "__main__":
    import sys
    g = import_graph(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    found = cycles(g)
    print(f"{g.number_of_nodes()} modules, {g.number_of_edges()} imports, {len(found)} cycles")
    for c in found:
        sub = g.subgraph(c)
        print(f"  {len(c)} modules: " + ", ".join(f"{u} -> {v}" for u, v in sorted(sub.edges())))
