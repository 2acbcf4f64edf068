#!/usr/bin/env bash
# Measures every weight_share mode and writes docs/weight-share.md (+ docs/weight-share.png).
#   examples/weight_share/run.sh                       # TinyLlama-shaped, 4 layers, 8 workers
#   PRESET=llama7b-slice LAYERS=2 WORKERS=4 examples/weight_share/run.sh
# Each mode runs twice: with the weight file's pages dropped from the page cache (cold; the
# memory, throughput and latency figures come from this run) and again load-only (warm).
# Each run gets a memory cgroup of its own when one can be made (root), so the node figure
# is this job's alone. The weights are generated at run time into $DATA (never committed);
# RESULTS=dir keeps the per-run JSON reports. HUGE=1 (the default where a tmpfs can be
# mounted, i.e. as root) puts the symmetric heaps on a tmpfs mounted with huge=always
# (SYMMEM_HEAP_DIR, docs/memory.md) and the private copies in transparent huge pages
# (--huge); HUGE=0 keeps 4 KiB pages everywhere.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
PRESET=${PRESET:-tinyllama}
LAYERS=${LAYERS:-4}
WORKERS=${WORKERS:-8}
REQUESTS=${REQUESTS:-3}
GEN=${GEN:-4}
BATCH=${BATCH:-16}
UPDATES=${UPDATES:-2}
MODES=${MODES:-"private mmap fork symm symm-staged symm-prefetch update"}
DATA=${DATA:-$BUILD/weight_share_data}
OUT=${OUT:-$ROOT/docs/weight-share.md}
BIN=$BUILD/examples/weight_share/weight_share
RUN=$BUILD/tools/symmem-run/symmem-run
for f in "$BIN" "$RUN"; do
  [ -x "$f" ] || { echo "run.sh: $f is missing: cmake --build $BUILD --target weight_share symmem-run" >&2; exit 1; }
done
export OPENBLAS_NUM_THREADS=1

mkdir -p "$DATA"
A=$DATA/$PRESET-$LAYERS-s1.safetensors A32=$DATA/$PRESET-$LAYERS-s1.f32.safetensors B=$DATA/$PRESET-$LAYERS-s2.safetensors
GEN_PY="/usr/bin/python3 $ROOT/examples/weight_share/gen_weights.py --preset $PRESET --layers $LAYERS"
[ -s "$A" ] && [ -s "$A32" ] || $GEN_PY --seed 1 --out "$A" --f32 "$A32"
[ -s "$B" ] || $GEN_PY --seed 2 --out "$B"

CLEAN_RES="" HUGE_DIR="" PR_OLD=""
PR=/sys/module/page_reporting/parameters/page_reporting_order
cleanup() {
  [ -z "$CLEAN_RES" ] || rm -rf "$CLEAN_RES"
  [ -z "$PR_OLD" ] || echo "$PR_OLD" > "$PR" 2>/dev/null || true
  if [ -n "$HUGE_DIR" ]; then umount "$HUGE_DIR" 2>/dev/null || true; rmdir "$HUGE_DIR" 2>/dev/null || true; fi
}
trap cleanup EXIT
if [ -n "${RESULTS:-}" ]; then  # keep the JSON reports there (report.py can be rerun on them)
  RES=$RESULTS; mkdir -p "$RES"
else
  RES=$(mktemp -d "${TMPDIR:-/tmp}/weight-share.XXXXXX"); CLEAN_RES=$RES
fi

HUGE=${HUGE:-auto} HUGE_ARGS=()
if [ "$HUGE" != 0 ]; then
  HUGE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/weight-share-huge.XXXXXX")
  if mount -t tmpfs -o huge=always none "$HUGE_DIR" 2>/dev/null; then
    export SYMMEM_HEAP_DIR=$HUGE_DIR; HUGE_ARGS=(--huge)
  else
    rmdir "$HUGE_DIR"; HUGE_DIR=""
    [ "$HUGE" = auto ] || { echo "run.sh: HUGE=1 needs a tmpfs mounted with huge=always (root)" >&2; exit 1; }
    echo "run.sh: no tmpfs with huge pages could be mounted (not root?): 4 KiB pages" >&2
  fi
fi

