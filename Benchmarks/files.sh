#!/usr/bin/env bash
# Files in the vault (issue 47): memory, throughput and crash safety of uploads and reveals on the
# release binary, against the issue's targets. Prints one line per measurement.
#
#   Benchmarks/files.sh            (after: swift build -c release)
#
#   - RSS: the server's VmHWM (peak resident) after each case, against its VmRSS when idle
#     (targets: one 25 MiB upload ≤ +16 MiB; 20 concurrent 5 MiB uploads ≤ +64 MiB).
#   - Upload throughput on one loop thread beside `dd … conv=fsync` of the same bytes to the
#     same disk (target: within 2×).
#   - A 25 MiB file revealed upstream through a route (multipart), compared by SHA-256.
#   - kill -9 during an upload (no finished file from it), and after one (the file survives).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${CLOAK_BIN:-$ROOT/.build/release/cloak}
DIR=$(mktemp -d "${BENCH_DATA_DIR:-${TMPDIR:-/tmp}}/cloak-files.XXXXXX")
PORT=${PORT:-18431}
UPSTREAM_PORT=$((PORT + 1))
SERVER=
SINK=
cleanup() {
    [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null || true
    [ -n "$SINK" ] && kill "$SINK" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
TOKEN=files-bench-token-0123456789abcdef
SHA=$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)
cat > "$DIR/cloak.yaml" <<YAML
server: {listen: "127.0.0.1:$PORT", threads: 1}
vault: {store: "sqlite:$DIR/cloak.db", keys: "file:$DIR/keys.json"}
auth:
  tokens: [{id: bench, sha256: "$SHA", scopes: [files:reveal, aliases:reveal, aliases:create]}]
# Memory and throughput are measured here, not the per-address upload budget (120 MiB a minute
# by default would refuse the 20 concurrent uploads' last and every upload after them).
limits: {upload_mib_per_minute: 100000}
forms:
  kyc:
    fields:
      - {name: kyc.document, type: file, max_bytes: 33554432, types: [image/png], max_files: 1}
routes:
  - id: "6f1d3c2a-8e4b-4f0a-9c7d-1b2e3f4a5b6c"
    path: /verify
    upstream: "http://127.0.0.1:$UPSTREAM_PORT/verify"
    methods: [POST]
    request: [{reveal: {multipart: [document]}}]
YAML

# The upstream: reads each body and answers its SHA-256 of the file part (without keeping it).
cat > "$DIR/sink.py" <<'PY'
import hashlib, http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers["Content-Length"]); h = hashlib.sha256(); total = 0
        data = self.rfile.read(n)
        boundary = self.headers["Content-Type"].split("boundary=")[1].encode()
        part = data.split(b"--" + boundary)[1]
        content = part.split(b"\r\n\r\n", 1)[1][:-2]
        body = hashlib.sha256(content).hexdigest().encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$DIR/sink.py" "$UPSTREAM_PORT" & SINK=$!

start() {
    "$BIN" serve --config "$DIR/cloak.yaml" >>"$DIR/server.log" 2>&1 & SERVER=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return; sleep 0.05; done
    echo "server did not start"; tail "$DIR/server.log"; exit 1
}
kb() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
png() {  # a PNG header then $1 random bytes
    printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > "$2"; head -c "$1" /dev/urandom >> "$2"
}

png $((25 << 20)) "$DIR/25.png"
png $((5 << 20)) "$DIR/5.png"
start
curl -sf -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/5.png" "http://127.0.0.1:$PORT/forms/kyc/tokens" >/dev/null  # warm
IDLE=$(kb $SERVER VmRSS)
echo "idle RSS: $((IDLE / 1024)) MiB"

