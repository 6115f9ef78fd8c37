#!/usr/bin/env bash
# What route steps (issue 49) cost a request: one Cloak binary with three egress routes to the C
# reference server, each revealing one stored card: `plain` (the reveal alone), `hmac` (then a
# Content-Digest and an RFC 9421 hmac-sha256 signature) and `rsa` (then an RFC 9421
# rsa-v1_5-sha256 signature by a 2048-bit file: key). Interleaved rounds, wrk -t1 -c32, CPU as
# the server's utime + stime from /proc per request; then `openssl speed rsa2048` on this machine
# for one signature's own cost.
#
# Usage: Benchmarks/steps.sh [CLOAK_BIN]   (default .build/release/cloak)
# Environment: ROUNDS (default 4), DURATION seconds a run (default 4).
# Targets: hmac ≤ 1.15× plain's CPU; rsa's added CPU ≤ 1.25× one signature (openssl speed).
set -euo pipefail
BIN=$(realpath "${1:-.build/release/cloak}")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${ROUNDS:-4}; DURATION=${DURATION:-4}
W=$(mktemp -d /tmp/cloak-steps.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 200); do curl -fs -o /dev/null "$1" && return 0; sleep 0.1; done; echo "$1 never answered" >&2; exit 1; }

# shellcheck disable=SC2046  # pkg-config output is meant to be word-split
gcc -O2 -o "$W/reference-server" Benchmarks/reference/server.c $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
C_PORT=$(free_port)
"$W/reference-server" "$C_PORT" 1 >"$W/reference.log" 2>&1 &
PIDS+=($!)
wait_up "http://127.0.0.1:$C_PORT/"

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$W/rsa.key" 2>/dev/null
chmod 600 "$W/rsa.key"
TOKEN="steps-$RANDOM$RANDOM"
HASH=$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)
sed -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/^  tokens: \[\].*/  tokens: [{id: steps, sha256: \"$HASH\", scopes: [aliases:create, \"egress:*\"]}]/" \
    config/cloak.yaml >"$W/cloak.yaml"
U="http://127.0.0.1:$C_PORT"
cat >>"$W/cloak.yaml" <<YAML

egress:
  routes:
    - {id: plain, upstream: "$U", allow_private: true, request: [{reveal: {json: ["\$.card"]}}]}
    - id: hmac
      upstream: "$U"
      allow_private: true
      request:
        - {reveal: {json: ["\$.card"]}}
        - {digest: {header: Content-Digest}}
        - {http_signature: {algorithm: hmac-sha256, key: "env:STEPS_SECRET", keyid: bench, components: ["@method", "@target-uri", "content-digest", "content-type"]}}
    - id: rsa
      upstream: "$U"
      allow_private: true
      request:
        - {reveal: {json: ["\$.card"]}}
        - {http_signature: {algorithm: rsa-v1_5-sha256, key: "file:$W/rsa.key", keyid: bench, components: ["@method", "@target-uri", "content-type"]}}
YAML
PORT=$(free_port)
STEPS_SECRET="base64:$(head -c 32 /dev/urandom | base64)" CLOAK_SERVER_LISTEN=127.0.0.1:$PORT CLOAK_SERVER_THREADS=1 \
    CLOAK_VAULT_STORE=sqlite:$W/cloak.db CLOAK_VAULT_KEYS=file:$W/keys.json \
    "$BIN" serve --config "$W/cloak.yaml" >"$W/cloak.log" 2>&1 &
PID=$!; PIDS+=("$PID")
wait_up "http://127.0.0.1:$PORT/healthz"
alias=$(curl -sS -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
    --data-binary '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}]}' "http://127.0.0.1:$PORT/aliases" \
    | sed -n 's/.*"alias":"\([^"]*\)".*/\1/p')
[[ -n $alias ]] || { echo "could not store the card" >&2; exit 1; }
printf '{"card":"%s","amount":1000}' "$alias" >"$W/body.json"

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
declare -A CPU COUNT
measure() {
    local route=$1 t0 t1 out n
    t0=$(ticks "$PID")
    out=$(BODY_FILE=$W/body.json METHOD=POST PROXY_AUTH="Bearer $TOKEN" TOKEN= \
        wrk -t1 -c32 -d"${DURATION}s" -s Benchmarks/load/post.lua "http://127.0.0.1:$PORT/egress/$route/v1/charges")
    t1=$(ticks "$PID")
    ! grep -q 'Non-2xx' <<<"$out" || { echo "$route: answers other than 2xx: $out" >&2; exit 1; }
    n=$(awk '/requests in/ { print $1 }' <<<"$out")
    CPU[$route]=$(( ${CPU[$route]:-0} + t1 - t0 )); COUNT[$route]=$(( ${COUNT[$route]:-0} + n ))
}
routes=(plain hmac rsa)
for round in $(seq "$ROUNDS"); do
    order=("${routes[@]}"); (( round % 2 == 0 )) && order=(rsa hmac plain)
    for r in "${order[@]}"; do measure "$r"; done
done
hz=$(getconf CLK_TCK)
us() { awk -v t="${CPU[$1]}" -v n="${COUNT[$1]}" -v hz="$hz" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }'; }
sign_per_s=$(openssl speed -seconds 3 rsa2048 2>/dev/null | awk '/^rsa 2048 bits/ { print $(NF-1) }')
sign_us=$(awk -v s="$sign_per_s" 'BEGIN { printf "%.1f", 1e6 / s }')
plain=$(us plain); hmac=$(us hmac); rsa=$(us rsa)
echo "$ROUNDS rounds of ${DURATION}s, wrk -t1 -c32, one loop thread; CPU per request:"
printf '  plain (reveal)             %7s us  (%s requests)\n' "$plain" "${COUNT[plain]}"
printf '  + digest + hmac-sha256     %7s us  = %.3fx plain (target <= 1.15)\n' "$hmac" "$(awk -v a="$hmac" -v b="$plain" 'BEGIN { print a / b }')"
printf '  + rsa-v1_5-sha256 (2048)   %7s us  added %.1f us = %.2fx one signature (target <= 1.25)\n' "$rsa" \
    "$(awk -v a="$rsa" -v b="$plain" 'BEGIN { print a - b }')" "$(awk -v a="$rsa" -v b="$plain" -v s="$sign_us" 'BEGIN { print (a - b) / s }')"
echo "  openssl speed rsa2048: $sign_per_s signs/s = $sign_us us a signature"
