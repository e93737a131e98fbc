"""PNML symmetric nets (ISO/IEC 15909-2, ``.../grammar/symmetricnet``) as colored qpn models.

A symmetric net declares *sorts* (finite and cyclic enumerations, integer ranges, products
of them, the dot), *variables* of those sorts, and writes multisets of colors on its
places' initial markings and on its arcs, with boolean *conditions* on transitions.  The
translation is one qpn line per element:

==========================================  ==============================================
PNML                                        qpn
==========================================  ==============================================
``namedsort`` with ``finiteenumeration`` /  ``colors S = {a, b, c}`` (constants keep their
``cyclicenumeration``                       names); a cyclic one whose ``successor`` or
                                            ``predecessor`` is taken: ``colors S = 1 .. n``,
                                            constant k = its position
``finiteintrange start end``                ``colors S = start .. end``
``productsort``                             records ``colors P = (f1: A, f2: B)``
``dot``                                     plain tokens
place ``type``                              the place's colors
``hlinitialMarking``, ``hlinscription``     ``init`` and arc terms: ``numberof`` a count,
                                            ``add`` a list, ``all`` every color of the sort
``variabledecl``                            a mode variable (a mode per binding)
``successor(x)``, ``predecessor(x)``        ``(x + 1 - n * floor(x / n))``, ``(x - 1 + n * floor(1 / x))``
``condition``: ``equality``, ``inequality``,  ``when``: ``==``, ``!=``, ``<``, ``<=``, ``>``,
``lessthan`` ..., ``and``, ``or``, ``not``  ``>=``, ``and``, ``or``, ``not``
==========================================  ==============================================

Timing and queueing come from qpn's tool-specific sections as in place/transition nets;
a transition without them fires after ``exp(1)``.  Refused with the element's line:
partitions, operators qpn has no equivalent for (``subtract``, multiset operators inside
a color, user-declared operators), sorts and variables that are not declared.
"""
from __future__ import annotations

import re

from .xmlsource import XElement

SN = "symmetricnet"
TOOL = "qpn"                 # the tool-specific sections qpn writes and reads
COMPARE = {"equality": "==", "inequality": "!=", "lessthan": "<", "lessthanorequal": "<=",
           "greaterthan": ">", "greaterthanorequal": ">="}


def _text(e: XElement, label: str) -> XElement | None:
    """The ``<text>`` element of a label child (``<name><text>..</text></name>``)."""
    for c in e.find(label):
        for t in c.find("text"):
            return t
    return None


def _structure(e: XElement, label: str) -> XElement | None:
    """The single term inside ``<label><structure>TERM</structure></label>``."""
    for lab in e.find(label):
        for s in lab.find("structure"):
            kids = s.children
            return kids[0] if kids else None
    return None


