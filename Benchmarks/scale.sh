#!/usr/bin/env bash
# Cloak's cost as its store and a token's guess windows grow (issue 56), beside the C libevent
# reference server in the same run.
#
# Usage: Benchmarks/scale.sh [--smoke]
#
# For each store (SQLite, then PostgreSQL) and each volume of SCALE_POINTS records, the store is
# filled up to that volume in-process (cloak-scale-fill: records made through Vault, sealed and
# signed as the server makes them), Cloak is started on it (release build, one loop thread) and
# every case runs RUNS times over HTTP with wrk (after one round not counted), interleaved with
# the C server's GET /:
#   new alias      POST /aliases, one card never sent before (a token with aliases:create only)
#   dedupe         POST /aliases, a stored card at random (the same token)
#   reveal         GET /aliases/{alias}, a stored card's alias at random (aliases:reveal)
#   form tokens    POST /forms/checkout/tokens (anonymous), a new card each time
#   egress         POST /egress/bench/v1/charges, a stored alias revealed on the way to the C server
# Then, on the largest store, the same cases after the create-only token has aliased SCALE_CARDS
# distinct cards (each in its own guess bucket) within the hour; these cards stay in the store.
# Reported: median and range of CPU µs a request and req/s (and their ratios to the C server's
# GET / in the same rounds), Cloak's RSS after the cases, the store's size on disk, and at the
# end the issue's targets (ratios) from the medians.
#
# Environment:
#   SCALE_POINTS   record volumes (default "0 100000 1000000 10000000")
#   SCALE_CARDS    distinct cards by one token (default "0 100000 1000000"; empty: none)
#   SCALE_STORES   default "sqlite postgres"
#   RUNS           rounds per point (default 3); DURATION seconds per wrk run (default 10)
#   WRK_CONNECTIONS  wrk -c (default 32)
#   SCALE_CACHE    where filled stores are kept and reused by later runs (default
#                  Benchmarks/.scale; a store is filled only from the volume it holds)
#   CLOAK_BIN, SCALE_FILL_BIN  use these binaries instead of building release ones
#   --smoke        tiny volumes, one round of 1 s, a throwaway cache: checks the script end to end
#                  (the test command runs it on the debug binaries)
#
# Results: Benchmarks/results/scale-<timestamp>/ (wrk output, logs, summary.txt).
set -euo pipefail
# The shipped config's console listens on 8082; this script's servers take any free port.
export CLOAK_CONSOLE_LISTEN=${CLOAK_CONSOLE_LISTEN:-127.0.0.1:0}

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
cd "$REPO_ROOT"
HOST=127.0.0.1
log() { printf '[scale] %s\n' "$*" >&2; }
die() { printf '[scale] error: %s\n' "$*" >&2; exit 1; }
. "$SCRIPT_DIR/lib.sh"

SMOKE=0
for arg in "$@"; do
    case "$arg" in
        --smoke) SMOKE=1 ;;
        -h|--help) sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg" ;;
    esac
done

RESULTS_DIR="$SCRIPT_DIR/results/scale-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$RESULTS_DIR"
if (( SMOKE )); then
    SCALE_POINTS=${SCALE_POINTS:-"0 3000"}
    SCALE_CARDS=${SCALE_CARDS:-"0 2000"}
    RUNS=${RUNS:-1}
    DURATION=${DURATION:-1}
    SCALE_CACHE="$RESULTS_DIR/cache"
fi
SCALE_POINTS=${SCALE_POINTS:-"0 100000 1000000 10000000"}
SCALE_CARDS=${SCALE_CARDS-"0 100000 1000000"}
SCALE_STORES=${SCALE_STORES:-"sqlite postgres"}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}
SCALE_CACHE=${SCALE_CACHE:-$SCRIPT_DIR/.scale}
CLK_TCK=$(getconf CLK_TCK)
CASES=("new alias" "dedupe" "reveal" "form tokens" "egress")
PG_DIR=""

stop_postgres() { [[ -z "$PG_DIR" ]] || scripts/postgres stop "$PG_DIR" >/dev/null 2>&1 || true; }
trap 'cleanup; stop_postgres' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

require gcc
require pkg-config
require curl
require wrk

# ---------------------------------------------------------------- binaries

