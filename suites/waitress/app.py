import hashlib
def app(environ, start_response):
    n = int(environ.get("QUERY_STRING", "").partition("=")[2] or 2000)
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    body = hashlib.sha256(str(acc).encode() * 4096).hexdigest().encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
