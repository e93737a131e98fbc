"""Rounds of a sweep over a fixed block per thread (weak scaling, like a stencil code
whose grid grows with the machine): every thread hashes its own blocks (hashlib: the GIL
is released), then all threads meet at a barrier before the next round.

Usage: python sweep_rounds.py [ROUNDS] [THREADS]

The work per thread and round is the same at every thread count, so on a machine with
more cores than threads a round takes as long with 1 thread as with 8.  With more
threads than cores, a round takes as long as the busiest core's threads.
"""
import hashlib
import sys
import threading

BLOCKS = 16
BLOCK = bytes(range(256)) * 1024           # 256 KiB


def main(rounds=20, threads=2):
    barrier = threading.Barrier(threads)
    digests = [b""] * threads

    def sweep(k):
        for r in range(rounds):
            h = hashlib.sha256()
            for _ in range(BLOCKS):
                h.update(BLOCK)
            digests[k] = h.digest()
            barrier.wait()

    pool = [threading.Thread(target=sweep, args=(k,), name=f"sweeper-{k}") for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(f"{rounds} rounds on {threads} threads: {hashlib.sha256(b''.join(digests)).hexdigest()[:12]}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