REF_BIN="$SCRIPT_DIR/.build-ref/reference-server"
mkdir -p "$SCRIPT_DIR/.build-ref" "$SCALE_CACHE"
# shellcheck disable=SC2046  # pkg-config output is meant to be word-split
gcc -O2 -Wall -o "$REF_BIN" "$SCRIPT_DIR/reference/server.c" \
    $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
if [[ -z "${CLOAK_BIN:-}" || -z "${SCALE_FILL_BIN:-}" ]]; then
    require swift
    log "building cloak and cloak-scale-fill (release)"
    swift build -c release --product cloak
    swift build -c release --product cloak-scale-fill
    CLOAK_BIN=${CLOAK_BIN:-$(swift build -c release --show-bin-path)/cloak}
    SCALE_FILL_BIN=${SCALE_FILL_BIN:-$(swift build -c release --show-bin-path)/cloak-scale-fill}
fi
[[ -x "$CLOAK_BIN" && -x "$SCALE_FILL_BIN" ]] || die "binaries not found: $CLOAK_BIN $SCALE_FILL_BIN"

# ---------------------------------------------------------------- the C server and the config

C_PORT=$(free_port)
"$REF_BIN" "$C_PORT" 1 >"$RESULTS_DIR/reference-server.log" 2>&1 &
C_PID=$!
PIDS+=("$C_PID")
wait_http "$C_PID" "http://$HOST:$C_PORT/" 10 || die "the C reference server did not come up"

CREATE_TOKEN="scale-create-$RANDOM$RANDOM"
REVEAL_TOKEN="scale-reveal-$RANDOM$RANDOM"
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
CONFIG="$RESULTS_DIR/cloak.yaml"
# The shipped configuration, with two tokens (one that may only create: its creates pass the
# guess limiter; one that may reveal and use the egress door), rate limits past what wrk sends
# (still taken on every request), an egress route to the C server revealing $.card, and
# bucket_values_per_hour at 1,000: every value is still counted, but 32 reveals in flight
# (more than the default 30) would otherwise be refused, each counted as a possible miss.
sed -e "s/^  tokens: \[\].*/  tokens: [{id: create, sha256: \"$(sha "$CREATE_TOKEN")\", scopes: [aliases:create]}, {id: reveal, sha256: \"$(sha "$REVEAL_TOKEN")\", scopes: [aliases:create, aliases:reveal, \"egress:*\"]}]/" \
    -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/max_bucket_share: [0-9.]*/max_bucket_share: 1/" \
    -e "s/bucket_values_per_hour: [0-9]*/bucket_values_per_hour: 1000/" \
    config/cloak.yaml >"$CONFIG"
printf '\negress:\n  routes:\n    - {id: bench, upstream: "http://%s:%s", allow_private: true, request: [{reveal: {json: ["$.card"]}}]}\n' \
    "$HOST" "$C_PORT" >>"$CONFIG"
grep -q "id: create" "$CONFIG" || die "could not add the benchmark's tokens to config/cloak.yaml's copy"

# ---------------------------------------------------------------- measuring

# wrk_case NAME CASE [PATH] [BODY_FILE]: one wrk run against Cloak (or the C server for "c GET /");
# prints "cpu_us rps errors" (CPU of SERVER_PID, plus PostgreSQL's when on PostgreSQL).
SERVER_PID=""
BASE_URL=""
STORE=""
FILLED=0
ALIASES=""
SERIES=1
wrk_run() {
    local name=$1 case=$2 file="$RESULTS_DIR/$3.txt" url=$4 script=${5:-}
    local args=(-t1 -c"$WRK_CONNECTIONS" -d"${DURATION}s")
    [[ -z "$script" ]] || args+=(-s "$script")
    local before pg_before=0 after pg_after=0
    before=$(cpu_ticks "$SERVER_PID")
    [[ "$STORE" != postgres || "$name" == c ]] || pg_before=$(postgres_ticks)
    CASE=$case TOKEN=${6:-} FILLED=$FILLED ALIASES=$ALIASES SERIES=$SERIES FORM_BODY="$SCRIPT_DIR/load/validate-body.json" \
        wrk "${args[@]}" "$url" >"$file" 2>&1 || { cat "$file" >&2; die "wrk failed: $name"; }
    after=$(cpu_ticks "$SERVER_PID")
    [[ "$STORE" != postgres || "$name" == c ]] || pg_after=$(postgres_ticks)
    awk -v t=$(( after - before + pg_after - pg_before )) -v hz="$CLK_TCK" '
        /requests in/ { n = $1 }
        /^Requests\/sec:/ { rps = $2 }
        /Non-2xx or 3xx responses:/ { e += $NF }
        /Socket errors:/ { gsub(/,/, ""); e += $4 + $6 + $8 + $10 }
        END { printf "%.1f %.0f %d\n", (n > 0 ? t / hz * 1e6 / n : 0), rps, e }' "$file"
}

