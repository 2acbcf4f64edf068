#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds an outside program twice — with
# `cc $(pkg-config --cflags --libs symmem)` and with CMake's find_package(symmem) — and
# runs both under the installed symmem-run.
set -euo pipefail
build=$1; src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig
cc -std=c11 -Wall -Werror "$src/hello.c" -o "$work/hello_pc" $(pkg-config --cflags --libs symmem)
"$work/prefix/bin/symmem-run" -n 2 --timeout 60 "$work/hello_pc"
mkdir "$work/proj"; cp "$src/hello.c" "$work/proj/"; cp "$src/CMakeLists.txt.in" "$work/proj/CMakeLists.txt"
cmake -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/proj/build" >/dev/null
"$work/prefix/bin/symmem-run" -n 2 --timeout 60 "$work/proj/build/hello"
echo "install check: pkg-config and find_package builds both ran"