class SymmetricNet:
    """Reads a symmetric net with the P/T reader's graph and error helpers
    (:class:`dsl.pnml._Reader`); :meth:`text` is the qpn model."""

    def __init__(self, reader, net: XElement, names) -> None:
        self.r, self.net, self.names = reader, net, names
        self.sorts: dict[str, dict] = {}         # sort id -> {"kind", "name", "consts", ...}
        self.consts: dict[str, tuple[str, int]] = {}   # feconstant id -> (sort id, position)
        self.vars: dict[str, tuple[str, str]] = {}     # variable id -> (qpn name, sort id)
        self.cyclic_math: set[str] = set()        # sorts whose successor/predecessor is taken

    # --------------------------------------------------------------- sorts
    def declarations(self) -> None:
        decls = [d for c in _descendants(self.net, "declarations") for d in c.children]
        for e in _walk(self.net):                 # variables whose successor is taken
            if e.tag in ("successor", "predecessor"):
                v = self._first(e, "variable")
                if v is not None:
                    self.cyclic_math.add(v.get("refvariable", ""))
        for d in decls:
            if d.tag == "namedsort":
                self._sort(d)
        for d in decls:
            if d.tag == "variabledecl":
                us = self._first(d, "usersort")
                sid = us.get("declaration", "") if us is not None else ""
                if sid not in self.sorts:
                    raise self.r.err(d, f"variable '{d.get('name')}' has no declared sort",
                                     expected="<usersort declaration=\"ID of a namedsort\"/>")
                self.vars[d.get("id", "")] = (self.names.make(d.get("name") or d.get("id"), "v"), sid)
            elif d.tag not in ("namedsort",):
                raise self.r.err(d, f"declaration <{d.tag}> is not supported",
                                 hint="qpn reads named sorts and variables of symmetric nets")
        # a cyclic enumeration used with successor/predecessor becomes a range
        for vid in self.cyclic_math:
            if vid in self.vars:
                self.sorts[self.vars[vid][1]]["range"] = True

    def _sort(self, d: XElement) -> None:
        sid, kids = d.get("id", ""), d.children
        if not kids:
            raise self.r.err(d, "a named sort without its sort")
        s, name = kids[0], self.names.make(d.get("name") or sid, "sort")
        if s.tag in ("finiteenumeration", "cyclicenumeration"):
            consts = s.find("feconstant")
            if not consts:
                raise self.r.err(s, "an enumeration without constants")
            out = {"kind": "enum", "name": name, "consts": [], "el": d}
            for k, c in enumerate(consts):
                self.consts[c.get("id", "")] = (sid, k)
                out["consts"].append(self.names.make(c.get("name") or c.get("id"), "c"))
            self.sorts[sid] = out
        elif s.tag == "finiteintrange":
            lo, hi = (self.r.whole(s, s.get(a, ""), f"attribute '{a}'") for a in ("start", "end"))
            self.sorts[sid] = {"kind": "range", "name": name, "lo": lo, "hi": hi, "el": d}
        elif s.tag == "productsort":
            parts = [u.get("declaration", "") for u in s.find("usersort")]
            for p in parts:
                if p not in self.sorts:
                    raise self.r.err(s, f"product of an undeclared sort '{p}'")
            self.sorts[sid] = {"kind": "product", "name": name, "parts": parts, "el": d}
        elif s.tag == "dot":
            self.sorts[sid] = {"kind": "dot", "name": name, "el": d}
        else:
            raise self.r.err(s, f"sort <{s.tag}> is not supported",
                             expected="finiteenumeration, cyclicenumeration, finiteintrange, productsort, dot")

    def color_decl(self, sid: str) -> str | None:
        s = self.sorts[sid]
        if s["kind"] == "enum" and not s.get("range"):
            return f"colors {s['name']} = {{{', '.join(s['consts'])}}}"
        if s["kind"] == "enum":
            return f"colors {s['name']} = 1 .. {len(s['consts'])}    # {', '.join(s['consts'])}"
        if s["kind"] == "range":
            return f"colors {s['name']} = {s['lo']} .. {s['hi']}"
        if s["kind"] == "product":
            fields = ", ".join(f"f{k + 1}: {self.sorts[p]['name']}" for k, p in enumerate(s["parts"]))
            return f"colors {s['name']} = ({fields})"
        return None

    # --------------------------------------------------------------- terms
    def _first(self, e: XElement, tag: str) -> XElement | None:
        for x in _walk(e):
            if x.tag == tag:
                return x
        return None

    def _subterms(self, e: XElement) -> list[XElement]:
        return [k for s in e.find("subterm") for k in s.children[:1]]

    def color(self, e: XElement) -> str:
        """A color term as a qpn expression."""
        t = e.tag
        if t == "variable":
            v = e.get("refvariable", "")
            if v not in self.vars:
                raise self.r.err(e, f"variable '{v}' is not declared")
            return self.vars[v][0]
        if t == "useroperator" and e.get("declaration") in self.consts:
            sid, k = self.consts[e.get("declaration")]
            s = self.sorts[sid]
            return str(k + 1) if s.get("range") else s["consts"][k]
        if t == "finiteintrangeconstant":
            return str(self.r.whole(e, e.get("value", ""), "attribute 'value'"))
        if t in ("successor", "predecessor"):
            sub = self._subterms(e)
            if len(sub) != 1 or sub[0].tag != "variable":
                raise self.r.err(e, f"<{t}> of a term other than a variable is not supported")
            x = self.color(sub[0])
            n = len(self.sorts[self.vars[sub[0].get("refvariable")][1]].get("consts", ())) or 0
            if not n:
                raise self.r.err(e, f"<{t}> of a variable that is not of an enumeration")
            return f"({x} + 1 - {n} * floor({x} / {n}))" if t == "successor" else \
                f"({x} - 1 + {n} * floor(1 / {x}))"
        if t == "tuple":
            return "(" + ", ".join(self.color(s) for s in self._subterms(e)) + ")"
        raise self.r.err(e, f"color term <{t}> is not supported",
                         expected="variable, useroperator (a constant), successor, predecessor, tuple")

    def multiset(self, e: XElement | None) -> list[tuple[int, str | None]]:
        """A multiset term as (count, color or None for the dot) pairs."""
        if e is None:
            return [(1, None)]
        t = e.tag
        if t == "add":
            return [x for s in self._subterms(e) for x in self.multiset(s)]
        if t == "numberof":
            sub = self._subterms(e)
            if len(sub) != 2 or sub[0].tag != "numberconstant":
                raise self.r.err(e, "<numberof> needs a number constant and a term")
            n = self.r.whole(sub[0], sub[0].get("value", ""), "a number constant")
            return [(n * k, c) for k, c in self.multiset(sub[1])]
        if t == "all":
            us = self._first(e, "usersort")
            sid = us.get("declaration", "") if us is not None else ""
            if sid not in self.sorts:
                raise self.r.err(e, "<all> of an undeclared sort")
            return [(1, c) for c in self.every(sid, e)]
        if t == "dotconstant":
            return [(1, None)]
        if t == "subtract":
            raise self.r.err(e, "multiset subtraction is not supported")
        return [(1, self.color(e))]

    def every(self, sid: str, at: XElement) -> list[str]:
        s = self.sorts[sid]
        if s["kind"] == "enum":
            return [str(k + 1) for k in range(len(s["consts"]))] if s.get("range") else list(s["consts"])
        if s["kind"] == "range":
            return [str(k) for k in range(s["lo"], s["hi"] + 1)]
        raise self.r.err(at, f"<all> of a {s['kind']} sort is not supported")

    def guard(self, e: XElement) -> str:
        t = e.tag
        sub = self._subterms(e)
        if t in COMPARE:
            return f"{self.color(sub[0])} {COMPARE[t]} {self.color(sub[1])}"
        if t in ("and", "or"):
            return "(" + f" {t} ".join(self.guard(s) for s in sub) + ")"
        if t == "not":
            return f"not ({self.guard(sub[0])})"
        if t == "booleanconstant":
            return "0 == 0" if e.get("value") == "true" else "0 == 1"
        raise self.r.err(e, f"condition <{t}> is not supported",
                         expected="equality, inequality, lessthan ..., and, or, not, booleanconstant")


