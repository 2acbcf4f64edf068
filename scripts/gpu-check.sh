#!/usr/bin/env bash
# scripts/gpu-check.sh — everything issue 36 asks of a GPU machine, in one command of at most
# 8 minutes, from a tree built elsewhere (scripts/build.sh on a development machine, with
# SYMMEM_NVSHMEM_HOME for the NVSHMEM anchor) and copied over with its build/:
#
#   bash scripts/gpu-check.sh [--build DIR] [--out DIR] [--budget SECONDS] [--no-docs] [--dry-run]
#
#   a. probe: card, driver, MPS control binary, python's torch / cupy / nvidia-nvshmem-cu13
#      -> OUT/probe.txt, OUT/meta.txt. No GPU: says "no GPU: nothing measured", exits 0.
#   b. the functional GPU tests: tests/device/gpu_check.sh (2 PEs without MPS, 2 and 4 with)
#      -> OUT/functional.txt
#   c. the benchmark, all on the one card in this run, each step under `timeout`, each PE
#      started by symmem-run: gpu_limit (cudaMemcpyAsync D2D, one-process sum), gpu_symmem,
#      gpu_nvshmem (the machine's nvidia-nvshmem-cu13 on LD_LIBRARY_PATH), gpu_torch.py; at
#      2 PEs (the targets), then at 4 while the budget lasts -> OUT/np<P>.csv, OUT/*.log.
#      MPS is started for it (private pipe/log dirs) when nvidia-cuda-mps-control exists and
#      stopped at the end; without MPS only what needs no cross-process GPU wait is run.
#   d. docs/gpu.md from the CSVs (bench/gpu/report.py), unless --no-docs
#   e. the summary. Exit code: 1 if a functional test failed or symmem's benchmark found a
#      wrong result or crashed; a missed target or a failed anchor is reported, not a failure.
# --dry-run: the probe and the plan (what is built, what would run), nothing measured.
# Nothing is left behind: MPS stopped, the temporary directory removed, and whatever this
# run added to /dev/shm listed in OUT/leftovers.txt and removed.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
B=build OUT=gpu-check BUDGET=450 DOCS=1 DRY=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) B=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --no-docs) DOCS=0; shift ;;
    --dry-run) DRY=1; shift ;;
    *) echo "gpu-check: unknown argument '$1' (see the top of $0)" >&2; exit 2 ;;
  esac
done
START=$(date +%s)
PY=${PYTHON:-python3}
RUN="$B/tools/symmem-run/symmem-run"
G="$B/bench/gpu"
mkdir -p "$OUT"
rm -f "$OUT"/np*.csv "$OUT"/steps.txt "$OUT"/functional.txt "$OUT"/leftovers.txt
: > "$OUT/steps.txt"
# A build copied from another machine: its libraries by their place in this tree, not by
# the build machine's absolute rpath.
libdirs=$(find "$B" -name 'libsymmem*.so*' -printf '%h\n' 2>/dev/null | sort -u | sed "s|^\([^/]\)|$ROOT/\1|" | paste -sd:)
# scripts/gpu-bundle.sh puts the libraries a GPU image may lack (UCX's) in $B/lib.
[ -d "$B/lib" ] && libdirs=$(cd "$B/lib" && pwd)${libdirs:+:$libdirs}
export LD_LIBRARY_PATH=${libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "gpu-check: $*"; }

# ---- a. probe ----
gpu=0
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$card" ] && gpu=1
mps_bin=$(command -v nvidia-cuda-mps-control || true)
pyv() { timeout 30 "$PY" -c "$1" 2>/dev/null || echo "absent"; }
torch_v=$(pyv 'import torch; print(torch.__version__, "cuda", torch.version.cuda)')
cupy_v=$(pyv 'import cupy; print(cupy.__version__)')
nv_v=$(pyv 'import importlib.metadata as m; print(m.version("nvidia-nvshmem-cu13"))')
nv_home=$(pyv 'import nvidia.nvshmem as m; print(list(m.__path__)[0])')
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || cat "$G/commit.txt" 2>/dev/null || echo unknown)
{
  echo "== probe $(date -u +%FT%TZ), commit $commit, build $B"
  nvidia-smi -L 2>&1 || echo "nvidia-smi: not usable"
  echo "card: ${card:-none}  driver: ${driver:-none}"
  echo "mps control: ${mps_bin:-absent}"
  echo "python: $PY ($("$PY" --version 2>&1))"
  echo "torch: $torch_v"
  echo "cupy: $cupy_v"
  echo "nvidia-nvshmem-cu13: $nv_v at $nv_home"
  [ -d "$nv_home/lib" ] && ls "$nv_home/lib" "$nv_home/bin" 2>/dev/null | paste -sd' '
  echo "ulimit -n: $(ulimit -n)  ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo n/a)"
  for t in "$RUN" "$G/gpu_limit" "$G/gpu_symmem" "$G/gpu_nvshmem"; do
    if [ -x "$t" ]; then echo "built: $t"; else echo "not built: $t"; fi
  done
} > "$OUT/probe.txt" 2>&1
cat "$OUT/probe.txt"
nv_built=""
if [ -x "$G/gpu_nvshmem" ] && [ -d "$nv_home/lib" ]; then
  nv_built=$(LD_LIBRARY_PATH=$nv_home/lib:$LD_LIBRARY_PATH timeout 20 "$G/gpu_nvshmem" --version 2>/dev/null)
