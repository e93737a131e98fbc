"""The language's grammar and its LALR parser: text -> declarations, one file at a time.

The grammar is dsl/qpn.lark with the discipline keywords of :mod:`qpn.disciplines`;
:class:`dsl.builder.Builder` runs inside the parser, so no parse tree is built.  Words
of the software layer are soft keywords (see :func:`soft_types`).  Includes, comments,
normalization and validation are :mod:`dsl.parser`'s.

>>> items, comments = parse_items("# idle threads\\nplace idle init 2")
>>> [it.name for it in items], len(comments)
(['idle'], 1)
"""
from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

from lark import Lark
from lark.exceptions import UnexpectedInput, VisitError

from qpn import disciplines
from qpn.errors import QPNError

from .builder import MAX_EXPR_DEPTH, Builder
from .syntax_errors import syntax_error
from .tokens import TokenStream

__all__ = ["parse_items", "parse_expr", "grammar_text", "soft_types", "KEYWORDS", "MAX_EXPR_DEPTH"]

GRAMMAR = Path(__file__).with_name("qpn.lark")
_LOCK = threading.Lock()


class Context:
    """Per-parse state shared by the token feed and the builder."""
    file = "<string>"
    source = ""
    base_dir = "."
    prev_line = 0   # line of the last token of the construct being reduced
    depths: dict = {}   # id(expression node) -> (node, nesting depth), reset per parse




@lru_cache(maxsize=1)
def _machinery():
    ctx = Context()
    builder = Builder(ctx)
    # cache=True keeps the LALR tables in a temp file (start-up ~0.4 s -> ~0.05 s);
    # the builder is embedded, so no parse tree is ever built.
    lark = Lark(grammar_text(), parser="lalr", maybe_placeholders=True, cache=True,
                transformer=builder, start=["start", "expr_start"])
    return lark, TokenStream(lark), ctx, soft_types(lark)


def grammar_text() -> str:
    """The grammar (dsl/qpn.lark) with the disciplines of :mod:`qpn.disciplines` as the
    ``DISCIPLINE`` keyword."""
    words = " | ".join(f'"{name}"' for name in disciplines.names())
    return GRAMMAR.read_text().replace("DISCIPLINE_KEYWORDS", words)


def _lark() -> Lark:
    return _machinery()[0]


KEYWORDS = frozenset("""net include param colors shared queue place input output transition
immediate timed priority servers mode when unless weight delay subnet instance inf on capacity
departure fifo random in-order init service quantum switch preemptive nonpreemptive not and or""".split()) | \
    frozenset(disciplines.names())

# Words of the software layer ("software", "cpu", "lock", "take", ...) are *soft*
# keywords: a keyword only where the grammar can take one (inside a software
# block), a name everywhere else, so 'place cpu' and 'transition take' stay valid.


def soft_types(lark: Lark) -> frozenset[str]:
    """Terminal types of the soft keywords (every keyword word not in KEYWORDS)."""
    out = set()
    for td in lark.terminals:
        pat = td.pattern
        if pat.type == "str" and pat.value[:1].isalpha() and pat.value not in KEYWORDS:
            out.add(td.name)
    return frozenset(out)


def parse_items(text: str, file: str = "<string>", base_dir: str = ".",
                start: str = "start") -> tuple[list, list]:
    """Declarations of one file (not yet normalized or validated) and its comments."""
    lark, stream, ctx, soft = _machinery()
    with _LOCK:
        ctx.file, ctx.source, ctx.base_dir, ctx.prev_line = file, text, base_dir, 0
        ctx.depths = {}
        try:
            tokens, comments = stream(text)
            ip = lark.parse_interactive("", start=start)
            feed = ip.feed_token
            state = ip.parser_state
            table = state.parse_conf.parse_table.states
            last = 0
            for i, tok in enumerate(tokens):
                if tok.type in soft and (
                        tok.type not in table[state.position]
                        or (tok.type == "SOFTWARE" and (i + 1 == len(tokens)
                                                        or tokens[i + 1].type != "LBRACE"))):
                    tok.type = "NAME"  # a soft keyword where the grammar takes no keyword
                ctx.prev_line = last
                feed(tok)
                last = tok.line
            ctx.prev_line = last
            items = ip.feed_eof(tokens[-1] if tokens else None)
        except UnexpectedInput as exc:
            raise syntax_error(exc, lark, file, text) from None
        except VisitError as exc:
            if isinstance(exc.orig_exc, QPNError):
                raise exc.orig_exc from None
            raise
    if start != "start":
        return items, comments
    if not isinstance(items, list):  # an empty file
        items = [] if items is None or not getattr(items, "children", None) else items.children
    return items, comments


def parse_expr(text: str, file: str = "<expr>"):
    """Parse a single expression (used for ``--set name=value``).

    >>> parse_expr("2 * n + 1").__class__.__name__
    'BinOp'
    """
    expr, _ = parse_items(text, file, start="expr_start")
    return expr
