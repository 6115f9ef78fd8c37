#!/usr/bin/env python3
"""A paced client: POSTs a body at a fixed rate over one keep-alive connection and reports the
latency percentiles, so a node's answers are measured at an ordinary load rather than at
saturation (wrk on the same two cores would take one of them).

    paced.py URL BODY_FILE RATE SECONDS   ->  "p50_ms p99_ms max_ms count errors" on stdout
    (SECONDS 0: until SIGINT or SIGTERM)
"""
import http.client
import signal
import sys
import time
import urllib.parse

url, body_file, rate, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
body = open(body_file, "rb").read()
parts = urllib.parse.urlsplit(url)
stop = False


def halt(*_):
    global stop
    stop = True


signal.signal(signal.SIGINT, halt)
signal.signal(signal.SIGTERM, halt)
connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
latencies, errors = [], 0
start = time.monotonic()
interval = 1.0 / rate
sent = 0
while not stop and (seconds == 0 or time.monotonic() - start < seconds):
    due = start + sent * interval
    wait = due - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    sent += 1
    began = time.perf_counter()
    try:
        connection.request("POST", parts.path, body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        if answer.status != 200:
            errors += 1
    except Exception:
        errors += 1
        connection.close()
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        continue
    latencies.append((time.perf_counter() - began) * 1000)
latencies.sort()
if not latencies:
    print("n/a n/a n/a 0", errors)
    sys.exit(0)


def pick(q):
    return latencies[min(len(latencies) - 1, int(q * len(latencies)))]


print(f"{pick(0.5):.3f} {pick(0.99):.3f} {latencies[-1]:.3f} {len(latencies)} {errors}")
