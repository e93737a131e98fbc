"""Log-processing pipeline: reader -> N parser threads -> writer, bounded queues.

Usage: python sentinel_pipeline.py N [LINES] [QUEUE_SIZE]

  N           number of parser threads
  LINES       number of log lines to generate and process (default 60000)
  QUEUE_SIZE  maxsize of each queue.Queue (default 256)

A synthetic access log (seeded) is written to a temporary file first.  The
reader thread streams its lines into the first queue, the parser threads
parse each line with a regex and enrich it (URL normalisation, checksum),
and the writer thread writes TSV records to an output file while keeping
per-status totals.  Shutdown is by sentinel: the reader enqueues one per
parser, and each parser forwards one to the writer.
Prints "elapsed X.XXXX s" (from starting the threads to the writer finishing).
"""
import os
import queue
import random
import re
import sys
import tempfile
import threading
import time
import zlib

SENTINEL = None
LINE_RE = re.compile(
    r'(?P<ip>\d+\.\d+\.\d+\.\d+) - - \[(?P<ts>[^\]]+)\] '
    r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.[01]" (?P<status>\d{3}) (?P<size>\d+) '
    r'"(?P<agent>[^"]*)"')
PATHS = ["/", "/index.html", "/api/v1/users", "/api/v1/orders", "/static/app.js",
         "/static/style.css", "/login", "/search", "/api/v1/items/%d", "/img/%d.png"]
AGENTS = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.5.0", "python-requests/2.31",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0)", "Googlebot/2.1"]


def write_log(path, n_lines, seed=8):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n_lines):
            ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
            p = rng.choice(PATHS)
            if "%d" in p:
                p = p % rng.randint(1, 5000)
            if rng.random() < 0.3:
                p += f"?q={rng.randint(0, 999)}&page={rng.randint(1, 9)}"
            status = rng.choices([200, 301, 404, 500], weights=[80, 8, 10, 2])[0]
            f.write(f'{ip} - - [10/Oct/2024:13:{i // 3600 % 60:02d}:{i % 60:02d} +0000] '
                    f'"{rng.choice(["GET", "GET", "POST"])} {p} HTTP/1.1" {status} '
                    f'{rng.randint(100, 50000)} "{rng.choice(AGENTS)}"\n')


def normalise(path):
    base, _, query = path.partition("?")
    parts = [("{id}" if seg.isdigit() else seg) for seg in base.split("/")]
    base = "/".join(parts)
    base = re.sub(r"/img/\d+\.png$", "/img/{id}.png", base)
    params = sorted(kv.split("=")[0] for kv in query.split("&") if kv)
    return base + ("?" + "&".join(params) if params else "")


def reader(path, out_q, n_parsers):
    with open(path) as f:
        for line in f:
            out_q.put(line)
    for _ in range(n_parsers):
        out_q.put(SENTINEL)


def parser(in_q, out_q):
    while True:
        line = in_q.get()
        if line is SENTINEL:
            out_q.put(SENTINEL)
            break
        m = LINE_RE.match(line)
        if m is None:
            continue
        rec = m.groupdict()
        rec["route"] = normalise(rec["path"])
        rec["bot"] = "bot" in rec["agent"].lower()
        rec["crc"] = zlib.crc32(line.encode())
        out_q.put(rec)


def writer(in_q, out_path, n_parsers, totals):
    finished = 0
    with open(out_path, "w") as out:
        while finished < n_parsers:
            rec = in_q.get()
            if rec is SENTINEL:
                finished += 1
                continue
            out.write(f"{rec['ip']}\t{rec['method']}\t{rec['route']}\t{rec['status']}\t"
                      f"{rec['size']}\t{int(rec['bot'])}\t{rec['crc']:08x}\n")
            t = totals.setdefault(rec["status"], [0, 0])
            t[0] += 1
            t[1] += int(rec["size"])


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    n_parsers = int(sys.argv[1])
    n_lines = int(sys.argv[2]) if len(sys.argv) > 2 else 60000
    qsize = int(sys.argv[3]) if len(sys.argv) > 3 else 256

    with tempfile.TemporaryDirectory() as tmp:
        in_path = os.path.join(tmp, "access.log")
        out_path = os.path.join(tmp, "records.tsv")
        write_log(in_path, n_lines)

        start = time.perf_counter()
        lines_q = queue.Queue(maxsize=qsize)
        records_q = queue.Queue(maxsize=qsize)
        totals = {}
        threads = [threading.Thread(target=reader, args=(in_path, lines_q, n_parsers),
                                    name="reader")]
        threads += [threading.Thread(target=parser, args=(lines_q, records_q),
                                     name=f"parser-{i}") for i in range(n_parsers)]
        threads.append(threading.Thread(target=writer,
                                        args=(records_q, out_path, n_parsers, totals),
                                        name="writer"))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start

    summary = " ".join(f"{s}:{c}" for s, (c, _) in sorted(totals.items()))
    print(f"lines={n_lines} statuses {summary}", file=sys.stderr)
    print(f"elapsed {elapsed:.4f} s")


if __name__ == "__main__":
    main()
