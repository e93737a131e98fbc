"""XML files read into a small tree whose elements know their line and column.

Foreign model formats (QPME ``.qpe``, PNML) are XML.  Their readers must report a
mistake at the element that holds it, which :mod:`xml.etree` cannot do, so this
module builds its own tree with expat and keeps each start tag's position.
Document type declarations are refused: model files never need them, and they
are how XML entity bombs get in.

>>> root = parse_xml(b'<net><place id="p1" name="cpu"/></net>', "m.xml")
>>> [(e.tag, e.get("name"), e.line, e.col) for e in root.children]
[('place', 'cpu', 1, 6)]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from xml.parsers import expat

from qpn.errors import Loc, ModelError

from .source import FileTooLarge, decode_source, model_size_limit, read_model_bytes

MAX_DEPTH = 200   # deeper nesting is not a model: refuse before recursion hurts
#: The longest element name, attribute name or value, or run of text read, in characters.
#: Model files hold names, ids, numbers and expressions: the longest in the shipped QPME and
#: PNML files (tests/data, models/qpme) has 53 characters.  A longer one is refused where
#: it starts (a 100 MB attribute took 1.9 GB and 34 s to turn into a model).
MAX_VALUE = 1 << 20
#: What the tree holds per element (the element, its attribute dict and children list;
#: 261 bytes measured for <a/>) and per byte of the file (names and values: 722 bytes
#: for an element of 3 attributes in 60 bytes).  The whole file is at most
#: source.model_size_limit() (16 MiB): 4 million empty elements, about 1.1 GB.
ELEMENT_BYTES, XML_BYTE_BYTES = 260, 8


@dataclass(slots=True)
class XElement:
    """One element: tag, attributes, position of its start tag, children."""
    tag: str
    attrs: dict[str, str]
    line: int
    col: int
    children: list["XElement"] = field(default_factory=list)
    text: str = ""                # character data directly inside (labels: <text>3</text>)

    def get(self, name: str, default: str | None = None) -> str | None:
        """The attribute's value (``default`` if absent)."""
        return self.attrs.get(name, default)

    def find(self, tag: str) -> list["XElement"]:
        """Children with this tag."""
        return [c for c in self.children if c.tag == tag]

    def within(self, container: str, tag: str) -> list["XElement"]:
        """Grandchildren ``<container><tag/>...</container>`` (every container)."""
        return [e for c in self.find(container) for e in c.find(tag)]


def parse_xml(data: bytes, file: str) -> XElement:
    """The element tree of ``data``; a located :class:`ModelError` if it is not XML.

    Parameters
    ----------
    data : the file's bytes (the encoding declared in the file is honoured)
    file : the path used in error messages

    Returns
    -------
    The root element.
    """
    limit = model_size_limit()
    if len(data) > limit:
        raise FileTooLarge(file, len(data), limit)
    from qpn import resources
    tags = data.count(b"<") - data.count(b"</")    # start tags, at most (and comments)
    resources.require(f"the element tree of {file} ({resources.format_size(len(data))}, up to "
                      f"{tags:,} elements)", ELEMENT_BYTES * tags + XML_BYTE_BYTES * len(data))
    text = None
    try:
        text = decode_source(data, file)
    except ModelError:
        pass   # a file declaring another encoding: expat decodes it; errors show no line
    p = expat.ParserCreate()
    stack: list[XElement] = []
    root: list[XElement] = []
    run = [0, 0, 0]          # characters of the text read since the last tag, where it starts
    shown = _shown(text)

    def loc(show: bool = True) -> Loc:
        return Loc(file, p.CurrentLineNumber, p.CurrentColumnNumber + 1,
                   source=shown if show else None)

    def too_long(what: str, n: int | None, where: Loc) -> ModelError:
        size = (f"{n:,} characters long, more than the {MAX_VALUE:,}" if n is not None
                else f"longer than {MAX_VALUE:,} characters, the most")
        return ModelError(f"{what} is {size} a name, value or text of a model file may have",
                          where,
                          hint="model files hold names, ids, numbers and expressions (the "
                               "longest in the shipped QPME and PNML files has 53 characters): "
                               "check that this file is a model")

    def start(tag, attrs):
        if len(stack) >= MAX_DEPTH:
            raise ModelError(f"elements nested more than {MAX_DEPTH} deep", loc())
        if len(tag) > MAX_VALUE:
            raise too_long("an element name", len(tag), loc(False))
        for k, v in attrs.items():
            if len(k) > MAX_VALUE or len(v) > MAX_VALUE:
                what = (f"an attribute name of <{tag}>" if len(k) > MAX_VALUE
                        else f"the value of attribute '{k}' of <{tag}>")
                raise too_long(what, max(len(k), len(v)), loc(False))
        run[0] = 0
        e = XElement(tag, attrs, p.CurrentLineNumber, p.CurrentColumnNumber + 1)
        (stack[-1].children if stack else root).append(e)
        stack.append(e)

    def end(tag):
        run[0] = 0
        e = stack.pop()
        if e.text:
            e.text = "".join(e.text)

    def chars(data):
        if not run[0]:
            run[1:] = p.CurrentLineNumber, p.CurrentColumnNumber + 1
        run[0] += len(data)
        if run[0] > MAX_VALUE:
            inside = f" in <{stack[-1].tag}>" if stack else ""
            raise too_long(f"the text{inside}", None, Loc(file, run[1], run[2]))
        if stack:
            e = stack[-1]
            if not e.text:
                e.text = []      # parts joined at the end tag (expat splits long text)
            e.text.append(data)

    def doctype(*_args):
        raise ModelError("a document type declaration (<!DOCTYPE ...>) is not allowed in a model file",
                         loc(), hint="delete the <!DOCTYPE ...> line; model files need no DTD")

    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = chars
    p.StartDoctypeDeclHandler = doctype
    try:
        p.Parse(data, True)
    except expat.ExpatError as exc:
        where = Loc(file, exc.lineno, exc.offset + 1, source=shown)
        raise ModelError(f"not well-formed XML: {expat.ErrorString(exc.code)}", where,
                         hint="the file may be truncated or not an XML file") from None
    except (LookupError, ValueError) as exc:   # <?xml ... encoding="no-such-codec"?>
        raise ModelError(f"the XML declaration names an encoding Python cannot read ({exc})",
                         Loc(file, 1, 1, source=shown), expected='encoding="UTF-8"',
                         hint="save the file as UTF-8 and declare encoding=\"UTF-8\"") from None
    if not root:
        raise ModelError("the file holds no XML element", Loc(file, 1, 1, source=shown))
    return root[0]


