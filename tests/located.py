"""Shared checks of the tests of user mistakes: a software block of lines, and an error
located at a line and column with the source line and a caret under the column."""
import pytest

import qpn
from qpn.errors import ModelError


def software_block(*lines: str) -> str:
    """``software { ... }`` around ``lines``, each indented."""
    return "software {\n" + "".join(f"    {ln}\n" for ln in lines) + "}\n"


def assert_located(src: str, fragment: str, line: int, col: int) -> ModelError:
    """Parsing ``src`` (as bad.qpn) fails with ``fragment`` in the message, at ``line``:``col``,
    showing the source line and a caret under the column; the error, for more checks."""
    with pytest.raises(ModelError) as info:
        qpn.parse(src, "bad.qpn")
    err = info.value
    assert fragment in err.message, err.render()
    assert err.loc is not None and err.loc.file == "bad.qpn"
    assert (err.loc.line, err.loc.col) == (line, col), err.render()
    text = str(err)
    assert text.startswith(f"bad.qpn:{line}:{col}: error: ")
    lines = text.splitlines()
    # the offending source line and a caret under the column
    assert lines[1].endswith(src.splitlines()[line - 1])
    assert lines[2].split("| ", 1)[1].index("^") == col - 1
    return err
