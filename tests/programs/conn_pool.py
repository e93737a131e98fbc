"""Client threads sharing a small connection pool (a BoundedSemaphore).

Usage: python conn_pool.py [REQUESTS] [CLIENTS] [CONNECTIONS]

Each of CLIENTS threads makes REQUESTS requests: build a query (pure Python), take a
connection from the pool, wait for the "database" (a 2 ms sleep: the connection is
held while waiting), parse the answer (pure Python), give the connection back.
"""
import sys
import threading
import time


def work(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 7919
    return acc


def main(requests=50, clients=2, connections=2):
    pool = threading.BoundedSemaphore(connections)

    def client():
        for _ in range(requests):
            work(4000)
            with pool:
                time.sleep(0.002)
                work(1500)

    threads = [threading.Thread(target=client, name=f"client-{k}") for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{requests * clients} requests from {clients} clients over {connections} connections")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
