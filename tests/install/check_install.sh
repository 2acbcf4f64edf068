#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds an outside program the ways a user
# does — `cc $(pkg-config --cflags --libs symmem)`, CMake's find_package(symmem), and the
# installed oshcc / oshc++ wrappers — and runs them under the installed symmem-run and oshrun.
set -euo pipefail
build=$1; src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
bin=$work/prefix/bin
export PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig
cc -std=c11 -Wall -Werror "$src/hello.c" -o "$work/hello_pc" $(pkg-config --cflags --libs symmem)
"$bin/symmem-run" -n 2 --timeout 60 "$work/hello_pc"
mkdir "$work/proj"; cp "$src/hello.c" "$work/proj/"; cp "$src/CMakeLists.txt.in" "$work/proj/CMakeLists.txt"
cmake -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/proj/build" >/dev/null
"$bin/symmem-run" -n 2 --timeout 60 "$work/proj/build/hello"

# The OpenSHMEM tool names: what they add, then a C and a C++ program built and run with them.
fail() { echo "install check: $*" >&2; exit 1; }
[ "$("$bin/oshcc" --showme:compile)" = "-I$work/prefix/include" ] || fail "oshcc --showme:compile: $("$bin/oshcc" --showme:compile)"
link=$("$bin/oshcc" --showme:link)
[ "$link" = "-L$work/prefix/lib -Wl,-rpath,$work/prefix/lib -lsymmem" ] || fail "oshcc --showme:link: $link"
case $("$bin/oshcc" --showme -c x.c) in *"-I$work/prefix/include -c x.c") ;; *) fail "oshcc --showme -c: $("$bin/oshcc" --showme -c x.c)" ;; esac
[ "$(SYMMEM_CC=my-cc "$bin/oshcc" --showme:command)" = my-cc ] || fail "SYMMEM_CC is not honoured"
[ "$(OSHMEM_CXX=my-c++ "$bin/oshc++" --showme:command)" = my-c++ ] || fail "OSHMEM_CXX is not honoured"
grep -q -- "--showme:link" <<<"$("$bin/oshcc" --showme:help)" || fail "oshcc --showme:help"
"$bin/oshcc" -std=c11 -Wall -Werror "$src/hello.c" -o "$work/hello_osh"
"$bin/oshcc" -c "$src/hello.c" -o "$work/hello.o" && "$bin/oshcc" "$work/hello.o" -o "$work/hello_osh2"
"$bin/oshc++" -Wall -Werror "$src/hello.cpp" -o "$work/hello_cxx"
# the run path: no LD_LIBRARY_PATH needed
# (ldd's whole output first: grep -q stopping early would fail the pipe under pipefail)
libs=$(unset LD_LIBRARY_PATH; ldd "$work/hello_osh")
grep -q "$work/prefix/lib/libsymmem" <<<"$libs" || fail "no run path to libsymmem"
"$bin/oshrun" -np 2 --timeout 60 "$work/hello_osh"
"$bin/oshrun" -n 3 "$work/hello_osh2"
"$bin/oshrun" --oversubscribe -np 2 "$work/hello_cxx"
# -np after the program is the program's: oshrun passes it on untouched
out=$("$bin/oshrun" -np 1 /bin/echo -np 5) && [ "$out" = "-np 5" ] || fail "oshrun changed the program's arguments: $out"
echo "install check: pkg-config, find_package, oshcc and oshc++ builds all ran (symmem-run, oshrun)"
