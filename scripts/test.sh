#!/usr/bin/env bash
# Builds symmem and runs the whole test suite; fails if anything of ours is left in
# /dev/shm or any symmem-run process survives.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
before=$(ls /dev/shm | grep '^symmem-' | sort || true)
rc=0
(cd build && ctest --output-on-failure -j2 --timeout 600) || rc=$?
bash scripts/sanitize.sh || rc=1  # ASan+UBSan / TSan subsets and the fuzzers (docs/sanitizers.md)
left=$(comm -13 <(echo "$before") <(ls /dev/shm | grep '^symmem-' | sort || true) | grep . || true)
if [ -n "$left" ]; then
  echo "test.sh: shared-memory objects left in /dev/shm:"; echo "$left"; rc=1
fi
if pgrep -x symmem-run >/dev/null; then
  echo "test.sh: stray symmem-run processes:"; pgrep -ax symmem-run; rc=1
fi
exit $rc
