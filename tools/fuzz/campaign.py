"""A campaign: make the inputs, run them in a pool, deduplicate the failures by
signature, shrink one reproducing input per signature, write the report."""
from __future__ import annotations

import itertools
import json
import os
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from . import extremes as extreme_inputs
from . import mutate
from .corpus import lqn_seeds, model_seeds, pnml_seeds, qpe_seeds, trace_seeds
from .netgen import generated_models
from .pool import DEFAULT_MEMORY, Pool
from .runner import FAILURES, HANG, MEMORY, SUSPECT, Outcome

CHECKPOINT_SECONDS = 60.0   # report.json rewritten this often while a campaign runs
GENERATED_SHARE = 0.25      # of the models: Hypothesis nets; the rest mutate the seeds


def make_inputs(models: int, traces: int, seed: int, cache_dir: str, programs: str = "quick",
                qpe: int = 0, pnml: int = 0, lqn: int = 0, extremes: int = 0):
    """Yield (origin, kind, data): the seeds themselves first, then mutants
    round-robin over the seeds, and Hypothesis nets among the models; then
    ``qpe`` QPME, ``pnml`` PNML and ``lqn`` LQN files (seeds, then mutants); then
    ``extremes`` inputs of :mod:`.extremes` (numbers past the floats, deep nesting,
    stiff and subnormal delays, surrogates, includes, impossible traces, compression
    bombs) and outputs onto special files (:mod:`.outputs`)."""
    rng = random.Random(seed)
    # the trace seeds first: tracing the test programs overlaps the workers' start
    tseeds = trace_seeds(cache_dir, programs) if traces or extremes else {}
    mseeds = model_seeds()
    n_gen = int(models * GENERATED_SHARE) if models >= 8 else 0
    gen = generated_models(n_gen, seed) if n_gen else []
    names = sorted(mseeds)
    shipped = [n for n in names if ":" not in n]
    made = 0
    for name in names[:models]:
        yield name, "model", mseeds[name].encode()
        made += 1
    gi = 0
    while made < models:
        if gen and gi < len(gen) and rng.random() < n_gen / max(1, models - len(names)):
            yield f"hypothesis #{gi}", "model", gen[gi].encode()
            gi += 1
        else:
            # mostly the shipped models: their mutants get past the parser more often
            # than those of the error catalogue's one-line mistakes
            pool = shipped if shipped and rng.random() < 0.8 else names
            name = pool[made % len(pool)]
            yield f"mutant of {name}", "model", mutate.mutate_model(rng, mseeds[name])
        made += 1
    if traces:
        tnames = sorted(tseeds)
        for k in range(traces):
            name = tnames[k % len(tnames)]
            if k < len(tnames):
                yield name, "trace", tseeds[name]
            else:
                yield f"mutant of {name}", "trace", mutate.mutate_trace(rng, tseeds[name])
    yield from _extreme_inputs(rng, extremes, mseeds, tseeds)
    for kind, count, seeds in (("qpe", qpe, qpe_seeds), ("pnml", pnml, pnml_seeds),
                               ("lqn", lqn, lqn_seeds)):
        if not count:
            continue
        xseeds = seeds()
        xnames = sorted(xseeds)
        for k in range(count):
            name = xnames[k % len(xnames)]
            if k < len(xnames):
                yield name, kind, xseeds[name]
            else:
                mutant = mutate.mutate_model if kind == "lqn" else mutate.mutate_xml
                data = xseeds[name]
                yield f"mutant of {name}", kind, mutant(rng, data.decode() if kind == "lqn" else data)


