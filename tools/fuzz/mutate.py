"""Mutations of model texts (token and line level) and of traces (JSON-lines
level and field level).  Every function takes a ``random.Random`` so a campaign
is reproducible from its seed."""
from __future__ import annotations

import json
import random
import re

# numbers a user (or a generator) might write where a small positive one belongs
EXTREME_NUMBERS = ("0", "-1", "1e308", "1e999", "2147483648", "9223372036854775808", "nan", "inf",
                   "1e-308", "1e-320", "0.0", "-0", "99999999999999999999999999999999999999",
                   "4294967296", "0.5", "1000000", "65536", "1e-9", str(2 ** 200))
# words the parser knows, to splice into the wrong places
KEYWORDS = ("net", "include", "param", "colors", "shared", "queue", "place", "transition", "mode",
            "subnet", "instance", "input", "output", "init", "capacity", "departure", "fifo",
            "service", "priority", "servers", "quantum", "switch", "preemptive", "immediate", "timed",
            "when", "unless", "weight", "delay", "on", "is", "fcfs", "ps", "random", "prio",
            "lcfs-pr", "rr", "software", "cpu", "pool", "size", "loop", "times", "exp", "det",
            "erlang", "hyperexp", "uniform", "empirical", "normal", "lognormal", "gamma", "->",
            "..", "(", ")", "{", "}", ",", ":", "=", "==", "+", "*", "/", "-", "ms", "s", "us")
RANDOM_BYTES = (b"\xff", b"\xfe\xfe", b"\x00", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\r",
                b"\t", b"\x1b[2J", "\u00e9".encode(), "\u2192".encode(), "\ufeff".encode(),
                b"\\", b'"', b"'", b"#", b"\n\n", "\U0001f600".encode())

_TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<space>\s+)
  | (?P<punct>->|\.\.|==|!=|<=|>=|&&|\|\||.)
""", re.VERBOSE | re.DOTALL)


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) of every token, spaces and comments included, so that
    ``"".join`` of the texts gives ``text`` back."""
    return [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]


def _pick(rng: random.Random, toks: list, kinds: tuple) -> int | None:
    idx = [i for i, (k, _) in enumerate(toks) if k in kinds]
    return rng.choice(idx) if idx else None


def _token_mutation(rng: random.Random, text: str, op: str | None = None) -> str:
    toks = tokens(text)
    solid = ("number", "name", "punct", "string")
    op = op or rng.choice(("delete", "duplicate", "swap", "number", "number", "number", "name",
                           "name", "keyword", "run"))
    if op == "number":
        i = _pick(rng, toks, ("number",))
        if i is not None:
            toks[i] = ("number", rng.choice(EXTREME_NUMBERS))
            return "".join(t for _, t in toks)
        op = "name"
    if op == "name":
        i = _pick(rng, toks, ("name",))
        names = sorted({t for k, t in toks if k == "name"})
        if i is not None:
            toks[i] = ("name", rng.choice(names + list(KEYWORDS[:20])))
            return "".join(t for _, t in toks)
        op = "keyword"
    i = _pick(rng, toks, solid)
    if i is None:
        return text + rng.choice(KEYWORDS)
    if op == "delete":
        del toks[i]
    elif op == "duplicate":
        toks.insert(i, (toks[i][0], toks[i][1] + " "))
    elif op == "swap":
        j = _pick(rng, toks, solid)
        toks[i], toks[j] = toks[j], toks[i]
    elif op == "keyword":
        toks.insert(i, ("name", " " + rng.choice(KEYWORDS) + " "))
    else:                       # drop a clause-sized run of tokens
        del toks[i:i + rng.randint(2, 8)]
    return "".join(t for _, t in toks)


