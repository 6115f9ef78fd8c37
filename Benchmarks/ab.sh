#!/usr/bin/env bash
# Two Cloak binaries against each other and the C reference server, in interleaved rounds.
#
# Usage: Benchmarks/ab.sh OLD_CLOAK_BIN NEW_CLOAK_BIN
#
# This machine's speed drifts by 10-30% over minutes, so figures from runs minutes apart do not
# compare. Each round here measures the C server, then each case on the old and then the new
# binary, seconds apart, and reports each against that round's C figure and, over all rounds,
# totals against totals (and new against old). Cases: GET
# /healthz and the validate request of bench.sh. CPU is user + system time of the server
# process (from /proc) per request; one loop thread, wrk -t1 -c32.
#
# Environment: ROUNDS (default 4), DURATION seconds per wrk run (default 4), CLOAK_CONFIG
# (default config/cloak.yaml), OLD_CLOAK_CONFIG (the old side's, default CLOAK_CONFIG: one binary
# against itself under two configurations). Everything it starts is killed on exit.
set -euo pipefail

[[ $# -eq 2 && -x "$1" && -x "$2" ]] || { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
OLD_BIN=$(realpath "$1"); NEW_BIN=$(realpath "$2")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${ROUNDS:-4}; DURATION=${DURATION:-4}; CLOAK_CONFIG=${CLOAK_CONFIG:-config/cloak.yaml}
WORK=$(mktemp -d /tmp/cloak-ab.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do curl -fs -o /dev/null "$1" && return 0; sleep 0.1; done; echo "ab.sh: $1 never answered" >&2; exit 1; }

# shellcheck disable=SC2046  # pkg-config output is meant to be word-split
gcc -O2 -o "$WORK/reference-server" Benchmarks/reference/server.c $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
C_PORT=$(free_port)
"$WORK/reference-server" "$C_PORT" 1 >"$WORK/reference.log" 2>&1 &
PIDS+=($!); C_PID=$!
wait_up "http://127.0.0.1:$C_PORT/"

# The rate limits raised past what wrk sends, as bench.sh does (the buckets are still taken).
sed -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
    "$CLOAK_CONFIG" >"$WORK/new.yaml"
sed -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
    "${OLD_CLOAK_CONFIG:-$CLOAK_CONFIG}" >"$WORK/old.yaml"

declare -A PID PORT
for side in old new; do
    bin=$OLD_BIN; [[ $side == new ]] && bin=$NEW_BIN
    mkdir -p "$WORK/$side"
    PORT[$side]=$(free_port)
    CLOAK_SERVER_LISTEN=127.0.0.1:${PORT[$side]} CLOAK_SERVER_THREADS=1 \
        CLOAK_VAULT_STORE=sqlite:$WORK/$side/cloak.db CLOAK_VAULT_KEYS=file:$WORK/$side/keys.json \
        "$bin" serve --config "$WORK/$side.yaml" >"$WORK/$side/cloak.log" 2>&1 &
    PIDS+=($!); PID[$side]=$!
    wait_up "http://127.0.0.1:${PORT[$side]}/healthz"
done

# cpu_per_request PID URL [BODY]: µs of user + system time per answered request.
cpu_per_request() {
    local pid=$1 url=$2 body=${3:-} u0 s0 u1 s1 out n
    read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
    if [[ -n $body ]]; then
        out=$(BODY_FILE=$body METHOD=POST TOKEN= wrk -t1 -c32 -d"${DURATION}s" -s Benchmarks/load/post.lua "$url")
    else
        out=$(wrk -t1 -c32 -d"${DURATION}s" "$url")
    fi
    read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
    if grep -q -e Non-2xx -e "Socket errors" <<<"$out"; then echo "ab.sh: failed answers from $url:" >&2; echo "$out" >&2; exit 1; fi
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    awk -v t=$((u1 + s1 - u0 - s0)) -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }'
}

printf '%-6s %8s %14s %14s %14s %14s\n' round "C us" "old healthz" "new healthz" "old validate" "new validate"
SUMS=(0 0 0 0); C_SUM=0
for round in $(seq "$ROUNDS"); do
    c=$(cpu_per_request "$C_PID" "http://127.0.0.1:$C_PORT/")
    C_SUM=$(awk -v s="$C_SUM" -v c="$c" 'BEGIN { print s + c }')
    row=()
    for case in healthz validate; do
        for side in old new; do
            if [[ $case == healthz ]]; then
                v=$(cpu_per_request "${PID[$side]}" "http://127.0.0.1:${PORT[$side]}/healthz")
            else
                v=$(cpu_per_request "${PID[$side]}" "http://127.0.0.1:${PORT[$side]}/forms/checkout/validate" \
                    Benchmarks/load/validate-body.json)
            fi
            row+=("$v")
        done
    done
    line=$(printf '%-6s %8s' "$round" "$c")
    for i in 0 1 2 3; do
        ratio=$(awk -v v="${row[$i]}" -v c="$c" 'BEGIN { printf "%.2f", v / c }')
        SUMS[i]=$(awk -v s="${SUMS[$i]}" -v v="${row[$i]}" 'BEGIN { print s + v }')
        line+=$(printf ' %7s (%4s×)' "${row[$i]}" "$ratio")
    done
    echo "$line"
done
# Over all rounds: each column's total against the C server's total (one round's C figure
# swings too much to divide by alone), and new against old.
printf '%-6s %8s' all "$(awk -v s="$C_SUM" -v n="$ROUNDS" 'BEGIN { printf "%.2f", s / n }')"
for i in 0 1 2 3; do printf ' %7s (%4s×)' "$(awk -v s="${SUMS[$i]}" -v n="$ROUNDS" 'BEGIN { printf "%.2f", s / n }')" \
    "$(awk -v s="${SUMS[$i]}" -v c="$C_SUM" 'BEGIN { printf "%.2f", s / c }')"; done
echo
printf 'new / old: healthz %s, validate %s\n' "$(awk -v a="${SUMS[1]}" -v b="${SUMS[0]}" 'BEGIN { printf "%.3f", a / b }')" \
    "$(awk -v a="${SUMS[3]}" -v b="${SUMS[2]}" 'BEGIN { printf "%.3f", a / b }')"