def _extreme_inputs(rng: random.Random, count: int, mseeds: dict, tseeds: dict):
    shipped = sorted(n for n in mseeds if ":" not in n)
    tnames = sorted(tseeds)
    for k in range(count):
        r = rng.random()
        if r < 0.40:
            yield "extreme model", "model", extreme_inputs.extreme_model(rng)
        elif r < 0.55:
            yield "include bundle", "bundle", extreme_inputs.include_bundle(rng)
        elif r < 0.65 and shipped:
            name = shipped[k % len(shipped)]
            yield f"outputs of {name}", "outputs", mseeds[name].encode()
        elif r < 0.97 and tnames:
            name = tnames[k % len(tnames)]
            yield f"impossible {name}", "trace", extreme_inputs.impossible_trace(rng, tseeds[name])
        elif tnames:
            header = tseeds[tnames[0]].split(b"\n", 1)[0]
            yield "compression bomb", "trace", extreme_inputs.compression_bomb(rng, header)
        else:
            yield "extreme model", "model", extreme_inputs.extreme_model(rng)


@dataclass
class Finding:
    signature: str
    outcome: str
    kind: str
    commands: set = field(default_factory=set)
    count: int = 0
    origin: str = ""
    data: bytes = b""
    detail: str = ""

    def add(self, res: Outcome, origin: str, kind: str, data: bytes, detail: str) -> None:
        self.count += 1
        self.commands.add(res.command)
        if not self.data or len(data) < len(self.data):
            self.origin, self.data, self.detail = origin, data, detail


@dataclass
class Campaign:
    inputs: Counter = field(default_factory=Counter)          # kind -> inputs run
    outcomes: Counter = field(default_factory=Counter)        # (command, outcome) -> runs
    failures: dict = field(default_factory=dict)              # signature -> Finding
    suspects: dict = field(default_factory=dict)              # signature -> Finding
    seconds: float = 0.0
    slowest: list = field(default_factory=list)               # (seconds, command, origin)
    command_seconds: Counter = field(default_factory=Counter)  # command -> seconds spent
    interrupted: bool = False
    first: int = 0          # the first input's number in the campaign's sequence
    next_missing: int = 0   # inputs first..next_missing-1 are all done
    finished: bool = False  # False in a checkpoint: still running, or killed since
    _done: set = field(default_factory=set)

    def done(self, index: int) -> None:
        self._done.add(index)
        while self.next_missing in self._done:
            self._done.remove(self.next_missing)
            self.next_missing += 1

    def record(self, origin: str, kind: str, data: bytes, results: list[Outcome]) -> None:
        self.inputs[kind] += 1
        for r in results:
            self.outcomes[(r.command, r.outcome)] += 1
            if r.outcome in FAILURES:
                self.failures.setdefault(r.signature, Finding(r.signature, r.outcome, kind)).add(
                    r, origin, kind, data, r.detail)
            for sig, detail in r.notes:
                self.suspects.setdefault(sig, Finding(sig, SUSPECT, kind)).add(
                    r, origin, kind, data, detail)
            self.slowest.append((r.seconds, r.command, origin))
            self.command_seconds[r.command] += r.seconds
        self.slowest = sorted(self.slowest, reverse=True)[:10]

    @property
    def total(self) -> int:
        return sum(self.inputs.values())

    def summary(self) -> dict:
        by_class = Counter()
        for (_, outcome), n in self.outcomes.items():
            by_class[outcome] += n
        return {
            "inputs": dict(self.inputs), "seconds": round(self.seconds, 1),
            "interrupted": self.interrupted, "finished": self.finished,
            "complete": [self.first, self.next_missing],
            "inputs_per_second": round(self.total / self.seconds, 2) if self.seconds else None,
            "runs_by_outcome": dict(by_class),
            "runs_by_command": {f"{c} {o}": n for (c, o), n in sorted(self.outcomes.items())},
            "seconds_by_command": {c: round(t, 1) for c, t in self.command_seconds.most_common()},
            "slowest": [{"seconds": round(s, 3), "command": c, "input": o} for s, c, o in self.slowest],
        }