def _walk(e: XElement):
    yield e
    for c in e.children:
        yield from _walk(c)


def _descendants(e: XElement, tag: str) -> list[XElement]:
    return [x for x in _walk(e) if x.tag == tag]


def arc_text(place: str, terms: list[tuple[int, str | None]]) -> str:
    """``p``, ``2 p``, ``p(x)``, ``p(2 x, a)``: terms of one place on one side."""
    plain = sum(n for n, c in terms if c is None)
    colored = [(n, c) for n, c in terms if c is not None]
    if not colored:
        return place if plain == 1 else f"{plain} {place}"
    inner = ", ".join(_term(n, c) for n, c in colored)
    return f"{place}({inner})"


def _term(n: int, c: str) -> str:
    simple = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c) is not None
    c = c if simple or c.startswith("(") else f"({c})"
    return c if n == 1 else f"{n} {c}"


def place_options(p: dict) -> list[str]:
    """The options of a place that qpn's tool-specific section gives: queue, service,
    capacity (shared by the place/transition and the symmetric-net readers)."""
    opts = [f"queue {p['queue']}"] if "queue" in p else []
    return opts + [f"{k} {p[k][0]}" for k in ("service", "capacity") if k in p]


def transition_line(t: dict, arcs: str) -> str:
    """``transition NAME [immediate priority P | servers N] : ARCS [weight W | delay D]``
    from a transition's qpn section (read by ``_Reader._transition_tool``)."""
    head = f"transition {t['name']}"
    imm = t.get("immediate")
    if imm is not None and imm.get("priority"):
        head += f" immediate priority {imm.get('priority')}"
    elif imm is None and "servers" in t:
        head += f" servers {t['servers'][0]}"
    if imm is not None:
        suffix = f" weight {imm.get('weight')}" if imm.get("weight") else ""
    else:
        d = t["delay"]
        suffix = f" delay {d[0] if isinstance(d, tuple) else d}"
    return f"{head} : {(arcs + suffix).strip()}"


