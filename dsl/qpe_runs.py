"""SimQPN's run configurations (a QPME model's meta-attributes) as the qpn options of the
same run: method, stopping rule, run length as ``--time``, ramp-up as ``--warmup``, runs
as replications.  :func:`dsl.qpe.qpe_to_qpn` writes them as comments at the top, and
numbers (:func:`num`) as the model language writes them."""
from __future__ import annotations

from .xmlsource import XElement


def num(x: float) -> str:
    """A number as the model language writes it (shortest exact form).

    >>> num(5e-05), num(2.0), num(0.25)
    ('5e-05', '2', '0.25')
    """
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


SIMQPN_METHODS = {"1": "batch means", "2": "replication/deletion", "3": "Welch's method"}


def run_comment(m: XElement) -> str:
    """A SimQPN run configuration as a comment with the qpn options for the same run:
    its total length as ``--time``, its ramp-up as ``--warmup``, its runs as replications."""
    def value(name: str) -> float | None:
        try:
            return float(m.get(name, ""))
        except ValueError:
            return None
    total, ramp = value("total-run-length"), value("ramp-up-length")
    runs = int(value("number-of-runs") or 1) if m.get("scenario") == "2" else None
    opts = ["--method des"]
    if total:
        opts.append(f"--time {num(total)}")
    if ramp is not None:
        opts.append(f"--warmup {num(ramp)}")
    if runs and runs > 1:
        opts.append(f"-R {runs}")
    rule = m.get("stopping-rule", "?")
    how = {"FIXEDLEN": "a fixed length", "RELPRC": "relative precision, at most this long",
           "ABSPRC": "absolute precision, at most this long"}.get(rule, rule)
    return (f"# SimQPN configuration '{m.get('configuration-name', '')}': "
            f"{SIMQPN_METHODS.get(m.get('scenario', ''), 'method ' + m.get('scenario', '?'))}, {how}; "
            f"the same span in qpn: qpn solve FILE {' '.join(opts)}")
