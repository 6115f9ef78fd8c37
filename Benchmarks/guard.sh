#!/usr/bin/env bash
# The regression guard (issue 74): instructions a request of each cost case under callgrind
# (Benchmarks/tools/callgrind.sh: every thread's, the vault thread's commit and flush included;
# one loop thread, wrk -t1 -c1, so no group commit is shared and the count does not depend on
# the machine's speed), against the ceilings in Benchmarks/ceilings.txt. Fails when a case is
# more than 3 % over its ceiling, or has none for this build and toolchain.
#
# Usage: Benchmarks/guard.sh [--record] CLOAK_BIN [CASE ...]
#   CLOAK_BIN's build (debug or release) is read from its path (.build/debug/, .build/release/);
#   the ceilings are kept for each build with the toolchain they were measured on (`swift
#   --version`'s first line). --record prints ceiling lines for the measured counts (2 % over
#   each) to put in the file: lower a ceiling when a change earns it, raise one only in a commit
#   that says why. CASEs default to healthz validate aliases dedupe reveal egress inbound.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RECORD=0
if [[ ${1:-} == --record ]]; then RECORD=1; shift; fi
[[ $# -ge 1 && -x $1 ]] || { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
BIN=$1
shift
CASES=("$@")
((${#CASES[@]} > 0)) || CASES=(healthz validate aliases dedupe reveal egress inbound)
case $BIN in
    */release/*) BUILD=release ;;
    */debug/*) BUILD=debug ;;
    *) echo "guard.sh: cannot tell the build of $BIN from its path (.build/debug/ or .build/release/)" >&2; exit 2 ;;
esac
TOOLCHAIN=$(swift --version 2>/dev/null | head -n1 | sed -n 's/.*(\(swift-[^)]*\)).*/\1/p')
[[ -n $TOOLCHAIN ]] || { echo "guard.sh: cannot read the toolchain from swift --version" >&2; exit 2; }
CEILINGS=Benchmarks/ceilings.txt
MARGIN=1.03
failed=0
for case in "${CASES[@]}"; do
    line=$(CONNECTIONS=1 Benchmarks/tools/callgrind.sh "$BIN" "$case" | tail -n1)
    measured=$(sed -n 's/.* per_request=\([0-9]*\).*/\1/p' <<<"$line")
    [[ -n $measured ]] || { echo "guard.sh: $case: no count ($line)" >&2; failed=1; continue; }
    if ((RECORD)); then
        printf '%-8s %-14s %-9s %10d\n' "$BUILD" "$TOOLCHAIN" "$case" "$(awk -v m="$measured" 'BEGIN { printf "%d", m * 1.02 }')"
        continue
    fi
    ceiling=$(awk -v b="$BUILD" -v t="$TOOLCHAIN" -v c="$case" '$1 == b && $2 == t && $3 == c { print $4 }' "$CEILINGS")
    if [[ -z $ceiling ]]; then
        echo "guard.sh: $case: $measured instructions a request; no ceiling for $BUILD on $TOOLCHAIN in $CEILINGS" >&2
        failed=1
        continue
    fi
    verdict=$(awk -v m="$measured" -v c="$ceiling" -v k="$MARGIN" 'BEGIN { print (m > c * k) ? "over" : "ok" }')
    printf 'guard.sh: %-8s %10d instructions a request, ceiling %10d (%+.1f %%) %s\n' "$case" "$measured" "$ceiling" \
        "$(awk -v m="$measured" -v c="$ceiling" 'BEGIN { print (m / c - 1) * 100 }')" "$verdict"
    [[ $verdict == ok ]] || failed=1
done
exit $failed
