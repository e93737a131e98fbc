"""Closed-loop load: CLIENTS threads, each sending requests to http://HOST:PORT/PATH back to
back (a new connection each, the next as soon as the reply's last byte is in) for SECONDS;
prints the throughput (completed requests per second) and the mean response time in ms.

A server with fewer workers than clients is saturated: its throughput is its capacity.
The first second is not counted (connections warming up); raw sockets, the request built
once and the reply not parsed keep the generator's own CPU small.

Usage: python closed_load.py HOST PORT CLIENTS SECONDS [PATH]"""
import socket
import sys
import threading
import time

WARM = 1.0


def client(host, port, request, start, stop, out, lock):
    done, total = 0, 0.0
    while True:
        t0 = time.perf_counter()
        if t0 >= stop:
            break
        with socket.create_connection((host, port), timeout=30) as s:
            s.sendall(request)
            first = s.recv(65536)
            while s.recv(65536):
                pass
        t1 = time.perf_counter()
        if not first.startswith(b"HTTP/1.") or b" 200" not in first[:16]:
            sys.exit(f"not 200 OK: {first[:40]!r}")
        if t0 >= start and t1 <= stop:
            done += 1
            total += t1 - t0
    with lock:
        out.append((done, total))


def main(host, port, clients, seconds, path="/"):
    request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode()
    now = time.perf_counter()
    start, stop = now + WARM, now + WARM + seconds
    out, lock = [], threading.Lock()
    threads = [threading.Thread(target=client, args=(host, port, request, start, stop, out, lock))
               for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = sum(d for d, _ in out)
    if not done:
        sys.exit("no request completed")
    print(f"throughput {done / seconds:.2f} per s")
    print(f"mean response {1000 * sum(t for _, t in out) / done:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), *(sys.argv[5:6]))
