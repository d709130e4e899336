#!/usr/bin/env bash
# Summarises an R CMD check directory and ends with the test count line
# "tests: N passed, N failed, N skipped" that tests/testthat.R counted from testthat's
# per-expectation results. Exits non-zero on a failed check, an ERROR or WARNING, or no count.
set -uo pipefail
rcheck=$1
status=${2:-0}
log="$rcheck/00check.log"
[ -f "$log" ] || { echo "check-summary: no $log"; echo "0 passed, 1 failed"; exit 1; }
echo "---- R CMD check: problems ----"
grep -E "\.\.\. (ERROR|WARNING|NOTE)$" "$log" || echo "(none)"
grep -E "^Status:" "$log"
count=$(grep -h -E "^tests: [0-9]+ passed, [0-9]+ failed" "$rcheck"/tests/testthat.Rout* 2>/dev/null | tail -n 1)
if [ -z "$count" ]; then
  echo "check-summary: the test suite did not report its counts"
  tail -n 30 "$rcheck"/tests/testthat.Rout* 2>/dev/null
  echo "0 passed, 1 failed"
  exit 1
fi
bad=0
[ "$status" -ne 0 ] && bad=1
grep -q -E "\.\.\. (ERROR|WARNING)$" "$log" && bad=1
if [ "$bad" -ne 0 ]; then
  for f in "$rcheck"/tests/testthat.Rout.fail; do [ -f "$f" ] && tail -n 40 "$f"; done
fi
echo "$count"
exit $bad
