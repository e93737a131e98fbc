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
        """The sympy expression of one measure, in the net's parameters.

        >>> import qpn
        >>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="symbolic")
        >>> res.expr("response", "server"), round(res.get("response", "server"), 6)
        (-demand/(demand*lambda - 1), 5.0)
        """
        self.cell(measure, element, color)  # a located error for unknown cells
        return self.info["expressions"][(measure, element, color)]

    def latex(self, measure: str, element: str, color: str = "") -> str:
        r"""The measure's expression as LaTeX.

        >>> import qpn
        >>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="symbolic")
        >>> print(res.latex("response", "server"))
        - \frac{demand}{demand \lambda - 1}
        """
        import sympy as sp
        return sp.latex(self.expr(measure, element, color))

    def simplified(self, measure: str, element: str, color: str = "") -> Any:
        """The measure's expression after ``sympy.simplify``.

        >>> import qpn
        >>> net = qpn.load("models/interactive.qpn")     # 2 users, think 1 s, cpu 1 s
        >>> res = qpn.solve(net, method="symbolic")
        >>> res.expr("throughput", "back")
        (2*z + 2)/(z**2 + 2*z + 2)
        >>> res.simplified("throughput", "back")
        2*(z + 1)/(z**2 + 2*z + 2)
        """
        import sympy as sp
        return sp.simplify(self.expr(measure, element, color))

    def evaluate(self, measure: str, element: str, color: str = "", **params: float) -> float:
        """The expression at other parameter values (missing ones keep the model's).

        >>> import qpn
        >>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="symbolic")
        >>> round(res.evaluate("response", "server", **{"lambda": 0.5}), 6)   # demand stays 1 s
        2.0
        """
        symbols = self.info["symbols"]
        values = dict(self.info["values"])
        for name, v in params.items():
            if name not in symbols:
                from qpn.errors import QPNError
                raise QPNError(f"unknown parameter '{name}'")
            values[symbols[name]] = v
        return float(self.expr(measure, element, color).subs(values).evalf(30))

    def to_dict(self) -> dict:
        """The JSON form of :class:`Result` plus an ``expressions`` list (each one as text).

        >>> import qpn
        >>> res = qpn.solve(qpn.load("models/mm1.qpn"), method="symbolic")
        >>> d = res.to_dict()
        >>> [(x["element"], x["expr"]) for x in d["expressions"] if x["measure"] == "response"]
        [('server', '-demand/(demand*lambda - 1)')]
        """
        d = super().to_dict()
        d["info"].pop("expressions", None)
        d["info"].pop("symbols", None)
        d["info"].pop("values", None)
        d["expressions"] = [{"measure": m, "element": e, "color": c, "expr": str(x)}
                            for (m, e, c), x in self.info["expressions"].items()]
        return d