def _line_mutation(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.choice(("drop", "duplicate", "swap", "move"))
    if op == "drop":
        del lines[i]
    elif op == "duplicate":
        lines.insert(j, lines[i])
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(j, lines.pop(i))
    return "\n".join(lines)


def mutate_model(rng: random.Random, text: str) -> bytes:
    """One mutant of a model text: 1-3 token or line mutations, and now and then
    a truncation or random bytes (so the result may not be UTF-8)."""
    if rng.random() < 0.4:
        # values only: the model still parses, so the mutant reaches the checks
        # and the solvers (most structural mutants stop in the parser)
        for _ in range(rng.choice((1, 1, 2))):
            text = _token_mutation(rng, text, "number")
        return text.encode()
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        text = (_token_mutation if rng.random() < 0.75 else _line_mutation)(rng, text)
    return _damage(rng, text.encode("utf-8", "surrogatepass"))


def _damage(rng: random.Random, data: bytes) -> bytes:
    """Now and then a truncation (5%) or random bytes spliced in (5%)."""
    r = rng.random()
    if r < 0.05 and data:
        data = data[:rng.randrange(len(data))]
    elif r < 0.10:
        k = rng.randrange(len(data) + 1)
        data = data[:k] + rng.choice(RANDOM_BYTES) + data[k:]
    return data


# ------------------------------------------------------------------- XML (.qpe)
_ATTR = re.compile(r'([A-Za-z_:][-A-Za-z0-9_:.]*)="([^"]*)"')
_CONTENT = re.compile(r">([^<>\s][^<>]*)<")
XML_WORDS = ("IS", "FCFS", "PS", "PRIO", "RANDOM", "LIFO", "NORMAL", "FIFO", "Exponential",
             "Deterministic", "Uniform", "Normal", "Gamma", "Empirical", "BreitWigner",
             "queueing-place", "ordinary-place", "subnet-place", "immediate-transition",
             "timed-transition", "queueing-color-reference", "", " ", "&amp;", "&lt;x&gt;")


def mutate_xml(rng: random.Random, text: bytes | str) -> bytes:
    """One mutant of an XML model: 1-3 changes of attribute values (numbers, words,
    other ids), dropped attributes, dropped, doubled or moved lines, and now and then
    a truncation or random bytes."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    for _ in range(rng.choice((1, 1, 2, 3))):
        attrs = list(_ATTR.finditer(text))
        texts = list(_CONTENT.finditer(text))
        r = rng.random()
        if texts and r < 0.2:          # element text: PNML's labels, qpn's tool-specific values
            m = rng.choice(texts)
            new = rng.choice(EXTREME_NUMBERS + XML_WORDS + ("exp(1)", "exp(-1)", "det(0)", "inf",
                                                            "exp(1 s) + 2", "1e999 ms"))
            text = text[:m.start(1)] + new + text[m.end(1):]
        elif attrs and r < 0.75:
            m = rng.choice(attrs)
            value = m.group(2)
            ids = [a.group(2) for a in attrs if a.group(1).endswith("id")]
            q = rng.random()
            if q < 0.4:
                new = rng.choice(EXTREME_NUMBERS)
            elif q < 0.65:
                new = rng.choice(XML_WORDS)
            elif q < 0.85 and ids:
                new = rng.choice(ids)
            elif q < 0.95:
                new = None          # the attribute goes
            else:
                new = value * 2
            repl = "" if new is None else f'{m.group(1)}="{new}"'
            text = text[:m.start()] + repl + text[m.end():]
        else:
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            op = rng.random()
            if op < 0.5:
                del lines[i]
            elif op < 0.8:
                lines.insert(i, lines[i])
            else:
                lines.insert(rng.randrange(len(lines)), lines.pop(i))
            text = "\n".join(lines)
    return _damage(rng, text.encode("utf-8", "surrogateescape"))


# ------------------------------------------------------------------ traces
BAD_VALUES = ("x", "", [], {}, None, True, False, 1.5, -1, 0, 2 ** 31, 2 ** 63, 2 ** 64, -2 ** 63,
              10 ** 30, float("nan"), float("inf"), -float("inf"), 1e308, [1, 2], {"a": 1},
              "\u00e9\u2192", 987654321)
KINDS = ("header", "thread_start", "thread_end", "object", "acquire", "release", "wait", "notify",
         "put", "get", "io", "cpu", "mark", "request", "sample", "probe", "fork", "join", "acquir")


def _corrupt(rng: random.Random, obj, depth: int = 0):
    """A copy of a decoded JSON value with one field changed, dropped or added."""
    if isinstance(obj, dict) and obj:
        obj = dict(obj)
        key = rng.choice(sorted(obj))
        r = rng.random()
        if isinstance(obj[key], (dict, list)) and obj[key] and depth < 3 and r < 0.5:
            obj[key] = _corrupt(rng, obj[key], depth + 1)
        elif r < 0.15:
            del obj[key]
        elif r < 0.25:
            obj[rng.choice(("extra", "tid", "ts", "obj", "kind", "program", "version"))] = \
                rng.choice(BAD_VALUES)
        elif key == "kind" and r < 0.6:
            obj[key] = rng.choice(KINDS)
        elif isinstance(obj[key], int) and not isinstance(obj[key], bool) and r < 0.6:
            obj[key] = rng.choice((obj[key] + 1, -obj[key], obj[key] * 1000, 0, 2 ** 63, 7))
        else:
            obj[key] = rng.choice(BAD_VALUES)
        return obj
    if isinstance(obj, list) and obj:
        obj = list(obj)
        i = rng.randrange(len(obj))
        obj[i] = _corrupt(rng, obj[i], depth + 1) if depth < 3 else rng.choice(BAD_VALUES)
        return obj
    return rng.choice(BAD_VALUES)


def mutate_trace(rng: random.Random, data: bytes) -> bytes:
    """One mutant of a JSON-lines trace: 1-3 line or field mutations, now and then
    a truncation, random bytes or a broken JSON line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not lines:
            break
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        # the header and the first events carry the most structure: bias towards them
        if rng.random() < 0.3:
            i = rng.randrange(min(len(lines), 4))
        op = rng.choice(("field", "field", "field", "field", "drop", "duplicate", "swap", "move",
                         "bytes", "syntax"))
        if op == "field":
            try:
                obj = json.loads(lines[i])
            except ValueError:
                continue
            lines[i] = json.dumps(_corrupt(rng, obj), allow_nan=True).encode()
        elif op == "drop":
            del lines[i]
        elif op == "duplicate":
            lines.insert(j, lines[i])
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "move":
            lines.insert(j, lines.pop(i))
        elif op == "bytes":
            k = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:k] + rng.choice(RANDOM_BYTES) + lines[i][k:]
        elif lines[i]:
            k = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:k] + lines[i][k + 1:]
    out = b"\n".join(lines) + b"\n"
    if rng.random() < 0.05 and out:
        out = out[:rng.randrange(len(out))]
    return out
