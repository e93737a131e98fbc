"""The back-end tier of a two-tier service (tests/programs/tiers/service.py).

Usage: python back.py PORT WORKERS WORK

WORKERS threads share one listening socket: each loops on accept(), reads a
request line, hashes a 1 MiB block (hashlib releases the GIL) and then folds
the digest WORK times in pure Python (holding the GIL), replies with one line and
closes the connection.
"""
import hashlib
import socket
import sys
import threading

BLOCK = bytes(range(256)) * 4096                      # 1 MiB


def compute(key: bytes, work: int) -> int:
    digest = hashlib.sha256(BLOCK + key).digest()
    acc = 0
    for _ in range(work):
        for b in digest:
            acc = (acc * 33 + b) % 65_521
    return acc


def serve(listener: socket.socket, work: int) -> None:
    while True:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            conn.sendall(b"%d\n" % compute(data, work))


def main(port: int, workers: int, work: int) -> None:
    listener = socket.create_server(("127.0.0.1", port), backlog=256)
    threads = [threading.Thread(target=serve, args=(listener, work), name=f"back-{k}",
                                daemon=True) for k in range(workers)]
    for t in threads:
        t.start()
    print("ready", flush=True)         # to service.py: listening
    threading.Event().wait()           # until SIGTERM


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
