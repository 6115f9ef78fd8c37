#!/usr/bin/env bash
# Two builds of Cloak side by side in one run (issue 74): each cost case on the old and the new
# build alternately, seconds apart, beside the C reference server and haproxy, in ROUNDS rounds.
# Prints each case's CPU a request (µs, user + system of the server process from /proc) on both
# sides and the ratio NEW/OLD over all rounds with its range, round by round; the doors against
# haproxy and healthz and validate against the C server, from the same rounds.
#
# Usage: Benchmarks/compare.sh OLD NEW
#   OLD, NEW: a cloak executable; a git revision (tag, branch, commit), built for release once
#   in a worktree under .build-compare/REV and kept for the next run; or `.`, this checkout,
#   built for release here. A revision runs with its own config/cloak.yaml; an executable with
#   this checkout's (OLD_CONFIG or NEW_CONFIG name another).
#
# Environment: ROUNDS (default 3), DURATION seconds a wrk run (default 4), CASES (an extended
# regex over the case names, default all), RESULTS (default Benchmarks/results/compare-TIME).
# One loop thread a server, SQLite on disk, wrk -t1 -c32 (reveal-c1 at c1, upload at c16). Why side by
# side: this machine's speed drifts 10-30 % over minutes, so figures taken minutes apart do not
# compare; a round measures both sides of a case within seconds, the order swapped each round.
set -euo pipefail
export CLOAK_CONSOLE_LISTEN=${CLOAK_CONSOLE_LISTEN:-127.0.0.1:0}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
HOST=127.0.0.1
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4}
CASES=${CASES:-.}
log() { echo "compare.sh: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=Benchmarks/lib.sh
source Benchmarks/lib.sh
[[ $# -eq 2 ]] || { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
for tool in wrk curl gcc python3 pkg-config haproxy; do
    command -v "$tool" >/dev/null 2>&1 || [[ $tool == haproxy && -x /usr/sbin/haproxy ]] || die "'$tool' not found"
done
RESULTS=${RESULTS:-$REPO/Benchmarks/results/compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS"
trap cleanup EXIT

declare -A BIN CONFIG PID PORT TOKEN ALIAS

# resolve SIDE SPEC: the side's executable and configuration.
resolve() {
    local side=$1 spec=$2 rev tree override
    override=$([[ $side == old ]] && echo "${OLD_CONFIG:-}" || echo "${NEW_CONFIG:-}")
    if [[ $spec == . ]]; then
        log "building this checkout for release"
        swift build -c release --product cloak >"$RESULTS/build-$side.log" 2>&1 \
            || { tail -n 30 "$RESULTS/build-$side.log" >&2; die "the release build failed"; }
        BIN[$side]="$(swift build -c release --show-bin-path)/cloak"
        CONFIG[$side]=${override:-$REPO/config/cloak.yaml}
    elif [[ -f $spec && -x $spec ]]; then
        BIN[$side]=$(realpath "$spec")
        CONFIG[$side]=${override:-$REPO/config/cloak.yaml}
    else
        rev=$(git rev-parse --verify --quiet "$spec^{commit}") || die "$spec is neither an executable nor a revision"
        tree="$REPO/.build-compare/$rev"
        if [[ ! -x $tree/.build/release/cloak ]]; then
            [[ -d $tree ]] || git worktree add --detach "$tree" "$rev" >/dev/null 2>&1 \
                || die "cannot make a worktree of $spec in $tree"
            log "building $spec ($rev) for release in ${tree#"$REPO"/} (once)"
            (cd "$tree" && swift build -c release --product cloak) >"$RESULTS/build-$side.log" 2>&1 \
                || { tail -n 30 "$RESULTS/build-$side.log" >&2; die "the release build of $spec failed"; }
        fi
        BIN[$side]=$tree/.build/release/cloak
        CONFIG[$side]=${override:-$tree/config/cloak.yaml}
    fi
    echo "$side: $spec -> ${BIN[$side]}" >>"$RESULTS/sides.txt"
}
resolve old "$1"
resolve new "$2"

# The C reference server (the upstream of the doors, and the floor of healthz and validate) and
# haproxy in front of it (the floor of a proxy).
gcc -O2 -o "$RESULTS/reference-server" Benchmarks/reference/server.c \
    $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
C_PORT=$(free_port)
"$RESULTS/reference-server" "$C_PORT" 1 >"$RESULTS/reference.log" 2>&1 &
C_PID=$!
PIDS+=("$C_PID")
wait_http "$C_PID" "http://$HOST:$C_PORT/" 10 || die "the C server did not come up"
HAPROXY_PORT=$(free_port)
start_haproxy "$RESULTS" "$HAPROXY_PORT" "$C_PORT" 1 || die "haproxy did not come up"
H_PID=$HAPROXY_PID

# A file upload's body: the kyc form's name and a 16 KiB PNG (the same bytes every request).
python3 Benchmarks/load/upload-body.py "$RESULTS/upload-body.bin"
printf '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","storage":"PERSISTENT"}]}' \
    >"$RESULTS/dedupe-body.json"

# Each side: its own configuration (limits raised past what wrk sends, as bench.sh does; the
# buckets are still taken; a build that has no such limit ignores the line), store, keys and
# port; one stored card for the reveals and the door.
for side in old new; do
    mkdir -p "$RESULTS/$side"
    TOKEN[$side]="compare-$RANDOM$RANDOM"
    hash=$(printf %s "${TOKEN[$side]}" | sha256sum | cut -d' ' -f1)
    sed -e "s/^  tokens: \[\].*/  tokens: [{id: compare, sha256: \"$hash\", scopes: [aliases:create, aliases:reveal, \"egress:*\"]}]/" \
        -e "s|^routes: \[\]|routes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /bench, form: proxybench, upstream: \"http://$HOST:$C_PORT/\"}]|" \
        -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
        -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
        -e "s|^forms:|forms:\n  proxybench: {fields: [{name: card, type: cardNumber, tokenization: {format: FPE_T_FOUR, storage: PERSISTENT}}]}|" \
        -e "s/bucket_values_per_hour: [0-9]*/bucket_values_per_hour: 1000000/" \
        -e "s/max_bucket_share: [0-9.]*/max_bucket_share: 1/" \
        -e "s/upload_mib_per_minute: [0-9]*/upload_mib_per_minute: 1048576/" \
        "${CONFIG[$side]}" >"$RESULTS/$side/cloak.yaml"
    printf '\negress:\n  routes:\n    - {id: bench, upstream: "http://%s:%s", allow_private: true, request: [{reveal: {json: ["$.card"]}}]}\n' \
        "$HOST" "$C_PORT" >>"$RESULTS/$side/cloak.yaml"
    PORT[$side]=$(free_port)
    CLOAK_SERVER_LISTEN="$HOST:${PORT[$side]}" CLOAK_SERVER_THREADS=1 \
        CLOAK_VAULT_STORE="sqlite:$RESULTS/$side/cloak.db" CLOAK_VAULT_KEYS="file:$RESULTS/$side/keys.json" \
        "${BIN[$side]}" serve --config "$RESULTS/$side/cloak.yaml" >"$RESULTS/$side/cloak.log" 2>&1 &
    PID[$side]=$!
    PIDS+=("${PID[$side]}")
    wait_http "${PID[$side]}" "http://$HOST:${PORT[$side]}/healthz" 60 \
        || { tail -n 30 "$RESULTS/$side/cloak.log" >&2; die "the $side build did not answer /healthz"; }
    ALIAS[$side]=$(curl -sS -H 'Content-Type: application/json' -H "Authorization: Bearer ${TOKEN[$side]}" \
        --data-binary @"$RESULTS/dedupe-body.json" "http://$HOST:${PORT[$side]}/aliases" \
        | sed -n 's/.*"alias":"\([^"]*\)".*/\1/p')
    [[ -n ${ALIAS[$side]} ]] || die "the $side build did not store the card"
    printf '{"card":"%s","amount":1000}' "${ALIAS[$side]}" >"$RESULTS/$side/egress-body.json"
done

# measure NAME PID URL CONNECTIONS [VAR=VALUE ...] -- WRK_SCRIPT_ARGS: µs of CPU a request.
measure() {
    local name=$1 pid=$2 url=$3 connections=$4 before after out requests
    shift 4
    local env_args=()
    while [[ $# -gt 0 && $1 != -- ]]; do env_args+=("$1"); shift; done
    [[ ${1:-} == -- ]] && shift
    before=$(cpu_ticks "$pid")
    out=$(env ${env_args[@]+"${env_args[@]}"} wrk -t1 -c"$connections" -d"${DURATION}s" "$@" "$url" 2>&1) \
        || { echo "$out" >&2; die "wrk failed for $name"; }
    after=$(cpu_ticks "$pid")
    echo "$out" >>"$RESULTS/wrk-$(tr -c 'A-Za-z0-9_-' _ <<<"$name").txt"
    if grep -q -e "Non-2xx" -e "Socket errors" <<<"$out"; then
        echo "$out" >&2
        die "failed answers in $name"
    fi
    requests=$(awk '/requests in/ { print $1 }' <<<"$out")
    awk -v t=$((after - before)) -v n="$requests" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }'
}

# run_case CASE SIDE: one wrk run of a case against one side.
run_case() {
    local case=$1 side=$2 base="http://$HOST:${PORT[$2]}" pid=${PID[$2]} token=${TOKEN[$2]}
    local post=Benchmarks/load/post.lua
    case $case in
        healthz) measure "$case $side" "$pid" "$base/healthz" 32 ;;
        validate) measure "$case $side" "$pid" "$base/forms/checkout/validate" 32 \
            BODY_FILE=Benchmarks/load/validate-body.json -- -s $post ;;
        alias-new) measure "$case $side" "$pid" "$base/aliases" 32 TOKEN="$token" -- -s Benchmarks/load/aliases.lua ;;
        dedupe) measure "$case $side" "$pid" "$base/aliases" 32 BODY_FILE="$RESULTS/dedupe-body.json" TOKEN="$token" \
            -- -s $post ;;
        reveal-c1 | reveal-c32)
            measure "$case $side" "$pid" "$base/aliases/${ALIAS[$side]}" "${case#reveal-c}" BODY_FILE=/dev/null \
                METHOD=GET TOKEN="$token" -- -s $post ;;
        form-tokens) measure "$case $side" "$pid" "$base/forms/checkout/tokens" 32 \
            BODY_FILE=Benchmarks/load/validate-body.json -- -s $post ;;
        egress) measure "$case $side" "$pid" "$base/egress/bench/v1/charges" 32 \
            BODY_FILE="$RESULTS/$side/egress-body.json" PROXY_AUTH="Bearer $token" -- -s $post ;;
        inbound) measure "$case $side" "$pid" "$base/proxy/bench" 32 BODY_FILE=Benchmarks/load/proxy-body.json \
            -- -s Benchmarks/load/proxy.lua ;;
        # c16: one anonymous address may hold an eighth of limits.upload_memory_mib in flight (21 uploads).
        upload) measure "$case $side" "$pid" "$base/forms/kyc/tokens" 16 BODY_FILE="$RESULTS/upload-body.bin" \
            -- -s Benchmarks/load/upload.lua ;;
        *) die "unknown case $case" ;;
    esac
}

