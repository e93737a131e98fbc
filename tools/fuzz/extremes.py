"""Inputs at the extremes a user reaches by accident or on purpose (issue 43's classes):
exact-integer arithmetic past the floats, nesting hundreds deep, subnormal and stiff
numbers, lone UTF-16 surrogates, chains and diamonds of includes, impossible traces
and compression bombs.  Every function takes a ``random.Random``.
"""
from __future__ import annotations

import gzip
import json
import random

HUGE_EXPRESSIONS = ("10^308 * 10", "2^1024", "2^2000", "9007199254740993", "10^400 / 10^399",
                    "(10^200) * (10^200)", "2^63", "-(2^1100)", "1e308 * 10", "10^308 + 10^308")
TINY_NUMBERS = ("1e-320", "5e-324", "2.2250738585072014e-308", "1e-300", "4.9e-324")
RATES = ("1e9", "1e12", "1e15", "1e-9", "1e-12")


def _net(body: str) -> str:
    return "net extreme\n" + body


def huge_numbers(rng: random.Random) -> str:
    """A small net with an exact-integer expression where a number belongs."""
    e = rng.choice(HUGE_EXPRESSIONS)
    where = rng.choice(("param", "mean", "capacity", "servers", "init", "weight"))
    param = f"param n = {e}\n" if where == "param" else "param n = 2\n"
    mean = f"exp(mean = {e})" if where == "mean" else "exp(1 s)"
    cap = f" capacity {e}" if where == "capacity" else ""
    servers = f" servers {e}" if where == "servers" else ""
    init = e if where == "init" else "n"
    weight = f" weight {e}" if where == "weight" else ""
    return _net(f"{param}place a init {init}{cap}\n"
                f"place q queue fcfs service {mean}{servers}\n"
                f"transition t : a -> q{weight}\ntransition u : q -> a\n")


def stiff_or_subnormal(rng: random.Random) -> str:
    """A closed cycle whose delays are far apart (a 1 ns step beside 200 s) or subnormal."""
    users = rng.choice((1, 2, 5, 12, 30))
    steps = []
    for i in range(rng.randint(2, 5)):
        r = rng.random()
        if r < 0.4:
            steps.append(f"exp(rate = {rng.choice(RATES)})")
        elif r < 0.6:
            steps.append(f"det({rng.choice(TINY_NUMBERS)} ms)")
        else:
            steps.append(f"exp({rng.choice(('10 s', '200 s', '5 ms', '1 s'))})")
    places = ["think"] + [f"p{i}" for i in range(len(steps))]
    lines = [f"place think queue is service exp(200 s) init {users}"]
    lines += [f"place {p}" for p in places[1:]]
    for i, d in enumerate(steps):
        src, dst = places[i], places[(i + 1) % len(places)]
        lines.append(f"transition t{i} : {src} -> {dst} delay {d}")
    lines.append(f"transition back : {places[-1]} -> think")
    return _net("\n".join(lines) + "\n")


def deep_subnets(rng: random.Random) -> str:
    depth = rng.choice((10, 100, 255, 257, 400, 1200))
    out = ["subnet S0() {\n  place x init 1\n  place y\n  transition t : x -> y delay exp(1)\n"
           "  transition u : y -> x delay exp(1)\n}"]
    for d in range(1, depth + 1):
        out.append(f"subnet S{d}() {{\n  instance c = S{d - 1}()\n}}")
    out.append(f"instance top = S{depth}()")
    return _net("\n".join(out) + "\n")


def deep_software(rng: random.Random) -> str:
    """A software block with steps (branch, loop) nested deep, or a fork of many threads."""
    if rng.random() < 0.3:
        threads = rng.choice(("1e16", "2^53", "2^60", "1e308", "100000"))
        return _net(f"software {{\n  cpu host cores 2\n  pool users size 2 {{\n"
                    f"    fork {threads} {{\n      cpu exp(1 ms)\n    }}\n  }}\n}}\n")
    depth = rng.choice((20, 30, 99, 101, 400))
    kind = rng.choice(("branch", "loop"))
    body = "cpu exp(1 ms)"
    for _ in range(depth):
        if kind == "branch":
            body = f"branch {{\n  0.5: {{ {body} }}\n  0.5: {{ cpu exp(1 ms) }}\n}}"
        else:
            body = f"loop 2 times {{ {body} }}"
    return _net(f"software {{\n  cpu host cores 2\n  pool users size 2 {{\n{body}\n  }}\n}}\n")


def surrogates(rng: random.Random) -> bytes:
    """A model whose text holds a lone surrogate (as CESU-8 bytes, or escaped in a string)."""
    base = "place a init 1\nplace b\ntransition t : a -> b delay exp(1)\ntransition u : b -> a delay exp(1)\n"
    where = rng.randrange(len(base))
    lone = rng.choice((b"\xed\xa0\x80", b"\xed\xbf\xbf", b'"\\ud800"', b"# \xed\xa0\x80\n"))
    data = base.encode()
    return data[:where] + lone + data[where:]


