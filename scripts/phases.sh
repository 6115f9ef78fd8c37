# Where a script's time goes (issue 75): `phase NAME COMMAND...` runs COMMAND and keeps its wall
# time under NAME; the table of phases and the total is printed when the script exits, failed or
# not (`trap phases_report EXIT`, or call it from the script's own EXIT trap). Sourced by
# scripts/test and .ci/run.
PHASES=()
PHASES_STARTED=$SECONDS

phase() {
  local name=$1 started=$SECONDS status=0
  shift
  "$@" || status=$?
  PHASES+=("$(printf '%-34s %6d s%s' "$name" $((SECONDS - started)) "$( ((status == 0)) || echo "  (failed: exit $status)")")")
  return "$status"
}

phases_report() {
  ((${#PHASES[@]} > 0)) || return 0
  echo "--- $(basename "$0"): where the time went"
  printf '%s\n' "${PHASES[@]}"
  printf '%-34s %6d s\n' total $((SECONDS - PHASES_STARTED))
}
