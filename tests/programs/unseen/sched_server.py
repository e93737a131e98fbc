"""Threaded TCP server with a fixed worker pool, plus a scheduled load client.

Usage: python sched_server.py N [RATE] [REQUESTS]

  N         number of server worker threads
  RATE      mean request rate per second (default 100); send instants are
            planned in advance with exponential gaps (seeded)
  REQUESTS  number of requests (default 400)

The acceptor thread puts accepted connections on a queue.Queue; N worker
threads take a connection, read one request line ("SEED SIZE"), do some CPU
work and send the answer back.  The client sleeps until each planned send
instant, opens a connection and sends the request without waiting for the
reply; a receiver thread collects replies with a selector.
Prints "mean response X.XXX ms" (planned send instant to complete reply).
"""
import queue
import random
import selectors
import socket
import statistics
import sys
import threading
import time


# ---------------------------------------------------------------- server side

def compute(seed, size):
    x = seed
    hist = {}
    for _ in range(size):
        x = (x * 1103515245 + 12345) % 2147483648
        key = x % 101
        hist[key] = hist.get(key, 0) + 1
    top = max(hist, key=hist.get)
    return f"{top} {hist[top]}"


class PoolServer:
    def __init__(self, n_workers, host="127.0.0.1", port=0):
        self.sock = socket.create_server((host, port), backlog=256)
        self.address = self.sock.getsockname()
        self.connections = queue.Queue()
        self.workers = [threading.Thread(target=self._worker, name=f"worker-{i}")
                        for i in range(n_workers)]
        self.acceptor = threading.Thread(target=self._accept_loop, name="acceptor")
        self._stopping = threading.Event()

    def start(self):
        for w in self.workers:
            w.start()
        self.acceptor.start()

    def _accept_loop(self):
        while not self._stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                break
            self.connections.put(conn)

    def _worker(self):
        while True:
            conn = self.connections.get()
            if conn is None:
                break
            with conn, conn.makefile("rb") as f:
                try:
                    line = f.readline()
                    seed, size = map(int, line.split())
                    conn.sendall((compute(seed, size) + "\n").encode())
                except (OSError, ValueError):
                    pass

    def shutdown(self):
        self._stopping.set()
        # wake the acceptor with a dummy connection, then close the listener
        try:
            socket.create_connection(self.address, timeout=1).close()
        except OSError:
            pass
        self.acceptor.join()
        self.sock.close()
        for _ in self.workers:
            self.connections.put(None)
        for w in self.workers:
            w.join()


# ---------------------------------------------------------------- client side

class ScheduledClient:
    def __init__(self, address, rate, n_requests, seed=11):
        rng = random.Random(seed)
        self.address = address
        self.plan = []
        t = 0.0
        for _ in range(n_requests):
            t += rng.expovariate(rate)
            self.plan.append((t, rng.randrange(1, 2**31), rng.randint(1500, 2500)))
        self.selector = selectors.DefaultSelector()
        self.new_requests = queue.Queue()
        self.wake_r, self.wake_w = socket.socketpair()
        self.latencies = []

    def _receiver(self, expected):
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        buffers = {}
        while len(self.latencies) < expected:
            for key, _ in self.selector.select():
                if key.data is None:
                    self.wake_r.recv(4096)
                    while True:
                        try:
                            sock, planned = self.new_requests.get_nowait()
                        except queue.Empty:
                            break
                        self.selector.register(sock, selectors.EVENT_READ, planned)
                        buffers[sock] = b""
                    continue
                sock, planned = key.fileobj, key.data
                chunk = sock.recv(4096)
                buffers[sock] += chunk
                if not chunk or buffers[sock].endswith(b"\n"):
                    self.latencies.append(time.perf_counter() - planned)
                    self.selector.unregister(sock)
                    sock.close()
                    del buffers[sock]
        self.selector.close()

    def run(self):
        receiver = threading.Thread(target=self._receiver, args=(len(self.plan),),
                                    name="receiver")
        receiver.start()
        start = time.perf_counter()
        for offset, seed, size in self.plan:
            planned = start + offset
            delay = planned - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sock = socket.create_connection(self.address)
            sock.sendall(f"{seed} {size}\n".encode())
            self.new_requests.put((sock, planned))
            self.wake_w.send(b"x")
        receiver.join()
        self.wake_r.close()
        self.wake_w.close()
        return time.perf_counter() - start


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    n_workers = int(sys.argv[1])
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
    n_requests = int(sys.argv[3]) if len(sys.argv) > 3 else 400

    server = PoolServer(n_workers)
    server.start()
    try:
        client = ScheduledClient(server.address, rate, n_requests)
        duration = client.run()
    finally:
        server.shutdown()

    lat = client.latencies
    print(f"requests={len(lat)} duration={duration:.2f}s "
          f"p95={sorted(lat)[int(0.95 * len(lat))] * 1000:.3f}ms", file=sys.stderr)
    print(f"mean response {statistics.fmean(lat) * 1000:.3f} ms")


if __name__ == "__main__":
    main()
