#!/bin/bash
# Refused uploads against a fresh node: 30 anonymous uploads of 20 MiB that are not a document
# (FILE_TYPE_VALIDATION_ERROR), 6 at a time; what the store's files hold after.
# Usage: Benchmarks/tools/refused-uploads.sh CLOAK_BIN   (CONFIG: another configuration file)
set -u
bin=$1
dir=$(mktemp -d /tmp/disk-flood.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
head -c $((20 << 20)) /dev/zero | tr '\0' 'a' > $dir/doc.txt
CLOAK_SERVER_LISTEN=127.0.0.1:$port CLOAK_VAULT_STORE=sqlite:$dir/cloak.db CLOAK_VAULT_KEYS=file:$dir/keys.json \
  $bin serve --config ${CONFIG:-$(dirname "$0")/../../config/cloak.yaml} > $dir/log 2>&1 &
pid=$!
for i in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$port/readyz && break; sleep 0.1; done
before=$(du -sb $dir --exclude=doc.txt --exclude=log | cut -f1)
start=$(date +%s.%N)
seq 1 30 | xargs -P 6 -I{} curl -s -o /dev/null -w '%{http_code}\n' -H 'Cloak-Upload: 1' \
  -F 'kyc.full_name=Jane Doe' -F "kyc.document=@$dir/doc.txt;filename=d.png" \
  http://127.0.0.1:$port/forms/kyc/tokens > $dir/codes
end=$(date +%s.%N)
sleep 1
after=$(du -sb $dir --exclude=doc.txt --exclude=log | cut -f1)
chunks=$(sqlite3 $dir/cloak.db 'SELECT count(*), coalesce(sum(length(sealed)),0) FROM file_chunks')
echo "answers: $(sort $dir/codes | uniq -c | tr '\n' ' ')"
echo "seconds: $(echo "$end - $start" | bc)"
echo "store grew: $(( (after - before) >> 20 )) MiB; file_chunks rows, bytes: $chunks"
kill $pid; wait $pid 2>/dev/null
rm -rf $dir
