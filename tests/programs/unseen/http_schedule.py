"""ThreadingHTTPServer computing a JSON page per request, with a Poisson load generator.

Usage: python http_schedule.py N [RATE] [REQUESTS]

  N         number of sender threads in the load generator
  RATE      mean request rate per second (default 100)
  REQUESTS  number of requests (default 400)

Request instants are planned in advance (exponential gaps, seeded).  Each
sender thread repeatedly takes the next planned request, waits for its
instant and issues GET /stats?seed=..&size=.. over its own keep-alive
connection; if every sender is busy the request goes out late, and the delay
counts toward its response time.  The server (one thread per connection)
runs a small simulation and returns its summary as JSON.
Prints "mean response X.XXX ms" (planned instant to fully read body).
"""
import http.client
import json
import random
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def simulate(seed, size):
    rng = random.Random(seed)
    position = 0
    peak = trough = 0
    crossings = 0
    for _ in range(size):
        step = 1 if rng.random() < 0.5 else -1
        if position == 0:
            crossings += 1
        position += step
        peak = max(peak, position)
        trough = min(trough, position)
    return {"seed": seed, "steps": size, "final": position,
            "peak": peak, "trough": trough, "zero_crossings": crossings}


class StatsHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def do_GET(self):
        url = urlparse(self.path)
        if url.path != "/stats":
            self.send_error(404)
            return
        params = parse_qs(url.query)
        try:
            seed = int(params["seed"][0])
            size = min(int(params.get("size", ["1000"])[0]), 1_000_000)
        except (KeyError, ValueError):
            self.send_error(400, "seed and size must be integers")
            return
        body = json.dumps(simulate(seed, size)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # keep stderr quiet


class LoadGenerator:
    def __init__(self, host, port, n_senders, rate, n_requests, seed=5):
        rng = random.Random(seed)
        self.host, self.port = host, port
        self.n_senders = n_senders
        self.plan = []
        t = 0.0
        for _ in range(n_requests):
            t += rng.expovariate(rate)
            self.plan.append((t, rng.randrange(1, 2**31), rng.randint(800, 1200)))
        self.next_index = 0
        self.lock = threading.Lock()
        self.latencies = []
        self.errors = 0

    def _take(self):
        with self.lock:
            if self.next_index >= len(self.plan):
                return None
            item = self.plan[self.next_index]
            self.next_index += 1
            return item

    def _sender(self, start):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            while (item := self._take()) is not None:
                offset, seed, size = item
                planned = start + offset
                delay = planned - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                conn.request("GET", f"/stats?seed={seed}&size={size}")
                resp = conn.getresponse()
                data = resp.read()
                elapsed = time.perf_counter() - planned
                ok = resp.status == 200 and json.loads(data)["steps"] == size
                with self.lock:
                    self.latencies.append(elapsed)
                    self.errors += not ok
        finally:
            conn.close()

    def run(self):
        start = time.perf_counter() + 0.01
        senders = [threading.Thread(target=self._sender, args=(start,), name=f"sender-{i}")
                   for i in range(self.n_senders)]
        for s in senders:
            s.start()
        for s in senders:
            s.join()
        return time.perf_counter() - start


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    n_senders = int(sys.argv[1])
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
    n_requests = int(sys.argv[3]) if len(sys.argv) > 3 else 400

    server = ThreadingHTTPServer(("127.0.0.1", 0), StatsHandler)
    server.daemon_threads = True
    server_thread = threading.Thread(target=server.serve_forever, name="http-server")
    server_thread.start()
    try:
        host, port = server.server_address[:2]
        gen = LoadGenerator(host, port, n_senders, rate, n_requests)
        duration = gen.run()
    finally:
        server.shutdown()
        server.server_close()
        server_thread.join()

    lat = gen.latencies
    print(f"requests={len(lat)} errors={gen.errors} duration={duration:.2f}s "
          f"p95={sorted(lat)[int(0.95 * len(lat))] * 1000:.3f}ms", file=sys.stderr)
    print(f"mean response {statistics.fmean(lat) * 1000:.3f} ms")


if __name__ == "__main__":
    main()
