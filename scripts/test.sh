#!/usr/bin/env bash
# CI (.ci/run): builds symmem with gcc and clang, every target with warnings as errors, each
# in its own build directory, and runs the whole test suite on both compilers:
#   build                  gcc   RelWithDebInfo   the whole suite (the developer build)
#   build-clang-release    clang Release          the suite less the UCX, Python, liveness,
#                                                 benchmark and example tests (the gcc suite
#                                                 runs those; they add minutes, not coverage
#                                                 of what the compiler changes)
#   build-gcc-release      gcc   Release          builds only: GCC's flow warnings depend on
#                                                 -O3's inlining (-Wrestrict, bug 105329)
# then scripts/sanitize.sh: ASan+UBSan and TSan subsets, the fuzzers (docs/sanitizers.md).
# No clang RelWithDebInfo build: clang warns from its front end, whatever the -O, so the
# clang Release build's -Werror already sees what it would. CI's ccache starts empty and no
# two builds here share compiler and flags, so only doing less saves time: the sanitizer
# builds build only what they run, the fuzzers run a fixed number of inputs, two at a time.
# A suite fails if anything of ours is left in /dev/shm or a symmem-run process survives.
# The time of each stage is printed at the end. `scripts/test.sh --one` does the first
# line only.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=()
finish() {
  local rc=$?
  echo "test.sh: stage times (s): wall, CPU (user+system of the stage's processes)"
  local s
  for s in "${stages[@]}"; do echo "  $s"; done
  exit $rc
}
trap finish EXIT
tick=$(getconf CLK_TCK)
cpu() {  # CPU time of this shell's ended children so far, in ticks (/proc: cutime + cstime)
  local f
  read -r -a f </proc/$$/stat
  echo $((f[15] + f[16]))
}
stage() {  # stage NAME COMMAND...: runs it, records its wall and CPU time
  local name=$1 t0=$SECONDS c0 rc=0
  c0=$(cpu)
  shift
  echo "test.sh: == $name"
  "$@" || rc=$?
  # CPU time as well: on a shared machine the wall time is only an upper bound.
  stages+=("$(printf '%-34s %5d %6d%s' "$name" $((SECONDS - t0)) $((($(cpu) - c0) / tick)) \
              "$([ $rc -eq 0 ] || echo "  FAILED ($rc)")")")
  return $rc
}
suite() {  # suite DIR [CTEST ARGS...]: the CTest suite, then nothing of ours left behind
  local dir=$1 before left rc=0
  shift
  before=$(ls /dev/shm | grep '^symmem-' | sort || true)
  (cd "$dir" && ctest --output-on-failure -j2 --timeout 600 "$@") || rc=$?
  left=$(comm -13 <(echo "$before") <(ls /dev/shm | grep '^symmem-' | sort || true) | grep . || true)
  if [ -n "$left" ]; then
    echo "test.sh: shared-memory objects left in /dev/shm:"; echo "$left"; rc=1
  fi
  if pgrep -x symmem-run >/dev/null; then
    echo "test.sh: stray symmem-run processes:"; pgrep -ax symmem-run; rc=1
  fi
  # The tests send their reports to /dev/null (tests/CMakeLists.txt): a writer that
  # replaced the file instead of writing it would leave the machine without one.
  if [ ! -c /dev/null ]; then
    echo "test.sh: /dev/null is no longer a character device"; rc=1
  fi
  return $rc
}

rc=0
stage "build gcc RelWithDebInfo" bash scripts/build.sh build RelWithDebInfo
stage "tests gcc RelWithDebInfo" suite build || rc=1
if [ "${1:-}" != "--one" ]; then
  stage "build clang Release" bash scripts/build.sh build-clang-release Release clang clang++
  stage "tests clang Release" suite build-clang-release -LE 'ucx|python|bench|live' -E '^example\.' || rc=1
  # Without the CUDA route: the build of a machine with no toolkit (the stages above build
  # the route; its nvcc code does not depend on the host compiler's -O).
  stage "build gcc Release, no CUDA (build only)" env SYMMEM_CUDA=OFF bash scripts/build.sh build-gcc-release Release gcc g++
  # One stage per mode: each one's time is printed.
  stage "sanitizers: asan" bash scripts/sanitize.sh asan || rc=1
  stage "sanitizers: tsan" bash scripts/sanitize.sh tsan || rc=1
  stage "sanitizers: fuzz" bash scripts/sanitize.sh fuzz || rc=1
fi
exit $rc
