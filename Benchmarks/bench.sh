#!/usr/bin/env bash
# Cloak load benchmark against the C libevent "reference ceiling", loopback only.
#
# Usage: Benchmarks/bench.sh [--c-only]
#
# Environment:
#   DURATION         seconds per wrk run (default 10)
#   THREADS          server loop threads for both servers (default 1)
#   WRK_THREADS      wrk -t (default 1)
#   WRK_CONNECTIONS  wrk -c (default 64)
#   CLOAK_CONFIG     config passed to `cloak serve --config` (default config/cloak.yaml,
#                    relative to the repo root)
#   CLOAK_BIN        use this cloak binary instead of building one
#   IDLE_CONNECTIONS idle keep-alive connections held open while Cloak's RSS is read (default 10000)
#   BENCH_POSTGRES   1 (default): also run the alias cases on PostgreSQL (a throwaway cluster from
#                    scripts/postgres in the results folder); 0: SQLite only
#   BENCH_TRACES     1: also run POST validate on Cloak nodes with telemetry.traces: off, ratio
#                    0.01 and 1.0 to an OTLP sink (Benchmarks/tools/otlp-sink.py), and 1.0 to a
#                    collector that answers 503 and to one that is down (then brought up: the
#                    seconds until export resumes are reported); default 0
#   BENCH_DATA_DIR   where Cloak's SQLite store and keys go (default: the results folder's data/);
#                    a tmpfs path (/dev/shm/...) leaves the group commit's fsync out of the numbers
#   BENCH_CASES      an extended regex: only Cloak's cases whose name matches it run (e.g. 'egress'
#                    or 'healthz|validate'); the C server's baselines always run, the idle
#                    connections section is skipped when it is set, and the PostgreSQL section
#                    runs only when it matches "POST /aliases" (BENCH_CASES=aliases: SQLite and
#                    PostgreSQL alias cases in one run)
#
# Raw wrk output, server logs and the summary table go to
# Benchmarks/results/<timestamp>/. Every process the script starts is killed
# by PID on exit.
set -euo pipefail
# The shipped config's console listens on 8082; this script's servers take any free port.
export CLOAK_CONSOLE_LISTEN=${CLOAK_CONSOLE_LISTEN:-127.0.0.1:0}

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
cd "$REPO_ROOT"

DURATION=${DURATION:-10}
THREADS=${THREADS:-1}
WRK_THREADS=${WRK_THREADS:-1}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-64}
CLOAK_CONFIG=${CLOAK_CONFIG:-config/cloak.yaml}
HOST=127.0.0.1

unset CASE_CONNECTIONS  # set per case below, never inherited
C_ONLY=0
for arg in "$@"; do
    case "$arg" in
        --c-only) C_ONLY=1 ;;
        -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

BENCH_DIR="$REPO_ROOT/Benchmarks"
REF_BUILD_DIR="$BENCH_DIR/.build-ref"
REF_BIN="$REF_BUILD_DIR/reference-server"
POST_LUA="$BENCH_DIR/load/post.lua"
VALIDATE_BODY="$BENCH_DIR/load/validate-body.json"
RESULTS_DIR="$BENCH_DIR/results/$(date +%Y%m%d-%H%M%S)"
DATA_DIR=${BENCH_DATA_DIR:-$RESULTS_DIR/data}

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

# Processes (PIDS, stop_pid, cleanup) and helpers (free_port, wait_http, cpu_ticks, peak_rss_mb,
# to_ms): Benchmarks/lib.sh.
. "$SCRIPT_DIR/lib.sh"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- cases

BASE_URL=""        # set before run_case calls, e.g. http://127.0.0.1:PORT
SERVER_PID=""      # the server under test: its CPU time is read from /proc around each run
declare -A HAPROXY_CPU_SAMPLES=() HAPROXY_P99_SAMPLES=()  # haproxy's proxied POST, by connection count
declare -A C_CPU_SAMPLES=() # C server GET / CPU µs per request and req/s by connection count: one
declare -A C_RPS_SAMPLES=() # run at the start, one after Cloak's cases; ratios use their mean (the
                            # C server's own cost drifts by up to 15% over a run on this machine)
