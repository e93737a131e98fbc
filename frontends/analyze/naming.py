"""Readable names for model elements, taken from the traced program's source.

A trace knows code locations (``site = "prog.py:49"``), not variable names.
When the source file is at hand (the header's ``program.cwd`` plus the site's
path), the line that created an object usually says its name
(``tasks = queue.Queue(8)``), and the lines of a code fragment usually call
the function that does the work (``compute(task.n)``).  Without the source,
names fall back to the object type or the line numbers.

>>> ident("ThreadPoolExecutor-0_1")
'threadpoolexecutor_0_1'
>>> ident("2nd try")
'n2nd_try'
>>> assigned_name("    tasks = queue.Queue(maxsize=CAPACITY)  # site: tasks-queue")
'tasks'
>>> assigned_name("with ThreadPoolExecutor(max_workers=n) as pool:")
'pool'
>>> n = Names()
>>> n.unique("tasks"), n.unique("tasks"), n.unique("lock")
('tasks', 'tasks2', 'lock_')
"""
from __future__ import annotations

import ast
import os
import re

from qpn.dsl.grammar import KEYWORDS

#: Words of the model language that cannot name a model element.
RESERVED = frozenset("""
    net param place transition queue mode when unless weight delay init on service
    software cpu disk mutex rwlock semaphore barrier condition blocking limit timer sink
    pool population source behavior lock unlock read write acquire release await wait
    notify all put take allocate free start stop branch loop about times fork and call
    return as sleep io servers permits parties capacity size every think runs
    timeout else fifo lifo ps fcfs rr random inf quantum switch prefer writers is
    exp det uniform erlang hyperexp gamma lognormal normal empirical replay
    min max sqrt log ceil floor abs round subnet instance port include color colors
""".split()) | KEYWORDS

#: Calls that do not name a code fragment's work.
TRIVIAL_CALLS = frozenset("""
    range len print int str float bool bytes list dict set tuple sum min max abs round
    enumerate zip isinstance super iter next sorted reversed any all format join append
    extend pop get put put_nowait get_nowait acquire release wait wait_for notify
    notify_all recv send sendall accept connect open read write close split decode
    encode strip items keys values copy update add clear digest hexdigest to_bytes
    from_bytes result submit start set is_set
    feature span mark request_begin request_end
""".split())    # (the last: the tracer's own markers, qpn.frontends.pytrace)

_ID = re.compile(r"[^0-9a-zA-Z_]+")
_ASSIGN = re.compile(r"^\s*(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")
_WITH_AS = re.compile(r"\bas\s+([A-Za-z_]\w*)\s*[:,)]")


def ident(text: str, default: str = "x") -> str:
    """A model identifier from free text: lower case, ``_`` for other characters."""
    s = _ID.sub("_", text).strip("_").lower()
    if not s:
        return default
    if s[0].isdigit():
        s = "n" + s
    return s


def assigned_name(line: str) -> str | None:
    """The variable a source line assigns (``x = ...``) or binds (``with ... as x:``)."""
    m = _ASSIGN.match(line)
    if m:
        return m.group(1)
    m = _WITH_AS.search(line)
    return m.group(1) if m else None


def split_site(site: str | None) -> tuple[str | None, int | None]:
    """``"prog.py:12"`` -> ``("prog.py", 12)``."""
    if not site or ":" not in site:
        return site, None
    path, _, line = site.rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return site, None


