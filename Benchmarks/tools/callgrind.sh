#!/usr/bin/env bash
# Instructions a request of one case, from callgrind (user space, every thread).
#
# Usage: Benchmarks/tools/callgrind.sh CLOAK_BIN healthz|validate|tokens|aliases|dedupe|reveal|egress|egress-plain|egress-signed|inbound|upload
#
# egress: one stored card's alias revealed on the way to the C reference server (bench.sh's
# egress case; the C server is built and started here); egress-plain: the same route with
# nothing to reveal (the two HTTP exchanges alone); egress-signed: egress, then a Content-Digest and
# an RFC 9421 hmac-sha256 signature (issue 49's steps, Benchmarks/steps.sh's hmac route); aliases: POST /aliases with a new value each
# time (a record created and committed per request); dedupe: the same card every time (found, not
# written: bench.sh's dedupe case); reveal: GET /aliases/{alias} of one stored card by a token
# holder (bench.sh's reveal case, an audited reveal); tokens: the checkout form's six fields to
# POST /forms/checkout/tokens, open tokenize without a token (every value stored anew); inbound:
# bench.sh's inbound route (a card field aliased, one record written, forwarded to the C server);
# upload: compare.sh's upload case (the kyc form's name and a 16 KiB PNG, stored anew each time).
# The binary is copied without DWARF (valgrind 3.19 cannot read Swift's DWARF 5; STRIP=0 keeps a
# binary built with `-Xswiftc -dwarf-version=4`, for files-crossed.sh), served with one
# loop thread under valgrind, warmed for 2 s with wrk -t1 -c8, zeroed, measured for 5 s, dumped,
# and the dump's total divided by the requests wrk counted. Needs valgrind and wrk. TRACES=RATIO
# turns telemetry.traces on at that sample ratio, to Benchmarks/tools/otlp-sink.py. CONNECTIONS
# (default 8) is wrk's -c: Benchmarks/guard.sh takes 1, so no batch of the vault's group commit
# is shared and a request's count does not depend on the machine's speed. POLICY_RULES=N (reveal
# only) reveals with a token held to an access policy of N rules (issue 77), the last the one that
# matches, with POLICY_TRANSFORM (default plain). CONFIG (default
# config/cloak.yaml) is the configuration the case is built on: an older build's own, to count it.
set -euo pipefail
CONNECTIONS=${CONNECTIONS:-8}
# The shipped config's console listens on 8082; this script's servers take any free port.
export CLOAK_CONSOLE_LISTEN=${CLOAK_CONSOLE_LISTEN:-127.0.0.1:0}
BIN=$1; CASE=$2
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
W=$(mktemp -d /tmp/cg.XXXX)
cp "$BIN" $W/cloak; [[ ${STRIP:-1} == 0 ]] || objcopy --strip-debug $W/cloak
sed -e "s/anonymous: {requests_per_minute: [0-9]*, burst: [0-9]*}/anonymous: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/token: {requests_per_minute: [0-9]*, burst: [0-9]*}/token: {requests_per_minute: 10000000, burst: 10000000}/" \
    -e "s/upload_mib_per_minute: [0-9]*/upload_mib_per_minute: 1048576/" "${CONFIG:-config/cloak.yaml}" > $W/c.yaml
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
C_PID=""
if [[ $CASE == egress* || $CASE == aliases || $CASE == dedupe || $CASE == reveal ]]; then
    TOKEN="cg-$RANDOM$RANDOM"
    HASH=$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)
    sed -i "s/^  tokens: \[\].*/  tokens: [{id: cg, sha256: \"$HASH\", scopes: [aliases:create, aliases:reveal, \"egress:*\"]}]/" $W/c.yaml
    if [[ -n ${POLICY_RULES:-} && $CASE == reveal ]]; then
        # The reveal by a second token held to a policy of POLICY_RULES rules, the last the one
        # that matches (POLICY_TRANSFORM, default plain: the engine's cost alone; a mask adds its
        # audit event), the others allows of other classifiers.
        READER="cgp-$RANDOM$RANDOM"
        READER_HASH=$(printf %s "$READER" | sha256sum | cut -d' ' -f1)
        sed -i "s/^  tokens: \[{id: cg,/  tokens: [{id: cgp, sha256: \"$READER_HASH\", scopes: [aliases:reveal], policies: [bench]}, {id: cg,/" $W/c.yaml
        { printf '\npolicies:\n  - id: bench\n    rules:\n'
          for i in $(seq 2 "$POLICY_RULES"); do
              printf '      - {id: r%s, effect: allow, transform: last4, operations: [reveal], classifiers: [other-%s]}\n' $i $i
          done
          printf '      - {id: card, effect: allow, transform: %s, operations: [reveal], formats: [FPE_SIX_T_FOUR]}\n' \
              "${POLICY_TRANSFORM:-plain}"
        } >> $W/c.yaml
    fi
