#!/usr/bin/env bash
# The egress reveal case (bench.sh's) on one or more Cloak binaries and the C server's GET /, in
# interleaved rounds, with user and system CPU apart.
#
# Usage: Benchmarks/tools/egress-ab.sh CLOAK_BIN [CLOAK_BIN...]
#
# Each binary serves with one loop thread and a vault of its own holding one stored card; each
# round measures the C server, then every binary (in reverse order every other round), seconds
# apart, with wrk -t1 -c32. CPU is utime and stime of the process from /proc, per request; the
# totals are over all rounds, against the C server's total. Environment: ROUNDS (default 4),
# DURATION seconds a run (default 4), CLOAK_CPUS (taskset list for the Cloak servers, with wrk and
# the C server on CPU 0; unset: no pinning). Everything it starts is killed on exit.
set -euo pipefail
(( $# >= 1 )) || { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
BINS=(); for b in "$@"; do [[ -x $b ]] || { echo "not executable: $b" >&2; exit 2; }; BINS+=("$(realpath "$b")"); done
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROUNDS=${ROUNDS:-4}; DURATION=${DURATION:-4}
W=$(mktemp -d /tmp/cloak-egress-ab.XXXXXX)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
[[ -n ${KEEP_WORK:-} ]] && trap - EXIT
pin() { if [[ -n ${CLOAK_CPUS:-} ]]; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }
# For a server started with `&`: the subshell becomes the server, so $! is its PID.
serve_pinned() { if [[ -n ${CLOAK_CPUS:-} ]]; then exec taskset -c "$1" "${@:2}"; else exec "${@:2}"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 200); do curl -fs -o /dev/null "$1" && return 0; sleep 0.1; done; echo "$1 never answered" >&2; exit 1; }

# shellcheck disable=SC2046  # pkg-config output is meant to be word-split
gcc -O2 -o "$W/reference-server" Benchmarks/reference/server.c $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
C_PORT=$(free_port)
serve_pinned 0 "$W/reference-server" "$C_PORT" 1 >"$W/reference.log" 2>&1 &
C_PID=$!; PIDS+=("$C_PID")
wait_up "http://127.0.0.1:$C_PORT/"

# bench.sh's egress configuration: rate limits past what wrk sends, a token with egress:*, the route.
EGRESS_TOKEN="ab-$RANDOM$RANDOM"
HASH=$(printf %s "$EGRESS_TOKEN" | sha256sum | cut -d' ' -f1)
sed -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/^  tokens: \[\].*/  tokens: [{id: ab, sha256: \"$HASH\", scopes: [aliases:create, \"egress:*\"]}]/" \
    config/cloak.yaml >"$W/cloak.yaml"
printf '\negress:\n  routes:\n    - {id: bench, upstream: "http://127.0.0.1:%s", allow_private: true, request: [{reveal: {json: ["$.card"]}}]}\n' \
    "$C_PORT" >>"$W/cloak.yaml"
CLOAK_PIDS=(); PORTS=()
for i in "${!BINS[@]}"; do
    port=$(free_port); mkdir -p "$W/$i"
    CLOAK_SERVER_LISTEN=127.0.0.1:$port CLOAK_SERVER_THREADS=1 CLOAK_VAULT_STORE=sqlite:$W/$i/cloak.db \
        CLOAK_VAULT_KEYS=file:$W/$i/keys.json serve_pinned "${CLOAK_CPUS:-0}" "${BINS[$i]}" serve --config "$W/cloak.yaml" >"$W/$i/log" 2>&1 &
    CLOAK_PIDS+=($!); PIDS+=($!); PORTS+=("$port")
    wait_up "http://127.0.0.1:$port/healthz"
    alias=$(curl -sS -H 'Content-Type: application/json' -H "Authorization: Bearer $EGRESS_TOKEN" \
        --data-binary '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}]}' "http://127.0.0.1:$port/aliases" \
        | sed -n 's/.*"alias":"\([^"]*\)".*/\1/p')
    [[ -n $alias ]] || { echo "could not store the card on ${BINS[$i]}" >&2; exit 1; }
    printf '{"card":"%s","amount":1000}' "$alias" >"$W/$i/body.json"
done

ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
declare -A CPU_USER CPU_SYS COUNT
# measure KEY PID COMMAND...: one wrk run, its CPU per request added to KEY's totals
measure() {
    local key=$1 pid=$2 u0 s0 u1 s1 out n
    shift 2
    read -r u0 s0 < <(ticks "$pid"); out=$("$@"); read -r u1 s1 < <(ticks "$pid")
    n=$(awk '/requests in/ { print $1 }' <<<"$out")
    ! grep -q 'Non-2xx' <<<"$out" || { echo "$key: answers other than 2xx: $out" >&2; exit 1; }
    CPU_USER[$key]=$(( ${CPU_USER[$key]:-0} + u1 - u0 )); CPU_SYS[$key]=$(( ${CPU_SYS[$key]:-0} + s1 - s0 )); COUNT[$key]=$(( ${COUNT[$key]:-0} + n ))
}
hz=$(getconf CLK_TCK)
for round in $(seq "$ROUNDS"); do
    measure C "$C_PID" pin 0 wrk -t1 -c32 -d"${DURATION}s" "http://127.0.0.1:$C_PORT/"
    order=("${!BINS[@]}"); (( round % 2 == 0 )) && order=($(printf '%s\n' "${!BINS[@]}" | sort -rn))
    for i in "${order[@]}"; do
        export BODY_FILE="$W/$i/body.json" METHOD=POST PROXY_AUTH="Bearer $EGRESS_TOKEN" TOKEN=
        measure "$i" "${CLOAK_PIDS[$i]}" pin 0 wrk -t1 -c32 -d"${DURATION}s" -s Benchmarks/load/post.lua "http://127.0.0.1:${PORTS[$i]}/egress/bench/v1/charges"
    done
done
report() { awk -v u="${CPU_USER[$1]}" -v s="${CPU_SYS[$1]}" -v n="${COUNT[$1]}" -v hz="$hz" -v c="$2" -v label="$3" \
    'BEGIN { f = 1e6 / hz / n; t = (u + s) * f; printf "%-40s user %5.1f  sys %5.1f  total %5.1f us/request", label, u * f, s * f, t; if (c > 0) printf "  = %.2fx C", t / c; print "" }'; }
c=$(awk -v u="${CPU_USER[C]}" -v s="${CPU_SYS[C]}" -v n="${COUNT[C]}" -v hz="$hz" 'BEGIN { print (u + s) * 1e6 / hz / n }')
echo "$ROUNDS rounds of ${DURATION}s, wrk -t1 -c32, one loop thread${CLOAK_CPUS:+, Cloak on CPUs $CLOAK_CPUS}:"
report C 0 "C server GET /"
for i in "${!BINS[@]}"; do report "$i" "$c" "egress reveal: ${BINS[$i]}"; done