fi
{
  echo "card=${card:-none}"
  echo "driver=${driver:-none}"
  echo "date=$(date -u +%FT%TZ)"
  echo "commit=$commit"
  echo "torch=$torch_v"
  echo "nvshmem=$nv_v (compiled against ${nv_built:-?})"
} > "$OUT/meta.txt"

if [ $gpu -eq 0 ] || [ $DRY -eq 1 ]; then
  say "plan: functional tests (tests/device/gpu_check.sh $B); gpu_limit; at 2 then 4 PEs: gpu_symmem,"
  say "      gpu_nvshmem ($([ -x "$G/gpu_nvshmem" ] && echo built || echo 'not built: no SYMMEM_NVSHMEM_HOME at build time')),"
  say "      gpu_torch.py (torch: $torch_v); MPS: ${mps_bin:-absent}; budget ${BUDGET} s"
  if [ $gpu -eq 0 ]; then say "no GPU: nothing measured"; else say "dry run: nothing measured"; fi
  exit 0
fi

# ---- cleanup, whatever happens from here ----
TMP=$(mktemp -d /tmp/symmem-gpu.XXXXXX)
ls -1 /dev/shm > "$TMP/shm-before" 2>/dev/null
mps_up=0
stop_mps() {  # stop_mps PIPE_DIR
  [ -n "$mps_bin" ] || return 0
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$1 timeout 10 "$mps_bin" >/dev/null 2>&1
  for _ in $(seq 50); do
    echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$1 timeout 5 "$mps_bin" >/dev/null 2>&1 || return 0
    sleep 0.2
  done
  say "MPS in $1 did not stop"
}
cleanup() {
  [ $mps_up -eq 1 ] && stop_mps "$TMP/mps-pipe" && mps_up=0
  ls -1 /dev/shm 2>/dev/null | sort > "$TMP/shm-after"
  sort "$TMP/shm-before" 2>/dev/null | comm -13 - "$TMP/shm-after" > "$OUT/leftovers.txt"
  if [ -s "$OUT/leftovers.txt" ]; then
    say "left in /dev/shm by this run (removed): $(paste -sd' ' "$OUT/leftovers.txt")"
    while read -r f; do rm -rf "/dev/shm/$f"; done < "$OUT/leftovers.txt"
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fails=0
# step NAME TIMEOUT CSV CMD...: stdout to CSV (appended) and the log, stderr to the log.
step() {
  local name=$1 to=$2 csv=$3
  shift 3
  local log="$OUT/$name.log"
  if [ "$(left)" -lt $((to + 20)) ]; then
    echo "SKIP $name (time budget: $(left) s left, step needs up to $to)" | tee -a "$OUT/steps.txt"
    [ -n "$csv" ] && echo "# ${name%%_*}: $name not run: time budget" >> "$csv"
    return 99
  fi
  local t0=$(date +%s)
  timeout -k 5 "$to" "$@" > "$log.out" 2> "$log"
  local rc=$?
  cat "$log.out" >> "$log"
  [ -n "$csv" ] && cat "$log.out" >> "$csv"
  rm -f "$log.out"
  local v=PASS
  [ $rc -ne 0 ] && v=FAIL
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && v="FAIL (timeout)"
  echo "$v $name (rc $rc, $(($(date +%s) - t0)) s; $log)" | tee -a "$OUT/steps.txt"
  [ $rc -ne 0 ] && tail -5 "$log" | sed 's/^/    /'
  return $rc
}

# ---- b. the functional tests (they start and stop their own MPS) ----
if [ "$(left)" -gt 240 ]; then
  timeout -k 5 300 bash tests/device/gpu_check.sh "$B" > "$OUT/functional.log" 2>&1
  rc=$?
  [ -f gpu-check/summary.txt ] && cp gpu-check/summary.txt "$OUT/functional.txt" 2>/dev/null
  [ $rc -eq 124 ] && echo "FAIL gpu_check.sh (timeout after 200 s)" >> "$OUT/functional.txt"
  stop_mps "$ROOT/gpu-check/mps-pipe"  # in case the timeout cut it short
  echo "$([ $rc -eq 0 ] && echo PASS || echo FAIL) functional (tests/device/gpu_check.sh, rc $rc)" | tee -a "$OUT/steps.txt"
  [ $rc -ne 0 ] && fails=$((fails + 1))
else
  echo "SKIP functional (time budget)" | tee -a "$OUT/steps.txt"
fi

# ---- c. the benchmark ----
mps=no
if [ -n "$mps_bin" ]; then
  export CUDA_MPS_PIPE_DIRECTORY=$TMP/mps-pipe CUDA_MPS_LOG_DIRECTORY=$TMP/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if "$mps_bin" -d && echo get_server_list | timeout 10 "$mps_bin" >/dev/null 2>&1; then
    mps_up=1 mps=yes
  else
    mps="no (nvidia-cuda-mps-control -d failed: $(tail -2 "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null | paste -sd' '))"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  fi
