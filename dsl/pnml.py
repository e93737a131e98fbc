"""PNML place/transition nets (ISO/IEC 15909-2) as qpn models, and back.

A PNML P/T net has places with initial markings, transitions and weighted arcs; it
says nothing about time.  qpn's own timing and queueing travel in tool-specific
sections (``<toolspecific tool="qpn" version="1">``), which other tools ignore:

* on a place: ``<queue discipline="ps" servers="2"/>``, ``<service>exp(50 ms)</service>``,
  ``<capacity>5</capacity>``;
* on a transition: ``<delay>exp(2 s)</delay>`` (timed) or ``<immediate weight="0.3"
  priority="1"/>``, and ``<servers>inf</servers>``.

A transition without them is timed with ``exp(1)``: the usual reading of an untimed
net as a stochastic Petri net with unit rates (the translation says so in a note).
Arcs of type ``inhibitor`` (PIPE's ``<type value="inhibitor"/>``) become ``unless``.
Pages are flattened; reference nodes (``referencePlace``, ``referenceTransition``)
stand for the node they refer to.  Symmetric nets (sorts, variables, color terms) become
colored qpn models (:mod:`dsl.pnml_sn`); arcs that do not join a place and a transition
are refused with a located error.

>>> text, notes = pnml_to_qpn(EXAMPLE, "two.pnml")
>>> [l for l in text.splitlines() if l.startswith(("net", "place", "transition"))]
['net n1', 'place idle init 4', 'place busy', 'transition start : 2 idle -> busy delay exp(1)', 'transition stop : busy -> 2 idle delay exp(1)']
"""
from __future__ import annotations

import re
from xml.sax.saxutils import escape

from qpn import disciplines
from qpn.errors import ModelError

from .pnml_sn import SN, TOOL, _text, place_options, read_symmetric, transition_line
from .qpe import RESERVED, _Names
from .xmlsource import XElement, XmlReader, model_name

PTNET = "ptnet"
DISCIPLINES = disciplines.names()

EXAMPLE = b"""<?xml version="1.0" encoding="UTF-8"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
  <net id="n1" type="http://www.pnml.org/version-2009/grammar/ptnet">
    <page id="pg1">
      <place id="p1"><name><text>idle</text></name>
        <initialMarking><text>4</text></initialMarking></place>
      <place id="p2"><name><text>busy</text></name></place>
      <transition id="t1"><name><text>start</text></name></transition>
      <transition id="t2"><name><text>stop</text></name></transition>
      <arc id="a1" source="p1" target="t1"><inscription><text>2</text></inscription></arc>
      <arc id="a2" source="t1" target="p2"/>
      <arc id="a3" source="p2" target="t2"/>
      <arc id="a4" source="t2" target="p1"><inscription><text>2</text></inscription></arc>
    </page>
  </net>
</pnml>
"""


