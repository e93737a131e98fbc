"""A thread per connection: socketserver.ThreadingTCPServer, and a client in the program.

Usage: python thread_per_conn.py [REQUESTS] [WORK]

The server (serve_forever in a thread of its own) accepts each connection and starts a
thread for it (the standard library's ThreadingMixIn); the handler reads a line, folds
it WORK times in pure Python and answers.  The main thread sends REQUESTS requests one
after the other, a new connection each, and prints the mean response time in ms.
"""
import socket
import socketserver
import sys
import threading
import time


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline()
        acc = 0
        for _ in range(self.server.work):
            for b in line:
                acc = (acc * 31 + b) % 65_521
        self.wfile.write(b"%d\n" % acc)


def main(requests: int = 40, work: int = 300) -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.work = work
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, name="acceptor", daemon=True).start()
    total = 0.0
    for k in range(requests):
        t0 = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"request %d\n" % k)
            s.recv(100)
        total += time.perf_counter() - t0
    server.shutdown()
    server.server_close()
    print(f"mean response {1000 * total / requests:.3f} ms")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