else
  mps="no (nvidia-cuda-mps-control not found)"
fi
echo "mps=$mps" >> "$OUT/meta.txt"
say "MPS: $mps"

# NVSHMEM from this machine's wheel; it must not be older than what the anchor was built with.
nv_ok=""
if [ ! -x "$G/gpu_nvshmem" ]; then
  nv_ok="not built (no SYMMEM_NVSHMEM_HOME when the tree was built)"
elif [ ! -d "$nv_home/lib" ]; then
  nv_ok="this machine's python has no nvidia-nvshmem-cu13"
elif [ -z "$nv_built" ]; then
  nv_ok="gpu_nvshmem --version did not run with $nv_home/lib"
elif [ "$(printf '%s\n%s\n' "$nv_built" "${nv_v%%+*}" | sort -V | head -1)" != "$nv_built" ]; then
  nv_ok="the wheel here ($nv_v) is older than the one gpu_nvshmem was compiled against ($nv_built)"
fi
[ "$mps" = yes ] || nv_ok=${nv_ok:-"several PEs on one GPU need MPS (NVSHMEM's collectives refuse limited MPG)"}
nv_env=(env "LD_LIBRARY_PATH=$nv_home/lib:$LD_LIBRARY_PATH" NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
        NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NCCL=1 NVSHMEM_SYMMETRIC_SIZE=1073741824
        NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1)
ops=all
[ "$mps" = yes ] || ops=put  # the others wait across processes on the GPU

symmem_bad=0
for np in 2 4; do
  csv="$OUT/np$np.csv"
  : > "$csv"
  if [ "$np" -gt 2 ] && [ "$(left)" -lt 150 ]; then
    echo "SKIP np$np (time budget: $(left) s left)" | tee -a "$OUT/steps.txt"
    rm -f "$csv"
    break
  fi
  step "limit_np$np" 40 "$csv" "$G/gpu_limit" --npes "$np"
  step "symmem_np$np" 60 "$csv" "$RUN" --timeout 55 -n "$np" "$G/gpu_symmem" --ops "$ops"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 99 ] && symmem_bad=1
  if [ -z "$nv_ok" ]; then
    step "nvshmem_np$np" 60 "$csv" "${nv_env[@]}" "$RUN" --timeout 55 -n "$np" "$G/gpu_nvshmem" \
      --uid-file "$TMP/nvshmem-uid-np$np"
  else
    echo "# nvshmem: not run: $nv_ok" >> "$csv"
    echo "SKIP nvshmem_np$np ($nv_ok)" | tee -a "$OUT/steps.txt"
  fi
  if [ "$mps" != yes ]; then
    echo "# torch: not run: its one-shot all-reduce and barrier wait across processes on the GPU (no MPS)" >> "$csv"
    echo "SKIP torch_np$np (no MPS)" | tee -a "$OUT/steps.txt"
  elif [ "$torch_v" = absent ]; then
    echo "# torch: not run: no torch in $PY" >> "$csv"
    echo "SKIP torch_np$np (no torch)" | tee -a "$OUT/steps.txt"
  else
    step "torch_np$np" 90 "$csv" "$RUN" --timeout 85 -n "$np" "$PY" bench/gpu/gpu_torch.py \
      --store "$TMP/torch-store-np$np" --deadline 80
  fi
done
[ $symmem_bad -ne 0 ] && fails=$((fails + 1))
if [ $mps_up -eq 1 ]; then stop_mps "$TMP/mps-pipe"; mps_up=0; fi

# ---- d, e. the page and the summary ----
echo
if [ $DOCS -eq 1 ]; then
  /usr/bin/env python3 bench/gpu/report.py "$OUT" --out docs/gpu.md && say "wrote docs/gpu.md"
else
  /usr/bin/env python3 bench/gpu/report.py "$OUT"
fi
echo "  steps:"
sed 's/^/    /' "$OUT/steps.txt"
say "$(($(date +%s) - START)) s; $fails failure(s)"
[ $fails -eq 0 ]