def extreme_model(rng: random.Random) -> bytes:
    """One model text of the classes above."""
    make = rng.choice((huge_numbers, huge_numbers, stiff_or_subnormal, stiff_or_subnormal,
                       deep_subnets, deep_software, surrogates))
    text = make(rng)
    return text if isinstance(text, bytes) else text.encode()


def include_bundle(rng: random.Random) -> bytes:
    """Files that include each other: a chain (up to past the limit), a diamond, the same
    file under two spellings, a cycle, or a file that is not a model."""
    lib = "place shared init 1\n"
    shape = rng.choice(("chain", "diamond", "spellings", "cycle", "notmodel"))
    files: dict[str, str] = {}
    if shape == "chain":
        n = rng.choice((5, 99, 101, 1500))
        for i in range(n):
            files[f"f{i}.qpn"] = f'include "f{i + 1}.qpn"\n'
        files[f"f{n}.qpn"] = lib
        files["m.qpn"] = 'include "f0.qpn"\nplace b\ntransition t : shared -> b delay exp(1)\n' \
                         'transition u : b -> shared delay exp(1)\n'
    elif shape == "diamond":
        files["lib.qpn"] = lib
        files["a.qpn"] = 'include "lib.qpn"\nplace pa\n'
        files["b.qpn"] = 'include "./lib.qpn"\nplace pb\n'
        files["m.qpn"] = 'include "a.qpn"\ninclude "b.qpn"\nplace c\n' \
                         'transition t : shared -> c delay exp(1)\ntransition u : c -> shared delay exp(1)\n'
    elif shape == "spellings":
        files["sub/x.qpn"] = lib
        files["m.qpn"] = 'include "sub/x.qpn"\ninclude "./sub/../sub/x.qpn"\nplace c\n' \
                         'transition t : shared -> c delay exp(1)\ntransition u : c -> shared delay exp(1)\n'
    elif shape == "cycle":
        files["a.qpn"] = 'include "m.qpn"\nplace pa\n'
        files["m.qpn"] = 'include "a.qpn"\nplace c init 1\n'
    else:
        files["m.qpn"] = f'include "{rng.choice(("/proc/self/environ", "/etc/passwd", "/dev/null", "/proc/self/status", "sub"))}"\nplace c init 1\n'
    return json.dumps(files).encode()


# ------------------------------------------------------------------ traces
def impossible_trace(rng: random.Random, data: bytes) -> bytes:
    """A trace with one event made impossible: a time a clock cannot read, an event far
    detached from the rest, a thread's life out of order, an unknown or huge thread id,
    a lone surrogate in a name."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    events = []
    for i, line in enumerate(lines):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("kind") != "header":
            events.append((i, ev))
    if not events:
        return data
    i, ev = rng.choice(events)
    op = rng.choice(("negative", "max", "detached", "end_first", "restart", "unknown", "huge_tid",
                     "surrogate"))
    ev = dict(ev)
    if op == "negative":
        ev["ts"] = -rng.choice((1, 10 ** 9, 2 ** 62))
    elif op == "max":
        ev["ts"] = rng.choice((2 ** 63 - 1, 2 ** 62, 2 ** 62 - 1))
    elif op == "detached" and isinstance(ev.get("ts"), int):
        ev["ts"] += rng.choice((3600, 86400, 10 ** 6)) * 10 ** 9
    elif op == "end_first":
        tid = ev.get("tid")
        lines.insert(1, json.dumps({"kind": "thread_end", "tid": tid, "ts": 0}).encode())
    elif op == "restart":
        start = next((e for _, e in events if e.get("kind") == "thread_start"), None)
        if start is not None:
            lines.append(json.dumps(dict(start, ts=start.get("ts", 0) + 1)).encode())
    elif op == "unknown":
        ev["tid"] = rng.choice((12345, 2 ** 31, 2 ** 63 - 1))
    elif op == "huge_tid":
        ev["tid"] = 2 ** 70
    else:
        ev["name"] = rng.choice(("\ud800", "a\udfffb", "\udc00\ud800"))
    lines[i] = json.dumps(ev).encode()      # ensure_ascii: a lone surrogate as "\\ud800"
    return b"\n".join(lines) + b"\n"


def compression_bomb(rng: random.Random, header: bytes) -> bytes:
    """A gzip of a trace whose one line (or whole body) inflates to many MB: a line of
    spaces or a name of 'A's, with no newline."""
    size = rng.choice((4, 64, 256)) << 20
    fill = rng.choice((b" ", b"A"))
    out = gzip.compress(header.rstrip(b"\n") + b"\n" + b'{"kind":"mark","tid":1,"ts":1,"name":"'
                        + fill * size + b'"}\n', compresslevel=1)
    return out