def run_campaign(models: int, traces: int, seed: int, jobs: int = 1, budget: float = 5.0,
                 memory: int = DEFAULT_MEMORY, out: str | None = None, shrink: bool = True,
                 programs: str = "quick", cache_dir: str | None = None, progress=None,
                 quick: bool = False, qpe: int = 0, pnml: int = 0, lqn: int = 0,
                 extremes: int = 0, window: tuple[int, int] | None = None) -> Campaign:
    """Run a campaign; with ``out`` write report.json, report.txt and one
    reproducing input per failure signature there. Each new signature's input is
    also saved in ``out/found/`` the moment it fails, so a campaign that is killed
    (not interrupted) keeps them. ``window=(start, end)`` runs only the inputs
    numbered start..end-1 of the same sequence (to run again a stretch where a
    killed campaign found something)."""
    cache_dir = cache_dir or os.path.join(out or ".", "seeds")
    camp = Campaign()
    with Pool(jobs, budget, memory, quick) as pool:
        items = make_inputs(models, traces, seed, cache_dir, programs, qpe, pnml, lqn, extremes)
        if window:
            items = itertools.islice(items, window[0], window[1])
        camp.first = camp.next_missing = window[0] if window else 0
        # numbered, so that a checkpoint can say up to where every input is done
        items = (((camp.first + i, o), k, d) for i, (o, k, d) in enumerate(items))
        if out:
            items = _saving_new_failures(camp, items, out)
        t0 = time.perf_counter()
        try:
            first = next(items, None)   # the seeds, and the Hypothesis nets drawn up front
            for w in pool.workers:
                w.wait_ready()
            t0 = last = time.perf_counter()   # throughput without the start (seeds, numba caches)
            items = itertools.chain([first] if first else [], items)
            for (index, origin), kind, data, results in pool.map(items):
                camp.record(origin, kind, data, results)
                camp.done(index)
                if progress:
                    progress(camp)
                if out and time.perf_counter() - last > CHECKPOINT_SECONDS:
                    # a checkpoint: a campaign killed with its session keeps its report, and
                    # runs on with --window NEXT_MISSING:END
                    camp.seconds = last = time.perf_counter()
                    camp.seconds -= t0
                    write_report(camp, out, seed)
            camp.finished = True
        except KeyboardInterrupt:       # report what was found so far
            camp.interrupted, shrink = True, False
        camp.seconds = time.perf_counter() - t0
        if shrink:
            for f in camp.failures.values():
                if f.outcome not in (HANG, MEMORY):
                    f.data = shrink_input(pool, f)
    if out:
        write_report(camp, out, seed)
    return camp


def _saving_new_failures(camp: Campaign, items, out: str):
    """Pass ``items`` through; before each next input is handed out, write the input
    of every failure signature recorded since (as found, unshrunk)."""
    saved: set = set()
    folder = os.path.join(out, "found")
    for item in items:
        for sig, f in list(camp.failures.items()):
            if sig not in saved:
                saved.add(sig)
                os.makedirs(folder, exist_ok=True)
                name = os.path.join(folder, f"{len(saved):02d}-{_slug(sig)}{_EXT[f.kind]}")
                with open(name, "wb") as fh:
                    fh.write(f.data)
                with open(os.path.join(folder, "signatures.txt"), "a", encoding="utf-8") as fh:
                    fh.write(f"{os.path.basename(name)}\t{f.outcome}\t{sig}\t{f.origin}\n")
        yield item