ALL_CASES=(healthz validate alias-new dedupe reveal-c1 reveal-c32 form-tokens egress inbound upload)
SELECTED=()
for case in "${ALL_CASES[@]}"; do [[ $case =~ $CASES ]] && SELECTED+=("$case"); done
((${#SELECTED[@]} > 0)) || die "CASES=$CASES names no case (${ALL_CASES[*]})"
declare -A SUM RATIOS
C_SUM=0
H_SUM=0
for round in $(seq "$ROUNDS"); do
    c=$(measure "C server" "$C_PID" "http://$HOST:$C_PORT/" 32)
    h=$(measure haproxy "$H_PID" "http://$HOST:$HAPROXY_PORT/v1/charges" 32 \
        BODY_FILE=Benchmarks/load/proxy-body.json -- -s Benchmarks/load/post.lua)
    C_SUM=$(awk -v s="$C_SUM" -v v="$c" 'BEGIN { print s + v }')
    H_SUM=$(awk -v s="$H_SUM" -v v="$h" 'BEGIN { print s + v }')
    log "round $round: C server $c µs, haproxy $h µs"
    order=(old new)
    ((round % 2 == 0)) && order=(new old)
    for case in "${SELECTED[@]}"; do
        declare -A got=()
        for side in "${order[@]}"; do got[$side]=$(run_case "$case" "$side"); done
        SUM[$case,old]=$(awk -v s="${SUM[$case,old]:-0}" -v v="${got[old]}" 'BEGIN { print s + v }')
        SUM[$case,new]=$(awk -v s="${SUM[$case,new]:-0}" -v v="${got[new]}" 'BEGIN { print s + v }')
        RATIOS[$case]+=" $(awk -v a="${got[new]}" -v b="${got[old]}" 'BEGIN { printf "%.3f", a / b }')"
        log "round $round: $case old ${got[old]} µs, new ${got[new]} µs"
    done
done

{
    echo "OLD $1 -> ${BIN[old]}"
    echo "NEW $2 -> ${BIN[new]}"
    echo "$ROUNDS rounds of ${DURATION} s a run, one loop thread, SQLite on disk; CPU µs a request"
    printf 'C server %.2f µs, haproxy %.2f µs (means over the rounds)\n' \
        "$(awk -v s="$C_SUM" -v n="$ROUNDS" 'BEGIN { print s / n }')" \
        "$(awk -v s="$H_SUM" -v n="$ROUNDS" 'BEGIN { print s / n }')"
    printf '%-12s %9s %9s %8s %-15s %9s %9s\n' case "old µs" "new µs" new/old "range" "old/floor" "new/floor"
    for case in "${SELECTED[@]}"; do
        floor=$C_SUM
        [[ $case == egress || $case == inbound ]] && floor=$H_SUM
        read -r lo hi < <(tr ' ' '\n' <<<"${RATIOS[$case]}" | awk 'NF { if (lo == "" || $1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { print lo, hi }')
        printf '%-12s %9.2f %9.2f %8.3f %-15s %9.2f %9.2f\n' "$case" \
            "$(awk -v s="${SUM[$case,old]}" -v n="$ROUNDS" 'BEGIN { print s / n }')" \
            "$(awk -v s="${SUM[$case,new]}" -v n="$ROUNDS" 'BEGIN { print s / n }')" \
            "$(awk -v a="${SUM[$case,new]}" -v b="${SUM[$case,old]}" 'BEGIN { print a / b }')" "$lo-$hi" \
            "$(awk -v s="${SUM[$case,old]}" -v f="$floor" 'BEGIN { print s / f }')" \
            "$(awk -v s="${SUM[$case,new]}" -v f="$floor" 'BEGIN { print s / f }')"
    done
    echo "floor: haproxy for egress and inbound, the C server for the rest"
} | tee "$RESULTS/summary.txt"