class _Reader(XmlReader):
    def one_line(self, e: XElement, what: str) -> tuple[str, XElement]:
        """A tool-specific value (a distribution, a number) as one line of the language."""
        t = e.text.strip()
        if not t or any(ch in t for ch in "\n\r#{}"):
            raise self.err(e, f"{what} must be one value on one line, got '{t[:40]}'",
                           expected="e.g. exp(50 ms)" if what == "a distribution" else "a number")
        return t, e

    def whole(self, e: XElement, text: str, what: str) -> int:
        t = text.strip()
        if not re.fullmatch(r"\d+", t):
            raise self.err(e, f"{what} must be a whole number >= 0, got '{t}'")
        digits = t.lstrip("0") or "0"
        if len(digits) > 17 or int(digits) > 2 ** 53:     # a count: markings are exact to 2^53
            raise self.err(e, f"{what} must be at most 2^53 = {2 ** 53:,}, got a number of "
                              f"{len(digits)} digits")
        return int(digits)

    def graph(self, net: XElement):
        """The net's nodes (pages flattened): ``{id: (tag, element)}``, a function from an
        id (of a node or of a reference node) to the node's id, and the arcs, each
        checked to join a place and a transition."""
        nodes: dict[str, tuple[str, XElement]] = {}
        refs: dict[str, tuple[str, XElement]] = {}
        arcs: list[XElement] = []

        def walk(e: XElement) -> None:
            for c in e.children:
                if c.tag in ("place", "transition"):
                    i = c.get("id")
                    if not i:
                        raise self.err(c, f"a <{c.tag}> needs an id")
                    if i in nodes or i in refs:
                        raise self.err(c, f"id '{i}' is used twice")
                    nodes[i] = (c.tag, c)
                elif c.tag in ("referencePlace", "referenceTransition"):
                    i = c.get("id")
                    if not i:
                        raise self.err(c, f"a <{c.tag}> needs an id")
                    if i in nodes or i in refs:
                        raise self.err(c, f"id '{i}' is used twice")
                    refs[i] = (c.get("ref") or "", c)
                elif c.tag == "arc":
                    arcs.append(c)
                elif c.tag == "page":
                    walk(c)

        walk(net)

        def resolve(i, seen=()) -> str | None:
            if i in nodes:
                return i
            if i in refs and i not in seen:
                return resolve(refs[i][0], seen + (i,))
            return None

        for i, (target, e) in refs.items():     # a reference stands for a node of its own kind
            kind = "place" if e.tag == "referencePlace" else "transition"
            node = resolve(i)
            if not target:
                raise self.err(e, f"a <{e.tag}> needs a ref: the id of the {kind} it stands for")
            if node is None:
                raise self.err(e, f"ref '{target}' leads to no {kind} (an id of no node, or references "
                                  f"that refer to each other)", expected=f"the id of a {kind} or of a <{e.tag}>")
            if nodes[node][0] != kind:
                raise self.err(e, f"a <{e.tag}> refers to '{target}', which is a {nodes[node][0]}",
                               expected=f"the id of a {kind} or of a <{e.tag}>")
        for a in arcs:
            src, dst = resolve(a.get("source") or ""), resolve(a.get("target") or "")
            if src is None or dst is None or nodes[src][0] == nodes[dst][0]:
                raise self.err(a, f"arc from '{a.get('source')}' to '{a.get('target')}' does not join "
                                  f"a place and a transition",
                               expected="source and target: the ids of a place and a transition")
        return nodes, resolve, arcs

    def read(self) -> dict:
        r = self.root
        if r.tag != "pnml":
            raise self.err(r, "this is not a PNML file (the root element must be <pnml>)")
        nets = r.find("net")
        if len(nets) != 1:
            raise self.err(r, f"a PNML file for qpn holds one <net>, this one has {len(nets)}")
        net = nets[0]
        kind = (net.get("type") or "").rstrip("/").rsplit("/", 1)[-1]
        if kind == SN:
            name = _text(net, "name")
            return {"symmetric": net, "name": name.text if name is not None else "",
                    "id": net.get("id") or ""}
        if kind != PTNET:
            raise self.err(net, f"net type '{net.get('type')}' is not supported",
                           expected="a place/transition net (.../grammar/ptnet) or a symmetric net "
                                    "(.../grammar/symmetricnet)",
                           hint="high-level nets other than symmetric nets are not supported")
        nodes, resolve, arcs = self.graph(net)
        names = _Names()
        places, transitions, by_id = [], [], {}
        for i, (tag, e) in nodes.items():
            label = _text(e, "name")
            name = names.make(label.text if label is not None else i, tag[0])
            item = {"id": i, "name": name, "el": e, "inputs": [], "outputs": [], "inhibitors": []}
            tool = [t for t in e.find("toolspecific") if t.get("tool") == TOOL]
            if tag == "place":
                m = _text(e, "initialMarking")
                item["init"] = self.whole(m, m.text, "the initial marking") if m is not None else 0
                item.update(self._place_tool(tool[0]) if tool else {})
                places.append(item)
            else:
                item.update(self._transition_tool(tool[0]) if tool else {"delay": "exp(1)", "untimed": True})
                transitions.append(item)
            by_id[i] = (tag, item)
        for a in arcs:
            src, dst = by_id[resolve(a.get("source"))], by_id[resolve(a.get("target"))]
            ins = _text(a, "inscription")
            n = self.whole(ins, ins.text, "an arc inscription") if ins is not None else 1
            if n == 0:
                raise self.err(a, "an arc inscription must be at least 1")
            kinds = [t.get("value") for t in a.find("type")]
            inhibitor = "inhibitor" in kinds
            if src[0] == "place":
                dst[1]["inhibitors" if inhibitor else "inputs"].append((n, src[1]["name"]))
            else:
                if inhibitor:
                    raise self.err(a, "an inhibitor arc runs from a place to a transition")
                src[1]["outputs"].append((n, dst[1]["name"]))
        untimed = [t["name"] for t in transitions if t.get("untimed")]
        if untimed:
            self.notes.append(f"PNML has no time: {len(untimed)} transition(s) without qpn timing "
                              f"({', '.join(untimed[:5])}{', ...' if len(untimed) > 5 else ''}) fire "
                              f"after exp(1), a stochastic Petri net with unit rates")
        name = _text(net, "name")
        return {"places": places, "transitions": transitions,
                "name": name.text if name is not None else "", "id": net.get("id") or ""}

    def _place_tool(self, tool: XElement) -> dict:
        out: dict = {}
        for c in tool.children:
            if c.tag == "queue":
                d = c.get("discipline", "")
                if d not in DISCIPLINES:
                    raise self.err(c, f"unknown queueing discipline '{d}'", expected=", ".join(DISCIPLINES))
                for k in ("servers", "quantum", "switch"):
                    v = c.get(k)
                    if v is not None and not re.fullmatch(r"inf|[0-9.eE+-]+( ?[mun]?s)?", v):
                        raise self.err(c, f"attribute '{k}' is not a number: '{v}'", expected="a number")
                out["queue"] = d + "".join(f" {k} {c.get(k)}" for k in ("servers", "quantum", "switch")
                                           if c.get(k))
                if c.get("preemptive") in ("false", "no"):
                    out["queue"] += " nonpreemptive"
                speed = c.get("speed")
                if speed is not None:
                    vals = speed.split()
                    if not vals or not all(re.fullmatch(r"[0-9.eE+-]+", v) for v in vals):
                        raise self.err(c, f"attribute 'speed' is not a list of numbers: '{speed[:40]}'",
                                       expected="numbers separated by spaces, e.g. '1 1.5 1.8'")
                    out["queue"] += f" speed [{', '.join(vals)}]"
            elif c.tag in ("service", "capacity"):
                out[c.tag] = self.one_line(c, "a distribution" if c.tag == "service" else "a capacity")
        return out

    def _transition_tool(self, tool: XElement) -> dict:
        out: dict = {}
        for c in tool.children:
            if c.tag == "delay":
                out["delay"] = self.one_line(c, "a distribution")
            elif c.tag == "immediate":
                for k in ("weight", "priority"):
                    v = c.get(k)
                    if v is not None and not re.fullmatch(r"[0-9.eE+-]+", v):
                        raise self.err(c, f"attribute '{k}' is not a number: '{v}'", expected="a number")
                out["immediate"] = c
            elif c.tag == "servers":
                out["servers"] = self.one_line(c, "a server count")
        if "delay" in out and "immediate" in out:
            raise self.err(out["immediate"], "a transition is timed (<delay>) or immediate (<immediate>), "
                                             "not both")
        if "delay" not in out and "immediate" not in out:
            out["delay"], out["untimed"] = "exp(1)", True
        return out


