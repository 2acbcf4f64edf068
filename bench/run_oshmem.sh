#!/bin/sh
# run_oshmem.sh OUTPUT [NPES] [-- ARGS...]
# Builds bench/osu_like.c with Open MPI's oshcc and runs it under oshrun (default 2 PEs),
# writing the benchmark's output to OUTPUT: the OSHMEM side of a side-by-side comparison
# with bench_p2p (the same source built against symmem).
# OMPI_MCA_osc=^rdma: without it OSHMEM 4.1 crashes inside shmem_finalize.
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 OUTPUT [NPES] [-- ARGS...]" >&2
  exit 2
fi
out=$1; shift
npes=2
if [ $# -gt 0 ] && [ "$1" != "--" ]; then npes=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
oshcc -O2 -o "$tmp/osu_like_oshmem" "$here/osu_like.c"
OMPI_MCA_osc=^rdma oshrun --allow-run-as-root --oversubscribe -np "$npes" \
  "$tmp/osu_like_oshmem" "$@" >"$out"
echo "wrote $out ($npes PEs, Open MPI OSHMEM)"
