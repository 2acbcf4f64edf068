#!/usr/bin/env bash
# The GPU check of the device route, for a machine with a GPU, from a build made elsewhere
# (scripts/build.sh on a development machine; copy the tree with its build/ over):
#
#   bash tests/device/gpu_check.sh [BUILD_DIR]        (default: build)
#
# It writes gpu-check/summary.txt and gpu-check/*.log and exits 0 only if every step
# passed. Steps, each under `timeout`, a few minutes in all:
#   0. probe:  nvidia-smi -L, driver, MPS control binary, ulimit -n, ptrace_scope, and
#              symmem-info's cuda route line (must say "usable").
#   1. the no-GPU path still holds with the GPU hidden (CUDA_VISIBLE_DEVICES=):
#              device_alloc at 3 PEs, as CTest's device.alloc_no_gpu.np3.
#   2. device_api_test api, 2 PEs on the one GPU, without MPS: the device heap is created
#              (cuMemCreate / export / SCM_RIGHTS / import / map), ring put-with-signal of
#              1 MiB, p/g, warp get, atomics. Expect "ok". Without MPS the cross-process
#              signal wait relies on time-slicing: a TIMEOUT/trap here is a finding (write
#              it down), not necessarily a bug.
#   3. the same with MPS (nvidia-cuda-mps-control -d, private pipe/log dirs), 2 and 4 PEs,
#              if the control binary exists; MPS is stopped afterwards.
#   4. device_api_test deadline, 2 PEs: PE 1's wait expires after 50 ms and traps; PE 1
#              reads its WaitRecord from host memory. Expect "was recorded". Then
#              deadline-call: PE 1's next device call fails and its error names the wait
#              (the job ends 1 by design: the step expects the line, not exit 0).
#   5. algos_device_test, the device collectives (symmem/cuda_coll.cuh) against a host
#              reference: 2 PEs without MPS, 2 and 4 with MPS (when it exists). Expect "ok".
#   6. device_ops_test: host calls on device memory at 2 PEs (no MPS needed); with MPS
#              the stream-ordered forms at 2 PEs and every stream collective x type x op
#              at 2 and 4 PEs, against a host reference. Expect "ok".
#   7. Python with torch, 2 PEs (tests/python/gpu_torch_check.py): device tensors, put/get,
#              peer views, the stream collectives against torch. The module is compiled for
#              the build machine's Python (3.11); a GPU machine with another (3.12) cannot
#              import it: the step is then SKIPPED with that reason (rebuild there to run it).
# Nothing here has run on a GPU yet (docs/device.md): the first run is the first test.
set -u
cd "$(dirname "$0")/../.."
B=${1:-build}
OUT=gpu-check
mkdir -p "$OUT"
RUN="$B/tools/symmem-run/symmem-run"
# A build copied from another machine: its libraries by their place in this tree, not by
# the build machine's absolute runpath.
libdirs=$(find "$B" -name 'libsymmem*.so*' -printf '%h\n' 2>/dev/null | sort -u | sed "s|^\([^/]\)|$PWD/\1|" | paste -sd:)
# scripts/gpu-bundle.sh puts the libraries a GPU image may lack (UCX's) in $B/lib.
[ -d "$B/lib" ] && libdirs=$(cd "$B/lib" && pwd)${libdirs:+:$libdirs}
export LD_LIBRARY_PATH=${libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
API="$B/tests/device/device_api_test"
ALGOS="$B/tests/device/algos_device_test"
OPS="$B/tests/device/device_ops_test"
: > "$OUT/summary.txt"
fails=0
step() {  # step NAME EXPECT_REGEX TIMEOUT CMD...
  local name=$1 want=$2 to=$3
  shift 3
  local log="$OUT/$name.log"
  timeout -k 5 "$to" "$@" > "$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && grep -Eq -- "$want" "$log"; then
    echo "PASS $name" | tee -a "$OUT/summary.txt"
  else
    echo "FAIL $name (rc $rc; see $log)" | tee -a "$OUT/summary.txt"
    tail -5 "$log" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    fails=$((fails + 1))
  fi
}

{
  echo "== probe $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  echo "mps control: $(command -v nvidia-cuda-mps-control || echo absent)"
  echo "ulimit -n: $(ulimit -n)  ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo n/a)"
  "$B/tools/symmem-info/symmem-info" -F NOTHING 2>&1 | sed -n '/^routes/,/^$/p'
} > "$OUT/probe.log" 2>&1
cat "$OUT/probe.log"
step probe_cuda_route "^  cuda +usable" 30 grep -E "^  cuda +usable" "$OUT/probe.log"
# As CTest's device.alloc_no_gpu.np3, without CTest, whose files name the build machine's paths.
step no_gpu_path "returns NULL on every PE: no usable CUDA device" 120 bash tests/mp/expect_fail.sh 0 \
  "shmem_malloc_with_hints\(1048576, SHMEMX_MALLOC_DEVICE\) returns NULL on every PE: no usable CUDA device: " \
  "$RUN" --timeout 60 -x CUDA_VISIBLE_DEVICES= -n 3 "$B/tests/device/device_alloc"
step api_np2_nomps "put/signal/wait, p/g, warp get and atomics on 2 PEs: ok" 120 "$RUN" --timeout 100 -n 2 "$API" api
# Host calls on device memory wait on no other process's kernel: no MPS needed.
step ops_host_np2 "host on 2 PEs: ok" 60 "$RUN" --timeout 55 -n 2 "$OPS" host
step algos_np2_nomps "type x op on 2 PEs: ok" 120 "$RUN" --timeout 110 -n 2 "$ALGOS"
if command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=$PWD/$OUT/mps-pipe CUDA_MPS_LOG_DIRECTORY=$PWD/$OUT/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    step api_np2_mps "on 2 PEs: ok" 120 "$RUN" --timeout 100 -n 2 "$API" api
    step api_np4_mps "on 4 PEs: ok" 120 "$RUN" --timeout 100 -n 4 "$API" api
    step algos_np2_mps "type x op on 2 PEs: ok" 120 "$RUN" --timeout 110 -n 2 "$ALGOS"
    step ops_stream_np2 "stream on 2 PEs: ok" 60 "$RUN" --timeout 55 -n 2 "$OPS" stream
    step ops_coll_np2 "coll on 2 PEs: ok" 120 "$RUN" --timeout 110 -n 2 "$OPS" coll
    step ops_coll_np4 "coll on 4 PEs: ok" 120 "$RUN" --timeout 110 -n 4 "$OPS" coll
    step algos_np4_mps "type x op on 4 PEs: ok" 120 "$RUN" --timeout 110 -n 4 "$ALGOS"
    echo quit | nvidia-cuda-mps-control
  else
    echo "FAIL mps_start (nvidia-cuda-mps-control -d)" | tee -a "$OUT/summary.txt"
    fails=$((fails + 1))
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
else
  echo "SKIP mps (nvidia-cuda-mps-control not on PATH)" | tee -a "$OUT/summary.txt"
fi
# The trap is expected; the run as a whole must end 0 (PE 1 checked its record).
step deadline_np2 "expired wait was recorded" 120 "$RUN" --timeout 100 -n 2 "$API" deadline
# The job fails on purpose; `!` makes its failure the step's success, the line its proof.
step deadline_call_np2 "the cause: PE 1: a GPU wait expired after 0\.[0-9] s in block 0 thread 0: waited for the word at 0x[0-9a-f]+ \(a signal word at \+0x[0-9a-f]+ of its device heap slot, written by PE 0\) to be == 12345, last seen 0" \
  120 bash -c '! "$0" --timeout 100 -n 2 "$1" deadline-call' "$RUN" "$API"
PY=${PYTHON:-python3}
if ! why=$(PYTHONPATH="$B/python" "$PY" -c 'import symmem, torch; assert torch.cuda.is_available(), "torch sees no GPU"' 2>&1); then
  echo "SKIP python_torch_np2 ($PY $("$PY" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null): cannot import symmem and torch with a GPU; the module is built for the build machine's Python (3.11); rebuild here: $(echo "$why" | tail -1))" | tee -a "$OUT/summary.txt"
else
  step python_torch_np2 "gpu torch check ok" 180 env PYTHONPATH="$B/python" "$RUN" --timeout 160 -n 2 "$PY" \
    tests/python/gpu_torch_check.py
fi
echo "gpu_check: $fails step(s) failed" | tee -a "$OUT/summary.txt"
[ $fails -eq 0 ]
