#!/usr/bin/env bash
# The operator console at volume in headless Chromium (Benchmarks/console.py says what and how):
# each page's time to its content with 10,000 tokens, 100,000 audit events and 50 routes, and
# the largest answer the pages fetch. Exit 1 when a page's median is over 300 ms or an answer
# over 200 KB.
#
#   Benchmarks/console.sh
#
# Environment: CLOAK_BIN (default: a release build, made here), ROUNDS (5), CONSOLE_TOKENS,
# CONSOLE_EVENTS, CONSOLE_ROUTES (10000, 100000, 50).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CLOAK_BIN:-}" ]; then
    swift build -c release --product cloak >/dev/null
    CLOAK_BIN="$(swift build -c release --show-bin-path)/cloak"
fi
export CLOAK_BIN
PYTHON="$(scripts/browser-tests --python)"
exec "$PYTHON" Benchmarks/console.py
