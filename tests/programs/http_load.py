"""Open-loop HTTP load: Poisson arrivals at RATE/s for N requests to http://HOST:PORT/PATH,
each on a new connection from its own thread; prints the mean response time in ms, then
the generator's own CPU per request.

A response time is timed from just before connecting to the last byte of the response
(the server closes the connection after a HTTP/1.0 request): the request's bytes are
built once and the reply is not parsed, so the generator's own Python work (starting the
thread, building and parsing) stays outside the timed span, as with a load tool written
in C.  The measured span is the server's work plus the kernel's loopback.

Usage: python http_load.py HOST PORT RATE N [PATH]"""
import random
import socket
import sys
import threading
import time


def one(host, port, request, times, failures, lock):
    t0 = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=30) as s:
            s.sendall(request)
            first = s.recv(65536)
            while s.recv(65536):
                pass
        t1 = time.perf_counter()
    except OSError as e:
        with lock:
            failures.append(repr(e))
        return
    with lock:
        times.append((t1 - t0, first[:12]))


def main(host, port, rate, n, path="/"):
    request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode()
    times, failures, lock = [], [], threading.Lock()
    cpu0 = time.process_time()
    threads, next_at = [], time.perf_counter()
    for _ in range(n):
        next_at += random.expovariate(rate)
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=one, args=(host, port, request, times, failures, lock))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    bad = [status for _, status in times if not status.startswith(b"HTTP/1.") or b" 200" not in status]
    if failures or bad or not times:
        sys.exit(f"{len(failures)} requests failed ({failures[:1]}), {len(bad)} not 200 OK")
    print(f"{1000 * sum(t for t, _ in times) / len(times):.3f}")
    print(f"generator cpu {1e6 * (time.process_time() - cpu0) / n:.0f} us per request")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]),
         *(sys.argv[5:6]))
