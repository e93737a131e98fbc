"""Open-loop HTTP load: Poisson arrivals at RATE/s for N requests, each a new connection
asking the app for WORK loop steps (default 2000); prints the mean response time in ms.

Usage: python load.py HOST PORT RATE N [WORK]"""
import http.client, random, sys, threading, time
host, port, rate, n = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
work = int(sys.argv[5]) if len(sys.argv) > 5 else 2000
times, lock = [], threading.Lock()
def one():
    t = time.perf_counter()
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", f"/?n={work}"); c.getresponse().read(); c.close()
    with lock: times.append(time.perf_counter() - t)
ths, nxt = [], time.perf_counter()
for _ in range(n):
    nxt += random.expovariate(rate)
    d = nxt - time.perf_counter()
    if d > 0: time.sleep(d)
    th = threading.Thread(target=one); th.start(); ths.append(th)
for th in ths: th.join()
print(f"{1000*sum(times)/len(times):.3f}")
