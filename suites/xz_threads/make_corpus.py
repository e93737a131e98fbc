"""Write a 24 MiB text of pseudo-random words (the same every time): xz_threads' input."""
import os
import random
import sys

path = sys.argv[1]
if not os.path.exists(path):
    rng = random.Random(17)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    with open(path + ".tmp", "w") as fh:
        n = 0
        while n < 24 * 2 ** 20:
            line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
            fh.write(line)
            n += len(line)
    os.replace(path + ".tmp", path)
