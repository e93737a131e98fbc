"""The front tier of a two-tier service (tests/programs/tiers/service.py).

Usage: python front.py PORT BACK_PORT WORKERS WORK

WORKERS threads share one listening socket: each loops on accept(), reads an
HTTP/1.0 request, parses it in pure Python (WORK rounds over its bytes), calls
the back end (a new connection to 127.0.0.1:BACK_PORT, one request line, its
one-line reply) and answers the client with a small HTTP response, then closes
the connection.
"""
import socket
import sys
import threading


def parse(request: bytes, work: int) -> int:
    acc = 0
    for _ in range(work):
        for b in request:
            acc = (acc * 31 + b) % 1_000_003
    return acc


def call_back(port: int, key: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"%d\n" % key)
        reply = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return reply
            reply += chunk


def serve(listener: socket.socket, back_port: int, work: int) -> None:
    while True:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                request += chunk
            reply = call_back(back_port, parse(request, work))
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(reply), reply))


def main(port: int, back_port: int, workers: int, work: int) -> None:
    listener = socket.create_server(("127.0.0.1", port), backlog=256)
    threads = [threading.Thread(target=serve, args=(listener, back_port, work),
                                name=f"front-{k}", daemon=True) for k in range(workers)]
    for t in threads:
        t.start()
    print("ready", flush=True)         # to service.py: listening
    threading.Event().wait()           # until SIGTERM


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
