"""Mean value analysis of product-form QPNs.

Importing this package registers the ``mva`` solver (``solvers.solve(net,
"mva")``).  One algorithm per module:

* :mod:`.productform` -- is the net a BCMP network? (or why not)
* :mod:`.exact` -- exact multi-class MVA with multi-server stations
* :mod:`.approx` -- Schweitzer–Bard and Linearizer
* :mod:`.open` -- open (Jackson/BCMP) closed forms and mixed networks
* :mod:`.symbolic` -- closed-form measures as sympy expressions
* :mod:`.solver` -- the registered solver
"""
from ..registry import register

from .approx import linearizer, schweitzer
from .exact import MVAResult, exact_mva, population_vectors
from .open import erlang_c, mixed_network, open_network
from .productform import QNModel, product_form
from .solver import MVASolver, analyze, net_quantities

register(MVASolver())


def __getattr__(name: str):
    # sympy is imported only when symbolic MVA is asked for
    if name == "symbolic_mva":
        from .symbolic import symbolic_mva
        return symbolic_mva
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["product_form", "QNModel", "exact_mva", "MVAResult", "population_vectors",
           "schweitzer", "linearizer", "open_network", "mixed_network", "erlang_c",
           "analyze", "net_quantities", "symbolic_mva", "MVASolver"]
