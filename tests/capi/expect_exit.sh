#!/bin/sh
# expect_exit.sh CODE [--stdout-has TEXT] [--stdout-lacks TEXT]... COMMAND...
# Runs COMMAND and passes only if it exits with exactly CODE (and, if asked, its stdout
# contains TEXT and none of the --stdout-lacks texts). For failure-path tests such as
# shmem_global_exit, and for what a call logs.
set -u
want=$1; shift
has=
lacks=$(mktemp) || exit 2
while :; do
  case "${1:-}" in
    --stdout-has) has=$2; shift 2 ;;
    --stdout-lacks) printf '%s\n' "$2" >>"$lacks"; shift 2 ;;
    *) break ;;
  esac
done
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
else
  while IFS= read -r text; do
    if grep -qF -- "$text" "$out"; then
      echo "FAIL: stdout has \"$text\""
      status=1
    fi
  done <"$lacks"
fi
rm -f "$out" "$lacks"
exit $status
