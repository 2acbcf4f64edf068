#!/bin/bash
# Runs the gemm_overlap sweep on 2 PEs (one per core) and writes docs/gemm-overlap.md, its
# CSV and plots:
#   examples/gemm_overlap/run.sh [BUILD_DIR]        (default: build; needs the targets
#                                                    gemm_overlap, gemm_overlap_mpi, symmem-run)
# Environment: BUDGET seconds per variant and configuration (default 0.3), MIN_ITERS timed
# iterations at least (default 20), STAT the statistic of the page (min, the default, or
# med), OUT the docs directory (default docs/). 2-3 minutes on a quiet 2-core VM.
# RT=1 runs the PEs (not the launchers) under SCHED_FIFO (chrt -f 1, needs root), one
# configuration of 1-3 s at a time with RT_PAUSE seconds (default 2) between them: on a
# machine that other processes load, the only way to get undisturbed iterations; it stalls
# the other processes for those seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
docs=${OUT:-$root/docs}
budget=${BUDGET:-0.3}
min_iters=${MIN_ITERS:-20}
run=$build/tools/symmem-run/symmem-run
prog=$build/examples/gemm_overlap/gemm_overlap
mprog=$build/examples/gemm_overlap/gemm_overlap_mpi
for f in "$run" "$prog"; do
  [ -x "$f" ] || { echo "run.sh: $f not built (cmake --build $build --target gemm_overlap gemm_overlap_mpi symmem-run)" >&2; exit 2; }
done
have_mpi=0
[ -x "$mprog" ] && command -v mpirun >/dev/null && have_mpi=1

export OPENBLAS_NUM_THREADS=1 SYMMEM_LOG_LEVEL=warn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$docs"
csv=$docs/gemm-overlap.csv meta=$work/meta.txt raw=$work/raw.txt
echo "impl,op,what,npes,m,n,k,tile,tiles,iters,min_ms,med_ms,p10_ms,p90_ms,gflops_pe,preempted,check,wrong" >"$csv"
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(lscpu | sed -n 's/^L3 cache: *//p' | head -1) L3"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "budget=$budget"
  echo "min_iters=$min_iters"
  echo "command=${RT:+RT=$RT }examples/gemm_overlap/run.sh"
} >"$meta"

rt=()
pause=0
if [ "${RT:-0}" = 1 ]; then
  command -v chrt >/dev/null || { echo "run.sh: RT=1 needs chrt (util-linux)" >&2; exit 2; }
  chrt -f 1 true 2>/dev/null || { echo "run.sh: RT=1: chrt -f 1 is not permitted here (needs root or CAP_SYS_NICE)" >&2; exit 2; }
  rt=(chrt -f 1)
  pause=${RT_PAUSE:-2}
fi
echo "priority=$([ ${#rt[@]} = 0 ] && echo 'normal (SCHED_OTHER)' || echo "SCHED_FIFO 1 for the PEs (RT=1), ${pause} s pauses between configurations")" >>"$meta"
step=0
sym() {  # one gemm_overlap configuration on 2 PEs
  step=$((step + 1))
  echo "run.sh: [$step] symmem $*" >&2
  sleep "$pause"
  "$run" -n 2 --timeout 600 "${rt[@]}" "$prog" --no-header --budget "$budget" --warmup 2 --min-iters "$min_iters" --iters 60 "$@" >"$work/out" 2>"$work/err" || {
    echo "run.sh: gemm_overlap $* failed:" >&2
    cat "$work/err" >&2
    exit 1
  }
  grep '^#' "$work/out" >>"$raw" || true
  grep -v '^#' "$work/out" >>"$csv"
}
mpi() {  # the Open MPI baseline of one configuration
  [ $have_mpi = 1 ] || return 0
  step=$((step + 1))
  echo "run.sh: [$step] mpi $*" >&2
  sleep "$pause"
  mpirun --allow-run-as-root -n 2 --bind-to core "${rt[@]}" "$mprog" --no-header --budget "$budget" --warmup 2 --min-iters "$min_iters" --iters 60 "$@" \
    >"$work/out" 2>"$work/err" || {
    echo "run.sh: gemm_overlap_mpi $* failed:" >&2
    cat "$work/err" >&2
    exit 1
  }
  grep -v '^#' "$work/out" >>"$csv"
}

# Sizes keep one GEMM at 1-15 ms on this VM, so that some iterations run undisturbed on a
# shared machine (the page uses the minimum; the CSV has the share of preempted iterations).
# 1. reduce-scatter / all-reduce over the inner dimension K_loc = k/2, all-gather over the
#    local output width N_loc = n/2; m = 512 rows, the other dimension 512, tiles of 128 rows
#    (2 per owner block: fewer, larger tiles repack B less often, see the tile sweep).
for kl in 32 64 128 256 512 1024 2048; do
  sym --op rs --m 512 --n 512 --k $((2 * kl)) --tile 128
  mpi --op rs --m 512 --n 512 --k $((2 * kl)) --tile 128
done
for nl in 32 64 128 256 512 1024; do
  sym --op ag --m 512 --n $((2 * nl)) --k 512 --tile 128
  mpi --op ag --m 512 --n $((2 * nl)) --k 512 --tile 128
done
for kl in 64 256 1024; do
  sym --op ar --m 512 --n 512 --k $((2 * kl)) --tile 128
  mpi --op ar --m 512 --n 512 --k $((2 * kl)) --tile 128
done
# 2. tile size where communication matters (rs, K_loc = 256) and where it does not (2048)
for tile in 8 16 32 64 256; do
  sym --op rs --m 512 --n 512 --k 512 --tile $tile --variant mono,tiled,bulk,push,pull,store
done
for tile in 32 64 256; do
  sym --op rs --m 512 --n 512 --k 4096 --tile $tile --variant mono,tiled,bulk,push,pull,store
done
# 3. rows: rs at K_loc = 2048 with more rows, one tile per owner block (so `tiled` is the
#    owner-block split `store` makes), where that split's own cost falls
for m in 1024 2048; do
  sym --op rs --m $m --n 512 --k 4096 --tile $((m / 2)) --variant mono,tiled,bulk,store
done
# 4. the two-stage pipeline, 1 to 32 tiles
for tile in 1024 512 256 128 64 32; do
  sym --op pipe --m 1024 --n 256 --k 256 --tile $tile
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$meta"
sort -u "$raw" >>"$meta"
cp "$meta" "$docs/gemm-overlap.meta"
/usr/bin/python3 "$here/report.py" --csv "$csv" --meta "$meta" --out "$docs" --stat "${STAT:-min}"
echo "run.sh: wrote $docs/gemm-overlap.md" >&2
