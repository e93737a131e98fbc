"""``python -m tools.fuzz --models N --traces M --seed S --out DIR [--jobs J]``

``python -m tools.fuzz --replay FILE_OR_DIR ...``: run saved inputs (.qpn models, .jsonl
traces: a report's failures/ directory) again and print each one's outcomes."""
from __future__ import annotations

import argparse
import sys

from .campaign import run_campaign
from .pool import DEFAULT_MEMORY


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    p.add_argument("--models", type=int, default=1000, help="model inputs (default 1000)")
    p.add_argument("--traces", type=int, default=200, help="trace inputs (default 200)")
    p.add_argument("--qpe", type=int, default=0, help="QPME (.qpe) file inputs (default 0)")
    p.add_argument("--pnml", type=int, default=0, help="PNML (.pnml) file inputs (default 0)")
    p.add_argument("--lqn", type=int, default=0, help="LQN (.lqn) file inputs (default 0)")
    p.add_argument("--extremes", type=int, default=0,
                   help="inputs at the extremes: numbers past the floats, deep nesting, stiff and "
                        "subnormal delays, surrogates, includes, impossible traces, compression "
                        "bombs, outputs onto special files (default 0)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--out", help="directory for report.json, report.txt, repro files")
    p.add_argument("--replay", nargs="+", metavar="PATH",
                   help="run these saved inputs (files, or directories of them) instead")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--budget", type=float, default=5.0,
                   help="wall seconds per command before it counts as a HANG (default 5)")
    p.add_argument("--memory", type=float, default=DEFAULT_MEMORY / 2 ** 30,
                   help="address-space limit per worker in GiB (default 3)")
    p.add_argument("--programs", choices=("quick", "all", "none"), default="quick",
                   help="test programs to trace for seed traces (default quick: three)")
    p.add_argument("--window", metavar="START:END",
                   help="run only inputs START..END-1 of the campaign's sequence")
    p.add_argument("--no-shrink", action="store_true", help="keep the first small repro as found")
    a = p.parse_args(argv)
    # Ctrl-C or SIGTERM stops a campaign with its report written (KeyboardInterrupt),
    # also when it was started in the background, where SIGINT starts out ignored
    import signal

    from .netgen import STOP

    def stop(signum, frame):
        STOP.set()    # remembered: Hypothesis's gc callback may swallow the first interrupt
        signal.default_int_handler(signum, frame)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if a.replay:
        return replay(a.replay, a.budget, int(a.memory * 2 ** 30))
    if not a.out:
        p.error("--out is required for a campaign")
    last = [0]
    told: set = set()

    def progress(camp) -> None:
        for sig, f in camp.failures.items():
            if sig not in told:
                told.add(sig)
                print(f"new failure at input {camp.total}: [{f.outcome}] {sig} (from {f.origin})",
                      file=sys.stderr, flush=True)
        if camp.total - last[0] >= 100 or camp.total == 1:
            last[0] = camp.total
            print(f"{camp.total} inputs, {len(camp.failures)} failure signature(s)",
                  file=sys.stderr, flush=True)

    camp = run_campaign(a.models, a.traces, a.seed, jobs=a.jobs, budget=a.budget,
                        memory=int(a.memory * 2 ** 30), out=a.out, shrink=not a.no_shrink,
                        programs=a.programs, progress=progress, qpe=a.qpe, pnml=a.pnml,
                        lqn=a.lqn, extremes=a.extremes, window=_window(p, a.window))
    with open(f"{a.out}/report.txt", encoding="utf-8") as fh:
        sys.stdout.write(fh.read())
    return 1 if camp.failures else 0


def _window(p, text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        start, end = (int(x) for x in text.split(":"))
    except ValueError:
        p.error(f"--window {text!r}: expected START:END, two whole numbers")
    if not 0 <= start < end:
        p.error(f"--window {text!r}: expected 0 <= START < END")
    return start, end


def replay(paths: list[str], budget: float, memory: int) -> int:
    """Run saved inputs again; 1 if any still fails."""
    import os
    from .pool import Pool
    from .runner import FAILURES
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(path, f) for f in os.listdir(path))
        else:
            files.append(path)
    kinds = {".qpn": "model", ".jsonl": "trace", ".qpe": "qpe", ".pnml": "pnml", ".lqn": "lqn",
             ".json": "bundle"}

    def kind_of(f: str) -> str | None:
        return "outputs" if f.endswith(".out.qpn") else kinds.get(os.path.splitext(f)[1])
    items = [(f, kind_of(f), open(f, "rb").read()) for f in files if kind_of(f)]
    bad = 0
    with Pool(1, budget, memory) as pool:
        for f, _kind, _data, outcomes in pool.map(items):
            worst = [o for o in outcomes if o.outcome in FAILURES]
            bad += bool(worst)
            text = "; ".join(f"{o.command} {o.signature}" for o in worst) or \
                ", ".join(f"{o.command} {o.outcome}" for o in outcomes)
            print(f"{'FAIL' if worst else 'ok  '} {os.path.basename(f)}: {text}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
