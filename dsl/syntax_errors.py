"""Turn Lark's parse exceptions into located, readable :class:`ModelError`s."""
from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from qpn import disciplines
from qpn.errors import Loc, ModelError, either, suggest

# How terminals read in "expected ..." lines.
_FRIENDLY = {
    "NAME": "a name",
    "INT": "a whole number",
    "NUMBER": "a number",
    "STRING": 'a quoted string ("...")',
    "DISCIPLINE": f"a queue discipline ({', '.join(disciplines.names())})",
    "KIND": "'immediate' or 'timed'",
    "PORT_DIR": "'input' or 'output'",
    "COMP_OP": "a comparison (==, !=, <, <=, >, >=)",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*' or '/'",
    "$END": "end of file",
}
_STATEMENTS = ["net", "include", "param", "colors", "shared", "place", "transition",
               "subnet", "instance", "input", "output", "software"]


def _terminal_text(parser, name: str) -> str:
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    try:
        term = parser.get_terminal(name)
    except KeyError:
        return name.lower()
    pat = term.pattern
    if pat.type == "str":
        return f"'{pat.value}'"
    return name.lower()


def _keywords(parser, names) -> list[str]:
    out = []
    for n in names:
        try:
            pat = parser.get_terminal(n).pattern
        except KeyError:
            continue
        if pat.type == "str" and pat.value[:1].isalpha():
            out.append(pat.value)
    return out


def describe_expected(parser, expected) -> str:
    """The tokens the parser expected, as words ('a', 'b' or 'c'; at most 12)."""
    items = sorted({_terminal_text(parser, n) for n in expected})
    if len(items) > 12:
        items = items[:12] + ["..."]
    return either(items)


_HINTS = {
    # unexpected token value -> hint; (value, the first word of its line) -> a hint for
    # that statement (a '{' after 'subnet S' is a missing parameter list, not a mode block)
    "=": "initial tokens are written 'init 3'; parameters are declared with 'param name = value'",
    "{": "a transition with several modes is written 'transition t { mode a : p -> q ... }'",
    ("{", "subnet"): "a subnet declares its parameters in parentheses, even none: "
                     "'subnet Name() { ... }'",
    ("{", "instance"): "an instance is written 'instance name = Subnet(...)', without a body",
    ("{", "place"): "a place's options follow its name on the line: "
                    "'place p queue ps service exp(1 ms) init 3'",
    "<-": "arcs go from inputs to outputs: 'transition t : p -> q'",
}


def _hint_for(text: str, source: str, line: int) -> str | None:
    lines = source.splitlines()
    first = lines[line - 1].split(None, 1)[0] if 0 < line <= len(lines) and lines[line - 1].split() \
        else ""
    return _HINTS.get((text, first), _HINTS.get(text))


def syntax_error(exc: UnexpectedInput, parser, file: str, source: str) -> ModelError:
    """Lark's parse error as a located ModelError: what was found, what was expected, and
    a hint where a common mistake explains it."""
    line = getattr(exc, "line", 0) or 0
    col = getattr(exc, "column", 0) or 0
    if isinstance(exc, UnexpectedEOF) or (
            isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        lines = source.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
        expected = describe_expected(parser, exc.expected)
        return ModelError("unexpected end of file", Loc(file, line, col, line, col + 1, source),
                          expected=expected,
                          hint="a '{' block or a declaration is not finished" if "'}'" in expected else None)
    if isinstance(exc, UnexpectedCharacters):
        ch = source[exc.pos_in_stream] if exc.pos_in_stream < len(source) else "?"
        # a control character would be invisible (or garble the terminal): name it
        shown = f"'{ch}'" if ch.isprintable() else f"U+{ord(ch):04X}"
        allowed = getattr(exc, "allowed", None) or set()
        return ModelError(f"unexpected character {shown}", Loc(file, line, col, line, col + 1, source),
                          expected=describe_expected(parser, allowed) if allowed else None,
                          hint="comments start with '#'; strings use double quotes")
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    text = str(tok)
    width = max(len(text), 1)
    loc = Loc(file, line, col, line, col + width, source)
    expected = describe_expected(parser, exc.expected)
    keywords = _keywords(parser, exc.expected)
    did = None
    hint = None
    if tok.type == "NAME":
        did = suggest(text, keywords or _STATEMENTS)
    elif text in _HINTS:
        hint = _hint_for(text, source, line)
    what = f"unexpected '{text}'"
    if tok.type != "NAME" and text[:1].isalpha():
        what = f"unexpected keyword '{text}'"
        if "NAME" in exc.expected:
            hint = (f"'{text}' is a keyword of the language and cannot be a name; if it starts "
                    "a new declaration, the one before is incomplete")
    return ModelError(what, loc, expected=expected, did_you_mean=did, hint=hint)