T0=$(date +%s.%N)
ALIAS=$(curl -sf -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/25.png" "http://127.0.0.1:$PORT/forms/kyc/tokens" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["kyc.document"])')
T1=$(date +%s.%N)
HWM=$(kb $SERVER VmHWM)
echo "25 MiB multipart upload: peak RSS +$(((HWM - IDLE) / 1024)) MiB (target ≤ 16), $(python3 -c "print(f'{25*1.048576/($T1-$T0):.0f}')") MB/s"

printf '{"fields":{"kyc.document":"' > "$DIR/25.json"; base64 -w0 "$DIR/25.png" >> "$DIR/25.json"; printf '"}}' >> "$DIR/25.json"
curl -sf -H 'Content-Type: application/json' --data-binary "@$DIR/25.json" "http://127.0.0.1:$PORT/forms/kyc/tokens" >/dev/null
HWM=$(kb $SERVER VmHWM)
echo "25 MiB base64 JSON upload: peak RSS +$(((HWM - IDLE) / 1024)) MiB (target ≤ 16)"

WANT=$(sha256sum < "$DIR/25.png" | cut -d' ' -f1)
GOT=$(curl -sf -H "Authorization: Bearer $TOKEN" -F "document=$ALIAS" "http://127.0.0.1:$PORT/proxy/verify")
HWM=$(kb $SERVER VmHWM)
[ "$GOT" = "$WANT" ] && SAME=byte-identical || SAME="DIFFERENT ($GOT)"
echo "25 MiB revealed upstream (multipart route): $SAME; peak RSS +$(((HWM - IDLE) / 1024)) MiB"
DOWN=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/files/$ALIAS" | sha256sum | cut -d' ' -f1)
[ "$DOWN" = "$WANT" ] && echo "GET /files/{alias}: byte-identical" || echo "GET /files/{alias}: DIFFERENT"

# 20 concurrent 5 MiB uploads, on a fresh server (its own idle size).
kill -9 $SERVER; wait $SERVER 2>/dev/null || true
start
curl -sf -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/5.png" "http://127.0.0.1:$PORT/forms/kyc/tokens" >/dev/null
IDLE=$(kb $SERVER VmRSS)
for i in $(seq 1 20); do
    curl -sf -o /dev/null -w '%{http_code}\n' -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/5.png" \
        "http://127.0.0.1:$PORT/forms/kyc/tokens" > "$DIR/c$i" &
done
wait $(jobs -p | grep -v "^$SINK$" | grep -v "^$SERVER$") 2>/dev/null || true
OK=$(cat "$DIR"/c[0-9]* | grep -c 200 || true)
HWM=$(kb $SERVER VmHWM)
echo "20 concurrent 5 MiB uploads: $OK of 20 stored, peak RSS +$(((HWM - IDLE) / 1024)) MiB (target ≤ 64)"

# Throughput on one loop thread, beside the disk's durable-write floor.
BEST=0
for _ in 1 2 3; do
    T0=$(date +%s.%N)
    curl -sf -o /dev/null -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/25.png" "http://127.0.0.1:$PORT/forms/kyc/tokens"
    T1=$(date +%s.%N)
    BEST=$(python3 -c "print(max($BEST, 25*1.048576/($T1-$T0)))")
done
DD=$(dd if="$DIR/25.png" of="$DIR/dd.out" bs=64k conv=fsync 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
echo "upload throughput (best of 3, one loop thread): $(python3 -c "print(f'{$BEST:.0f}')") MB/s; dd conv=fsync of the same bytes: $DD"

# kill -9 during an upload: nothing of it is finished; after an acknowledged one: it survives.
curl -s -o /dev/null --limit-rate 2M -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/25.png" \
    "http://127.0.0.1:$PORT/forms/kyc/tokens" & CURL=$!
for _ in $(seq 1 100); do
    [ "$(sqlite3 "$DIR/cloak.db" 'SELECT count(*) FROM files WHERE record_id IS NULL' 2>/dev/null)" -gt 0 ] 2>/dev/null && break
    sleep 0.1
done
sleep 1
FINISHED=$(sqlite3 "$DIR/cloak.db" 'SELECT count(*) FROM files WHERE record_id IS NOT NULL')
kill -9 $SERVER; wait $SERVER 2>/dev/null || true; kill $CURL 2>/dev/null || true
start
AFTER=$(sqlite3 "$DIR/cloak.db" 'SELECT count(*) FROM files WHERE record_id IS NOT NULL')
echo "kill -9 during an upload: finished files $FINISHED before, $AFTER after (no new one)"
A5=$(curl -sf -H 'Cloak-Upload: 1' -F "kyc.document=@$DIR/5.png" "http://127.0.0.1:$PORT/forms/kyc/tokens" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["kyc.document"])')
kill -9 $SERVER; wait $SERVER 2>/dev/null || true
start
DOWN=$(curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/files/$A5" | sha256sum | cut -d' ' -f1)
[ "$DOWN" = "$(sha256sum < "$DIR/5.png" | cut -d' ' -f1)" ] && echo "an acknowledged file after kill -9: byte-identical" \
    || echo "an acknowledged file after kill -9: LOST"
