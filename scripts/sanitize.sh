#!/usr/bin/env bash
# Sanitizer and fuzzing stage of CI (docs/sanitizers.md). Each mode builds into its own
# directory only what it runs, then runs it:
#   asan  GCC, -fsanitize=address,undefined (build-asan): the unit tests and a 2-PE subset
#         of the multi-PE suite (init and the heap, static data, RMA/AMO/signals/waits/
#         contexts/threads), the C programs at 2 PEs and some at 4, see ASAN_TESTS
#   tsan  GCC, -fsanitize=thread (build-tsan): the store's tests (its server thread against
#         client threads, TLS), the threaded point-to-point groups (p2p.threads.*: several
#         threads per PE, on shared memory and across UCX with its progress thread), the
#         liveness thread ending a job (a PE killed, global_exit), a thread reading its
#         own PE's status page while another waits (mp.dfx_threads), and the collectives
#         across emulated nodes (the deposit handler on the progress thread against the
#         waiting PE, 2x2; rendezvous puts, ucx.rndv.*), see TSAN_TESTS
#   fuzz  clang, libFuzzer + ASan + UBSan (build-fuzz): every target in tests/fuzz from its
#         seed corpus for a fixed number of inputs (FUZZ_RUNS below, x FUZZ_SCALE), as
#         many targets at once as there are cores: the same work however loaded the machine
# Usage: scripts/sanitize.sh [asan|tsan|fuzz]...  (default: all three)
#        ASAN_TESTS=regex / TSAN_TESTS=regex override the subsets (ctest -R).
# Any sanitizer report, crash, leak or failing test fails the stage.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(asan tsan fuzz)
jobs=$(nproc)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$root"  # hits across clones in other folders
fi

# Stop at the first report, with a stack; no recovery (-fno-sanitize-recover=all too).
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# No suppressions: nothing in the subsets needs one (docs/sanitizers.md).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

# The C programs at 2 PEs, those whose work depends on the PE count at 4 too; not barrier
# and fence_quiet, whose 10000-iteration loops pass their 60 s limit under ASan on a loaded
# 2-core machine (nothing else in them).
: "${ASAN_TESTS:=^(unit\.|mp\.(foundation|static_data)\.np2$|p2p\.np2$|capi\.(init_info|malloc|putget|nbi|pg|ptr|static_data|global_exit|coll_static|team_split|p2p_workqueue|pe_quiet|malloc_hints|deprecated|nop_collectives|wait_short|shmemx_sos|calloc_overflow|c11_generic)\.np2$|capi\.(static_data|team_split|coll_static|nop_collectives|p2p_workqueue|shmemx_sos)\.np4$)}"
: "${TSAN_TESTS:=^(unit\.test_(store|tls|store_strangers|dfx_scope)|p2p\.threads\..*|p2p\.ucx_2x2|mp\.pe_sigkilled|mp\.dfx_threads\.np2|capi\.global_exit\.np2|ucx\.(target_computes\.np2|pe_killed_named|rndv\.capi_(nbi|fence_quiet)|(team_reduce|data_coll|big_reduce|bcast|bcast_ahead)\.2x2))$}"
# Inputs per target: about what 20 s gave each on the loaded 2-core CI machine, where their
# coverage had stopped growing but for a few edges (docs/sanitizers.md).
declare -A FUZZ_RUNS=([fuzz_tunables]=200000 [fuzz_run_options]=400000 [fuzz_unique_id]=1000000
                      [fuzz_store_server]=400000 [fuzz_store_client]=100000)
: "${FUZZ_SCALE:=1}"

configure() {  # dir, extra cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
}

# The test binaries behind the CTests matching a regex (so that nothing else is built),
# read from the generated CTestTestfile.cmake files: ctest -N does not show the command of
# a test whose executable is not built yet.
targets_for() {  # dir regex
  /usr/bin/python3 - "$root/$1" "$2" <<'PY'
import os, re, shlex, sys
top, rx = sys.argv[1], re.compile(sys.argv[2])
out = set()
for d, _, files in os.walk(top):
    if "CTestTestfile.cmake" not in files:
        continue
    for line in open(os.path.join(d, "CTestTestfile.cmake")):
        m = re.match(r"add_test\(\[=\[(.*?)\]=\]\s+(.*)\)\s*$", line) or re.match(r"add_test\((\S+)\s+(.*)\)\s*$", line)
        if m and rx.search(m.group(1)):
            # A word may itself be a shell command (sh -c "... prog 2>&1"): split it too.
            for w in (x for word in shlex.split(m.group(2)) for x in shlex.split(word)):
                if w.startswith(top + "/") and "/CMakeFiles/" not in w:
                    out.add(os.path.basename(w))
print("\n".join(sorted(out)))
PY
}