# One round of every case at the current point: lines "case cpu rps errors" into $1.
SAMPLES=""
round() {
    local tag=$1 out=$2 slug
    local saved=$SERVER_PID
    SERVER_PID=$C_PID
    echo "c-GET $(wrk_run c c "$tag-c-get" "http://$HOST:$C_PORT/")" >>"$out"
    SERVER_PID=$saved
    for name in "${CASES[@]}"; do
        slug="$tag-${name// /-}"
        SERIES=$(( (SERIES % 8) + 1 ))
        case "$name" in
            "new alias") r=$(wrk_run "$name" new "$slug" "$BASE_URL/aliases" "$SCRIPT_DIR/load/scale.lua" "$CREATE_TOKEN") ;;
            dedupe) r=$(wrk_run "$name" dedupe "$slug" "$BASE_URL/aliases" "$SCRIPT_DIR/load/scale.lua" "$CREATE_TOKEN") ;;
            reveal) r=$(wrk_run "$name" reveal "$slug" "$BASE_URL/aliases" "$SCRIPT_DIR/load/scale.lua" "$REVEAL_TOKEN") ;;
            "form tokens") r=$(wrk_run "$name" form "$slug" "$BASE_URL/forms/checkout/tokens" "$SCRIPT_DIR/load/scale.lua") ;;
            egress) r=$(wrk_run "$name" egress "$slug" "$BASE_URL/egress/bench/v1/charges" "$SCRIPT_DIR/load/scale.lua" "$REVEAL_TOKEN") ;;
        esac
        echo "${name// /-} $r" >>"$out"
        [[ "$(echo "$r" | cut -d' ' -f3)" == 0 ]] || log "warning: $tag $name had $(echo "$r" | cut -d' ' -f3) errors ($slug.txt)"
    done
}

start_cloak() {
    local store_url=$1 keys=$2 tag=$3
    local port
    port=$(free_port)
    CLOAK_SERVER_LISTEN="$HOST:$port" CLOAK_SERVER_THREADS=1 CLOAK_VAULT_STORE="$store_url" CLOAK_VAULT_KEYS="$keys" \
        "$CLOAK_BIN" serve --config "$CONFIG" >"$RESULTS_DIR/cloak-$tag.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    BASE_URL="http://$HOST:$port"
    wait_http "$SERVER_PID" "$BASE_URL/healthz" 120 || { tail -n 30 "$RESULTS_DIR/cloak-$tag.log" >&2; die "cloak did not start"; }
}

stop_cloak() {
    stop_pid "$SERVER_PID"
    forget_pid "$SERVER_PID"
}

rss_mb() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

store_records() {
    if [[ "$STORE" == sqlite ]]; then
        sqlite3 "$STORE_DIR/cloak.db" "SELECT count(*) FROM records"
    else
        psql "$STORE_URL" -Atc "SELECT count(*) FROM records"
    fi
}

store_bytes() {
    if [[ "$STORE" == sqlite ]]; then
        cat "$STORE_DIR"/cloak.db* 2>/dev/null | wc -c
    else
        psql "$STORE_URL" -Atc "SELECT pg_database_size(current_database())"
    fi
}

