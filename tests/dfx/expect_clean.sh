#!/usr/bin/env bash
# expect_clean.sh <regex the output must match, or ""> <command...>
# The race check must find nothing: exit code 0 and no "RACE" line in the output.
set -u
pattern=$1; shift
out=$("$@" 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "expect_clean: exit code $rc"; exit 1; }
if echo "$out" | grep -q RACE; then echo "expect_clean: a race was reported"; exit 1; fi
[ -z "$pattern" ] || echo "$out" | grep -Eq -- "$pattern" || { echo "expect_clean: output does not match /$pattern/"; exit 1; }
exit 0