run_ctest() {  # dir regex
  local before rc=0
  before=$(ls /dev/shm | grep '^symmem-' | sort || true)
  (cd "$1" && ctest --output-on-failure -j"$jobs" --timeout 600 -R "$2") || rc=$?
  left=$(comm -13 <(echo "$before") <(ls /dev/shm | grep '^symmem-' | sort || true) | grep . || true)
  if [ -n "$left" ]; then echo "sanitize.sh: left in /dev/shm: $left"; rc=1; fi
  return $rc
}

sanitized() {  # mode dir regex
  local mode=$1 dir=$2 regex=$3 t
  echo "== sanitize.sh $mode: configure and build ($dir)"
  configure "$dir" -DSYMMEM_SANITIZE="$( [ "$mode" = tsan ] && echo thread || echo address,undefined)" || return 1
  mapfile -t t < <(targets_for "$dir" "$regex")
  # Explicit checks: the caller's `|| rc=1` switches set -e off in here.
  cmake --build "$dir" -j"$jobs" --target symmem-run "${t[@]}" || { echo "sanitize.sh $mode: build FAILED"; return 1; }
  echo "== sanitize.sh $mode: ctest -R '$regex'"
  run_ctest "$dir" "$regex"
}

fuzz() {
  local dir=build-fuzz rc=0 f
  echo "== sanitize.sh fuzz: configure and build ($dir)"
  CC=clang CXX=clang++ configure "$dir" -DSYMMEM_FUZZ=ON || return 1
  local fuzzers=(fuzz_tunables fuzz_run_options fuzz_unique_id fuzz_store_server fuzz_store_client)
  cmake --build "$dir" -j"$jobs" --target "${fuzzers[@]}" || { echo "sanitize.sh fuzz: build FAILED"; return 1; }
  fuzz_one() {  # target: its runs, its log; the verdict in $dir/$f.rc
    local f=$1 runs=$(( ${FUZZ_RUNS[$1]} * FUZZ_SCALE ))
    rm -f "$dir/$f.rc"
    # New inputs go to a scratch corpus; the committed seeds are only read.
    mkdir -p "$dir/corpus/$f"
    "$dir/tests/fuzz/$f" -runs="$runs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/$f-" "$dir/corpus/$f" "tests/fuzz/corpus/$f" >"$dir/$f.log" 2>&1
    echo $? >"$dir/$f.rc"
  }
  echo "== sanitize.sh fuzz: ${fuzzers[*]}, $jobs at a time"
  local running=0
  for f in "${fuzzers[@]}"; do
    if [ $running -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
    fuzz_one "$f" &
    running=$((running + 1))
  done
  wait
  for f in "${fuzzers[@]}"; do
    if [ "$(cat "$dir/$f.rc" 2>/dev/null)" != 0 ]; then
      tail -n 60 "$dir/$f.log"
      echo "sanitize.sh fuzz: $f FAILED (input saved as $dir/$f-*; full log $dir/$f.log)"
      rc=1
    else
      echo "$f: $(grep -E '^Done' "$dir/$f.log")"
    fi
  done
  return $rc
}

rc=0
for m in "${modes[@]}"; do
  case $m in
    # Foundation.BarrierLoopCountsEveryIteration runs the same barrier 20000 times: 149 of
    # mp.foundation's 173 s under ASan on the loaded 2-core machine, and nothing the other
    # barrier tests do not already run under ASan.
    asan) GTEST_FILTER="${GTEST_FILTER:--Foundation.BarrierLoopCountsEveryIteration}" \
            sanitized asan build-asan "$ASAN_TESTS" || rc=1 ;;
    # UCX patches libc's mmap family at load (libucm's "bistro" hooks); a thread that ends
    # then calls madvise on its stack and enters TSan's interceptors after TSan let go of
    # the thread: a crash in every program linked with UCX. Under TSan the hooks are off
    # (UCX then gets no memory events, which its TCP transport does not use; with its
    # events on, a PE of ucx.data_coll once crashed at thread exit in ucm_madvise).
    tsan) UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no sanitized tsan build-tsan "$TSAN_TESTS" || rc=1 ;;
    fuzz) fuzz || rc=1 ;;
    *) echo "usage: $0 [asan|tsan|fuzz]..." >&2; exit 2 ;;
  esac
done
exit $rc
