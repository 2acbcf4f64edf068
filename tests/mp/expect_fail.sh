#!/usr/bin/env bash
# expect_fail.sh <expected exit code|nonzero> <regex the output must match> <command...>
# Runs the command (typically symmem-run ... prog case) and checks that it failed the way
# it should: the exit code, one clear message, and nothing of the job left in /dev/shm.
set -u
want_rc=$1; pattern=$2; shift 2
out=$("$@" 2>&1); rc=$?
echo "$out"
if [ "$want_rc" = nonzero ]; then
  [ $rc -ne 0 ] || { echo "expect_fail: expected a non-zero exit, got 0"; exit 1; }
else
  [ $rc -eq "$want_rc" ] || { echo "expect_fail: expected exit code $want_rc, got $rc"; exit 1; }
fi
echo "$out" | grep -Eq -- "$pattern" || { echo "expect_fail: output does not match /$pattern/"; exit 1; }
exit 0
