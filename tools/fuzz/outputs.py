"""Outputs onto special files: what is at an output path must stay what it was.

An "outputs" input is a model; each command writes one of its outputs onto a node
made for it in the worker's scratch directory (never /dev): a FIFO with a reader, a
private character device (the null device's numbers, when the process may create
one) and a file with a second hard link.  The command's own outcome counts as
usual; a node replaced by a regular file, or a link split, is WRONG (qpn once renamed
its temp file over /dev/full).
"""
from __future__ import annotations

import os
import select
import stat
import threading

from .runner import MODEL_FILE, OK, QUICK_SOLVE_BUDGET, SPECIAL_KINDS, WRONG, Outcome, run_command

FIFO, DEVICE, LINK = "out.fifo", "null.dev", "linked.qpn"
OUTPUT_COMMANDS = {
    "solve --json FIFO": ["solve", MODEL_FILE, "--method", "auto", "--json", FIFO] + QUICK_SOLVE_BUDGET,
    "report -o DEVICE": ["report", MODEL_FILE, "-o", DEVICE, "--seed", "1", "--wall", "0.5",
                         "--allow-imprecise"],
    "fmt --write LINKED": ["fmt", "--write", MODEL_FILE],
}


class _Drain(threading.Thread):
    """Reads a FIFO until told to stop (a writer may come, or never)."""

    def __init__(self, path: str):
        super().__init__(daemon=True)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.stop, self.got = threading.Event(), bytearray()

    def run(self) -> None:
        try:
            while True:
                stopping = self.stop.is_set()
                ready, _, _ = select.select([self.fd], [], [], 0.02)
                while ready:
                    chunk = os.read(self.fd, 1 << 16)
                    if not chunk:
                        break
                    self.got += chunk
                    ready, _, _ = select.select([self.fd], [], [], 0)
                if stopping:
                    return
        finally:
            os.close(self.fd)


def run_output_command(name: str, argv: list[str], budget: float) -> Outcome:
    """Run one output command onto its node and check the node afterwards."""
    if name.endswith("FIFO"):
        os.mkfifo(FIFO)
        drain = _Drain(FIFO)
        drain.start()
        try:
            res, _ = run_command(name, argv, budget)
        finally:
            drain.stop.set()
            drain.join(5)
        kept = stat.S_ISFIFO(os.lstat(FIFO).st_mode)
        what = "the FIFO"
    elif name.endswith("DEVICE"):
        try:
            os.mknod(DEVICE, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:             # not root: nothing to check here
            return Outcome(name, OK, rc=0)
        res, _ = run_command(name, argv, budget)
        kept = stat.S_ISCHR(os.lstat(DEVICE).st_mode)
        what = "the device node"
    else:
        os.link(MODEL_FILE, LINK)
        res, _ = run_command(name, argv, budget)
        a, b = os.stat(MODEL_FILE), os.stat(LINK)
        kept = a.st_ino == b.st_ino and a.st_nlink == 2
        what = "the hard link"
    if not kept and res.outcome == OK:
        res.outcome, res.signature = WRONG, f"{name}: {what} was replaced"
    elif not kept:
        res.outcome, res.signature = WRONG, f"{name}: {what} was replaced (exit {res.rc})"
    return res


SPECIAL_KINDS["outputs"] = (OUTPUT_COMMANDS, run_output_command)
