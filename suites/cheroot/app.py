"""The WSGI app the cheroot suite serves: per request, n steps of a pure-Python loop (the
query string's n=..., default 20000; about 0.8 ms) and a sha256 of up to 28 kB (hashlib
releases the GIL while hashing data above 2 kB)."""
import hashlib


def app(environ, start_response):
    n = int(environ.get("QUERY_STRING", "").partition("=")[2] or 20000)
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    body = hashlib.sha256(str(acc).encode() * 4096).hexdigest().encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