def _init_term(n: int, c: str | None) -> str:
    """An initial-marking term: a count of plain tokens, ``2 a``, or one color ``(a)``."""
    if c is None:
        return str(n)
    if n > 1:
        return _term(n, c)
    return c if c.startswith("(") else f"({c})"


def read_symmetric(reader, net: XElement, net_name: str, lines: list) -> str:
    """qpn text of the symmetric net ``net``; ``lines[k]`` is the element behind line k + 1."""
    from .qpe import _Names
    names = _Names()
    sn = SymmetricNet(reader, net, names)
    sn.declarations()
    nodes, resolve, arcs = reader.graph(net)
    out: list[str] = []

    def emit(text: str, el=None) -> None:
        out.append(text)
        lines.append(el)

    emit("# Imported from a PNML symmetric net by qpn convert.")
    emit(f"net {net_name}")
    for sid, s in sn.sorts.items():
        decl = sn.color_decl(sid)
        if decl:
            emit(decl, s["el"])
    items: dict[str, dict] = {}
    for i, (tag, e) in nodes.items():
        label = _text(e, "name")
        item = {"name": names.make(label.text if label is not None else i, tag[0]), "el": e,
                "in": {}, "out": {}, "inh": {}}
        tool = [x for x in e.find("toolspecific") if x.get("tool") == TOOL]
        for pt in e.find("initialMarking"):
            raise reader.err(pt, "a symmetric net marks its places with <hlinitialMarking> (a "
                                 "multiset term), not a place/transition net's <initialMarking>")
        if tag == "place":
            us = _structure(e, "type")
            sid = us.get("declaration", "") if us is not None else ""
            if us is not None and sid not in sn.sorts:
                raise reader.err(e, f"place type '{sid}' is not a declared sort")
            item["sort"] = sid if us is not None and sn.sorts[sid]["kind"] != "dot" else None
            item.update(reader._place_tool(tool[0]) if tool else {})
            item["init"] = sn.multiset(_structure(e, "hlinitialMarking")) \
                if e.find("hlinitialMarking") else []
        else:
            item.update(reader._transition_tool(tool[0]) if tool else {"delay": "exp(1)", "untimed": True})
            cond = _structure(e, "condition")
            item["guard"] = sn.guard(cond) if cond is not None else ""
        items[i] = item
    for a in arcs:
        src, dst = items[resolve(a.get("source"))], items[resolve(a.get("target"))]
        for pt in a.find("inscription"):
            raise reader.err(pt, "a symmetric net's arcs carry <hlinscription> (a multiset term), "
                                 "not a place/transition net's <inscription>")
        ins = a.find("hlinscription")
        terms = sn.multiset(_structure(a, "hlinscription")) if ins else [(1, None)]
        inhibitor = "inhibitor" in [x.get("value") for x in a.find("type")]
        if "sort" in src:
            dst["inh" if inhibitor else "in"].setdefault(src["name"], []).extend(terms)
        else:
            src["out"].setdefault(dst["name"], []).extend(terms)
    for i, p in items.items():
        if "sort" not in p:
            continue
        head = f"place {p['name']}" + (f" : {sn.sorts[p['sort']]['name']}" if p["sort"] else "")
        opts = place_options(p)
        if p["init"]:
            opts.append("init " + ", ".join(_init_term(n, c) for n, c in p["init"]))
        emit(" ".join([head] + opts), p["el"])
    untimed = 0
    for i, t in items.items():
        if "sort" in t:
            continue
        body = ", ".join(arc_text(pl, ts) for pl, ts in t["in"].items()) + " -> " + \
            ", ".join(arc_text(pl, ts) for pl, ts in t["out"].items())
        if t["guard"]:
            body += f" when {t['guard']}"
        if t["inh"]:
            body += " unless " + ", ".join(arc_text(pl, ts) for pl, ts in t["inh"].items())
        untimed += bool(t.get("untimed"))
        emit(transition_line(t, body), t["el"])
    if untimed:
        reader.notes.append(f"PNML has no time: {untimed} transition(s) without qpn timing fire after "
                            f"exp(1), a stochastic Petri net with unit rates")
    return "\n".join(out) + "\n"
