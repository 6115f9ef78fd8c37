#!/usr/bin/env bash
# Import jobs at volume (issue 60): `cloak import` of a CSV of card numbers with expiry into a
# node serving that store, on SQLite then PostgreSQL, while a paced client asks the node's
# POST /forms/checkout/validate all along.
#
# Usage: Benchmarks/import.sh [--smoke]
#
# For each store: a fresh store, Cloak started (release build) with a token that holds
# jobs:import and aliases:create and a bucket_values_per_hour raised for a migration; its
# /validate p99 measured idle (Benchmarks/tools/paced.py: IMPORT_RATE requests a second on one
# connection, an ordinary load rather than saturation, which on two cores would take one of
# them); then the import run (`cloak import --form card_import`, which follows the job to its
# end) with the same load on /validate beside it.
# Then the export of the cards the import stored (`cloak export --form card_import` by one person's
# token, `cloak jobs approve` by another's, followed to its end), the same load beside it, and
# the file decrypted with gpg and its lines counted.
# Reported, for each direction: the wall time and rows a second, the node's RSS before and its
# peak during the job (VmHWM) and their difference, /validate's p99 idle and during the job and
# their ratio, and the counts the job reports. The issue's targets: 1,000,000 rows in at most
# 120 s on SQLite and at most 2x that on PostgreSQL, RSS at most 64 MiB above idle, p99 at most
# 2x idle; an export of 1,000,000 aliases within the same bounds.
#
# Environment:
#   IMPORT_ROWS         rows of the file (default 1000000)
#   IMPORT_STORES       default "sqlite postgres"
#   IMPORT_RATE         /validate requests a second beside the job, and idle (default 200)
#   IMPORT_PACED_SECONDS  the idle /validate run (default 10)
#   IMPORT_DB_CORE      the core PostgreSQL and the benchmark's commands run on, the node on the
#                       others (default the last core; empty: all share every core)
#   IMPORT_ROWS_PER_HOUR  limits.import_rows_per_hour for the run (default the configuration's, ten
#                       thousand a second, which a fast node reaches: raise it to compare costs)
#   CLOAK_BIN           use this binary instead of building a release one
#   EXPORT_LAYOUT       the export's layout (default jsonl, a card a line; rows: a row a line,
#                       its id, card and expiry, issue 76)
#   --smoke             2,000 rows, SQLite, 2 s idle: checks the script end to end
#
# Results: Benchmarks/results/import-<timestamp>/ (logs, latencies, summary.txt; timeline-*.txt:
# /validate's latencies second by second during each job).
set -euo pipefail
export CLOAK_CONSOLE_LISTEN=${CLOAK_CONSOLE_LISTEN:-127.0.0.1:0}

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
cd "$REPO_ROOT"
HOST=127.0.0.1
log() { printf '[import] %s\n' "$*" >&2; }
die() { printf '[import] error: %s\n' "$*" >&2; exit 1; }
. "$SCRIPT_DIR/lib.sh"
trap cleanup EXIT

SMOKE=0
for arg in "$@"; do
    case "$arg" in
        --smoke) SMOKE=1 ;;
        -h|--help) sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg" ;;
    esac
done
if (( SMOKE )); then
    IMPORT_ROWS=${IMPORT_ROWS:-2000}
    IMPORT_STORES=${IMPORT_STORES:-sqlite}
    IMPORT_PACED_SECONDS=${IMPORT_PACED_SECONDS:-2}
fi
IMPORT_ROWS=${IMPORT_ROWS:-1000000}
EXPORT_LAYOUT=${EXPORT_LAYOUT:-jsonl}
IMPORT_STORES=${IMPORT_STORES:-"sqlite postgres"}
IMPORT_PACED_SECONDS=${IMPORT_PACED_SECONDS:-10}
IMPORT_RATE=${IMPORT_RATE:-200}
CORES=$(nproc)
IMPORT_DB_CORE=${IMPORT_DB_CORE-$((CORES > 1 ? CORES - 1 : 0))}
(( CORES > 1 )) || IMPORT_DB_CORE=
require curl
require python3
require gpg

RESULTS_DIR="$SCRIPT_DIR/results/import-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$RESULTS_DIR"
WORK=$(mktemp -d /tmp/cloak-import-bench.XXXXXX)
chmod 755 "$WORK"
trap 'cleanup; [[ -n "${PG_DIR:-}" ]] && scripts/postgres stop "$PG_DIR" >/dev/null 2>&1; rm -rf "$WORK"' EXIT

if [[ -z "${CLOAK_BIN:-}" ]]; then
    log "building the release binary"
    swift build -c release --product cloak >&2
    CLOAK_BIN="$(swift build -c release --show-bin-path)/cloak"
fi

