#!/usr/bin/env bash
# A user's build never turns warnings into errors: configures the source tree as a user
# does (`cmake -S . -B b -DCMAKE_BUILD_TYPE=Release`, no options) into a scratch directory
# and fails if any compile rule of any target carries -Werror.
set -euo pipefail
src=$1; shift  # further arguments go to cmake (to see the check fail: -DSYMMEM_WERROR=ON)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work/b" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
n=$(find "$work/b" -name flags.make | wc -l)
[ "$n" -gt 10 ] || { echo "user build: only $n compile rules found"; exit 1; }
if grep -rl --include=flags.make --include=build.make -e -Werror "$work/b"; then
  echo "user build: the files above compile with -Werror; only SYMMEM_WERROR=ON may add it"
  exit 1
fi
grep -q "SYMMEM_WERROR:BOOL=OFF" "$work/b/CMakeCache.txt" || { echo "user build: SYMMEM_WERROR is not OFF by default"; exit 1; }
echo "user build: $n compile rules, none with -Werror"
