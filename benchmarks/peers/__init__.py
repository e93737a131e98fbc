"""Peer tools run side by side with qpn in the benchmarks (optional)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_peer(script: str, *args: str, env_var: str = "QPN_LINE_PYTHON", module: str = "line_solver",
             timeout: float = 900) -> dict | None:
    """Run a peer script with the peer's interpreter; None when the peer is not installed."""
    python = os.environ.get(env_var)
    if python is None:
        try:
            __import__(module)
            python = sys.executable
        except ImportError:
            return None
    proc = subprocess.run([python, os.path.join(HERE, script), *args], capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])
