#!/usr/bin/env bash
# Throughput of `cloak keys rewrap`: N records stored, a rotation, then every record re-sealed
# with the new key version, timed. Records per second, on SQLite or PostgreSQL.
#
# Usage: Benchmarks/tools/rewrap.sh CLOAK_BIN sqlite|postgres [RECORDS] [BATCH]
#
# Records are stored through the Vault API (POST /aliases, 100 values a request, a bearer token)
# by a server the script starts; the server keeps running during the rewrap, as in production.
set -euo pipefail
BIN=$(realpath "$1"); STORE=$2; N=${3:-100000}; BATCH=${4:-500}
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
W=$(mktemp -d /tmp/rewrap.XXXX)
PG_DIR=""
cleanup() {
    [[ -n ${SERVER:-} ]] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    [[ -n $PG_DIR ]] && scripts/postgres stop "$PG_DIR" >/dev/null 2>&1 && rm -rf "$PG_DIR"
    rm -rf "$W"
}
trap cleanup EXIT
if [[ $STORE == postgres ]]; then
    PG_DIR=$(mktemp -d /tmp/rewrap-pg.XXXX)  # its own folder: the cluster's owner must reach it
    URL=$(scripts/postgres start "$PG_DIR")
else
    URL="sqlite:$W/cloak.db"
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
TOKEN="rw-$RANDOM$RANDOM"
HASH=$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)
cat > "$W/cloak.yaml" <<YAML
server: {listen: "127.0.0.1:$PORT", threads: 2}
vault: {store: "$URL", keys: "file:$W/keys.json", key_refresh_s: 1}
auth: {tokens: [{id: rw, sha256: "$HASH", scopes: [aliases:create]}]}
limits: {anonymous: {requests_per_minute: 10000000, burst: 10000000}, token: {requests_per_minute: 10000000, burst: 10000000}, bucket_values_per_hour: 1000000}
YAML
"$BIN" serve --config "$W/cloak.yaml" > "$W/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 200); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
python3 - "$PORT" "$TOKEN" "$N" <<'PY'
import json, sys, http.client
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for start in range(0, n, 100):
    values = [{"value": f"rewrap-{i}", "format": "UUID", "storage": "PERSISTENT"} for i in range(start, min(n, start + 100))]
    c.request("POST", "/aliases", json.dumps({"data": values}), {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    r = c.getresponse(); r.read()
    assert r.status in (200, 201), r.status
PY
"$BIN" keys rotate --config "$W/cloak.yaml" > /dev/null
start=$(date +%s.%N)
"$BIN" keys rewrap --batch "$BATCH" --config "$W/cloak.yaml" > "$W/rewrap.log"
end=$(date +%s.%N)
tail -n 1 "$W/rewrap.log"
"$BIN" keys status --json --config "$W/cloak.yaml"
awk -v n="$N" -v a="$start" -v b="$end" -v s="$STORE" -v batch="$BATCH" \
    'BEGIN { printf "%s: %d records re-sealed in %.2f s = %.0f records/s (batch %d, the server serving)\n", s, n, b - a, n / (b - a), batch }'
