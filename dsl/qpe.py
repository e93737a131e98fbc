"""QPME ``.qpe`` models (QPME 2.x XML) as qpn models.

:func:`qpe_to_qpn` turns a QPME file into the text of an equivalent qpn model
(readable: one line per QPME element, QPME's names kept where the language
allows them, element ids in comments); :func:`dsl.parser.load_foreign` parses that text, so a
``.qpe`` file works wherever a ``.qpn`` file does (``qpn solve model.qpe``).

How QPME's meaning is kept:

* QPME's colors form one enumeration ``colors color = {...}``; a place that holds
  only some of them is typed by a subset (``colors cpu_colors = color {a, b}``), so
  it names service times for those colors only.
* A QPME queue used by one place becomes the place's own queue; a queue used by
  several places becomes a ``shared queue``.
* QPME chooses an immediate transition by its weight, then one of its enabled
  modes by the modes' firing weights.  qpn weighs modes, so a mode gets
  ``transition weight x firing weight / sum of the firing weights of the
  transition's modes with the same inputs``.  That is QPME's choice exactly
  unless a transition that competes with others has modes with different inputs
  enabled at the same moment; such transitions are reported in the notes.
* QPME's ``PRIO`` queues serve the lowest priority value first, without
  preemption; qpn serves the highest, so priorities are mirrored.

QPME's departure disciplines ``FIFO`` and ``RANDOM`` (a place offers one token at a
time, the one that reached its depository first, or a random one) are qpn's
``departure fifo`` and ``departure random``; with one color they are ``NORMAL`` for
modes that take one token (a mode taking more never fires, and is refused).

A subnet place is written flat: its places and transitions get its name as a prefix
(``DBS_DBS_CPU``), tokens put into it enter its ``input-place`` and tokens taken from it
leave its ``output-place``, as QPME's editor builds a subnet.  Files of QPME 1.5 and 2.0
(``type=`` instead of ``xsi:type=``) are read too.

Refused with a located error naming the element id: distributions qpn has no
equivalent for, per-color capacities of places holding several colors, initial
tokens on a subnet place.

>>> path = "models/qpme/closed_server.qpe"      # users and a FCFS server, as QPME saves them
>>> text, notes = qpe_to_qpn(open(path, "rb").read(), path)
>>> [line for line in text.splitlines() if line.startswith(("net", "colors", "place"))]
['net closed_server', 'colors color = {job}', 'place server : color', 'place users : color']
"""
from __future__ import annotations

import math
import os
import re
from collections import defaultdict

from qpn import disciplines

from .qpe_runs import num, run_comment
from .xmlsource import XElement, XmlReader, element_loc, model_name

XSI_TYPE = "xsi:type"
STRATEGIES = {d.qpme: d.name for d in disciplines.all_disciplines() if d.qpme}
RESERVED = set("""and capacity colors delay departure fcfs fifo immediate include inf init input
instance is mode net nonpreemptive not on or output param place preemptive prio priority ps quantum
queue random rr servers service shared subnet switch timed transition unless weight when
s ms us ns exp det uniform erlang hyperexp gamma lognormal normal empirical replay rate mean scv
min max sqrt log abs ceil floor color""".split())   # keywords outside software blocks, units, functions


def _kind(e: XElement, default: str) -> str:
    """An element's type: ``xsi:type`` (QPME 2), or ``type`` (QPME 1.5 and 2.0 files)."""
    return e.get(XSI_TYPE) or e.get("type") or default


