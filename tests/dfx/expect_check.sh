#!/usr/bin/env bash
# expect_check.sh <exit code> <regex>... -- <command...>
# Runs a provoking program (symmem-run ... check_cases <case>) and checks the SYMMEM_CHECK
# report: the exit code, every regex somewhere in the output, exactly one report (for
# exit code 2), and that the job left nothing behind: no process and no /dev/shm object of
# the job (the program prints "job <id>" first).
set -u
want_rc=$1; shift
pats=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do pats+=("$1"); shift; done
shift
tag="dfx-check-$$-$RANDOM"
out=$(env SYMMEM_DFX_TEST_TAG="$tag" "$@" 2>&1); rc=$?
echo "$out"
fail() { echo "expect_check: $*"; exit 1; }
[ "$rc" -eq "$want_rc" ] || fail "expected exit code $want_rc, got $rc"
for p in "${pats[@]}"; do
  echo "$out" | grep -Eq -- "$p" || fail "output does not match /$p/"
done
reports=$(echo "$out" | grep -c 'symmem error: CHECK:' || true)
if [ "$want_rc" -eq 2 ]; then
  [ "$reports" -eq 1 ] || fail "expected one CHECK report, found $reports"
else
  [ "$reports" -eq 0 ] || fail "expected no CHECK report, found $reports"
fi
job=$(echo "$out" | sed -n 's/^job \([A-Za-z0-9_.-]*\)$/\1/p' | head -1)
[ -n "$job" ] || fail "the program did not print its job id"
sleep 0.2
left=$(ls /dev/shm 2>/dev/null | grep -F "symmem-$job-" || true)
[ -z "$left" ] || fail "left in /dev/shm: $left"
for e in /proc/[0-9]*/environ; do
  if grep -qzF "SYMMEM_DFX_TEST_TAG=$tag" "$e" 2>/dev/null; then fail "a process of the job survived: $e"; fi
done
exit 0
