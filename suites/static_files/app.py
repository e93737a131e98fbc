"""The WSGI app the static_files suite serves: GET /f/I returns file I of a data set of
FILES files of SIZE bytes (a static file server: open, read, send; no cache of its own).

The data set is made on the first start (data/, beside this file).  At every start the
app leaves a fixed part of it outside the page cache (posix_fadvise DONTNEED) and reads
the rest into it, as on a machine whose memory holds only part of the data: a request
for a cold file reads from the disk.  GET / serves the next file in turn, so a run of
fewer than FILES requests never reads one file twice and the cold fraction holds for
the whole run; GET /f/I serves file I."""
import itertools
import os
import random

FILES = 1024
SIZE = 512 * 1024
COLD = 0.5                       # fraction of the files left outside the page cache
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def _path(i: int) -> str:
    return os.path.join(DATA, f"{i:05d}.bin")


def _prepare() -> None:
    os.makedirs(DATA, exist_ok=True)
    rng = random.Random(1)
    for i in range(FILES):
        if not os.path.exists(_path(i)) or os.path.getsize(_path(i)) != SIZE:
            with open(_path(i) + ".tmp", "wb") as fh:
                fh.write(rng.randbytes(SIZE))
            os.replace(_path(i) + ".tmp", _path(i))
    os.sync()                    # dirty pages cannot be dropped
    cold = set(random.Random(2).sample(range(FILES), int(COLD * FILES)))
    for i in range(FILES):
        fd = os.open(_path(i), os.O_RDONLY)
        try:
            if i in cold:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while os.read(fd, 1 << 20):
                    pass
        finally:
            os.close(fd)


_prepare()
_next = itertools.count()           # next() on a count is atomic under the GIL


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    name = path.rpartition("/")[2] if path.startswith("/f/") else str(next(_next))
    if not name.isdigit():
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]
    with open(_path(int(name) % FILES), "rb") as fh:
        body = fh.read()
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(len(body)))])
    return [body]
