"""Example outputs in the docs, generated from real runs so that they cannot go stale.

A markdown file marks an example with a comment naming the command, followed by a
fenced block that holds the command and what it printed (stdout, then stderr)::

    <!-- run: qpn solve models/mm1.qpn --method mva -->
    ```
    $ qpn solve models/mm1.qpn --method mva
    ...
    ```

``python -m tools.docs_examples --write`` runs every marked command from the
repository's root and rewrites the blocks; ``--check`` (the default) runs them and
lists the blocks that differ (exit 1), wall-clock durations aside.  ``tests/outputs/test_docs_examples.py`` checks them
all.  Commands must be deterministic: analytic methods, or simulations with a seed.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", "docs/*.md")
MARK = re.compile(r"<!-- run: (?P<cmd>.+?) -->\n```[a-z]*\n(?P<body>.*?)```\n", re.DOTALL)


def run(cmd: str) -> str:
    """What ``cmd`` (a qpn command line) prints, as the block shows it."""
    argv = shlex.split(cmd)
    if argv[0] != "qpn":
        raise ValueError(f"only qpn commands run in doc examples: {cmd}")
    proc = subprocess.run([sys.executable, "-m", "qpn.cli", *argv[1:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, COLUMNS="100"))
    out = proc.stdout + proc.stderr
    return f"$ {cmd}\n{out}" + ("" if out.endswith("\n") else "\n")


#: wall-clock durations at the end of a summary line ("..., stopped by time, 0.43 s")
_DURATION = re.compile(r"\b\d[\d,]*(\.\d+)? s$", re.MULTILINE)


#: numbers at the size of floating-point rounding (1e-13 and below, e.g. the difference of
#: two solvers' equal answers, 2.07e-16 on one machine and 4.14e-16 on another, or a flow
#: imbalance): their last digits depend on the order of the sums, not on the result
_ROUNDING = re.compile(r"(?<![\w.])-?\d(\.\d+)?e-(1[3-9]|[2-9]\d|\d{3})\b")


def comparable(text: str) -> str:
    """An output with its wall-clock durations and rounding-level numbers masked: what
    must not change between runs.

    >>> comparable("residence  web  0.397724  0.397724  4.19e-16\\nsolved in 0.43 s")
    'residence  web  0.397724  0.397724  <rounding>\\nsolved in <seconds> s'
    """
    return _ROUNDING.sub("<rounding>", _DURATION.sub("<seconds> s", text))


def examples(path: str) -> list[tuple[str, str]]:
    """(command, block body) of every marked example in a file."""
    with open(path, encoding="utf-8") as fh:
        return [(m["cmd"], m["body"]) for m in MARK.finditer(fh.read())]


def update(path: str, write: bool) -> list[str]:
    """Run a file's examples; the commands whose block differs (rewritten if ``write``)."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    stale: list[str] = []

    def repl(m: re.Match) -> str:
        got = run(m["cmd"])
        if comparable(got) != comparable(m["body"]):
            stale.append(m["cmd"])
        if not write:
            return m.group(0)
        a, b = m.start("body") - m.start(), m.end("body") - m.start()
        return m.group(0)[:a] + got + m.group(0)[b:]

    new = MARK.sub(repl, text)
    if write and new != text:
        from qpn.fileio import write_atomic
        write_atomic(path, new)
    return stale


def files() -> list[str]:
    return sorted(f for pattern in DOCS for f in glob.glob(os.path.join(ROOT, pattern)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.docs_examples", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the blocks from fresh runs")
    g.add_argument("--check", action="store_true", help="list stale blocks (default)")
    a = p.parse_args(argv)
    bad = 0
    for f in files():
        for cmd in update(f, a.write):
            bad += 1
            print(f"{os.path.relpath(f, ROOT)}: {'rewrote' if a.write else 'stale'}: {cmd}")
    return 1 if bad and not a.write else 0


if __name__ == "__main__":
    sys.exit(main())