class _Names:
    """Identifiers for QPME names: letters, digits and _, unique, no keywords."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def make(self, name: str | None, fallback: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]+", "_", (name or "").strip()).strip("_") or fallback
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        if base in RESERVED:
            base += "_"
        out, k = base, 2
        while out in self.used:
            out, k = f"{base}_{k}", k + 1
        self.used.add(out)
        return out


class _Reader(XmlReader):
    # ---------------------------------------------------------- helpers
    def attr(self, e: XElement, name: str, default: str | None = None) -> str:
        v = e.get(name, default)
        if v is None:
            raise self.err(e, f"attribute '{name}' is missing")
        return v

    def number(self, e: XElement, name: str, default: str | None = None, *, whole: bool = False,
               positive: bool = False, minimum: float = 0.0) -> float:
        text = self.attr(e, name, default)
        try:
            v = float(text)
        except ValueError:
            raise self.err(e, f"attribute '{name}' is not a number: '{text}'",
                           expected="a number") from None
        if not math.isfinite(v) or v < minimum or (positive and v <= 0) or (whole and not v.is_integer()):
            kind = "a whole number" if whole else "a number"
            bound = "> 0" if positive else f">= {num(minimum)}"
            raise self.err(e, f"attribute '{name}' = {text} is out of range", expected=f"{kind} {bound}")
        return v

    # ------------------------------------------------------------ reading
    def read(self) -> dict:
        r = self.root
        if r.tag != "net":
            raise self.err(r, "this is not a QPME model (the root element must be <net>)",
                           hint="QPME files are written by the QPME editor (.qpe)")
        names = _Names()
        self.colors: dict[str, tuple[str, XElement]] = {}
        for c in r.within("colors", "color"):
            cid = self.attr(c, "id")
            if cid in self.colors:
                raise self.err(c, f"color id '{cid}' is used twice")
            self.colors[cid] = (names.make(c.get("name"), "color"), c)
        if not self.colors:
            raise self.err(r, "the model declares no colors", hint="QPME models have <colors><color .../>")
        self.queues: dict[str, XElement] = {}
        for q in r.within("queues", "queue"):
            qid = self.attr(q, "id")
            if qid in self.queues:
                raise self.err(q, f"queue id '{qid}' is used twice")
            self.queues[qid] = q
        self.refs: dict[str, tuple[str, str, XElement]] = {}   # color-ref id -> (place, color, el)
        # a subnet place's color-ref -> (its input place, its output place, color)
        self.iface: dict[str, tuple[str, str, str]] = {}
        places: list[dict] = []
        transitions: list[dict] = []
        for p in r.within("places", "place"):
            self._add_place(p, names, places, transitions, "")
        if not places:
            raise self.err(r, "the model has no places")
        transitions += [self._transition(t, names) for t in r.within("transitions", "transition")]
        # FIFO and RANDOM offer one token at a time: a mode taking two never fires
        for p in places:
            if p["one_at_a_time"]:
                for t in transitions:
                    for m in t["modes"]:
                        if sum(n for n, _ in m["inputs"].get(p["name"], ())) > 1:
                            raise self.err(m["el"], f"mode '{m['name']}' takes several tokens at once "
                                                    f"from '{p['qpme']}', whose {p['one_at_a_time']} departure offers "
                                                    f"one at a time (it can never fire in QPME)")
        return {"places": places, "transitions": transitions}

    def _add_place(self, p: XElement, names: _Names, places: list, transitions: list,
                   prefix: str) -> None:
        """A place, or a subnet place's places and transitions, flattened: their names get
        the subnet's name as a prefix; tokens put into the subnet place enter its
        ``input-place``, tokens taken from it leave its ``output-place``."""
        if _kind(p, "ordinary-place") != "subnet-place":
            places.append(self._place(p, names, prefix))
            return
        sname = f"{prefix}{p.get('name') or 'subnet'}"
        subs = p.find("subnet")
        if len(subs) != 1:
            raise self.err(p, f"subnet place '{p.get('name', '')}' has {len(subs)} <subnet> elements",
                           expected="exactly one")
        first = len(places)
        for q in subs[0].within("places", "place"):
            self._add_place(q, names, places, transitions, sname + "_")
        ends = {}
        for q in places[first:]:
            if q["qpme"] in ("input-place", "output-place") and q["prefix"] == sname + "_":
                ends[q["qpme"]] = q
        if len(ends) < 2:
            raise self.err(p, f"subnet place '{p.get('name', '')}' has no "
                              f"{' and '.join(k for k in ('input-place', 'output-place') if k not in ends)}",
                           hint="QPME's editor creates them with the subnet: its tokens enter at the "
                                "input-place and leave from the output-place")
        transitions += [self._transition(t, names, sname + "_")
                        for t in subs[0].within("transitions", "transition")]
        for ref in p.within("color-refs", "color-ref"):
            rid, cid = self.attr(ref, "id"), self.attr(ref, "color-id")
            if cid not in self.colors:
                raise self.err(ref, f"color-id '{cid}' names no color", expected="the id of a <color>")
            color = self.colors[cid][0]
            if self.number(ref, "initial-population", "0", whole=True):
                raise self.err(ref, "initial tokens on a subnet place are not supported",
                               hint="put them on a place inside the subnet")
            for end in ends.values():
                if color not in end["colors"]:
                    raise self.err(ref, f"color '{self.colors[cid][1].get('name')}' of subnet place "
                                        f"'{p.get('name', '')}' is not a color of its {end['qpme']}")
            if rid in self.refs or rid in self.iface:
                raise self.err(ref, f"color-ref id '{rid}' is used twice")
            self.iface[rid] = (ends["input-place"]["name"], ends["output-place"]["name"], color)

    def _place(self, p: XElement, names: _Names, prefix: str = "") -> dict:
        kind = _kind(p, "ordinary-place")
        pname = names.make(prefix + (p.get("name") or ""), "place")
        if kind not in ("ordinary-place", "queueing-place"):
            raise self.err(p, f"unknown place type '{kind}'",
                           expected="ordinary-place, queueing-place or subnet-place")
        dep = p.get("departure-discipline", "NORMAL")
        if dep not in ("NORMAL", "FIFO", "RANDOM"):
            raise self.err(p, f"unknown departure discipline '{dep}'", expected="NORMAL, FIFO or RANDOM")
        out = {"name": pname, "qpme": p.get("name", ""), "id": p.get("id", ""), "queue": None,
               "prefix": prefix,
               "colors": [], "init": [], "service": [], "prio": [], "capacity": None, "el": p,
               "departure": dep.lower(), "one_at_a_time": dep if dep != "NORMAL" else ""}
        if kind == "queueing-place":
            qid = self.attr(p, "queue-ref")
            if qid not in self.queues:
                raise self.err(p, f"queue-ref '{qid}' names no queue",
                               expected="the id of a <queue> in <queues>")
            out["queue"] = qid
        caps = []
        for ref in p.within("color-refs", "color-ref"):
            rid, cid = self.attr(ref, "id"), self.attr(ref, "color-id")
            if cid not in self.colors:
                raise self.err(ref, f"color-id '{cid}' names no color", expected="the id of a <color>")
            color = self.colors[cid][0]
            if rid in self.refs or rid in self.iface:
                raise self.err(ref, f"color-ref id '{rid}' is used twice")
            if color in out["colors"]:
                raise self.err(ref, f"color '{self.colors[cid][1].get('name')}' is listed twice in "
                                    f"place '{out['qpme']}'")
            self.refs[rid] = (pname, color, ref)
            out["colors"].append(color)
            n = self.number(ref, "initial-population", "0", whole=True)
            if n:
                out["init"].append((int(n), color))
            cap = self.number(ref, "maximum-capacity", "0", whole=True)
            if cap:
                caps.append((int(cap), color, ref))
            if kind == "queueing-place":
                out["service"].append((color, self._dist(ref)))
                out["prio"].append((color, self.number(ref, "priority", "0", whole=True)))
        if not out["colors"]:
            raise self.err(p, f"place '{out['qpme']}' lists no colors",
                           hint="add the colors its tokens may have (<color-refs>)")
        if len(out["colors"]) == 1:     # one at a time of one color: NORMAL for modes taking one
            out["departure"] = "normal"
        if caps:
            if len(out["colors"]) > 1:
                raise self.err(caps[0][2], "a maximum capacity per color is not supported for a place "
                                           "holding several colors",
                               hint="qpn limits the total count of a place: 'capacity N'")
            out["capacity"] = caps[0][0]
        return out

    def _dist(self, ref: XElement) -> str:
        d = self.attr(ref, "distribution-function")
        if d == "Exponential":
            return f"exp(rate = {num(self.number(ref, 'lambda', positive=True))})"
        if d == "Deterministic":
            return f"det({num(self.number(ref, 'p1'))})"
        if d == "Uniform":
            lo, hi = self.number(ref, "min"), self.number(ref, "max")
            if hi < lo:
                raise self.err(ref, f"Uniform with min {num(lo)} > max {num(hi)}")
            return f"uniform({num(lo)}, {num(hi)})"
        if d == "Normal":
            return f"normal({num(self.number(ref, 'mean'))}, {num(self.number(ref, 'stdDev'))})"
        if d == "Gamma":   # colt's Gamma(alpha, lambda): mean alpha/lambda, scv 1/alpha
            a, lam = self.number(ref, "alpha", positive=True), self.number(ref, "lambda", positive=True)
            return f"gamma({num(a / lam)}, {num(1 / a)})"
        raise self.err(ref, f"distribution '{d}' has no qpn equivalent",
                       expected="Exponential, Deterministic, Uniform, Normal or Gamma",
                       hint="approximate it by one of these, or use empirical(...) in the qpn model")

    def _transition(self, t: XElement, names: _Names, prefix: str = "") -> dict:
        kind = _kind(t, "immediate-transition")
        if kind not in ("immediate-transition", "timed-transition"):
            raise self.err(t, f"unknown transition type '{kind}'",
                           expected="immediate-transition or timed-transition")
        timed = kind == "timed-transition"
        out = {"name": names.make(prefix + (t.get("name") or ""), "t"), "qpme": t.get("name", ""),
               "id": t.get("id", ""), "prefix": prefix,
               "timed": timed, "priority": self.number(t, "priority", "0", whole=True),
               "weight": 1.0 if timed else self.number(t, "weight", "1", positive=True),
               "modes": [], "el": t}
        modes: dict[str, dict] = {}
        mnames = _Names()
        for m in t.within("modes", "mode"):
            mid = self.attr(m, "id")
            if mid in modes:
                raise self.err(m, f"mode id '{mid}' is used twice")
            mode = {"name": mnames.make(m.get("name"), "mode"), "id": mid, "inputs": defaultdict(list),
                    "outputs": defaultdict(list), "el": m,
                    "weight": self.number(m, "firing-weight", "1", positive=True)}
            if timed:
                mode["delay"] = self.number(m, "mean-firing-delay", positive=True)
            modes[mid] = mode
            out["modes"].append(mode)
        if not modes:
            raise self.err(t, f"transition '{out['qpme']}' has no modes")
        for c in t.within("connections", "connection"):
            src, dst = self.attr(c, "source-id"), self.attr(c, "target-id")
            count = int(self.number(c, "count", "1", whole=True, minimum=1))
            if src in self.iface and dst in modes:      # out of a subnet: its output place
                _, place, color = self.iface[src]
                modes[dst]["inputs"][place].append((count, color))
            elif src in modes and dst in self.iface:    # into a subnet: its input place
                place, _, color = self.iface[dst]
                modes[src]["outputs"][place].append((count, color))
            elif src in self.refs and dst in modes:
                place, color, _ = self.refs[src]
                modes[dst]["inputs"][place].append((count, color))
            elif src in modes and dst in self.refs:
                place, color, _ = self.refs[dst]
                modes[src]["outputs"][place].append((count, color))
            else:
                raise self.err(c, f"connection from '{src}' to '{dst}' does not join a place's color "
                                  f"reference and a mode of transition '{out['qpme']}'",
                               expected="source-id and target-id: a <color-ref> id and a <mode> id")
        return out


# ------------------------------------------------------------------ writing
def _arcs(side: dict) -> str:
    parts = []
    for place, terms in side.items():
        inner = ", ".join(color if n == 1 else f"{n} {color}" for n, color in terms)
        parts.append(f"{place}({inner})")
    return ", ".join(parts)


def _signature(mode: dict) -> tuple:
    return tuple(sorted((p, tuple(sorted(ts))) for p, ts in mode["inputs"].items()))


def _one_at_a_time(transitions: list[dict]) -> set[str]:
    """Places where tokens arrive one by one and every taker routes a single token.

    A token arriving there enables only modes that take that very token, so it
    leaves before the next arrives: two modes with different inputs are never
    enabled together (after the initial marking has drained).
    """
    bad = set()
    for t in transitions:
        for m in t["modes"]:
            for place, terms in m["outputs"].items():
                if sum(n for n, _ in terms) > 1:
                    bad.add(place)
            ins = m["inputs"]
            if len(ins) != 1 or sum(n for n, _ in next(iter(ins.values()))) != 1 or t["timed"]:
                bad.update(ins)
    every = {p for t in transitions for m in t["modes"] for p in m["inputs"]}
    return every - bad


def _mode_weights(t: dict, competes: bool, routed: set[str], notes: list[str]) -> list[float]:
    """qpn mode weights giving QPME's choice: transition first, then mode (see module doc)."""
    modes = t["modes"]
    if not competes:   # nothing else takes these tokens: only the ratios among modes count
        return [m["weight"] for m in modes]
    group = defaultdict(float)
    for m in modes:
        group[_signature(m)] += m["weight"]
    if len(group) > 1 and not all(set(m["inputs"]) <= routed for m in modes):
        notes.append(f"transition '{t['qpme']}' ({t['id']}): its modes take different inputs and it "
                     f"competes with other transitions; qpn gives each mode the weight "
                     f"{num(t['weight'])} x firing weight / total firing weight of the modes with the "
                     f"same inputs, which is QPME's choice unless several of its modes are enabled at once")
    return [t["weight"] * m["weight"] / group[_signature(m)] for m in modes]


