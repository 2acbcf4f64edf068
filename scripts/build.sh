#!/usr/bin/env bash
# Installs what is missing (Debian packages) and builds symmem: the developer build, with
# warnings as errors (SYMMEM_WERROR; a user's plain `cmake` build never has them).
#   scripts/build.sh                        gcc, RelWithDebInfo, into ./build
#   scripts/build.sh DIR [TYPE] [CC CXX]    e.g. scripts/build.sh build-clang Release clang clang++
#   SYMMEM_CUDA=OFF|ON|AUTO scripts/build.sh ...   the CUDA route (default AUTO: on when nvcc is found)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=${1:-build} type=${2:-RelWithDebInfo}
args=(-DCMAKE_BUILD_TYPE="$type" -DSYMMEM_WERROR=ON -DSYMMEM_CUDA="${SYMMEM_CUDA:-AUTO}")
if [ $# -ge 4 ]; then args+=(-DCMAKE_C_COMPILER="$3" -DCMAKE_CXX_COMPILER="$4"); fi
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$(pwd)"  # hits across clones in other folders
fi
cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
