#!/usr/bin/env bash
# scripts/gpu-bundle.sh — what a GPU machine needs to run scripts/gpu-check.sh, small enough
# to copy over (a development build/ is ~650 MB; this is a few tens of MB):
#
#   bash scripts/gpu-bundle.sh [DIR]        default DIR: build-gpu
#
# Builds Release into DIR-work (ccache; the NVSHMEM anchor too when SYMMEM_NVSHMEM_HOME is
# set, bench/gpu/README.md), then copies into DIR, in the build's own layout, the library,
# symmem-run, symmem-info, the GPU tests and benchmarks, stripped, and the libraries they
# link that a GPU machine may lack (UCX's) into DIR/lib. Then, on the GPU machine:
#
#   bash scripts/gpu-check.sh --build DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-gpu}
work=$out-work
args=(-DCMAKE_BUILD_TYPE=Release -DSYMMEM_CUDA=ON)
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$(pwd)"
fi
[ -n "${SYMMEM_NVSHMEM_HOME:-}" ] && args+=(-DSYMMEM_NVSHMEM_HOME="$SYMMEM_NVSHMEM_HOME")
cmake -S . -B "$work" "${args[@]}" >/dev/null
files=(src/capi/libsymmem.so tools/symmem-run/symmem-run tools/symmem-info/symmem-info
       tests/device/device_alloc tests/device/device_api_test tests/device/device_ops_test
       tests/device/algos_device_test bench/gpu/gpu_limit bench/gpu/gpu_symmem bench/gpu/gpu_nvshmem)
known=$(cmake --build "$work" --target help)
targets=()
for f in "${files[@]}"; do
  t=$(basename "$f")
  [ "$t" = libsymmem.so ] && t=symmem
  if grep -q "\.\.\. $t\$" <<<"$known"; then targets+=("$t"); fi
done
cmake --build "$work" -j"$(nproc)" --target "${targets[@]}"
rm -rf "$out"
mkdir -p "$out/lib"
for f in "${files[@]}"; do
  [ -e "$work/$f" ] || { echo "gpu-bundle: $f not built (skipped)"; continue; }
  mkdir -p "$out/$(dirname "$f")"
  cp -a "$work/$f"* "$out/$(dirname "$f")/"
done
find "$out" -type f \( -perm -u+x -o -name '*.so*' \) -exec strip --strip-unneeded {} +
# Libraries outside the C/C++ runtime and OpenSSL (which the GPU image has) travel along.
ldd "$out/src/capi/libsymmem.so" | awk '/=> \// { print $3 }' | grep -E '/lib(ucp|uct|ucs|ucm)\.so' |
  while read -r l; do cp -L "$l" "$out/lib/"; done
git rev-parse --short=12 HEAD > "$out/commit.txt" 2>/dev/null || true
mkdir -p "$out/bench/gpu" && cp "$out/commit.txt" "$out/bench/gpu/commit.txt"
size=$(du -sm "$out" | cut -f1)
echo "gpu-bundle: $out is ${size} MiB (the device tool carries at most 64 MiB)"
[ "$size" -lt 60 ] || { echo "gpu-bundle: too big to carry" >&2; exit 1; }
echo "gpu-bundle: on the GPU machine: bash scripts/gpu-check.sh --build $out   (carry: $out)"