def _competitors(transitions: list[dict]) -> set[str]:
    """Immediate transitions sharing an input place with another of the same priority."""
    takers = defaultdict(set)
    for t in transitions:
        if not t["timed"]:
            for m in t["modes"]:
                for place in m["inputs"]:
                    takers[(place, t["priority"])].add(t["name"])
    return {name for s in takers.values() if len(s) > 1 for name in s}


def _write(model: dict, net_name: str, file: str, version: str, notes: list[str]) -> str:
    places, transitions = model["places"], model["transitions"]
    all_colors = []
    for p in places:
        for c in p["colors"]:
            if c not in all_colors:
                all_colors.append(c)
    out = [f"# Imported from the QPME model {os.path.basename(file)} (QPME {version}) by qpn convert.",
           "# QPME names and element ids are kept in the comments.", "", f"net {net_name}", "",
           f"colors color = {{{', '.join(all_colors)}}}"]
    for p in places:
        if set(p["colors"]) != set(all_colors):
            p["type"] = f"{p['name']}_colors"
            out.append(f"colors {p['type']} = color {{{', '.join(p['colors'])}}}")
        else:
            p["type"] = "color"
    users = defaultdict(list)
    for p in places:
        if p["queue"] is not None:
            users[p["queue"]].append(p)
    qnames = _Names()
    qnames.used |= {p["name"] for p in places} | {t["name"] for t in transitions} | set(all_colors)
    shared = {}
    reader_queues = model["queues"]
    for qid, ps in users.items():
        q = reader_queues[qid]
        spec = _qspec(q, model["reader"])
        if len(ps) > 1:
            shared[qid] = qnames.make(q.get("name"), "queue")
            out += ["", f"# QPME queue '{q.get('name', '')}' ({qid}), used by "
                        f"{', '.join(p['name'] for p in ps)}", f"shared queue {shared[qid]} : {spec}"]
    for p in places:
        inside = f" in subnet place '{p['prefix'][:-1]}'" if p["prefix"] else ""
        out += ["", f"# '{p['qpme']}' ({p['id']}){inside}", f"place {p['name']} : {p['type']}"]
        if p["queue"] is not None:
            q = reader_queues[p["queue"]]
            if p["queue"] in shared:
                out.append(f"    on {shared[p['queue']]}")
            else:
                out.append(f"    queue {_qspec(q, model['reader'])}")
            out.append("    service " + ", ".join(f"{c}: {d}" for c, d in p["service"]))
            if q.get("strategy") == "PRIO":   # QPME serves the lowest value first
                top = max(v for _, v in p["prio"])
                out.append("    priority " + ", ".join(f"{c}: {num(top - v)}" for c, v in p["prio"]))
        if p["departure"] != "normal":
            out.append(f"    departure {p['departure']}")
        if p["capacity"] is not None:
            out.append(f"    capacity {p['capacity']}")
        if p["init"]:
            out.append("    init " + ", ".join(c if n == 1 else f"{n} {c}" for n, c in p["init"]))
    competes, routed = _competitors(transitions), _one_at_a_time(transitions)
    for t in transitions:
        head = f"transition {t['name']}" + (" timed" if t["timed"] else "")
        if t["priority"]:
            head += f" priority {num(t['priority'])}"
        weights = [1.0] * len(t["modes"]) if t["timed"] else _mode_weights(t, t["name"] in competes, routed, notes)
        out += ["", f"# '{t['qpme']}' ({t['id']})" + ("" if t["timed"] else f", weight {num(t['weight'])}"),
                head + " {"]
        for m, w in zip(t["modes"], weights):
            line = f"    mode {m['name']} : {_arcs(m['inputs'])} -> {_arcs(m['outputs'])}".replace(" :  ->", " : ->")
            if t["timed"]:
                line += f" delay exp({num(m['delay'])})"
            elif t["name"] in competes or len(set(weights)) > 1:
                line += f" weight {num(w)}"
            out.append(line.rstrip())
        out.append("}")
    return "\n".join(out) + "\n"


