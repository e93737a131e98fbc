"""A small file server over local sockets (suite program c).

Usage: python file_server.py [REQUESTS] [WORKERS]

An acceptor thread accepts connections and puts them into a bounded queue;
WORKERS worker threads take a connection, read the request ("GET id name"),
read the file and send it back.  Two client threads make REQUESTS requests in
total and check the replies.  Requests are marked with the optional
frontends.pytrace span API (a no-op when the program is not traced).
"""
import os
import queue
import socket
import sys
import tempfile
import threading

try:
    from qpn.frontends.pytrace import request_begin, request_end, span
except ImportError:                       # runs without qpn installed too
    import contextlib

    def span(name, req=None):
        return contextlib.nullcontext()

    def request_begin(req, name=None):
        pass

    request_end = request_begin

SIZES = [4096, 16384, 65536, 8192, 32768]


def make_docs(root):
    names = []
    for i, size in enumerate(SIZES):
        name = f"doc{i}.bin"
        with open(os.path.join(root, name), "wb") as fh:
            fh.write(bytes([i]) * size)
        names.append(name)
    return names


def render_header(name, size):
    # stands for the CPU work of a real server (parsing, templating, logging):
    # about 1 ms, like a small Python web application
    h = 0
    for ch in (name * 2000).encode():
        h = (h * 131 + ch) % 1000000007
    return (size ^ h).to_bytes(8, "big")


def serve(conn, root):
    request = conn.recv(256).decode()  # site: recv
    _, req_id, name = request.split()
    with span("request", req=int(req_id)):
        with open(os.path.join(root, name), "rb") as fh:  # site: open
            data = fh.read()  # site: read
        header = render_header(name, len(data))
        conn.sendall(len(data).to_bytes(4, "big") + header + data)  # site: send
    conn.close()


def worker(connections, root):
    while True:
        conn = connections.get()  # site: conn-get
        if conn is None:
            return
        serve(conn, root)


def client(port, ids, names, received):
    for req_id in ids:
        name = names[req_id % len(names)]
        request_begin(req_id, "GET")
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(f"GET {req_id} {name}".encode())
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        reply = b"".join(chunks)
        request_end(req_id, "GET")
        assert int.from_bytes(reply[:4], "big") == len(reply) - 12 == SIZES[req_id % len(SIZES)]
        received.append(len(reply) - 12)


def main(nrequests=300, nworkers=2):
    root = tempfile.mkdtemp(prefix="qpn-docs-")
    names = make_docs(root)
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    port = listener.getsockname()[1]
    connections = queue.Queue(maxsize=16)  # site: conn-queue

    def acceptor():
        for _ in range(nrequests):
            conn, _ = listener.accept()  # site: accept
            connections.put(conn)  # site: conn-put
        for _ in range(nworkers):
            connections.put(None)

    threads = [threading.Thread(target=acceptor, name="acceptor")]
    threads += [threading.Thread(target=worker, args=(connections, root), name=f"worker-{k}")
                for k in range(nworkers)]
    received = []
    ids = list(range(nrequests))
    threads += [threading.Thread(target=client, args=(port, ids[k::2], names, received),
                                 name=f"client-{k}") for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listener.close()
    for name in names:
        os.unlink(os.path.join(root, name))
    os.rmdir(root)
    assert len(received) == nrequests
    print(f"{nrequests} requests, {sum(received)} bytes served")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