CLK_TCK=$(getconf CLK_TCK)
PROXY_AUTH=""      # Proxy-Authorization for the egress case
BODY_TOKEN=""      # bearer token for body-file cases of the Vault API
EXTRA_PIDS_TICKS="" # command printing more CPU ticks to count with the server's (PostgreSQL's)
SERVER_LABEL=""    # prefix for result rows / file names
ROWS=()            # per case: label|connections|rps|p50|p99|cpu|rss|errors (ratios at the report)

TABLE_FMT='%-44s %10s %8s %8s %8s %10s %8s %8s %7s\n'

# store_egress_card BODY_FILE: stores the egress case's card on the server at BASE_URL and writes
# the egress request body holding its alias.
store_egress_card() {
    local alias
    alias=$(curl -sS -H 'Content-Type: application/json' -H "Authorization: Bearer $BENCH_TOKEN" \
        --data-binary '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}]}' "$BASE_URL/aliases" \
        | sed -n 's/.*"alias":"\([^"]*\)".*/\1/p')
    [[ -n "$alias" ]] || die "could not store the egress benchmark card at $BASE_URL"
    printf '{"card":"%s","amount":1000}' "$alias" >"$1"
}

# run_case NAME METHOD PATH [BODY_FILE] [LUA_SCRIPT]
#   Runs wrk against $BASE_URL$PATH and records a table row. With BODY_FILE
#   the request body is that file (Content-Type application/json, via post.lua,
#   or via LUA_SCRIPT, which also gets $TOKEN).
run_case() {
    local name=$1 method=$2 path=$3 body=${4:-} script=${5:-}
    if [[ -n "${BENCH_CASES:-}" && "$SERVER_LABEL" != c-evhttp && "$SERVER_LABEL" != haproxy \
        && ! "$name" =~ $BENCH_CASES ]]; then return 0; fi
    local label="$SERVER_LABEL $name"
    local file="$RESULTS_DIR/$(printf '%s-%s' "$SERVER_LABEL" "$name" | tr -c 'A-Za-z0-9._-' '_').txt"
    local url="$BASE_URL$path"
    local connections=${CASE_CONNECTIONS:-$WRK_CONNECTIONS}
    local wrk_args=(-t"$WRK_THREADS" -c"$connections" -d"${DURATION}s" --latency)
    local curl_args=(-sS -o /dev/null -w '%{http_code}' --max-time 5 -X "$method")
    local env_args=()

    if [[ -n "$script" ]]; then
        wrk_args+=(-s "$script")
        env_args=(BODY_FILE="${body:-/dev/null}" METHOD="$method" TOKEN="$BENCH_TOKEN")
        curl_args+=(-H 'Content-Type: application/json' -H "Authorization: Bearer $BENCH_TOKEN")
        if [[ -n "$body" ]]; then curl_args+=(--data-binary "@$body")
        else curl_args+=(--data-binary '{"data":[{"value":"preflight","format":"UUID"}]}'); fi
    elif [[ -n "$body" ]]; then
        [[ -r "$body" ]] || die "body file not readable: $body"
        wrk_args+=(-s "$POST_LUA")
        env_args=(BODY_FILE="$body" METHOD="$method" PROXY_AUTH="$PROXY_AUTH" TOKEN="$BODY_TOKEN")
        curl_args+=(-H 'Content-Type: application/json' --data-binary "@$body")
        [[ -n "$PROXY_AUTH" ]] && curl_args+=(-H "Proxy-Authorization: $PROXY_AUTH")
        [[ -n "$BODY_TOKEN" ]] && curl_args+=(-H "Authorization: Bearer $BODY_TOKEN")
    elif [[ "$method" != GET ]]; then
        wrk_args+=(-s "$POST_LUA")
        env_args=(BODY_FILE=/dev/null METHOD="$method")
    fi
    [[ "$method" == HEAD ]] && curl_args=(-sS -o /dev/null -w '%{http_code}' --max-time 5 -I)

    # One request first, so a broken endpoint is obvious instead of
    # showing up as a suspiciously fast stream of 4xx/5xx.
    local status
    status=$(curl "${curl_args[@]}" "$url" 2>/dev/null || true)
    if [[ ! "$status" =~ ^2 ]]; then
        log "warning: $method $path answered HTTP ${status:-<no response>} before the run"
    fi

    log "wrk $method $url (${DURATION}s, c$connections) -> ${file#"$REPO_ROOT"/}"
    {
        echo "# $label: $method $url"
        echo "# preflight HTTP status: ${status:-none}"
        [[ -n "$body" ]] && echo "# body: $body ($(wc -c <"$body") bytes)"
    } >"$file"
    local ticks_before extra_before=0
    ticks_before=$(cpu_ticks "$SERVER_PID")
    [[ -z "$EXTRA_PIDS_TICKS" ]] || extra_before=$($EXTRA_PIDS_TICKS)
    env ${env_args[@]+"${env_args[@]}"} wrk "${wrk_args[@]}" "$url" >>"$file" 2>&1 &
    local wrk_pid=$!
    PIDS+=("$wrk_pid")
    local rc=0
    wait "$wrk_pid" || rc=$?
    forget_pid "$wrk_pid"
    (( rc == 0 )) || { cat "$file" >&2; die "wrk failed (exit $rc) for $label"; }
    local ticks_after requests cpu extra_after=0
    ticks_after=$(cpu_ticks "$SERVER_PID")
    [[ -z "$EXTRA_PIDS_TICKS" ]] || extra_after=$($EXTRA_PIDS_TICKS)
    requests=$(awk '/requests in/ { print $1 }' "$file")
    cpu=$(awk -v t=$(( ticks_after - ticks_before )) -v hz="$CLK_TCK" -v n="$requests" \
        'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1000000 / n : 0) }')
    echo "# server CPU: $(( ticks_after - ticks_before )) ticks for $requests requests = $cpu us/request" >>"$file"
    if [[ -n "$EXTRA_PIDS_TICKS" ]]; then
        local extra
        extra=$(awk -v t=$(( extra_after - extra_before )) -v hz="$CLK_TCK" -v n="$requests" \
            'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1000000 / n : 0) }')
        echo "# PostgreSQL CPU: $extra us/request" >>"$file"
        label="$label (+pg $extra)"
    fi

    local rps p50 p99 errors
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$file")
    p50=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$file")")
    p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$file")")
    errors=$(awk '
        /Non-2xx or 3xx responses:/ { n += $NF }
        /Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 }
        END { print n + 0 }' "$file")
    [[ -n "$rps" ]] || { cat "$file" >&2; die "could not parse wrk output for $label"; }
    (( errors == 0 )) || log "warning: $label had $errors non-2xx responses / socket errors (see $file)"

    # Every case compares with the C server's GET at the same connection count.
    if [[ "$SERVER_LABEL" == c-evhttp ]]; then
        C_CPU_SAMPLES[$connections]+=" $cpu"
        C_RPS_SAMPLES[$connections]+=" $rps"
    fi
    # Every proxying case (" -> " in its name) compares with haproxy's at the same connection count.
    if [[ "$SERVER_LABEL" == haproxy ]]; then
        HAPROXY_CPU_SAMPLES[$connections]+=" $cpu"
        HAPROXY_P99_SAMPLES[$connections]+=" $p99"
    fi
    [[ -z "${CASE_CONNECTIONS:-}" ]] || label="$label c$connections"
    ROWS+=("$label|$connections|$rps|$p50|$p99|$cpu|$(peak_rss_mb "$SERVER_PID")|$errors")
}

