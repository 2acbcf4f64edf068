#!/usr/bin/env bash
# The main demo: builds symmem and runs the all-reduce of the seed scenario on 4 PEs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/tools/symmem-run/symmem-run -n 4 --timeout 300 build/examples/allreduce
