"""Threads that poll: a little pure-Python work, then ``time.sleep(POLL)``.

Usage: python sleep_poll.py [ROUNDS] [THREADS]

Each of THREADS threads runs ROUNDS rounds of: scan a list (pure Python, needs
the GIL), then sleep 1 ms.  A sleep takes longer than asked (timer slack and the
wake-up: ~75 us on a 1 ms sleep on the project's VM), which is 5-10% of a round.
"""
import sys
import threading
import time

POLL = 0.001
ITEMS = list(range(3000))


def scan() -> int:
    return sum(x for x in ITEMS if x % 7 == 3)


def main(rounds=200, nthreads=2):
    def poller():
        for _ in range(rounds):
            scan()
            time.sleep(POLL)

    threads = [threading.Thread(target=poller, name=f"poller-{k}") for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{rounds} rounds on {nthreads} threads")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
