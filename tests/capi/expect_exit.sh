#!/bin/sh
# expect_exit.sh CODE [--stdout-has TEXT] COMMAND...
# Runs COMMAND and passes only if it exits with exactly CODE (and, if asked, its stdout
# contains TEXT). For failure-path tests such as shmem_global_exit.
set -u
want=$1; shift
has=
if [ "${1:-}" = "--stdout-has" ]; then has=$2; shift 2; fi
out=$(mktemp) || exit 2
"$@" >"$out"
rc=$?
cat "$out"
status=0
if [ "$rc" -ne "$want" ]; then
  echo "FAIL: expected exit status $want, got $rc: $*"
  status=1
elif [ -n "$has" ] && ! grep -qF -- "$has" "$out"; then
  echo "FAIL: exit status $rc as expected, but stdout lacks \"$has\" (not flushed?)"
  status=1
fi
rm -f "$out"
exit $status
