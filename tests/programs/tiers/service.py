"""A two-tier service: a front process calling a back-end process over local sockets.

Usage: python service.py PORT FRONT_WORKERS BACK_WORKERS [FRONT_WORK BACK_WORK]

Starts back.py on PORT + 1 and front.py on PORT (each a process of its own, with
its own GIL and worker threads), waits until both listen, and stops both on SIGTERM
or SIGINT.  A client (tests/programs/http_load.py) sends requests
to the front on PORT; `qpn trace -- python service.py ...` traces all three
processes (frontends/processes.py joins them).
"""
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def start(args: list) -> subprocess.Popen:
    """Start a tier and wait for its "ready" line (printed once it listens): a readiness
    probe by connecting would be one more request in the traces."""
    proc = subprocess.Popen([sys.executable] + args, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        sys.exit(f"{args[0]} exited with {proc.wait()} before listening")
    return proc


def main(port: int, front: int, back: int, front_work: int = 800, back_work: int = 600) -> None:
    procs = []

    def stop(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            p.wait()
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    procs.append(start([os.path.join(HERE, "back.py"), str(port + 1), str(back),
                        str(back_work)]))
    procs.append(start([os.path.join(HERE, "front.py"), str(port), str(port + 1), str(front),
                        str(front_work)]))
    while True:
        signal.pause()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:6]))
