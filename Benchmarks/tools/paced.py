#!/usr/bin/env python3
"""A paced client: POSTs a body at a fixed rate over one keep-alive connection and reports the
latency percentiles, so a node's answers are measured at an ordinary load rather than at
saturation (wrk on the same two cores would take one of them).

    paced.py URL BODY_FILE RATE SECONDS   ->  "p50_ms p99_ms max_ms count errors" on stdout
    (SECONDS 0: until SIGINT or SIGTERM)

With PACED_TIMELINE=FILE, also each second's "second p50_ms p99_ms max_ms count steal_ms" in
FILE: when in a long run the slow answers came, and how long the machine's host gave its cores to
other guests in that second (steal, from /proc/stat; 0 where there is none to read).
"""
import ctypes
import http.client
import os
import platform
import signal
import sys
import time
import urllib.parse



def short_slice():
    """Asks the kernel for a 0.1 ms slice (sched_setattr on SCHED_OTHER, Linux 6.12+), as the
    node's loops do: the client's own wait for a core after each answer is then not counted
    as the node's. Best effort: elsewhere it changes nothing."""
    number = {"x86_64": (315, 314), "aarch64": (275, 274)}.get(platform.machine())
    if number is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint8 * 56)()
    if libc.syscall(number[0], 0, attr, 56, 0) != 0:
        return
    fields = (ctypes.c_uint32 * 2).from_buffer(attr)
    if fields[1] != 0:  # not SCHED_OTHER (chrt'd): leave it
        return
    fields[0] = 56
    ctypes.c_uint64.from_buffer(attr, 8).value = 0
    ctypes.c_uint64.from_buffer(attr, 24).value = 100_000
    libc.syscall(number[1], 0, attr, 0)


def steal_ms():
    """The machine's steal time so far, in milliseconds (0 where /proc/stat has none)."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
        return int(fields[8]) * 1000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0


short_slice()
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
timeline = []  # (seconds since the start, latency) of every answer
steal_at = {0: steal_ms()}  # second -> steal so far, read as the second began
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
    timeline.append((time.monotonic() - start, latencies[-1]))
    if int(timeline[-1][0]) not in steal_at:
        steal_at[int(timeline[-1][0])] = steal_ms()
if os.environ.get("PACED_TIMELINE"):
    by_second = {}
    for at, latency in timeline:
        by_second.setdefault(int(at), []).append(latency)
    with open(os.environ["PACED_TIMELINE"], "w") as out:
        for second in sorted(by_second):
            values = sorted(by_second[second])
            p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
            # Up to the next second an answer came in (a stall may leave seconds without one).
            later = [s for s in steal_at if s > second]
            steal = (steal_at[min(later)] if later else steal_ms()) - steal_at[second]
            out.write(f"{second} {values[len(values) // 2]:.3f} {p99:.3f} {values[-1]:.3f} {len(values)} {steal}\n")
latencies.sort()
if not latencies:
    print("n/a n/a n/a 0", errors)
    sys.exit(0)


def pick(q):
    return latencies[min(len(latencies) - 1, int(q * len(latencies)))]


print(f"{pick(0.5):.3f} {pick(0.99):.3f} {latencies[-1]:.3f} {len(latencies)} {errors}")