#: errors show the located line of a file only if no line is longer than this
SHOW_LINE = 2000


def _shown(text: str | None) -> str | None:
    """The file's text for showing a located line under an error, or None when a line of
    it is too long to show (SHOW_LINE): the error still names the line and column, but a
    line of megabytes (a file on one line, a huge value), with a caret under it, is no help.

    >>> _shown("<a>\\n</a>"), _shown("<a>" + " " * SHOW_LINE + "</a>")
    ('<a>\\n</a>', None)
    """
    if text is None or len(text) <= SHOW_LINE:
        return text
    return text if max(map(len, text.split("\n"))) <= SHOW_LINE else None


def element_loc(e: XElement, file: str, source: str | None) -> Loc:
    """The location of an element's start tag, for errors."""
    return Loc(file, e.line, e.col, source=source)


def model_name(file: str, prefix: str, reserved) -> str:
    """A net name from a file's stem: letters, digits and _, not a keyword."""
    import re
    from pathlib import Path
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", Path(file).stem).strip("_") or "imported"
    return prefix + stem if stem[0].isdigit() or stem in reserved else stem


def element_error(e: XElement, msg: str, file: str, source: str | None, **kw) -> ModelError:
    """A located error at an element, naming it by tag and id: ``<place id="p1">: ...``."""
    ident = e.get("id")
    what = f"<{e.tag}" + (f' id="{ident}"' if ident else "") + ">"
    return ModelError(f"{what}: {msg}", element_loc(e, file, source), **kw)


def text_of(data: bytes) -> str | None:
    """The file's text for showing error lines (None if it is not UTF-8)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


class XmlReader:
    """What the readers of XML model formats (QPME, PNML) share: the file's tree, its
    name and text for located errors, and the notes on what the translation assumed."""

    def __init__(self, data: bytes, file: str):
        self.root = parse_xml(data, file)
        self.file, self.source = file, _shown(text_of(data))
        self.notes: list[str] = []

    def err(self, e: XElement, msg: str, **kw) -> ModelError:
        """A located error at ``e`` (``hint``, ``expected``: as for :class:`ModelError`)."""
        return element_error(e, msg, self.file, self.source, **kw)


#: model formats read besides .qpn: file suffix -> (module, function turning its bytes into qpn text);
#: ``load``, ``qpn convert`` and ``qpn fmt`` all ask this table.  Each function is called as
#: ``translate(data, file)``: the file's bytes and its path (for error messages and the net's
#: name), and returns ``(text, notes)``: the model in the qpn language and notes for the user
FOREIGN_FORMATS = {".qpe": ("qpn.dsl.qpe", "qpe_to_qpn"), ".pnml": ("qpn.dsl.pnml", "pnml_to_qpn"),
                   ".lqn": ("qpn.dsl.lqn_translate", "lqn_to_qpn")}


def origin_of_translation(path, line: int):
    """(Loc, what) of the element of foreign model file ``path`` that made line ``line`` of
    its translation, for the formats whose translator has an ``origin_of(data, file,
    line)``; None otherwise or when it cannot tell."""
    import importlib
    import os
    module, _ = FOREIGN_FORMATS.get(os.path.splitext(os.fspath(path))[1].lower(), FOREIGN_FORMATS[".qpe"])
    origin_of = getattr(importlib.import_module(module), "origin_of", None)
    if origin_of is None:
        return None
    try:
        return origin_of(read_model_bytes(path), os.fspath(path), line)
    except (ModelError, OSError):
        return None


def translate_file(path) -> tuple[str, list[str]]:
    """The qpn text of a foreign model file (.qpe, .pnml, .lqn) and the translation's notes."""
    import importlib
    import os
    if not os.path.isfile(path):
        raise ModelError(f"no such model file: {path}")
    data = read_model_bytes(path)
    module, func = FOREIGN_FORMATS.get(os.path.splitext(os.fspath(path))[1].lower(), FOREIGN_FORMATS[".qpe"])
    translate = getattr(importlib.import_module(module), func)
    return translate(data, os.fspath(path))
