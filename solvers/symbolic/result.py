"""A result whose measures are closed-form expressions in the model's parameters."""
from __future__ import annotations

from typing import Any

from ..result import Result


class SymbolicResult(Result):
    """Numeric values (at the model's parameter values) plus the expressions.

    >>> import qpn
    >>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="symbolic")
    >>> res.expr("tokens", "server")
    -demand*lambda/(demand*lambda - 1)
    >>> res.evaluate("tokens", "server", **{"lambda": 0.5, "demand": 1})
    1.0
    """

    def expr(self, measure: str, element: str, color: str = "") -> Any:
        """The sympy expression of one measure, in the net's parameters."""
        self.cell(measure, element, color)  # a located error for unknown cells
        return self.info["expressions"][(measure, element, color)]

    def latex(self, measure: str, element: str, color: str = "") -> str:
        """The measure's expression as LaTeX."""
        import sympy as sp
        return sp.latex(self.expr(measure, element, color))

    def simplified(self, measure: str, element: str, color: str = "") -> Any:
        """The measure's expression after ``sympy.simplify``."""
        import sympy as sp
        return sp.simplify(self.expr(measure, element, color))

    def evaluate(self, measure: str, element: str, color: str = "", **params: float) -> float:
        """The expression at other parameter values (missing ones keep the model's)."""
        symbols = self.info["symbols"]
        values = dict(self.info["values"])
        for name, v in params.items():
            if name not in symbols:
                from qpn.errors import QPNError
                raise QPNError(f"unknown parameter '{name}'")
            values[symbols[name]] = v
        return float(self.expr(measure, element, color).subs(values).evalf(30))

    def to_dict(self) -> dict:
        """The JSON form of :class:`Result` plus an ``expressions`` list (each one as text)."""
        d = super().to_dict()
        d["info"].pop("expressions", None)
        d["info"].pop("symbols", None)
        d["info"].pop("values", None)
        d["expressions"] = [{"measure": m, "element": e, "color": c, "expr": str(x)}
                            for (m, e, c), x in self.info["expressions"].items()]
        return d