# The file: distinct Visa-shaped numbers passing Luhn, each with its row's id and an expiry.
CSV="$WORK/cards.csv"
python3 - "$IMPORT_ROWS" "$CSV" <<'PY'
import sys
rows, path = int(sys.argv[1]), sys.argv[2]
def check_digit(body):
    total = 0
    for i, c in enumerate(reversed(body)):
        n = int(c)
        if i % 2 == 0:
            n *= 2
            if n > 9: n -= 9
        total += n
    return str((10 - total % 10) % 10)
with open(path, "w") as out:
    out.write("id,card_number,exp_date\n")
    for i in range(rows):
        body = "4" + str(17_000_000_000_000 + i * 7919)[-14:]
        out.write(f"cust-{i},{body}{check_digit(body)},{1 + i % 12:02d}/{30 + i % 5}\n")
PY
log "$IMPORT_ROWS rows: $(du -h "$CSV" | cut -f1)"

TOKEN=import-bench-token
HEX=$(printf '%s' "$TOKEN" | sha256sum | cut -d' ' -f1)
EXPORTER=export-bench-exporter
APPROVER=export-bench-approver
EXPORTER_HEX=$(printf '%s' "$EXPORTER" | sha256sum | cut -d' ' -f1)
APPROVER_HEX=$(printf '%s' "$APPROVER" | sha256sum | cut -d' ' -f1)
TOKENS="{id: importer, sha256: \"$HEX\", scopes: [jobs:import, aliases:create], bucket_values_per_hour: 1000000}"
TOKENS+=", {id: exporter, sha256: \"$EXPORTER_HEX\", scopes: [aliases:reveal, jobs:export], person: alice}"
TOKENS+=", {id: approver, sha256: \"$APPROVER_HEX\", scopes: [jobs:approve], person: bob}"
# The export's recipient: a key pair in a GnuPG home of the benchmark's own.
GNUPG="$WORK/gnupg"
mkdir -m 700 "$GNUPG"
gpg --homedir "$GNUPG" --batch --passphrase '' --quick-gen-key "Bench <bench@example.com>" rsa3072 encrypt never 2>/dev/null
gpg --homedir "$GNUPG" --armor --export bench@example.com >"$WORK/recipient.asc"
CONFIG="$WORK/cloak.yaml"
sed -e "s/^  tokens: \[\]/  tokens: [$TOKENS]/" \
    -e 's/^  token: {requests_per_minute: 6000, burst: 600}/  token: {requests_per_minute: 10000000, burst: 1000000}/' \
    -e 's/^  anonymous: {requests_per_minute: 600, burst: 60}/  anonymous: {requests_per_minute: 10000000, burst: 1000000}/' \
    -e "s/^  import_rows_per_hour: [0-9]*/  import_rows_per_hour: ${IMPORT_ROWS_PER_HOUR:-36000000}/" \
    config/cloak.yaml >"$CONFIG"
"$CLOAK_BIN" check-config --config "$CONFIG" >&2

VALIDATE_BODY="$SCRIPT_DIR/load/validate-body.json"
# The client stands for one on another machine: where it may (root), it runs at SCHED_FIFO,
# so its own waits for a core beside the job are not counted as the node's (at nice -5 they
# were: /validate p99 x1.44 and x4.74 in two runs beside a 200,000-row import, x1.07 with the
# client at SCHED_FIFO, the same node). Otherwise it asks for a short slice (tools/paced.py),
# as the node's loops do. The summary says which.
PACED_NICE=
if [[ $(id -u) == 0 ]] && chrt -f 1 true 2>/dev/null; then PACED_NICE="chrt -f 1"; fi

# The database stands for one on a machine of its own too: on PostgreSQL, the server (all its
# processes) and the benchmark's own commands (import, export, approve, status) run on
# IMPORT_DB_CORE, the node on the other cores, idle and busy alike. Sharing every core, the
# node's requests waited behind the server's commits for whole 4 ms ticks: the kernel shares a
# core between sessions (pg_ctl starts the server in one of its own) by weight before it shares
# a session's part between its threads, so the job's threads at nice 10 give way to the loops
# but the server's backends do not. In 1,000,000-row runs on shared cores /validate p99 beside
# an export was x2.20, and x2.49 with the server's session at nice 19; on a core apart x1.16
# and x1.39 (Benchmarks/README.md). The summary says which.

# Time the host gave other guests while this one waited (steal, /proc/stat) falls into a
# window's latencies as if it were the node's: the summary gives each window's steal.
steal_ms() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%d", $9 * 1000 / hz }' /proc/stat; }

