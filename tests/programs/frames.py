"""Render a procedural plasma animation with a pool of band-worker threads.

Each frame is split into horizontal bands; one thread per band computes the
RGB pixels, the main thread assembles the frame and zlib-compresses it.

Usage: python frames.py [FRAMES] [THREADS]
"""
import math
import sys
import threading
import zlib

WIDTH = 160
HEIGHT = 120


def render_band(t, y0, y1, width, height, out, index):
    """Compute rows y0..y1-1 of the plasma frame at time t into out[index]."""
    buf = bytearray((y1 - y0) * width * 3)
    pos = 0
    sin = math.sin
    sqrt = math.sqrt
    cx = 0.5 + 0.4 * sin(t * 0.7)
    cy = 0.5 + 0.4 * math.cos(t * 0.5)
    for y in range(y0, y1):
        fy = y / height
        for x in range(width):
            fx = x / width
            v = sin(fx * 10.0 + t)
            v += sin((fy * 10.0 + t) * 0.5)
            v += sin((fx * 10.0 + fy * 10.0 + t) * 0.5)
            dx = fx - cx
            dy = fy - cy
            v += sin(sqrt(100.0 * (dx * dx + dy * dy) + 1.0) + t)
            v *= 0.5 * math.pi
            buf[pos] = int(127.5 + 127.5 * sin(v))
            buf[pos + 1] = int(127.5 + 127.5 * sin(v + 2.094))
            buf[pos + 2] = int(127.5 + 127.5 * sin(v + 4.189))
            pos += 3
    out[index] = bytes(buf)


def render_frame(frame_no, nthreads, width, height):
    t = frame_no * 0.1
    bands = [None] * nthreads
    threads = []
    rows_per = height // nthreads
    extra = height % nthreads
    y = 0
    for i in range(nthreads):
        rows = rows_per + (1 if i < extra else 0)
        th = threading.Thread(
            target=render_band,
            args=(t, y, y + rows, width, height, bands, i),
            name=f"band-{frame_no}-{i}",
        )
        threads.append(th)
        th.start()
        y += rows
    for th in threads:
        th.join()
    return b"".join(bands)


def main():
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    if frames < 1 or nthreads < 1:
        sys.exit("FRAMES and THREADS must be positive")

    compressed = []
    raw_total = 0
    checksum = 0
    for f in range(frames):
        pixels = render_frame(f, nthreads, WIDTH, HEIGHT)
        raw_total += len(pixels)
        checksum = zlib.crc32(pixels, checksum)
        compressed.append(zlib.compress(pixels, 6))

    packed = sum(len(c) for c in compressed)
    print(f"rendered {frames} frames {WIDTH}x{HEIGHT} with {nthreads} threads: "
          f"{raw_total} bytes raw -> {packed} bytes compressed, crc32={checksum:08x}")


if __name__ == "__main__":
    main()
