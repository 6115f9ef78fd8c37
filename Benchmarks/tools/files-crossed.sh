#!/usr/bin/env bash
# The Swift source files a request runs code from: issue 24's "files crossed", measured.
#
# Usage: Benchmarks/tools/files-crossed.sh CLOAK_BIN tokens|egress|...   (any callgrind.sh case)
#
# CLOAK_BIN must carry DWARF 4 line tables (valgrind 3.19 cannot read Swift's default DWARF 5):
#   swift build -c release --product cloak --scratch-path /tmp/cg-build -Xswiftc -dwarf-version=4 -Xcc -gdwarf-4
# Runs the case under callgrind (callgrind.sh, binary kept as built), then lists every file
# under Sources/ whose code (its own functions, or code of it inlined elsewhere) ran at least
# once a request on average: timers that fire a few times in the 5 s (sweep, key refresh) fall
# below that. Prints the files by module, then the count.
set -euo pipefail
BIN=$1; CASE=$2
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=$(STRIP=0 KEEP=1 Benchmarks/tools/callgrind.sh "$BIN" "$CASE")
echo "$out" | head -1 >&2
requests=$(echo "$out" | sed -n 's/.*requests=\([0-9]*\).*/\1/p')
file=$(echo "$out" | sed -n 's/^kept //p')
callgrind_annotate --threshold=100 --auto=no "$file" 2>/dev/null \
    | awk -v n="$requests" '
        /Sources\/[A-Za-z]*\/.*\.swift:/ && !/\/checkouts\// {
            ir = $1; gsub(",", "", ir)
            path = $0; sub(/^.*Sources\//, "Sources/", path); sub(/\.swift:.*/, ".swift", path)
            cost[path] += ir
        }
        END { for (p in cost) if (cost[p] >= n) print p }' \
    | sort > "$(dirname "$file")/files.txt"
awk -F/ '{ print $2 }' "$(dirname "$file")/files.txt" | uniq -c | awk '{ printf "%s: %s\n", $2, $1 }'
echo "files=$(wc -l < "$(dirname "$file")/files.txt") modules=$(awk -F/ '{ print $2 }' "$(dirname "$file")/files.txt" | sort -u | wc -l) (list: $(dirname "$file")/files.txt)"
