"""How long each console page takes in headless Chromium at volume (issue 59's target: under 300 ms
with 10,000 tokens, 100,000 audit events and 50 routes; nothing served over 200 KB).

    Benchmarks/console.sh            (builds the release binary, pins selenium like the browser tests)

Starts `cloak serve` (CLOAK_BIN) on free loopback ports with a fresh SQLite vault, 10,000 tokens in
auth.tokens (a store token's create rewrites the credentials document, so YAML is how a run gets
ten thousand in seconds; the listing reads both alike), 50 routes, and 100,000 audit events made by
storing 100,000 values through POST /aliases (each create is an event). Then signs in and times,
for each page, from `location.hash` changing to the page's content in place (a MutationObserver in
the page, so polling adds nothing), ROUNDS times; reports median and worst, and the bytes of every
answer the pages fetched. Exit 1 when a page's median is over the target or an answer over 200 KB.
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "Browser"))

import requests  # noqa: E402

from browser_support import (Browser, CloakServer, SetupError, free_port, make_temp_dir, random_token,  # noqa: E402
                             remove_dir, resolve_binary, token_sha256, wait_until)

TOKENS = int(os.environ.get("CONSOLE_TOKENS", 10_000))
EVENTS = int(os.environ.get("CONSOLE_EVENTS", 100_000))
ROUTES = int(os.environ.get("CONSOLE_ROUTES", 50))
ROUNDS = int(os.environ.get("ROUNDS", 5))
TARGET_MS = 300
MAX_BYTES = 200_000
PAGES = ["overview", "tokens", "routes", "forms", "files", "bins", "keys", "audit"]


def config(directory, port, console_port, ops):
    tokens = [{"id": "ops", "sha256": token_sha256(ops),
               "scopes": ["tokens:admin", "audit:read", "routes:test", "bins:admin", "keys:read", "aliases:create"]}]
    tokens += [{"id": f"t{i:05d}", "sha256": token_sha256(f"bench-token-{i}"), "scopes": ["aliases:create"]}
               for i in range(TOKENS - 1)]
    routes = [{"id": f"00000000-0000-4000-8000-{i:012d}", "path": f"/r{i}", "upstream": f"http://127.0.0.1:9/r{i}",
               "request": [{"redact": {"json": ["$.card_number", "$.cvc"], "format": "FPE_T_FOUR",
                                       "storage": "PERSISTENT"}}]}
              for i in range(ROUTES)]
    return {
        "server": {"listen": f"127.0.0.1:{port}", "threads": 1},
        "vault": {"store": "sqlite:" + os.path.join(directory, "cloak.db"),
                  "keys": "file:" + os.path.join(directory, "keys.json")},
        "auth": {"tokens": tokens},
        "limits": {"anonymous": {"requests_per_minute": 10000000, "burst": 1000000},
                   "token": {"requests_per_minute": 10000000, "burst": 1000000},
                   "bucket_values_per_hour": 1000000},
        "console": {"listen": f"127.0.0.1:{console_port}"},
        "routes": routes,
    }


def fill_events(url, ops):
    session = requests.Session()
    session.headers["Authorization"] = "Bearer " + ops
    made = 0
    while made < EVENTS:
        n = min(100, EVENTS - made)
        data = [{"value": f"bench-value-{made + i}", "format": "UUID"} for i in range(n)]
        answer = session.post(url + "/aliases", json={"data": data}, timeout=60)
        if answer.status_code != 201:
            raise SetupError(f"POST /aliases: {answer.status_code} {answer.text[:300]}")
        made += n


TIME_PAGE = """
const [name, done] = [arguments[0], arguments[arguments.length - 1]];
const root = document.getElementById('page');
const current = () => (document.querySelector('#pages a[aria-current="page"]') || {dataset: {}}).dataset.page;
const ready = () => current() === name && root.querySelector('h1') && !root.querySelector('.loading')
  && (name !== 'audit' || document.querySelector('#audit-results table, #audit-results .empty'));
const start = performance.now();
const observer = new MutationObserver(() => {
  if (ready()) { observer.disconnect(); done(performance.now() - start); }
});
observer.observe(document.body, {childList: true, subtree: true});
location.hash = '#/' + name;
"""


def main():
    binary = resolve_binary()
    directory = make_temp_dir("cloak-console-bench-")
    server = browser = None
    try:
        port, console_port = free_port(), free_port()
        ops = random_token()
        server = CloakServer(binary, directory, port, config(directory, port, console_port, ops))
        server.wait_healthy(timeout=120)
        started = time.monotonic()
        fill_events(server.url, ops)
        print(f"{TOKENS} tokens, {ROUTES} routes, {EVENTS} events stored in {time.monotonic() - started:.0f}s")
        console = f"http://127.0.0.1:{console_port}"
        browser = Browser()
        d = browser.driver
        d.execute_cdp_cmd("Network.enable", {})
        d.get(console + "/console/")
        field = wait_until(lambda: d.find_element("css selector", "#token"), 20, "the sign-in form")
        field.send_keys(ops + "\n")
        wait_until(lambda: "Signed in as ops" in d.find_element("css selector", "#who").text, 20, "sign-in")
        results = {}
        for page in PAGES:
            d.execute_script("location.hash = '#/'")  # away first, so each round renders anew
            times = []
            for _ in range(ROUNDS):
                d.execute_script("location.hash = '#/none'")
                times.append(d.execute_async_script(TIME_PAGE, page))
            results[page] = times
        sizes = d.execute_script(
            "return performance.getEntriesByType('resource').map(e => [e.name, e.encodedBodySize || e.transferSize])")
        largest = {}
        for name, size in sizes:
            key = name.split("?")[0].replace(console, "")
            largest[key] = max(largest.get(key, 0), size or 0)
        failed = False
        print(f"{'page':<10} {'median ms':>10} {'worst ms':>10}")
        for page, times in results.items():
            median = statistics.median(times)
            failed |= median > TARGET_MS
            print(f"{page:<10} {median:>10.1f} {max(times):>10.1f}{'  OVER' if median > TARGET_MS else ''}")
        print("largest answers:")
        for name, size in sorted(largest.items(), key=lambda kv: -kv[1])[:8]:
            failed |= size > MAX_BYTES
            print(f"  {size:>8} B  {name}{'  OVER' if size > MAX_BYTES else ''}")
        for name in ["/console/", "/console/console.js", "/console/console.css"]:
            size = len(requests.get(console + name, timeout=10).content)
            failed |= size > MAX_BYTES
            print(f"  {size:>8} B  {name} (asset)")
        print(json.dumps({"pages_ms": {p: statistics.median(t) for p, t in results.items()}}))
        return 1 if failed else 0
    except SetupError as e:
        print(f"console bench: {e}", file=sys.stderr)
        return 2
    finally:
        if browser:
            browser.quit()
        if server:
            server.stop()
        remove_dir(directory)


if __name__ == "__main__":
    sys.exit(main())
