"""Graphviz DOT of a net: places (circles), queueing places (a queue in front
of a place), immediate transitions (black bars), timed transitions (boxes),
inhibitor arcs (circle heads), subnet instances as clusters.

>>> import qpn
>>> from qpn.dot import to_dot
>>> 'digraph' in to_dot(qpn.parse("place a init 1\\ntransition t : a -> a"))
True
"""
from __future__ import annotations

import html

from .distributions import describe
from .dot_helpers import arc_label
from .expr import fmt
from .model import QueueingPlace
from .net import Net


def _id(kind: str, name: str) -> str:
    return '"' + kind + ":" + name.replace('"', r'\"') + '"'


def _place_node(p, short: str | None = None) -> str:
    short = short if short is not None else p.name.rsplit(".", 1)[-1]
    name = html.escape(short)
    if isinstance(p, QueueingPlace):
        q = p.queue
        disc = q if isinstance(q, str) else q.discipline
        servers = "" if isinstance(q, str) else (
            "" if fmt(q.servers) in ("1", "inf") else f" x{html.escape(fmt(q.servers))}")
        svc = html.escape(", ".join(describe(s.dist) for s in p.service)[:40])
        label = (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="2"><TR>'
                 f'<TD WIDTH="6"> </TD><TD WIDTH="6"> </TD><TD WIDTH="6"> </TD>'
                 f'<TD STYLE="ROUNDED" BGCOLOR="#eef5ff"><B>{name}</B><BR/>'
                 f'<FONT POINT-SIZE="9">{html.escape(str(disc))}{servers}<BR/>{svc}</FONT></TD>'
                 f'</TR></TABLE>>')
        return f"{_id('p', p.name)} [shape=plaintext, label={label}];"
    tokens = ""
    if p.init:
        tokens = "\\n" + ", ".join(fmt(t.count) + (f" {fmt(t.color)}" if t.color is not None else "")
                                  for t in p.init)
    return (f'{_id("p", p.name)} [shape=circle, fixedsize=false, '
            f'label="{short}{tokens}"];')


def to_dot(net: Net) -> str:
    """DOT text of the flattened net, with instances drawn as clusters."""
    flat = net.flatten()
    lines = [f'digraph "{net.name}" {{', "  rankdir=LR;", '  node [fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    clusters: dict[str, list[str]] = {}
    place_names = {p.name for p in flat.places}

    def cluster(name: str) -> str:
        prefix = name.rsplit(".", 1)[0] if "." in name else ""
        # elements named after a place (workers.cpu.done) are drawn next to it
        while prefix in place_names:
            prefix = prefix.rsplit(".", 1)[0] if "." in prefix else ""
        return prefix

    def short_name(name: str) -> str:
        prefix = cluster(name)
        return name[len(prefix) + 1:] if prefix else name

    def put(name: str, text: str):
        clusters.setdefault(cluster(name), []).append(text)

    for p in flat.places:
        put(p.name, _place_node(p, short_name(p.name)))
    for t in flat.transitions:
        short = short_name(t.name)
        if t.kind == "immediate":
            node = (f'{_id("t", t.name)} [shape=box, style=filled, fillcolor=black, width=0.08, '
                    f'height=0.5, label="", xlabel="{short}"];')
        else:
            delays = ", ".join(describe(m.delay) for m in t.modes if m.delay is not None)[:40]
            node = f'{_id("t", t.name)} [shape=box, label="{short}\\n{delays}"];'
        put(t.name, node)
    # clusters: nested by path prefix
    for prefix in sorted(clusters, key=lambda s: (s.count("."), s)):
        if not prefix:
            lines += ["  " + x for x in clusters[prefix]]
    for prefix in sorted(k for k in clusters if k):
        cid = prefix.replace(".", "_")
        lines.append(f'  subgraph "cluster_{cid}" {{')
        lines.append(f'    label="{prefix}"; style=rounded; color="#888888";')
        lines += ["    " + x for x in clusters[prefix]]
        lines.append("  }")
    for t in flat.transitions:
        for m in t.modes:
            mname = f"{m.name}: " if m.name and len(t.modes) > 1 else ""
            for a in m.inputs:
                lines.append(f'  {_id("p", a.place)} -> {_id("t", t.name)} [label="{mname}{arc_label(a)}"];')
            for a in m.outputs:
                lines.append(f'  {_id("t", t.name)} -> {_id("p", a.place)} [label="{mname}{arc_label(a)}"];')
            for a in m.inhibitors:
                lines.append(f'  {_id("p", a.place)} -> {_id("t", t.name)} '
                             f'[arrowhead=odot, style=dashed, label="{arc_label(a)}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
