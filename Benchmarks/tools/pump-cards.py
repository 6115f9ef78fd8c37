#!/usr/bin/env python3
"""Aliases COUNT distinct cards through one token, 100 a request, for Benchmarks/scale.sh: the
token's guess windows then hold COUNT buckets (each card has its own BIN and last four).

    pump-cards.py URL TOKEN SERIES START COUNT

Cards are Benchmarks/ScaleFill's `ScaleCards.card(series, i)` for i in START..<START+COUNT, with
the middle digits taken from the clock so that no earlier run made them. Four connections.
"""
import http.client
import sys
import threading
import time
import urllib.parse


def card(series, i):
    d = [4, series % 10]
    d += [int(c) for c in f"{i // 10_000 % 10_000:04d}{i // 100_000_000 % 100_000:05d}"] + [0]
    d += [int(c) for c in f"{i % 10_000:04d}"]
    total = 0
    for position, digit in enumerate(reversed(d)):
        if position == 4:
            continue
        doubled = digit * 2 if position % 2 == 1 else digit
        total += doubled - 9 if doubled > 9 else doubled
    d[11] = (10 - total % 10) % 10
    return "".join(map(str, d))


def main():
    url, token, series, start, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    target = urllib.parse.urlsplit(url)
    # The middle five digits (i // 10^8) from the clock: a new run never repeats a card.
    base = (int(time.time()) % 100_000) * 100_000_000 + start
    batches = [range(base + k, base + min(k + 100, count)) for k in range(0, count, 100)]
    failures = []

    def work(mine):
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        for batch in mine:
            items = ",".join(f'{{"value":"{card(series, i)}","format":"FPE_SIX_T_FOUR","storage":"PERSISTENT"}}' for i in batch)
            connection.request("POST", "/aliases", body=f'{{"data":[{items}]}}',
                               headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
            response = connection.getresponse()
            answer = response.read()
            if response.status not in (200, 201):
                failures.append(f"{response.status} {answer[:200]!r}")
                return

    threads = [threading.Thread(target=work, args=(batches[n::4],)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit(f"pump-cards: {failures[0]}")


if __name__ == "__main__":
    main()
