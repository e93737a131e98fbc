"""A three-stage pipeline: a reader, hashers, a folder, chained by queues.

Usage: python pipeline_chain.py [ITEMS] [HASHERS]

The reader thread makes ITEMS blocks (a little pure Python each) and puts them into a
bounded queue; HASHERS threads hash them (hashlib: no GIL) and pass the digests on; one
folder thread folds each digest (pure Python) into a checksum.
"""
import hashlib
import queue
import sys
import threading

BLOCK = bytes(range(256)) * 2048                 # 512 KiB


def main(items=200, hashers=2):
    blocks, digests = queue.Queue(8), queue.Queue()
    total = [0]

    def reader():
        for i in range(items):
            blocks.put(i.to_bytes(4, "little") * (50 + i % 7))
        for _ in range(hashers):
            blocks.put(None)

    def hasher():
        while True:
            b = blocks.get()
            if b is None:
                digests.put(None)
                return
            digests.put(hashlib.sha256(BLOCK + b).digest())

    def folder():
        done = 0
        while done < hashers:
            d = digests.get()
            if d is None:
                done += 1
                continue
            acc = total[0]
            for _ in range(3):
                for x in d:
                    acc = (acc * 31 + x) % 1_000_003
            total[0] = acc

    threads = [threading.Thread(target=reader, name="reader"),
               threading.Thread(target=folder, name="folder")]
    threads += [threading.Thread(target=hasher, name=f"hasher-{k}") for k in range(hashers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{items} items through {hashers} hashers: {total[0]}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