def _qspec(q: XElement, reader: _Reader) -> str:
    strategy = reader.attr(q, "strategy")
    if strategy not in STRATEGIES:
        raise reader.err(q, f"unknown queueing strategy '{strategy}'", expected=", ".join(STRATEGIES))
    spec = STRATEGIES[strategy]
    servers = int(reader.number(q, "number-of-servers", "1", whole=True, minimum=1))
    if strategy != "IS" and servers != 1:
        spec += f" servers {servers}"
    if strategy == "PRIO":
        spec += " nonpreemptive"
    return spec


def qpe_to_qpn(data: bytes, file: str) -> tuple[str, list[str]]:
    """The qpn model text for the bytes of a QPME ``.qpe`` file, and notes on what the
    translation assumed (called as :data:`~qpn.dsl.xmlsource.FOREIGN_FORMATS` says)."""
    reader = _Reader(data, file)
    model = reader.read()
    model["queues"], model["reader"] = reader.queues, reader
    version = reader.root.get("qpme-version", "?")
    text = _write(model, model_name(file, "qpme_", RESERVED), file, version, reader.notes)
    runs = [run_comment(m) for m in reader.root.within("meta-attributes", "meta-attribute")
            if _kind(m, "") == "simqpn-configuration"]
    if runs:
        head, rest = text.split("\n\n", 1)
        text = head + "\n" + "\n".join(runs) + "\n\n" + rest
    return text, reader.notes