def _arcs(terms: list[tuple[int, str]]) -> str:
    return ", ".join(p if n == 1 else f"{n} {p}" for n, p in terms)


def _write(model: dict, name: str, lines: list) -> str:
    """qpn text; ``lines[k]`` is the XML element behind generated line k + 1 (or None)."""
    out: list[str] = []

    def emit(text: str, el=None):
        out.append(text)
        lines.append(el)

    emit("# Imported from a PNML place/transition net by qpn convert.")
    emit(f"net {name}")
    for p in model["places"]:
        opts = place_options(p) + ([f"init {p['init']}"] if p["init"] else [])
        emit(" ".join([f"place {p['name']}"] + opts), p["el"])
    for t in model["transitions"]:
        body = f"{_arcs(t['inputs'])} -> {_arcs(t['outputs'])}".strip()
        if t["inhibitors"]:
            body += " unless " + _arcs(t["inhibitors"])
        emit(transition_line(t, body), t["el"])
    return "\n".join(out) + "\n"


def net_name(label: str, ident: str, file: str) -> str:
    """The imported model's name: the net's ``<name>``, else its ``id``, else the file's
    stem; as an identifier (letters, digits and _, accents dropped, ``pnml_`` before a
    leading digit or a keyword).

    >>> net_name("M/M/1 queue", "n1", "x.pnml"), net_name("", "2-phase", "x.pnml")
    ('M_M_1_queue', 'pnml_2_phase')
    >>> net_name("Café", "", "x.pnml"), net_name(" ", "", "dir/my model.pnml")
    ('Cafe', 'my_model')
    """
    import unicodedata
    for text in (label, ident):
        plain = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode()
        stem = re.sub(r"[^A-Za-z0-9_]+", "_", plain).strip("_")
        if stem:
            return "pnml_" + stem if stem[0].isdigit() or stem in RESERVED else stem
    return model_name(file, "pnml_", RESERVED)