# measure POINT_LABEL RECORDS: RUNS rounds, then the point's RSS and disk into the summary rows.
ROWS="$RESULTS_DIR/rows.txt"
measure() {
    local label=$1 tag=$2 warm=${3:-1} samples="$RESULTS_DIR/$2.samples"
    : >"$samples"
    # One round first, not counted: a process that just opened a large store runs its first
    # minute at up to 3.5 times the cost of the next (its page cache, the WAL it inherits).
    (( ! warm )) || round "$tag-warm" "$RESULTS_DIR/$tag.warm"
    for run in $(seq 1 "$RUNS"); do round "$tag-r$run" "$samples"; done
    local rss bytes records
    rss=$(rss_mb "$SERVER_PID")
    bytes=$(store_bytes)
    records=$(store_records)
    awk -v store="$STORE" -v label="$label" -v rss="$rss" -v bytes="$bytes" -v records="$records" '
        function median(list,   n, v, i, j, t) {
            n = split(list, v, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
            return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }
        function lo(list,   n, v, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 < m + 0) m = v[i]; return m }
        function hi(list,   n, v, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 > m + 0) m = v[i]; return m }
        { cpu[$1] = cpu[$1] " " $2; rps[$1] = rps[$1] " " $3; err[$1] += $4; if (!($1 in seen)) { order[++k] = $1; seen[$1] = 1 } }
        END {
            ccpu = median(cpu["c-GET"]); crps = median(rps["c-GET"])
            for (i = 1; i <= k; i++) {
                c = order[i]
                printf "%s|%s|%s|%.1f|%s-%s|%.2f|%.0f|%s-%s|%.2f|%s|%.1f|%d|%d\n", store, label, c,
                    median(cpu[c]), lo(cpu[c]), hi(cpu[c]), median(cpu[c]) / ccpu,
                    median(rps[c]), lo(rps[c]), hi(rps[c]), median(rps[c]) / crps, rss, bytes / 1048576, err[c], records
            }
        }' "$samples" >>"$ROWS"
    tail -n "${#CASES[@]}" "$ROWS" | sed 's/^/[scale]   /' >&2
}

# ---------------------------------------------------------------- stores

for STORE in $SCALE_STORES; do
    STORE_DIR="$SCALE_CACHE/$STORE"
    mkdir -p "$STORE_DIR"
    KEYS="file:$STORE_DIR/keys.json"
    if [[ "$STORE" == sqlite ]]; then
        STORE_URL="sqlite:$STORE_DIR/cloak.db"
    else
        PG_DIR="$STORE_DIR/cluster"
        mkdir -p "$PG_DIR"
        chmod 755 "$PG_DIR"
        STORE_URL=$(scripts/postgres start "$PG_DIR")
    fi
    ALIASES="$STORE_DIR/aliases.txt"
    FILLED=$(cat "$STORE_DIR/filled" 2>/dev/null || echo 0)
    for point in $SCALE_POINTS; do
        # A store holding more than this point is not emptied: the point is skipped.
        if (( FILLED > point && point > 0 )) || (( FILLED > 1000 && point == 0 )); then
            log "$STORE: the cache holds $FILLED records, more than $point: skipped (SCALE_CACHE=... for a new one)"
            continue
        fi
        # At least 1,000: the dedupe, reveal and egress cases pick among stored cards.
        target=$(( point > 1000 ? point : 1000 ))
        if (( FILLED < target )); then
            log "$STORE: filling records $FILLED..<$target"
            "$SCALE_FILL_BIN" "$STORE_URL" "$KEYS" "$FILLED" "$target" "$ALIASES" >>"$RESULTS_DIR/fill-$STORE.log" 2>&1 \
                || { tail -n 20 "$RESULTS_DIR/fill-$STORE.log" >&2; die "cloak-scale-fill failed"; }
            FILLED=$target
            echo "$FILLED" >"$STORE_DIR/filled"
        fi
        # What the fill wrote reaches the disk before the runs: the kernel writing back gigabytes
        # of dirty pages during them made every fsync of the first 10M run wait (form tokens at
        # 198 req/s, against 4,856 a few minutes later).
        [[ "$STORE" != postgres ]] || psql "$STORE_URL" -qAtc "VACUUM ANALYZE" >/dev/null
        [[ "$STORE" != postgres ]] || psql "$STORE_URL" -qAtc "CHECKPOINT" >/dev/null
        sync
        start_cloak "$STORE_URL" "$KEYS" "$STORE-$point"
        log "$STORE: $point records: $RUNS rounds of ${#CASES[@]} cases, ${DURATION} s each"
        measure "$point records" "$STORE-$point"
        stop_cloak
    done
    [[ -n "$SCALE_CARDS" ]] || { stop_postgres; PG_DIR=""; continue; }
    # One token's distinct cards within the hour, on the largest store, in one process. The
    # token's own new-alias and dedupe runs add cards too (each a request): the pump tops the
    # token up to the point less what the runs will add (as many as the last point's runs
    # added), so that it ends the point's runs near the point, within its cap of a million.
    start_cloak "$STORE_URL" "$KEYS" "$STORE-cards"
    pumped=0
    held=0
    added=0
    for cards in $SCALE_CARDS; do
        top_up=$(( cards - held - added - cards / 20 ))
        if (( cards > 0 && top_up > 0 )); then
            log "$STORE: the create-only token aliases $top_up distinct cards (it holds about $held)"
            python3 "$SCRIPT_DIR/tools/pump-cards.py" "$BASE_URL" "$CREATE_TOKEN" 9 "$pumped" "$top_up" \
                || die "pumping cards failed"
            pumped=$(( pumped + top_up ))
            held=$(( held + top_up ))
        fi
        echo "$STORE $cards cards: the token held about $held distinct cards before the runs" >>"$RESULTS_DIR/cards.txt"
        # No warm-up: it would add cards to the token (the process is warm after its first point).
        measure "$cards cards" "$STORE-cards-$cards" 0
        added=$(cat "$RESULTS_DIR/$STORE-cards-$cards"-r*-{new-alias,dedupe}.txt | awk '/requests in/ { n += $1 } END { print n + 0 }')
        held=$(( held + added ))
        echo "$STORE $cards cards: and about $held after them" >>"$RESULTS_DIR/cards.txt"
    done
    stop_cloak
    stop_postgres
    PG_DIR=""