# A memory cgroup per run: v1 (memory controller) or v2, below this shell's own.
CG_PARENT=""
if line=$(grep -E '^[0-9]+:memory:' /proc/self/cgroup 2>/dev/null); then
  CG_PARENT=/sys/fs/cgroup/memory${line#*:memory:}
elif line=$(grep -E '^0::' /proc/self/cgroup 2>/dev/null) && [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  CG_PARENT=/sys/fs/cgroup${line#0::}
fi
if [ -n "$CG_PARENT" ] && ! mkdir "$CG_PARENT/wshare-probe-$$" 2>/dev/null; then CG_PARENT=""; fi
[ -n "$CG_PARENT" ] && rmdir "$CG_PARENT/wshare-probe-$$"
[ -n "$CG_PARENT" ] || echo "run.sh: no memory cgroup of our own: the node figure is the whole machine's (noisy)" >&2

run_one() {  # name, then the command
  local name=$1; shift
  local cg=""
  if [ -n "$CG_PARENT" ]; then cg=$CG_PARENT/wshare-$$-$name; mkdir -p "$cg"; fi
  echo "run.sh: $name: $*" >&2
  local rc=0
  if [ -n "$cg" ]; then
    sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$cg" "$@" || rc=$?
  else
    "$@" || rc=$?
  fi
  if [ -n "$cg" ]; then rmdir "$cg" 2>/dev/null || true; fi
  [ $rc -eq 0 ] || { echo "run.sh: $name failed (exit $rc)" >&2; exit $rc; }
}

# A virtual machine may back its memory only when first touched (on this project's VM a
# first touch cost 15x a later one), which would land on whichever mode runs first: touch
# 80% of the available memory once before measuring. Such a VM may also give freed memory
# back to its host within seconds (virtio-balloon free page reporting), and then every run
# pays that first touch again, as much as the memory it allocates: as root, hold the
# reporting off for the run (restored at exit; PAUSE_REPORTING=0 leaves it). Every run is
# also made REPEAT times (default 3) and the report takes the one with the least load CPU.
if [ "${PAUSE_REPORTING:-1}" = 1 ] && [ -w "$PR" ]; then
  old=$(cat "$PR")
  for o in 11 10; do if echo $o > "$PR" 2>/dev/null; then PR_OLD=$old; echo "order $old -> $o" > "$RES/page_reporting"; break; fi; done
fi
/usr/bin/python3 -c 'import numpy as np
avail = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemAvailable:")) * 1024
a = np.ones(int(avail * 0.8) // 8); del a'

uptime > "$RES/uptime_before"
t_start=$(date +%s)
SERVE=(--requests "$REQUESTS" --gen "$GEN" --batch "$BATCH" --batch-requests 1)
LOADONLY=(--requests 0 --batch-requests 0)
REPEAT=${REPEAT:-3}
for m in $MODES; do for r in $(seq 1 "$REPEAT"); do
  case $m in
    mmap) W=(--weights-f32 "$A32") ;;
    update) W=(--weights "$A" --update-weights "$B" --updates "$UPDATES") ;;
    *) W=(--weights "$A") ;;
  esac
  if [ "$m" = fork ]; then L=("$BIN" --workers "$WORKERS"); else L=("$RUN" -n "$WORKERS" --timeout 900 "$BIN"); fi
  run_one "$m-cold" "${L[@]}" --mode "$m" "${W[@]}" "${SERVE[@]}" "${HUGE_ARGS[@]}" --cold --json "$RES/$m-cold.r$r.json"
  run_one "$m-warm" "${L[@]}" --mode "$m" "${W[@]}" "${LOADONLY[@]}" "${HUGE_ARGS[@]}" --json "$RES/$m-warm.r$r.json"
done; done
# The load alone at 2 workers (one per core, no time-slicing), private against symm: what one
# private copy costs when the workers do not share the cores.
case " $MODES " in *" private "*" symm "*)
  for r in $(seq 1 "$REPEAT"); do for m in private symm; do
    run_one "$m-ab2" "$RUN" -n 2 --timeout 300 "$BIN" --mode "$m" --weights "$A" "${LOADONLY[@]}" "${HUGE_ARGS[@]}" --json "$RES/$m-ab2.r$r.json"
  done; done ;;
esac
# The load-work ratio, private against symm: LOAD_AB alternating pairs (default 25) of warm
# load-only runs at WORKERS workers; the report gives the median of the pairs' ratios (one
# run differs from the next by up to 15 % here; the best-of-REPEAT runs above pick each
# mode's least load CPU separately).
LOAD_AB=${LOAD_AB:-25}
case " $MODES " in *" private "*" symm "*)
  for r in $(seq 1 "$LOAD_AB"); do for m in private symm; do
    run_one "$m-abload" "$RUN" -n "$WORKERS" --timeout 300 "$BIN" --mode "$m" --weights "$A" "${LOADONLY[@]}" "${HUGE_ARGS[@]}" --json "$RES/$m-abload.r$r.json"
  done; done ;;
esac
# Batch-1 throughput, private against symm: AB alternating pairs (default 9) serving only
# at batch 1, AB_REQUESTS requests of AB_GEN tokens per worker; the report gives the median
# of the pairs' ratios and their range (one run differs from the next by up to 15% here).
AB=${AB:-9}
case " $MODES " in *" private "*" symm "*)
  for r in $(seq 1 "$AB"); do for m in private symm; do
    run_one "$m-ab1" "$RUN" -n "$WORKERS" --timeout 900 "$BIN" --mode "$m" --weights "$A" --requests "${AB_REQUESTS:-6}" \
      --gen "${AB_GEN:-8}" --batch-requests 0 "${HUGE_ARGS[@]}" --json "$RES/$m-ab1.r$r.json"
  done; done ;;
esac
t_end=$(date +%s)
uptime > "$RES/uptime_after"

/usr/bin/python3 "$ROOT/examples/weight_share/report.py" "$RES" --out "$OUT" --seconds $((t_end - t_start)) \
  --command "examples/weight_share/run.sh (PRESET=$PRESET LAYERS=$LAYERS WORKERS=$WORKERS REQUESTS=$REQUESTS GEN=$GEN BATCH=$BATCH UPDATES=$UPDATES REPEAT=$REPEAT AB=$AB LOAD_AB=$LOAD_AB)" \
  --commit "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
