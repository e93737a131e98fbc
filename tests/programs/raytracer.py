"""A small pure-Python ray tracer.

Renders a scene of a few spheres on top of a large "ground" sphere, lit by a
single point light with Lambertian (diffuse) shading, hard shadows and a
little ambient light.  The image is WIDTH (fixed, 128) pixels wide and ROWS
pixels high.  Row indices are handed out dynamically to THREADS worker
threads through a queue.Queue; each worker traces its rows and puts the
finished row back on a result queue.  The main thread assembles the rows and
writes a binary PPM file into a temporary directory.

Usage: python raytracer.py [ROWS] [THREADS]
"""

import math
import os
import queue
import sys
import tempfile
import threading

WIDTH = 128
FOV_DEG = 50.0
AMBIENT = 0.08
SAMPLES_PER_AXIS = 4          # 4x4 supersampling per pixel

# (center, radius, colour)
SPHERES = [
    ((0.0, -1000.0, -5.0), 999.0, (0.8, 0.8, 0.7)),   # ground
    ((0.0, 0.0, -5.0), 1.0, (0.9, 0.2, 0.2)),
    ((-2.1, -0.3, -5.8), 0.7, (0.2, 0.8, 0.3)),
    ((2.0, -0.2, -4.6), 0.8, (0.2, 0.4, 0.9)),
    ((0.7, -0.6, -3.4), 0.4, (0.9, 0.8, 0.2)),
    ((-0.9, -0.75, -3.6), 0.25, (0.8, 0.3, 0.9)),
]
LIGHT_POS = (-4.0, 6.0, 0.0)
LIGHT_COLOUR = (1.0, 1.0, 1.0)
BACKGROUND = (0.55, 0.7, 0.9)


def normalize(x, y, z):
    inv = 1.0 / math.sqrt(x * x + y * y + z * z)
    return x * inv, y * inv, z * inv


def intersect(ox, oy, oz, dx, dy, dz):
    """Return (t, sphere index) of the nearest hit, or (inf, -1)."""
    best_t = math.inf
    best_i = -1
    for i, ((cx, cy, cz), r, _) in enumerate(SPHERES):
        lx = ox - cx
        ly = oy - cy
        lz = oz - cz
        b = lx * dx + ly * dy + lz * dz
        c = lx * lx + ly * ly + lz * lz - r * r
        disc = b * b - c
        if disc < 0.0:
            continue
        sq = math.sqrt(disc)
        t = -b - sq
        if t < 1e-4:
            t = -b + sq
            if t < 1e-4:
                continue
        if t < best_t:
            best_t = t
            best_i = i
    return best_t, best_i


def shade(ox, oy, oz, dx, dy, dz):
    t, i = intersect(ox, oy, oz, dx, dy, dz)
    if i < 0:
        # simple sky gradient
        k = 0.5 * (dy + 1.0)
        return (BACKGROUND[0] * k + (1 - k), BACKGROUND[1] * k + (1 - k),
                BACKGROUND[2] * k + (1 - k))
    (cx, cy, cz), r, colour = SPHERES[i]
    px = ox + t * dx
    py = oy + t * dy
    pz = oz + t * dz
    nx = (px - cx) / r
    ny = (py - cy) / r
    nz = (pz - cz) / r
    lx = LIGHT_POS[0] - px
    ly = LIGHT_POS[1] - py
    lz = LIGHT_POS[2] - pz
    ldist = math.sqrt(lx * lx + ly * ly + lz * lz)
    lx /= ldist
    ly /= ldist
    lz /= ldist
    diffuse = nx * lx + ny * ly + nz * lz
    if diffuse > 0.0:
        st, si = intersect(px + nx * 1e-3, py + ny * 1e-3, pz + nz * 1e-3,
                           lx, ly, lz)
        if si >= 0 and st < ldist:
            diffuse = 0.0
    else:
        diffuse = 0.0
    k = AMBIENT + (1.0 - AMBIENT) * diffuse
    return (colour[0] * LIGHT_COLOUR[0] * k,
            colour[1] * LIGHT_COLOUR[1] * k,
            colour[2] * LIGHT_COLOUR[2] * k)


def render_row(y, width, height):
    aspect = width / height
    scale = math.tan(math.radians(FOV_DEG) * 0.5)
    n = SAMPLES_PER_AXIS
    inv = 1.0 / (n * n)
    row = bytearray(width * 3)
    for x in range(width):
        r = g = b = 0.0
        for sy in range(n):
            for sx in range(n):
                u = (2.0 * (x + (sx + 0.5) / n) / width - 1.0) * aspect * scale
                v = (1.0 - 2.0 * (y + (sy + 0.5) / n) / height) * scale
                dx, dy, dz = normalize(u, v, -1.0)
                cr, cg, cb = shade(0.0, 0.3, 0.0, dx, dy, dz)
                r += cr
                g += cg
                b += cb
        row[3 * x] = min(255, int(255.0 * math.sqrt(r * inv)))      # gamma 2
        row[3 * x + 1] = min(255, int(255.0 * math.sqrt(g * inv)))
        row[3 * x + 2] = min(255, int(255.0 * math.sqrt(b * inv)))
    return bytes(row)


def worker(tasks, results, width, height):
    while True:
        y = tasks.get()
        if y is None:
            break
        results.put((y, render_row(y, width, height)))


def main():
    height = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    width = WIDTH

    tasks = queue.Queue()
    results = queue.Queue()
    for y in range(height):
        tasks.put(y)
    for _ in range(nthreads):
        tasks.put(None)

    threads = [threading.Thread(target=worker, args=(tasks, results, width, height),
                                name=f"tracer-{i}")
               for i in range(nthreads)]
    for t in threads:
        t.start()

    rows = [None] * height
    for _ in range(height):
        y, data = results.get()
        rows[y] = data
    for t in threads:
        t.join()

    with tempfile.TemporaryDirectory(prefix="raytracer-") as tmp:
        path = os.path.join(tmp, "render.ppm")
        with open(path, "wb") as f:
            f.write(b"P6\n%d %d\n255\n" % (width, height))
            for data in rows:
                f.write(data)
        size = os.path.getsize(path)

    checksum = sum(sum(r) for r in rows)
    print(f"rendered {width}x{height} with {nthreads} threads, "
          f"ppm={size} bytes, checksum={checksum}")


if __name__ == "__main__":
    main()