done

# ---------------------------------------------------------------- report

{
    printf '%-9s %-17s %-12s %8s %14s %6s %7s %14s %5s %8s %9s %9s %6s\n' store point case "cpu µs" range "/C" "req/s" range "/C" "RSS MiB" "disk MiB" records errors
    while IFS='|' read -r store label c cpu cr cratio rps rr rratio rss disk err records; do
        printf '%-9s %-17s %-12s %8s %14s %6s %7s %14s %5s %8s %9s %9s %6s\n' "$store" "$label" "$c" "$cpu" "$cr" "$cratio" "$rps" "$rr" "$rratio" "$rss" "$disk" "$records" "$err"
    done <"$ROWS"
    echo
    echo "Targets (medians): cost at the largest volume / at 100000 records, and at the most cards / at 0 cards:"
    awk -F'|' -v first_cards="$(echo "$SCALE_CARDS" | awk '{print $1}')" -v last_cards="$(echo "$SCALE_CARDS" | awk '{print $NF}')" \
        -v base_point="$(echo "$SCALE_POINTS" | awk '{ b = $1; for (i = 1; i <= NF; i++) if ($i == 100000) b = $i; print b }')" \
        -v top_point="$(echo "$SCALE_POINTS" | awk '{print $NF}')" '
        { key = $1 "|" $2 "|" $3; cpu[key] = $4; rss[$1 "|" $2] = $10; disk[$1 "|" $2] = $11; n[$1 "|" $2] = $13
          stores[$1] = 1; cases[$3] = 1 }
        END {
            for (s in stores) {
                for (c in cases) {
                    if (c == "c-GET") continue
                    b = cpu[s "|" base_point " records|" c]; t = cpu[s "|" top_point " records|" c]
                    z = cpu[s "|" first_cards " cards|" c]; m = cpu[s "|" last_cards " cards|" c]
                    printf "  %-8s %-12s records %s/%s: %5.2fx   cards %s/%s: %5.2fx   (target 1.5x)\n", s, c,
                        top_point, base_point, (b > 0 ? t / b : 0), last_cards, first_cards, (z > 0 ? m / z : 0)
                }
                printf "  %-8s RSS at %s records - at %s: %+.1f MiB (target 64)\n", s, top_point, base_point,
                    rss[s "|" top_point " records"] - rss[s "|" base_point " records"]
                k = s "|" top_point " records"
                if (n[k] > 0)
                    printf "  %-8s disk: %.0f bytes a record at %s records (%d in the store, indexes included; target 1536)\n", s,
                        disk[k] * 1048576 / n[k], top_point, n[k]
            }
        }' "$ROWS"
    [[ ! -f "$RESULTS_DIR/cards.txt" ]] || { echo; cat "$RESULTS_DIR/cards.txt"; }
} | tee "$RESULTS_DIR/summary.txt"
if (( SMOKE )); then
    # Every case answered: a smoke run fails on any error.
    awk -F'|' '$12 != 0 { bad = 1; print "[scale] errors in " $1 " " $2 " " $3 > "/dev/stderr" } END { exit bad }' "$ROWS"
fi
log "results: ${RESULTS_DIR#"$REPO_ROOT"/}"