#: the comment the translation writes above each element: # 'QPME name' (id)...
_ELEMENT_COMMENT = re.compile(r"# (?:QPME queue )?'(?P<name>[^']*)' \((?P<id>[^)]*)\)")


def origin_of(data: bytes, file: str, line: int):
    """The QPME element that line ``line`` of the translation comes from: (the Loc of its
    start tag, "place 'cpu'") -- the element whose comment (``# 'name' (id)``) is
    nearest above that line -- or None.

    >>> data = open("tests/data/qpe/bcmp_twin.qpe", "rb").read()
    >>> text, _ = qpe_to_qpn(data, "m.qpe")
    >>> n = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("place cpu"))
    >>> loc, what = origin_of(data, "m.qpe", n + 2)       # its service line
    >>> loc.line, what
    (21, "place 'cpu'")
    """
    lines = qpe_to_qpn(data, file)[0].splitlines()
    for i in range(min(line, len(lines)) - 1, -1, -1):
        m = _ELEMENT_COMMENT.match(lines[i])
        if m:
            reader = _Reader(data, file)
            stack = [reader.root]
            while stack:
                e = stack.pop()
                if e.get("id") == m["id"] and e.tag in ("place", "transition", "queue"):
                    return element_loc(e, file, reader.source), f"{e.tag} '{m['name']}'"
                stack.extend(e.children)
            return None
    return None
