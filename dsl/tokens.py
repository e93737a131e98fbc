"""A fast token stream for the qpn grammar.

Lark's generic lexer spends most of its time on bookkeeping (about 9 us per
token); models written by trace analyzers reach 10^5 lines.  This stream is
built from the grammar's own terminal definitions (nothing is restated by
hand except the shapes of NAME/NUMBER/STRING/comments, which mirror
qpn.lark) and feeds Lark's LALR parser.  Keywords are reserved: a keyword
where a name is expected is a syntax error, never silently a name.
"""
from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters

# terminals whose alternatives are words (each word becomes that terminal)
_WORD_TERMINALS = ("DISCIPLINE", "PORT_DIR", "KIND")
_SHAPES = [
    ("WS", r"[ \t\r\n\f]+"),
    ("COMMENT", r"#[^\n]*"),
    ("STRING", r'"[^"\n]*"'),
    ("NUMBER", r"\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+"),
    ("NAME", r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"),
]


class TokenStream:
    """Callable: text -> (list of lark Tokens, comments [(line, text)])."""

    def __init__(self, lark):
        self.keywords: dict[str, str] = {}
        punct = []
        for td in lark.terminals:
            pat = td.pattern
            if td.name in ("NAME", "NUMBER", "STRING", "COMMENT", "WS"):
                continue
            if td.name in _WORD_TERMINALS:
                for word in re.findall(r"[A-Za-z][A-Za-z\\-]*", pat.value):
                    self.keywords[word.replace("\\", "")] = td.name
            elif pat.type == "str" and pat.value[:1].isalpha():
                self.keywords[pat.value] = td.name
            else:
                punct.append((td.name, pat.to_regexp(), pat.max_width))
        punct.sort(key=lambda x: -x[2])  # longest first: '->' before '-', '==' before '='
        hyphen = "|".join(re.escape(k) for k in self.keywords if "-" in k)
        shapes = list(_SHAPES)
        if hyphen:  # keywords such as lcfs-pr, before NAME would split them
            shapes.insert(4, ("HYPHENWORD", rf"(?:{hyphen})(?![\w.])"))
        groups = [f"(?P<{n}>{r})" for n, r in shapes] + [f"(?P<{n}>{r})" for n, r, _ in punct]
        self.rx = re.compile("|".join(groups))

    def __call__(self, text: str):
        tokens: list[Token] = []
        comments: list[tuple[int, str]] = []
        match = self.rx.match
        kw = self.keywords
        pos, n, line, linestart = 0, len(text), 1, 0
        append = tokens.append
        while pos < n:
            m = match(text, pos)
            if m is None:
                raise UnexpectedCharacters(text, pos, line, pos - linestart + 1)
            kind = m.lastgroup
            end = m.end()
            if kind == "WS":
                k = text.count("\n", pos, end)
                if k:
                    line += k
                    linestart = text.rfind("\n", pos, end) + 1
            elif kind == "COMMENT":
                comments.append((line, m.group()))
            else:
                val = m.group()
                if kind == "NAME" or kind == "HYPHENWORD":
                    kind = kw.get(val, "NAME")
                col = pos - linestart + 1
                append(Token(kind, val, pos, line, col, line, col + len(val), end))
            pos = end
        return tokens, comments