# mean "VALUES" -- the arithmetic mean of space-separated numbers
mean() { awk -v list="$1" 'BEGIN { n = split(list, v, " "); for (i = 1; i <= n; i++) s += v[i]; printf "%.2f", s / n }'; }

# table_row ROW -- one printed row, with its ratios to the C server at the same connection count
table_row() {
    local label connections rps p50 p99 cpu rss errors
    IFS='|' read -r label connections rps p50 p99 cpu rss errors <<<"$1"
    [[ -n "${C_CPU_SAMPLES[$connections]:-}" ]] || die "no C server run at c$connections to compare $label with"
    local ratio cpu_ratio
    ratio=$(awk -v a="$rps" -v b="$(mean "${C_RPS_SAMPLES[$connections]}")" 'BEGIN { printf "%.2f", a / b }')
    cpu_ratio=$(awk -v a="$cpu" -v b="$(mean "${C_CPU_SAMPLES[$connections]}")" 'BEGIN { printf "%.2f", a / b }')
    printf "$TABLE_FMT" "$label" "$(printf '%.0f' "$rps")" "$p50" "$p99" "$ratio" "$cpu" "$cpu_ratio" "$rss" "$errors"
}

# ---------------------------------------------------------------- build

require gcc
require pkg-config
require curl
require wrk