SUMMARY="$RESULTS_DIR/summary.txt"
echo "client: ${PACED_NICE:-a short slice, no priority}; kernel $(uname -r)" >"$SUMMARY"
for STORE in $IMPORT_STORES; do
    ON_NODE=() ON_SIDE=()
    mkdir -p "$WORK/$STORE"
    if [[ "$STORE" == sqlite ]]; then
        STORE_URL="sqlite:$WORK/$STORE/cloak.db"
    else
        PG_DIR="$WORK/$STORE/cluster"
        mkdir -p "$PG_DIR"
        chmod 755 "$PG_DIR"
        STORE_URL=$(scripts/postgres start "$PG_DIR")
        if [[ -n "$IMPORT_DB_CORE" ]]; then
            node_cores=$(for core in $(seq 0 $((CORES - 1))); do [[ $core == "$IMPORT_DB_CORE" ]] || echo "$core"; done | paste -sd,)
            ON_NODE=(taskset -c "$node_cores")
            ON_SIDE=(taskset -c "$IMPORT_DB_CORE")
            postmaster=$(head -n 1 "$PG_DIR/data/postmaster.pid")
            # The postmaster and the processes it started already; what it starts later inherits.
            for pid in "$postmaster" $(pgrep -P "$postmaster"); do taskset -a -p -c "$IMPORT_DB_CORE" "$pid" >/dev/null; done
            echo "postgres: the server and the commands on core $IMPORT_DB_CORE, the node on $node_cores" >>"$SUMMARY"
        else
            echo "postgres: the server, the commands and the node share every core" >>"$SUMMARY"
        fi
    fi
    export CLOAK_VAULT_STORE="$STORE_URL" CLOAK_VAULT_KEYS="file:$WORK/$STORE/keys.json"
    "$CLOAK_BIN" keys init --config "$CONFIG" >/dev/null
    port=$(free_port)
    CLOAK_SERVER_LISTEN="$HOST:$port" "${ON_NODE[@]}" "$CLOAK_BIN" serve --config "$CONFIG" >"$RESULTS_DIR/cloak-$STORE.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    BASE_URL="http://$HOST:$port"
    wait_http "$SERVER_PID" "$BASE_URL/healthz" 120 || { tail -n 30 "$RESULTS_DIR/cloak-$STORE.log" >&2; die "cloak did not start"; }
    # /validate idle, at IMPORT_RATE requests a second (after a second's warm-up).
    $PACED_NICE python3 "$SCRIPT_DIR/tools/paced.py" "$BASE_URL/forms/checkout/validate" "$VALIDATE_BODY" "$IMPORT_RATE" 1 >/dev/null
    idle_steal=$(steal_ms)
    $PACED_NICE python3 "$SCRIPT_DIR/tools/paced.py" "$BASE_URL/forms/checkout/validate" "$VALIDATE_BODY" "$IMPORT_RATE" \
        "$IMPORT_PACED_SECONDS" >"$RESULTS_DIR/validate-idle-$STORE.txt"
    idle_steal=$(($(steal_ms) - idle_steal))
    idle_rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status")
    # Start the peak from here: VmHWM is reset by writing 5 to clear_refs.
    echo 5 >"/proc/$SERVER_PID/clear_refs" 2>/dev/null || true
    # The same load for as long as the import runs (stopped when it ends).
    PACED_TIMELINE="$RESULTS_DIR/timeline-import-$STORE.txt" \
        $PACED_NICE python3 "$SCRIPT_DIR/tools/paced.py" "$BASE_URL/forms/checkout/validate" "$VALIDATE_BODY" "$IMPORT_RATE" 0 \
        >"$RESULTS_DIR/validate-busy-$STORE.txt" &
    PACED_PID=$!
    PIDS+=("$PACED_PID")
    start=$(date +%s.%N)
    job_steal=$(steal_ms)
    CLOAK_SERVER_LISTEN="$HOST:$port" "${ON_SIDE[@]}" "$CLOAK_BIN" import --config "$CONFIG" --form card_import --token importer "$CSV" \
        >"$RESULTS_DIR/import-$STORE.json" 2>"$RESULTS_DIR/import-$STORE.progress" \
        || die "the import failed ($RESULTS_DIR/import-$STORE.progress)"
    end=$(date +%s.%N)
    job_steal=$(($(steal_ms) - job_steal))
    kill -INT "$PACED_PID" 2>/dev/null || true
    wait "$PACED_PID" 2>/dev/null || true
    forget_pid "$PACED_PID"
    peak_rss=$(peak_rss_mb "$SERVER_PID")
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    status=$(tail -n 1 "$RESULTS_DIR/import-$STORE.json")
    idle_p99=$(cut -d' ' -f2 "$RESULTS_DIR/validate-idle-$STORE.txt")
    busy_p99=$(cut -d' ' -f2 "$RESULTS_DIR/validate-busy-$STORE.txt")
    {
        echo "$STORE import: $IMPORT_ROWS rows in $seconds s ($(awk -v r="$IMPORT_ROWS" -v s="$seconds" 'BEGIN { printf "%.0f", r / s }') rows/s)"
        echo "  RSS idle $idle_rss MiB, peak during the job $peak_rss MiB (+$(awk -v a="$idle_rss" -v b="$peak_rss" 'BEGIN { printf "%.1f", b - a }') MiB)"
        echo "  /validate p99 idle $idle_p99 ms, during the job $busy_p99 ms (x$(awk -v a="$idle_p99" -v b="$busy_p99" 'BEGIN { printf "%.2f", b / a }')); steal: idle $idle_steal ms, job $job_steal ms"
        echo "  job: $status"
    } | tee -a "$SUMMARY" >&2

    # The export of everything imported: asked, counted, approved by the other person, written.
    idle_rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status")
    echo 5 >"/proc/$SERVER_PID/clear_refs" 2>/dev/null || true
    PACED_TIMELINE="$RESULTS_DIR/timeline-export-$STORE.txt" \
        $PACED_NICE python3 "$SCRIPT_DIR/tools/paced.py" "$BASE_URL/forms/checkout/validate" "$VALIDATE_BODY" "$IMPORT_RATE" 0 \
        >"$RESULTS_DIR/validate-export-$STORE.txt" &
    PACED_PID=$!
    PIDS+=("$PACED_PID")
    start=$(date +%s.%N)
    job_steal=$(steal_ms)
    CLOAK_TOKEN=$EXPORTER "${ON_SIDE[@]}" "$CLOAK_BIN" export --config "$CONFIG" --form card_import --layout "$EXPORT_LAYOUT" \
        --recipient "$WORK/recipient.asc" \
        >"$RESULTS_DIR/export-$STORE.json" 2>&1 || die "the export was not counted ($RESULTS_DIR/export-$STORE.json)"
    counted=$(date +%s.%N)
    job=$(head -n 1 "$RESULTS_DIR/export-$STORE.json")
    read -r rows fingerprint digest < <(tail -n 1 "$RESULTS_DIR/export-$STORE.json" \
        | python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["rows"], j["recipient_fingerprint"], j["selection_digest"])')
    CLOAK_TOKEN=$APPROVER "${ON_SIDE[@]}" "$CLOAK_BIN" jobs approve --config "$CONFIG" --rows "$rows" --fingerprint "$fingerprint" \
        --digest "$digest" "$job" \
        >/dev/null || die "the export was not approved"
    "${ON_SIDE[@]}" "$CLOAK_BIN" jobs status --config "$CONFIG" --follow "$job" >"$RESULTS_DIR/export-$STORE-done.json" \
        2>"$RESULTS_DIR/export-$STORE.progress" || die "the export failed ($RESULTS_DIR/export-$STORE-done.json)"
    end=$(date +%s.%N)
    job_steal=$(($(steal_ms) - job_steal))
    kill -INT "$PACED_PID" 2>/dev/null || true
    wait "$PACED_PID" 2>/dev/null || true
    forget_pid "$PACED_PID"
    peak_rss=$(peak_rss_mb "$SERVER_PID")
    "$CLOAK_BIN" jobs file --config "$CONFIG" "$job" >"$WORK/export.jsonl.gpg"
    lines=$(gpg --homedir "$GNUPG" --batch -d "$WORK/export.jsonl.gpg" 2>/dev/null | wc -l)
    [[ "$lines" == "$rows" && "$rows" == "$IMPORT_ROWS" ]] || die "the export holds $lines lines for $rows rows counted"
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    counting=$(awk -v a="$start" -v b="$counted" 'BEGIN { printf "%.1f", b - a }')
    busy_p99=$(cut -d' ' -f2 "$RESULTS_DIR/validate-export-$STORE.txt")
    {
        echo "$STORE export ($EXPORT_LAYOUT): $rows rows in $seconds s, counting $counting s ($(awk -v r="$rows" -v s="$seconds" 'BEGIN { printf "%.0f", r / s }') rows/s), $(du -h "$WORK/export.jsonl.gpg" | cut -f1) encrypted; gpg decrypts $lines lines"
        echo "  RSS idle $idle_rss MiB, peak during the job $peak_rss MiB (+$(awk -v a="$idle_rss" -v b="$peak_rss" 'BEGIN { printf "%.1f", b - a }') MiB)"
        echo "  /validate p99 idle $idle_p99 ms, during the job $busy_p99 ms (x$(awk -v a="$idle_p99" -v b="$busy_p99" 'BEGIN { printf "%.2f", b / a }')); steal: idle $idle_steal ms, job $job_steal ms"
    } | tee -a "$SUMMARY" >&2
    rm -f "$WORK/export.jsonl.gpg"
    stop_pid "$SERVER_PID"
    forget_pid "$SERVER_PID"
    if [[ "$STORE" == postgres ]]; then scripts/postgres stop "$PG_DIR" >/dev/null; PG_DIR=; fi
done
log "summary: $SUMMARY"