class Sources:
    """Lines and call names of the traced program's files (read on demand).

    Only files under the program's working directory, or under the directory of a
    script it ran (``scripts``: its ``argv[0]``, not an installed package's), are read:
    library code is not what a model names things after.
    """

    def __init__(self, cwd: str | None, scripts: tuple = ()):
        self.cwd = cwd if cwd and os.path.isdir(cwd) else None
        roots = [self.cwd] + [os.path.dirname(os.path.join(self.cwd, p)) for p in scripts
                              if self.cwd and p and p.endswith(".py")
                              and not re.search(r"[/\\](site|dist)-packages[/\\]", p)]
        self.roots = tuple(dict.fromkeys(os.path.normpath(r) + os.sep for r in roots if r))
        self._lines: dict[str, list[str] | None] = {}
        self._calls: dict[str, dict[int, list[str]] | None] = {}
        self._loops: dict[str, list] = {}

    def _path(self, path: str) -> str | None:
        if self.cwd is None or path is None:
            return None
        full = path if os.path.isabs(path) else os.path.join(self.cwd, path)
        full = os.path.normpath(full)
        if not full.startswith(self.roots) or not full.endswith(".py"):
            return None
        return full if os.path.isfile(full) else None

    def lines(self, path: str) -> list[str] | None:
        """The lines of a source file of the traced program (None if it cannot be read)."""
        if path not in self._lines:
            full = self._path(path)
            try:
                with open(full, encoding="utf-8", errors="replace") as fh:  # type: ignore[arg-type]
                    self._lines[path] = fh.read().splitlines()
            except (OSError, TypeError):
                self._lines[path] = None
        return self._lines[path]

    def line(self, site: str | None) -> str | None:
        """The source line of a site ``path:line`` (None if unknown)."""
        path, no = split_site(site)
        lines = self.lines(path) if path else None
        if not lines or no is None or not 1 <= no <= len(lines):
            return None
        return lines[no - 1]

    def calls(self, path: str) -> dict[int, list[str]]:
        """line -> names of the functions called on it (in source order)."""
        if path not in self._calls:
            lines = self.lines(path)
            out: dict[int, list[str]] = {}
            if lines:
                try:
                    tree = ast.parse("\n".join(lines))
                except SyntaxError:
                    tree = None
                if tree is not None:
                    found = []
                    self._loops[path] = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                                         if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]
                    for node in ast.walk(tree):
                        if isinstance(node, ast.Call):
                            f = node.func
                            name = f.attr if isinstance(f, ast.Attribute) else \
                                f.id if isinstance(f, ast.Name) else None
                            if name:
                                found.append((node.lineno, node.col_offset, name))
                    for no, _, name in sorted(found):
                        out.setdefault(no, []).append(name)
            self._calls[path] = out
        return self._calls[path] or {}

    def object_name(self, site: str | None) -> str | None:
        """The variable an object is assigned to on its creation line (``lock = Lock()``),
        if any."""
        line = self.line(site)
        return assigned_name(line) if line else None

    def _block(self, path: str, no: int) -> list[int]:
        """The line and the lines of the block it opens (more indented, up to 5)."""
        lines = self.lines(path) or []
        out = [no]
        if not 1 <= no <= len(lines):
            return out
        ind = len(lines[no - 1]) - len(lines[no - 1].lstrip())
        for k in range(no + 1, min(len(lines), no + 5) + 1):
            text = lines[k - 1]
            if text.strip() and len(text) - len(text.lstrip()) <= ind:
                break
            out.append(k)
        return out

    def loops(self, path: str) -> list[tuple[int, int]]:
        """(first, last) lines of the for/while loops of a file."""
        self.calls(path)
        return self._loops.get(path, [])

    def fragment_name(self, before: str | None, after: str | None,
                      skip_lines: frozenset = frozenset()) -> str | None:
        """The first non-trivial function called by the code between two sites.

        The code between two sites: the line of ``after`` itself, then the
        lines after ``before`` up to ``after`` when both are in one file in that
        order; when ``after`` comes first (the loop went round), the rest of the
        innermost loop holding both and its lines up to ``after``; else the few
        lines leading up to ``after``.  Lines in ``skip_lines`` (other traced
        operations) are ignored.
        """
        path, hi = split_site(after)
        if path is None or hi is None:
            return None
        p0, lo = split_site(before)
        calls = self.calls(path)
        if p0 == path and lo is not None and lo < hi:
            lines = [hi] + list(range(lo + 1, hi))
        elif p0 == path and lo == hi:          # e.g. the body of a 'with lock:' block
            lines = self._block(path, hi)
        elif p0 == path and lo is not None:
            inner = [lp for lp in self.loops(path) if lp[0] <= hi and lp[1] >= lo]
            if inner:
                a, b = min(inner, key=lambda lp: lp[1] - lp[0])
                lines = [hi] + list(range(lo + 1, b + 1)) + list(range(a, hi))
            else:
                lines = [hi] + list(range(max(1, hi - 5), hi))
        else:
            lines = [hi] + list(range(max(1, hi - 5), hi))
        for no in lines:
            if no != hi and (path, no) in skip_lines:
                continue
            for name in calls.get(no, ()):
                if name not in TRIVIAL_CALLS and not name.startswith("_"):
                    return name
        return None


class Names:
    """Allocates unique identifiers (a model's places share one namespace)."""

    def __init__(self, reserved=RESERVED):
        self.used: set[str] = set(reserved)

    def unique(self, base: str) -> str:
        """A model name from ``base`` not used before (suffixed when needed, never a
        keyword)."""
        base = ident(base)
        if base not in self.used:
            self.used.add(base)
            return base
        if base + "_" not in self.used and base in RESERVED:
            self.used.add(base + "_")
            return base + "_"
        k = 2
        while f"{base}{k}" in self.used:
            k += 1
        self.used.add(f"{base}{k}")
        return f"{base}{k}"