mkdir -p "$RESULTS_DIR" "$REF_BUILD_DIR" "$DATA_DIR"

log "building C reference server -> ${REF_BIN#"$REPO_ROOT"/}"
# shellcheck disable=SC2046  # pkg-config output is meant to be word-split
gcc -O2 -Wall -o "$REF_BIN" "$BENCH_DIR/reference/server.c" \
    $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
FLOOR_BIN="$REF_BUILD_DIR/sqlite-floor"
if (( ! C_ONLY )); then
    # shellcheck disable=SC2046
    gcc -O2 -Wall -o "$FLOOR_BIN" "$BENCH_DIR/reference/sqlite-floor.c" $(pkg-config --cflags --libs sqlite3)
fi

CLOAK_BIN=${CLOAK_BIN:-}
if (( ! C_ONLY )); then
    if [[ -z "$CLOAK_BIN" ]]; then
        require swift
        log "building cloak (swift build -c release --product cloak)"
        swift build -c release --product cloak
        CLOAK_BIN="$(swift build -c release --show-bin-path)/cloak"
    fi
    [[ -x "$CLOAK_BIN" ]] || die "cloak binary not found: $CLOAK_BIN"
    [[ -r "$CLOAK_CONFIG" ]] || die "cloak config not readable: $CLOAK_CONFIG"
fi

# ---------------------------------------------------------------- C reference

C_PORT=$(free_port)
log "starting C reference server on $HOST:$C_PORT ($THREADS thread(s))"
"$REF_BIN" "$C_PORT" "$THREADS" >"$RESULTS_DIR/reference-server.log" 2>&1 &
C_PID=$!
PIDS+=("$C_PID")
wait_http "$C_PID" "http://$HOST:$C_PORT/" 10 \
    || { cat "$RESULTS_DIR/reference-server.log" >&2; die "C reference server did not come up"; }

BASE_URL="http://$HOST:$C_PORT"
SERVER_LABEL="c-evhttp"
SERVER_PID=$C_PID
run_case "GET /" GET /      # the baseline, with "GET / (again)" after Cloak's cases
(( WRK_CONNECTIONS == 64 )) || CASE_CONNECTIONS=64 run_case "GET /" GET /   # the baseline of the c64 cases
C_RSS=$(peak_rss_mb "$C_PID")
# The C server stays up: it is the upstream of the proxy case below.

# ---------------------------------------------------------------- haproxy

# A real proxy's cost for the proxying cases: haproxy (one thread, keep-alive to the server)
# forwarding a small POST to the C server, measured at the start and again at the end.
HAPROXY_BIN=$(command -v haproxy || echo /usr/sbin/haproxy)
HAPROXY_PID=""
if [[ -x "$HAPROXY_BIN" ]]; then
    HAPROXY_PORT=$(free_port)
    start_haproxy "$RESULTS_DIR" "$HAPROXY_PORT" "$C_PORT" "$THREADS" || die "haproxy did not come up"
    BASE_URL="http://$HOST:$HAPROXY_PORT"
    SERVER_LABEL="haproxy"
    SERVER_PID=$HAPROXY_PID
    run_case "POST -> C server" POST /v1/charges "$BENCH_DIR/load/proxy-body.json"
else
    log "haproxy not installed (apt-get install haproxy): the proxy cases have no haproxy ratio"
fi

# ---------------------------------------------------------------- Cloak

CLOAK_RSS="n/a"
IDLE_CONNECTIONS=${IDLE_CONNECTIONS:-10000}
IDLE_OPEN="n/a"
IDLE_RSS="n/a"
FF1_LINE="(cloak-micro not built: swift build -c release --product cloak-micro)"
# The store's share of a new alias with nothing of Cloak around it, at the batch sizes group
# commit reaches at 32 connections and beyond (Benchmarks/reference/sqlite-floor.c).
FLOOR_LINE=""
if (( ! C_ONLY )); then
    FLOOR_LINE=$(for batch in 12 32; do "$FLOOR_BIN" "$RESULTS_DIR/sqlite-floor.db" 60000 $batch; done; rm -f "$RESULTS_DIR"/sqlite-floor.db*)