def pnml_to_qpn(data: bytes, file: str) -> tuple[str, list[str]]:
    """The qpn model text for the bytes of a PNML P/T net, and notes on what the
    translation assumed (called as :data:`~qpn.dsl.xmlsource.FOREIGN_FORMATS` says)."""
    reader = _Reader(data, file)
    model = reader.read()
    lines: list = []
    name = net_name(model["name"], model["id"], file)
    if "symmetric" in model:
        text = read_symmetric(reader, model["symmetric"], name, lines)
    else:
        text = _write(model, name, lines)
    from .parser import parse
    try:
        parse(text, file)
    except ModelError as exc:   # a value in a tool-specific section: show it at its element
        el = lines[exc.loc.line - 1] if exc.loc is not None and 0 < exc.loc.line <= len(lines) else None
        if el is None:
            raise
        raise reader.err(el, exc.message, hint=exc.hint, expected=exc.expected) from None
    return text, reader.notes


# ------------------------------------------------------------------ writing
def qpn_to_pnml(c) -> str:
    """The PNML of a compiled net with plain tokens (qpn's timing in tool-specific sections).

    Parameters
    ----------
    c : the net compiled with its parameter values (:func:`qpn.compile_net`)

    Returns
    -------
    The text of a ``.pnml`` file.
    """
    from .printer import fmt_dist
    for p in c.places:
        if p.colors != [None]:
            raise ModelError(f"place '{p.name}' holds colored tokens: PNML place/transition nets have "
                             f"plain tokens", p.loc, hint="write colored models as QPME: -o model.qpe")
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">',
           '  <net id="net" type="http://www.pnml.org/version-2009/grammar/ptnet">',
           f"    <name><text>{escape(c.net.name or 'net')}</text></name>", '    <page id="page">']
    tool = f'<toolspecific tool="{TOOL}" version="1">'
    for i, p in enumerate(c.places):
        init = int(c.m0[p.slots[0]] + (c.m0[p.qslots[0]] if p.qslots else 0))
        body = [f"<name><text>{escape(p.name)}</text></name>"]
        if init:
            body.append(f"<initialMarking><text>{init}</text></initialMarking>")
        extra = []
        if p.queue is not None:
            q = c.queues[p.queue]
            attrs = f'discipline="{q.discipline}"'
            if q.servers != 1 and not disciplines.get(q.discipline).infinite_servers:
                attrs += f' servers="{"inf" if q.servers == float("inf") else int(q.servers)}"'
            if disciplines.get(q.discipline).takes_quantum:
                attrs += f' quantum="{q.quantum!r}" switch="{q.switch!r}"'
            if disciplines.get(q.discipline).takes_priority and not q.preemptive:
                attrs += ' preemptive="false"'
            if q.speed is not None:       # the capacity with 1, 2, ... tokens, as compiled
                attrs += f' speed="{" ".join(repr(float(v)) for v in q.speed)}"'
            if len(q.places) > 1:
                raise ModelError(f"place '{p.name}' is on a shared queue: PNML export writes each "
                                 f"queue with its one place", p.loc)
            extra.append(f"<queue {attrs}/>")
            k = q.classes.index(p.qslots[0])
            extra.append(f"<service>{escape(fmt_dist(q.service[k]))}</service>")
        if p.capacity is not None:
            extra.append(f"<capacity>{p.capacity}</capacity>")
        if extra:
            body.append(tool + "".join(extra) + "</toolspecific>")
        out.append(f'      <place id="p{i + 1}">' + "".join(body) + "</place>")
    pre, post = c.pre.tocsr(), c.post.tocsr()
    slot_place = {int(s): i for i, p in enumerate(c.places) for s in p.slots + (p.qslots or [])}
    arcs = []
    seen: dict[str, int] = {}
    for j, m in enumerate(c.modes):
        if m.transition in seen:
            raise ModelError(f"transition '{m.transition}' has several modes: a PNML transition has one",
                             m.loc, hint="write it as several transitions, or export as QPME")
        seen[m.transition] = j
        tid = f"t{j + 1}"
        body = [f"<name><text>{escape(m.transition)}</text></name>"]
        if m.kind == "immediate":
            t_el = f'<immediate weight="{m.weight!r}"' + (f' priority="{m.priority!r}"' if m.priority else "") + "/>"
        else:
            t_el = f"<delay>{escape(fmt_dist(m.delay))}</delay>"
            if m.servers != 1:
                t_el += f"<servers>{'inf' if m.servers == float('inf') else int(m.servers)}</servers>"
        body.append(tool + t_el + "</toolspecific>")
        out.append(f'      <transition id="{tid}">' + "".join(body) + "</transition>")
        for mat, incoming in ((pre, True), (post, False)):
            for s, n in zip(mat.indices[mat.indptr[j]:mat.indptr[j + 1]], mat.data[mat.indptr[j]:mat.indptr[j + 1]]):
                pid = f"p{slot_place[int(s)] + 1}"
                a, b = (pid, tid) if incoming else (tid, pid)
                ins = "" if n == 1 else f"<inscription><text>{int(n)}</text></inscription>"
                arcs.append(f'      <arc id="a{len(arcs) + 1}" source="{a}" target="{b}">{ins}</arc>')
    if c.inh.nnz:
        inh = c.inh.tocsr()
        for g in range(inh.shape[0]):
            j = int(c.inh_mode[g])
            n = int(c.inh_threshold[g])       # disabled from n tokens on: PIPE's inscription
            ins = "" if n == 1 else f"<inscription><text>{n}</text></inscription>"
            # a group counts the tokens of one place (its queue and depository slots): one arc
            for pid in dict.fromkeys(slot_place[int(s)] for s in inh.indices[inh.indptr[g]:inh.indptr[g + 1]]):
                arcs.append(f'      <arc id="a{len(arcs) + 1}" source="p{pid + 1}" '
                            f'target="t{j + 1}">{ins}<type value="inhibitor"/></arc>')
    out += arcs + ["    </page>", "  </net>", "</pnml>"]
    return "\n".join(out) + "\n"


__all__ = ["pnml_to_qpn", "qpn_to_pnml"]