def shrink_input(pool: Pool, f: Finding, max_runs: int = 80) -> bytes:
    """A smaller input that fails with the same signature: whole lines, then
    single tokens, removed greedily while the failure stays (bounded runs)."""
    runs = 0
    only = tuple(sorted(f.commands))[:1]

    def fails(data: bytes) -> bool:
        nonlocal runs
        runs += 1
        return any(r.signature == f.signature for r in pool.run(f.kind, data, only))

    data = f.data
    if f.kind in ("bundle", "outputs"):  # files as JSON, a model onto nodes: kept whole
        return data
    if not fails(data):             # flaky (timing, state): keep what was seen
        return data
    for unit in ("lines", "tokens"):
        if unit == "tokens" and f.kind == "trace":
            break
        parts = _split(data, unit)
        chunk = max(1, len(parts) // 2)
        while chunk >= 1 and runs < max_runs:
            i, changed = 0, False
            while i < len(parts) and runs < max_runs:
                trial = parts[:i] + parts[i + chunk:]
                if trial and fails(b"".join(trial)):
                    parts, changed = trial, True
                else:
                    i += chunk
            if not changed:
                chunk //= 2
        data = b"".join(parts)
    return data


def _split(data: bytes, unit: str) -> list[bytes]:
    if unit == "lines":
        return data.splitlines(keepends=True)
    # tokens of the UTF-8 text; bytes that do not decode stay as one part
    text = data.decode("utf-8", "surrogateescape")
    return [t.encode("utf-8", "surrogateescape") for _, t in mutate.tokens(text)]


def coarse(signature: str) -> str:
    """A signature without its line number, for lists that must survive edits
    elsewhere in the file: ``E @ path:12 (f)`` -> ``E @ path (f)``."""
    return re.sub(r":\d+ \(", " (", signature)


def _slug(sig: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", sig).strip("-")[:60]


_EXT = {"model": ".qpn", "trace": ".jsonl", "qpe": ".qpe", "pnml": ".pnml",
        "lqn": ".lqn", "bundle": ".json", "outputs": ".out.qpn"}


def write_report(camp: Campaign, out: str, seed: int) -> None:
    os.makedirs(out, exist_ok=True)
    entries = []
    for group, findings in (("failures", camp.failures), ("suspects", camp.suspects)):
        os.makedirs(os.path.join(out, group), exist_ok=True)
        # a checkpoint's numbering changes as counts grow: the last report's files go first
        for old in os.listdir(os.path.join(out, group)):
            if re.match(r"\d{2,}-", old):
                os.remove(os.path.join(out, group, old))
        ordered = sorted(findings.values(), key=lambda f: (-f.count, f.signature))
        for i, f in enumerate(ordered, 1):
            name = os.path.join(group, f"{i:02d}-{_slug(f.signature)}{_EXT[f.kind]}")
            with open(os.path.join(out, name), "wb") as fh:
                fh.write(f.data)
            entries.append({"group": group, "signature": f.signature, "outcome": f.outcome,
                            "kind": f.kind, "commands": sorted(f.commands), "count": f.count,
                            "origin": f.origin, "repro": name, "detail": f.detail})
    report = {"seed": seed, **camp.summary(), "findings": entries}
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
    with open(os.path.join(out, "report.txt"), "w", encoding="utf-8") as fh:
        fh.write(report_text(camp, seed, entries))


def report_text(camp: Campaign, seed: int, entries: list[dict]) -> str:
    s = camp.summary()
    first, nxt = s["complete"]
    state = "finished" if s["finished"] else "interrupted" if s["interrupted"] else \
        f"CHECKPOINT (running, or killed: go on with --window {nxt}:END)"
    lines = [f"qpn fuzz campaign, seed {seed}: {s['inputs']} inputs in {s['seconds']} s "
             f"({s['inputs_per_second']} inputs/s)",
             f"{state}; inputs {first}..{nxt - 1} of the sequence all done",
             "runs by outcome: " + ", ".join(f"{k} {v}" for k, v in sorted(s["runs_by_outcome"].items())),
             f"{len(camp.failures)} failure signature(s), {len(camp.suspects)} suspect note(s)", ""]
    for e in entries:
        lines.append(f"[{e['outcome']}] {e['signature']}  ({e['count']}x, {', '.join(e['commands'])}; "
                     f"from {e['origin']})")
        lines.append(f"    repro: {e['repro']}")
        if e["detail"] and e["group"] == "failures":
            lines.append("    " + e["detail"].strip().splitlines()[-1][:200])
    return "\n".join(lines) + "\n"