fi
if (( ! C_ONLY )); then
    CLOAK_PORT=$(free_port)
    # A bench-only configuration: the given one plus a bearer token for the alias endpoints,
    # with its vault (SQLite file and keys) inside the results folder. The rate limits are raised
    # past what wrk sends (the buckets are still taken on every request, so their cost counts),
    # and so are the guess and wear-out limits (one card, tokenized again and again, would reach
    # them within seconds; their counting still runs).
    BENCH_TOKEN="bench-$RANDOM$RANDOM"
    BENCH_HASH=$(printf %s "$BENCH_TOKEN" | sha256sum | cut -d' ' -f1)
    BENCH_CONFIG="$RESULTS_DIR/cloak.yaml"
    # Plus a one-field form and a route that forwards it to the C server (two hops, one alias).
    sed -e "s/^  tokens: \[\].*/  tokens: [{id: bench, sha256: \"$BENCH_HASH\", scopes: [aliases:create, aliases:reveal]}]/" \
        -e "s|^routes: \[\]|routes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /bench, form: proxybench, upstream: \"http://$HOST:$C_PORT/\"}]|" \
        -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
        -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
        -e "s|^forms:|forms:\n  proxybench: {fields: [{name: card, type: cardNumber, tokenization: {format: FPE_T_FOUR, storage: PERSISTENT}}]}|" \
        -e "s/scopes: \[aliases:create, aliases:reveal\]/scopes: [aliases:create, aliases:reveal, \"egress:*\"]/" \
        -e "s/max_connections: [0-9]*/max_connections: $(( IDLE_CONNECTIONS + 1000 ))/" \
        -e "s/bucket_values_per_hour: [0-9]*/bucket_values_per_hour: 1000000/" \
        -e "s/max_bucket_share: [0-9.]*/max_bucket_share: 1/" \
        "$CLOAK_CONFIG" >"$BENCH_CONFIG"
    # An egress route to the C server that reveals one alias per request ($.card).
    printf '\negress:\n  routes:\n    - {id: bench, upstream: "http://%s:%s", allow_private: true, request: [{reveal: {json: ["$.card"]}}]}\n' \
        "$HOST" "$C_PORT" >>"$BENCH_CONFIG"
    log "starting cloak on $HOST:$CLOAK_PORT ($THREADS thread(s), config $CLOAK_CONFIG)"
    CLOAK_SERVER_LISTEN="$HOST:$CLOAK_PORT" CLOAK_SERVER_THREADS="$THREADS" \
        CLOAK_VAULT_STORE="sqlite:$DATA_DIR/cloak.db" CLOAK_VAULT_KEYS="file:$DATA_DIR/keys.json" \
        "$CLOAK_BIN" serve --config "$BENCH_CONFIG" >"$RESULTS_DIR/cloak.log" 2>&1 &
    CLOAK_PID=$!
    PIDS+=("$CLOAK_PID")
    wait_http "$CLOAK_PID" "http://$HOST:$CLOAK_PORT/healthz" 30 \
        || { tail -n 50 "$RESULTS_DIR/cloak.log" >&2; die "cloak did not answer /healthz within 30 s"; }

    BASE_URL="http://$HOST:$CLOAK_PORT"
    SERVER_LABEL="cloak"
    SERVER_PID=$CLOAK_PID
    # Add Cloak cases here.
    run_case "GET /healthz" GET /healthz
    run_case "POST validate" POST /forms/checkout/validate "$VALIDATE_BODY"
    run_case "POST /aliases (new)" POST /aliases "" "$BENCH_DIR/load/aliases.lua"
    CASE_CONNECTIONS=64 run_case "POST /aliases (new)" POST /aliases "" "$BENCH_DIR/load/aliases.lua"
    printf '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","storage":"PERSISTENT"}]}' >"$RESULTS_DIR/dedupe-body.json"
    BODY_TOKEN=$BENCH_TOKEN
    run_case "POST /aliases (dedupe)" POST /aliases "$RESULTS_DIR/dedupe-body.json"
    BODY_TOKEN=""
    run_case "POST form tokens" POST /forms/checkout/tokens "$VALIDATE_BODY"
    run_case "POST form aliases" POST /forms/checkout/aliases "$VALIDATE_BODY" "$BENCH_DIR/load/form-aliases.lua"
    run_case "POST /proxy -> C server" POST /proxy/bench "$BENCH_DIR/load/proxy-body.json" "$BENCH_DIR/load/proxy.lua"
    # Egress: one stored card's alias, revealed on the way to the C server on every request.
    store_egress_card "$RESULTS_DIR/egress-body.json"
    PROXY_AUTH="Bearer $BENCH_TOKEN"
    run_case "POST /egress reveal -> C" POST /egress/bench/v1/charges "$RESULTS_DIR/egress-body.json"
    PROXY_AUTH=""
    # A reveal by the Vault API: the same card's alias, by a token holder, audited each time.
    REVEAL_ALIAS=$(sed -n 's/.*"card":"\([^"]*\)".*/\1/p' "$RESULTS_DIR/egress-body.json")
    BODY_TOKEN=$BENCH_TOKEN
    run_case "GET /aliases/{alias} reveal" GET "/aliases/$REVEAL_ALIAS" /dev/null
    BODY_TOKEN=""

    CLOAK_RSS=$(peak_rss_mb "$CLOAK_PID")
    [[ -z "${BENCH_CASES:-}" ]] || IDLE_CONNECTIONS=0
    # 10,000 idle keep-alive connections, each after one request: resident memory while held.
    IDLE_FIFO="$RESULTS_DIR/idle.fifo"
    mkfifo "$IDLE_FIFO"
    python3 "$BENCH_DIR/load/idle-connections.py" "$HOST" "$CLOAK_PORT" "$IDLE_CONNECTIONS" /healthz \
        <"$IDLE_FIFO" >"$RESULTS_DIR/idle.txt" 2>&1 &
    IDLE_PID=$!
    PIDS+=("$IDLE_PID")
    exec 7>"$IDLE_FIFO"
    for _ in $(seq 1 600); do [[ -s "$RESULTS_DIR/idle.txt" ]] && break; sleep 0.1; done
    IDLE_OPEN=$(head -n1 "$RESULTS_DIR/idle.txt")
    IDLE_RSS=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$CLOAK_PID/status")
    exec 7>&-
    stop_pid "$IDLE_PID"
    forget_pid "$IDLE_PID"
    # Until Cloak has closed its side (the PostgreSQL section binds a port next).
    for _ in $(seq 1 100); do
        (( $(ls "/proc/$CLOAK_PID/fd" | wc -l) < 1000 )) && break
        sleep 0.1
    done
    # FF1 on one core (the micro-benchmark next to the binary, when built).
    MICRO_BIN="$(dirname "$CLOAK_BIN")/cloak-micro"
    [[ -x "$MICRO_BIN" ]] && FF1_LINE=$("$MICRO_BIN" "ff1 raw" | tail -n1)
    stop_pid "$CLOAK_PID"
    forget_pid "$CLOAK_PID"

    # Tracing: POST validate on a node per setting, each its own process (its own peak RSS).
    TRACES_LINES=()
    if [[ "${BENCH_TRACES:-0}" == 1 ]]; then
        SINK_PORT=$(free_port)
        python3 "$BENCH_DIR/tools/otlp-sink.py" "$SINK_PORT" >"$RESULTS_DIR/otlp-sink.log" 2>&1 &
        SINK_PID=$!
        PIDS+=("$SINK_PID")
        REFUSING_PORT=$(free_port)
        python3 "$BENCH_DIR/tools/otlp-sink.py" "$REFUSING_PORT" 503 >"$RESULTS_DIR/otlp-503.log" 2>&1 &
        REFUSING_PID=$!
        PIDS+=("$REFUSING_PID")
        DOWN_PORT=$(free_port)
        # traced_case LABEL [ENDPOINT RATIO]: a node with that telemetry.traces (none without).
        traced_case() {
            local label=$1 endpoint=${2:-} ratio=${3:-} config="$RESULTS_DIR/cloak-traces-$1.yaml" port
            cp "$BENCH_CONFIG" "$config"
            [[ -z "$endpoint" ]] \
                || printf '\ntelemetry:\n  traces: {endpoint: "%s", sample_ratio: %s}\n' "$endpoint" "$ratio" >>"$config"
            port=$(free_port)
            CLOAK_SERVER_LISTEN="$HOST:$port" CLOAK_SERVER_THREADS="$THREADS" \
                CLOAK_VAULT_STORE="sqlite:$DATA_DIR/cloak.db" CLOAK_VAULT_KEYS="file:$DATA_DIR/keys.json" \
                "$CLOAK_BIN" serve --config "$config" >"$RESULTS_DIR/cloak-traces-$label.log" 2>&1 &
            CLOAK_PID=$!
            PIDS+=("$CLOAK_PID")
            wait_http "$CLOAK_PID" "http://$HOST:$port/healthz" 30 || die "cloak (traces $label) did not start"
            BASE_URL="http://$HOST:$port"
            SERVER_LABEL="cloak traces=$label"
            SERVER_PID=$CLOAK_PID
            run_case "POST validate" POST /forms/checkout/validate "$VALIDATE_BODY"
            TRACES_LINES+=("traces=$label: $(curl -fsS "$BASE_URL/metrics" | awk '/^cloak_trace_spans_(exported|dropped)_total/ { printf "%s %s; ", $1, $2 }')")
        }
        traced_case off
        stop_pid "$CLOAK_PID"; forget_pid "$CLOAK_PID"
        traced_case 0.01 "http://$HOST:$SINK_PORT" 0.01
        stop_pid "$CLOAK_PID"; forget_pid "$CLOAK_PID"
        traced_case 1.0 "http://$HOST:$SINK_PORT" 1.0
        stop_pid "$CLOAK_PID"; forget_pid "$CLOAK_PID"
        traced_case 1.0-503 "http://$HOST:$REFUSING_PORT" 1.0
        stop_pid "$CLOAK_PID"; forget_pid "$CLOAK_PID"
        traced_case 1.0-down "http://$HOST:$DOWN_PORT" 1.0
        # The collector comes up: seconds until the node's export resumes.
        python3 "$BENCH_DIR/tools/otlp-sink.py" "$DOWN_PORT" >"$RESULTS_DIR/otlp-back.log" 2>&1 &
        BACK_PID=$!
        PIDS+=("$BACK_PID")
        curl -fsS -o /dev/null -H 'Content-Type: application/json' --data-binary "@$VALIDATE_BODY" \
            "$BASE_URL/forms/checkout/validate" || true
        back_start=$(date +%s.%N)
        resumed="not within 60 s"
        for _ in $(seq 1 600); do
            if curl -fsS "$BASE_URL/metrics" | awk '/^cloak_trace_spans_exported_total/ { found = ($2 > 0) } END { exit !found }'; then
                resumed="$(awk -v s="$back_start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f s", e - s }')"
                break
            fi
            sleep 0.1
        done
        TRACES_LINES+=("collector back after being down: export resumed after $resumed")
        stop_pid "$CLOAK_PID"; forget_pid "$CLOAK_PID"
        for pid in "$SINK_PID" "$REFUSING_PID" "$BACK_PID"; do stop_pid "$pid"; forget_pid "$pid"; done
    fi

    # The same alias cases on PostgreSQL: a throwaway cluster, one Cloak node on it.
    if [[ "${BENCH_POSTGRES:-1}" == 1 && ( -z "${BENCH_CASES:-}" || "POST /aliases" =~ $BENCH_CASES ) ]]; then
        PG_DIR="$RESULTS_DIR/postgres"
        mkdir -p "$PG_DIR"
        chmod 755 "$RESULTS_DIR" "$PG_DIR"
        PG_URL=$(scripts/postgres start "$PG_DIR") || die "scripts/postgres could not start a cluster"
        trap 'scripts/postgres stop "$PG_DIR"; cleanup' EXIT
        CLOAK_PORT=$(free_port)
        CLOAK_SERVER_LISTEN="$HOST:$CLOAK_PORT" CLOAK_SERVER_THREADS="$THREADS" CLOAK_VAULT_STORE="$PG_URL" \
            CLOAK_VAULT_KEYS="file:$DATA_DIR/keys.json" \
            "$CLOAK_BIN" serve --config "$BENCH_CONFIG" >"$RESULTS_DIR/cloak-postgres.log" 2>&1 &
        CLOAK_PID=$!
        PIDS+=("$CLOAK_PID")
        wait_http "$CLOAK_PID" "http://$HOST:$CLOAK_PORT/readyz" 30 \
            || { tail -n 50 "$RESULTS_DIR/cloak-postgres.log" >&2; die "cloak on PostgreSQL did not become ready"; }
        BASE_URL="http://$HOST:$CLOAK_PORT"
        SERVER_LABEL="cloak-pg"
        SERVER_PID=$CLOAK_PID
        EXTRA_PIDS_TICKS=postgres_ticks
        run_case "POST /aliases (new)" POST /aliases "" "$BENCH_DIR/load/aliases.lua"
        BODY_TOKEN=$BENCH_TOKEN
        run_case "POST /aliases (dedupe)" POST /aliases "$RESULTS_DIR/dedupe-body.json"
        BODY_TOKEN=""
        # The egress card stored here too: one reveal a request, read from PostgreSQL.
        store_egress_card "$RESULTS_DIR/egress-body-pg.json"
        PROXY_AUTH="Bearer $BENCH_TOKEN"
        run_case "POST /egress reveal -> C" POST /egress/bench/v1/charges "$RESULTS_DIR/egress-body-pg.json"
        PROXY_AUTH=""
        EXTRA_PIDS_TICKS=""
        stop_pid "$CLOAK_PID"
        forget_pid "$CLOAK_PID"
        scripts/postgres stop "$PG_DIR"
    fi
