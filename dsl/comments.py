"""Keep comments: attach each to the declaration it documents.

A comment inside or on the same line as a declaration belongs to it; a comment
above a declaration belongs to the next one; a comment block at the top of the
file followed by a blank line documents the whole net; the rest is the trailer.
The formatter writes them back above their declaration, so nothing is lost.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

from qpn.model import Subnet, Transition
from qpn.software.ast import children as sw_children, is_software_node, with_children


def _children(item):
    if isinstance(item, Transition):
        return list(item.modes)
    if isinstance(item, Subnet):
        return list(item.items)
    if is_software_node(item):
        return sw_children(item)
    return []


def _span(x):
    loc = getattr(x, "loc", None)
    if loc is None:
        return None
    return loc.line, max(loc.end_line, loc.line)


def _collect(items, prefix, out):
    for i, it in enumerate(items):
        span = _span(it)
        if span is not None:
            out.append((span[0], span[1], prefix + (i,)))
        _collect(_children(it), prefix + (i,), out)


def _strip(text: str) -> str:
    body = text[1:]
    return body[1:] if body.startswith(" ") else body


def attach_comments(items: list, comments: list[tuple[int, str]], net_line: int | None = None):
    """Return (items with docs, net doc, trailer)."""
    if not comments:
        return items, "", ""
    elems: list[tuple[int, int, tuple]] = []
    _collect(items, (), elems)
    elems.sort()
    spans = {p: (s, e) for s, e, p in elems}
    starts = [e[0] for e in elems]
    index = {p: i for i, (_s, _e, p) in enumerate(elems)}
    parent = []
    for _s, _e, p in elems:
        up = p[:-1]
        while up and up not in index:
            up = up[:-1]
        parent.append(index.get(up, -1) if up else -1)
    docs: dict[tuple, list[str]] = {}
    head: list[str] = []
    tail: list[str] = []
    first_start = starts[0] if starts else None
    pending_head: list[tuple[int, str]] = []
    for line, text in comments:
        if net_line is not None and line < net_line:
            head.append(_strip(text))
            continue
        # a comment on the first line of a declaration belongs to the outermost
        # declaration starting there; otherwise to the innermost one containing it
        k = bisect_right(starts, line)
        container = None
        # the containers of the line are ancestors of the last element starting before
        # it: climb the tree instead of scanning back (large blocks stay linear)
        j = k - 1
        while j >= 0:
            s, e, path = elems[j]
            if s <= line <= e:
                if container is None or (s == line and len(path) < len(container)):
                    container = path
                elif s < line:
                    break
            elif container is not None:
                break
            j = parent[j]
        if container is not None:
            target = container
            cs, ce = spans[container]
            if line != cs:  # inside a block: document the next member of the block
                for s2, _e2, p2 in elems[k:]:
                    if s2 > ce:
                        break
                    if p2[:-1] == container:
                        target = p2
                        break
            docs.setdefault(target, []).append(_strip(text))
            continue
        if k < len(elems):
            if first_start is not None and line < first_start:
                pending_head.append((line, _strip(text)))
            else:
                docs.setdefault(elems[k][2], []).append(_strip(text))
        else:
            tail.append(_strip(text))
    if pending_head and head:
        first_path = elems[0][2]
        docs[first_path] = [t for _, t in pending_head] + docs.get(first_path, [])
    elif pending_head:
        # the top block documents the net if a blank line separates it from the first item
        last = pending_head[-1][0]
        if first_start is not None and first_start - last > 1:
            head = [t for _, t in pending_head]
        else:
            first_path = elems[0][2]
            docs[first_path] = [t for _, t in pending_head] + docs.get(first_path, [])
    return _apply(items, docs, ()), "\n".join(head), "\n".join(tail)


def _apply(items, docs, prefix):
    out = []
    for i, it in enumerate(items):
        path = prefix + (i,)
        kids = _children(it)
        if kids:
            new_kids = _apply(kids, docs, path)
            if isinstance(it, Transition):
                it = replace(it, modes=tuple(new_kids))
            elif is_software_node(it):
                it = with_children(it, new_kids)
            else:
                it = replace(it, items=tuple(new_kids))
        if path in docs:
            it = replace(it, doc="\n".join(docs[path]))
        out.append(it)
    return out