fi
if [[ $CASE == egress* || $CASE == inbound ]]; then
    gcc -O2 -o $W/ref Benchmarks/reference/server.c $(pkg-config --cflags --libs libevent libevent_pthreads) -lpthread
    C_PORT=$(free_port)
    $W/ref $C_PORT 1 > $W/ref.log 2>&1 &
    C_PID=$!
    sed -i -e "s|^routes: \[\]|routes: [{id: \"5f0c4a52-2d7e-4a4e-9d51-6c0a7f1b2c3d\", path: /bench, form: proxybench, upstream: \"http://127.0.0.1:$C_PORT/\"}]|" \
        -e "s|^forms:|forms:\n  proxybench: {fields: [{name: card, type: cardNumber, tokenization: {format: FPE_T_FOUR, storage: PERSISTENT}}]}|" \
        -e "s/bucket_values_per_hour: [0-9]*/bucket_values_per_hour: 1000000/" -e "s/max_bucket_share: [0-9.]*/max_bucket_share: 1/" $W/c.yaml
    printf '\negress:\n  routes:\n    - {id: bench, upstream: "http://127.0.0.1:%s", allow_private: true, request: [{reveal: {json: ["$.card"]}}]}\n' $C_PORT >> $W/c.yaml
    if [[ $CASE == egress-signed ]]; then
        printf '    - {id: signed, upstream: "http://127.0.0.1:%s", allow_private: true, request: [{reveal: {json: ["$.card"]}}, {digest: {header: Content-Digest}}, {http_signature: {algorithm: hmac-sha256, key: "env:STEPS_SECRET", keyid: bench, components: ["@method", "@target-uri", "content-digest", "content-type"]}}]}\n' $C_PORT >> $W/c.yaml
    fi
fi
ROUTE=bench; [[ $CASE == egress-signed ]] && ROUTE=signed
export STEPS_SECRET="base64:$(head -c 32 /dev/urandom | base64)"
SINK_PID=""
if [[ -n ${TRACES:-} ]]; then  # TRACES=RATIO: telemetry.traces at that ratio, to otlp-sink.py
    SINK_PORT=$(free_port)
    python3 Benchmarks/tools/otlp-sink.py $SINK_PORT > $W/sink.log 2>&1 &
    SINK_PID=$!
    printf '\ntelemetry:\n  traces: {endpoint: "http://127.0.0.1:%s", sample_ratio: %s}\n' $SINK_PORT "$TRACES" >> $W/c.yaml
fi
CLOAK_SERVER_LISTEN=127.0.0.1:$PORT CLOAK_SERVER_THREADS=1 CLOAK_VAULT_STORE=sqlite:$W/cloak.db CLOAK_VAULT_KEYS=file:$W/keys.json \
  valgrind --tool=callgrind --callgrind-out-file=$W/cg.out $W/cloak serve --config $W/c.yaml > $W/log 2>&1 &
VP=$!
for i in $(seq 200); do curl -fs -o /dev/null http://127.0.0.1:$PORT/healthz && break; sleep 0.2; done
if [[ $CASE == healthz ]]; then run() { wrk -t1 -c"$CONNECTIONS" -d"$1"s http://127.0.0.1:$PORT/healthz; }
elif [[ $CASE == aliases ]]; then
    run() { TOKEN=$TOKEN wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/aliases.lua http://127.0.0.1:$PORT/aliases; }
elif [[ $CASE == egress* || $CASE == reveal ]]; then
    ALIAS=$(curl -sS -H 'Content-Type: application/json' -H "Authorization: Bearer $TOKEN" \
        --data-binary '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR"}]}' http://127.0.0.1:$PORT/aliases \
        | sed -n 's/.*"alias":"\([^"]*\)".*/\1/p')
    [[ -n $ALIAS ]] || { echo "could not store the card" >&2; exit 1; }
    if [[ $CASE != egress-plain ]]; then printf '{"card":"%s","amount":1000}' "$ALIAS" > $W/body.json
    else printf '{"card":"none","amount":1000}' > $W/body.json; fi
    run() { BODY_FILE=$W/body.json METHOD=POST PROXY_AUTH="Bearer $TOKEN" TOKEN= wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/post.lua http://127.0.0.1:$PORT/egress/$ROUTE/v1/charges; }
    if [[ $CASE == reveal ]]; then
        run() { BODY_FILE=/dev/null METHOD=GET TOKEN=${READER:-$TOKEN} wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/post.lua http://127.0.0.1:$PORT/aliases/$ALIAS; }
    fi
elif [[ $CASE == dedupe ]]; then
    printf '{"data":[{"value":"4111111111111111","format":"FPE_SIX_T_FOUR","storage":"PERSISTENT"}]}' > $W/body.json
    run() { BODY_FILE=$W/body.json METHOD=POST TOKEN=$TOKEN wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/post.lua http://127.0.0.1:$PORT/aliases; }
elif [[ $CASE == inbound ]]; then
    run() { wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/proxy.lua http://127.0.0.1:$PORT/proxy/bench; }
elif [[ $CASE == upload ]]; then
    python3 Benchmarks/load/upload-body.py $W/upload.bin
    run() { BODY_FILE=$W/upload.bin wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/upload.lua http://127.0.0.1:$PORT/forms/kyc/tokens; }
elif [[ $CASE == tokens ]]; then
    run() { BODY_FILE=Benchmarks/load/validate-body.json METHOD=POST TOKEN= wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/post.lua http://127.0.0.1:$PORT/forms/checkout/tokens; }
else run() { BODY_FILE=Benchmarks/load/validate-body.json METHOD=POST TOKEN= wrk -t1 -c"$CONNECTIONS" -d"$1"s -s Benchmarks/load/post.lua http://127.0.0.1:$PORT/forms/checkout/validate; }; fi
run 2 >/dev/null
callgrind_control -z $VP >/dev/null 2>&1
out=$(run 5)
callgrind_control -d $VP >/dev/null 2>&1
n=$(echo "$out" | awk '/requests in/ {print $1}')
kill $VP; wait $VP 2>/dev/null || true
[[ -n $C_PID ]] && kill $C_PID
[[ -n $SINK_PID ]] && kill $SINK_PID
f=$W/cg.out.1
ir=$(grep -E "^summary:|^totals:" $f | head -1 | awk '{print $2}')
echo "$CASE requests=$n Ir=$ir per_request=$(awk -v a=$ir -v b=$n 'BEGIN{printf "%.0f", a/b}')"
[[ -n ${KEEP:-} ]] && echo "kept $f" || rm -rf $W