fi
# The C server once more, after Cloak's cases: the baseline is the mean of both runs.
BASE_URL="http://$HOST:$C_PORT"
SERVER_LABEL="c-evhttp"
SERVER_PID=$C_PID
run_case "GET / (again)" GET /
(( WRK_CONNECTIONS == 64 )) || CASE_CONNECTIONS=64 run_case "GET / (again)" GET /
if [[ -n "$HAPROXY_PID" ]]; then
    BASE_URL="http://$HOST:$HAPROXY_PORT"
    SERVER_LABEL="haproxy"
    SERVER_PID=$HAPROXY_PID
    run_case "POST -> C server (again)" POST /v1/charges "$BENCH_DIR/load/proxy-body.json"
    stop_pid "$HAPROXY_PID"
    forget_pid "$HAPROXY_PID"
fi
stop_pid "$C_PID"
forget_pid "$C_PID"

# ---------------------------------------------------------------- report

{
    echo "Cloak benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ)  host $(uname -n), $(nproc) CPUs"
    echo "server threads=$THREADS  wrk -t$WRK_THREADS -c$WRK_CONNECTIONS -d${DURATION}s --latency  (loopback)"
    echo
    printf "$TABLE_FMT" "test" "req/s" "p50 ms" "p99 ms" "vs C" "CPU us/req" "CPU x C" "RSS MB" "errors"
    for row in "${ROWS[@]}"; do table_row "$row"; done
    echo
    for connections in "${!C_CPU_SAMPLES[@]}"; do
        echo "Ratios at c$connections are to the mean of the C server's runs there: CPU${C_CPU_SAMPLES[$connections]} us/req; req/s${C_RPS_SAMPLES[$connections]}."
    done
    for connections in "${!HAPROXY_CPU_SAMPLES[@]}"; do
        haproxy_cpu=$(mean "${HAPROXY_CPU_SAMPLES[$connections]}")
        haproxy_p99=$(mean "${HAPROXY_P99_SAMPLES[$connections]}")
        echo "Proxying at c$connections against haproxy (CPU${HAPROXY_CPU_SAMPLES[$connections]} us/req; p99${HAPROXY_P99_SAMPLES[$connections]} ms):"
        for row in "${ROWS[@]}"; do
            IFS='|' read -r label rc _ _ p99 cpu _ _ <<<"$row"
            [[ "$rc" == "$connections" && "$label" == *" -> "* && "$label" != haproxy* ]] || continue
            awk -v l="$label" -v c="$cpu" -v hc="$haproxy_cpu" -v p="$p99" -v hp="$haproxy_p99" \
                'BEGIN { printf "  %-44s CPU %6.2fx haproxy   p99 %+.2f ms\n", l, c / hc, p - hp }'
        done
    done
    echo "C reference peak RSS (VmHWM): $C_RSS MB"
    if (( C_ONLY )); then
        echo "Cloak peak RSS (VmHWM): skipped (--c-only)"
    else
        echo "Cloak peak RSS (VmHWM): $CLOAK_RSS MB"
        echo "Cloak RSS with $IDLE_OPEN idle keep-alive connections open: $IDLE_RSS MB"
        for line in ${TRACES_LINES[@]+"${TRACES_LINES[@]}"}; do echo "$line"; done
        echo "FF1: $FF1_LINE"
        echo "$FLOOR_LINE"
    fi
    echo
    echo "raw output: ${RESULTS_DIR#"$REPO_ROOT"/}/"
} | tee "$RESULTS_DIR/summary.txt"
