"""An LQN activity graph as structured steps of qpn's software layer.

LQN lets an entry be a graph of *activities* joined by connections: a sequence
``a -> b``, an AND-fork ``a -> b & c`` closed by an AND-join ``b & c -> d``, an
OR-fork ``a -> (0.3) b + (0.7) c`` closed by an OR-join ``b + c -> d`` (or left
open: each branch ends the entry), and loops ``a -> 2.5 * b, c`` (b repeated 2.5
times on average, then c).  The software layer has the same constructs as blocks
(``fork { } and { }``, ``branch { p: { } }``, loops), so a well-nested graph is
written block by block from its first activity.  The activity that replies
(``d[entry]``) must lie on the graph's main line, outside forks and loops; the steps
after it run after the reply, like a second phase.

A loop's count is a mean: the body runs a geometric number of times (possibly none)
with that mean, as the phases' calls do.

>>> from qpn.dsl.lqn import read_lqn
>>> m = read_lqn(b'''P 1
...  p p f
... -1
... T 2
...  t c r c -1 p
...  t s n s -1 p
... -1
... E 2
...  s c 1 -1
...  y c s 1 -1
...  A s a
... -1
... A s
...  s a 1
...  s b 2
...  s d 3
... :
...  a -> b & d;
...  b & d -> e;
...  e[s]
... -1
... ''', "m.lqn")
>>> lines = activity_lines(m.activities["s"], "a", lambda act, ind: [f"{ind}work {act.name}"], "")
>>> print("\\n".join(lines))
work a
fork {
    work b
} and {
    work d
}
work e
#REPLY
"""
from __future__ import annotations

from typing import Callable

from qpn.errors import ModelError

from .lqn_model import LqnActivities, LqnConnection, LqnEntry
from .lqn_model import number_text as _num

REPLY = "#REPLY"          # a line marking the reply, at the top level of the steps


def activity_lines(g: LqnActivities, start: str,
                   steps: Callable[[LqnEntry, str], list[str]], indent: str) -> list[str]:
    """The steps of the activities from ``start`` on, as software-layer lines.

    Parameters
    ----------
    g : the task's activity graph
    start : the entry's first activity
    steps : the lines of one activity (its demand and calls) at an indentation
    indent : the indentation of the top level

    Returns
    -------
    Lines; a line ``#REPLY`` (at the top level) where the entry replies.
    """
    out_of: dict[str, LqnConnection] = {}
    for conn in g.connections:
        for name, _ in conn.join[1]:
            if str(name) in out_of:
                raise ModelError(f"activity '{name}' leads to two connections", conn.loc)
            out_of[str(name)] = conn

    def chain(a: str, ind: str, depth: int, seen: tuple) -> tuple[list[str], LqnConnection | None]:
        if a in seen:
            raise ModelError(f"the activities loop back to '{a}' without a loop construct",
                             g.acts[a].loc or g.loc, hint="write repetitions as 'a -> n * b, c'")
        lines = steps(g.acts[a], ind)
        if a in g.replies:
            if depth:
                raise ModelError(f"activity '{a}' replies inside a fork, branch or loop; qpn "
                                 "reads replies on the main line of the graph only", g.loc)
            lines.append(REPLY)
        conn = out_of.get(a)
        if conn is None:
            return lines, None
        if conn.join[0] != "one":
            return lines, conn            # a branch ends at this join
        more, j = follow(conn, ind, depth, seen + (a,))
        return lines + more, j

    def follow(conn: LqnConnection, ind: str, depth: int, seen: tuple):
        f = conn.fork
        if f is None:
            return [], None
        kind = f[0]
        if kind == "seq":
            return chain(str(f[1][0]), ind, depth, seen)
        if kind in ("and", "or"):
            targets = [str(x) for x in f[1]] if kind == "and" else [str(x) for _, x in f[1]]
            parts = [chain(t, ind + "        ", depth + 1, seen) for t in targets]
            joins = {id(j) for _, j in parts}
            if len(joins) > 1:
                raise ModelError(f"the branches that start at {', '.join(targets)} end in different "
                                 "joins (or some in none); qpn reads well-nested graphs", conn.loc)
            join = parts[0][1]
            if join is not None and join.join[0] != kind:
                raise ModelError(f"an {kind.upper()}-fork closed by an {join.join[0].upper()}-join",
                                 join.loc)
            if kind == "and" and join is None:
                raise ModelError("an AND-fork whose branches never join", conn.loc,
                                 hint="close it with 'b & c -> d'")
            lines = _fork(parts, ind) if kind == "and" else _branch(
                [p for p, _ in f[1]], parts, ind)
            if join is None:
                return lines, None
            more, j2 = follow(join, ind, depth, seen)
            return lines + more, j2
        # a loop: "n * b" bodies in turn, then the end activity
        lines: list[str] = []
        for n, body_start in f[1]:
            body, j = chain(str(body_start), ind + "            ", depth + 1, seen)
            if j is not None:
                raise ModelError(f"the loop body that starts at '{body_start}' ends in a join",
                                 conn.loc)
            if not any(ln.strip() for ln in body):
                continue                 # a body that takes no time changes nothing
            q = n / (n + 1)
            lines += [f"{ind}branch {{", f"{ind}    {_num(q)}: {{",
                      f"{ind}        loop about {_num(n + 1)} times {{"] + body + [
                      f"{ind}        }}", f"{ind}    }}", f"{ind}    {_num(1 - q)}: {{}}", f"{ind}}}"]
        if f[2] is not None:
            more, j = chain(str(f[2]), ind, depth, seen)
            return lines + more, j
        return lines, None

    lines, j = chain(start, indent, 0, ())
    if j is not None:
        raise ModelError("a join that no fork opened", j.loc)
    return lines


def _fork(parts, ind: str) -> list[str]:
    bodies = [lines for lines, _ in parts if any(ln.strip() for ln in lines)]
    if not bodies:
        return []
    if len(bodies) == 1:                 # the other branches take no time
        return [ln[8:] for ln in bodies[0]]
    out = [f"{ind}fork {{"]
    for i, b in enumerate(bodies):
        out += [ln[4:] for ln in b]
        out.append(f"{ind}}}" + (" and {" if i + 1 < len(bodies) else ""))
    return out


def _branch(probs, parts, ind: str) -> list[str]:
    out = [f"{ind}branch {{"]
    for p, (lines, _) in zip(probs, parts):
        if any(ln.strip() for ln in lines):
            out += [f"{ind}    {_num(p)}: {{"] + lines + [f"{ind}    }}"]
        else:
            out.append(f"{ind}    {_num(p)}: {{}}")
    out.append(f"{ind}}}")
    return out
